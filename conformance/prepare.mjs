// prepare.mjs — pi's prepareCompaction on the path from the root to the last
// entry of each session, for the settings given in a manifest.
//
// Usage: node prepare.mjs --manifest generated/manifest.json [--fixtures DIR] [--out F]
//
// The manifest (written by internal/sessiongen/cmd/gensessions) lists files
// relative to its own directory with reserveTokens and a list of
// keepRecentTokens values; one case is produced per (file, keepRecentTokens).
// --fixtures adds the pi v3 fixtures of DIR with fixed settings.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { compaction, fileOpsLists, messages, openSession, PI_VERSION, pretty, utils, writeGolden } from "./lib.mjs";

const { prepareCompaction, findCutPoint, estimateTokens } = compaction;

const MAX_DERIVED = 4;

const FIXTURES = [
	{ file: "before-compaction.v3.jsonl", keep: [2000, 20000, 60000] },
	{ file: "large-session.v3.jsonl", keep: [2000, 20000, 60000] },
];

function serialized(msgs) {
	const text = utils.serializeConversation(messages.convertToLlm(msgs));
	return { chars: text.length, sha256: createHash("sha256").update(text, "utf8").digest("hex") };
}

// cutDetails repeats prepareCompaction's range computation so the golden
// also shows where the cut and the turn start landed (prepareCompaction does
// not return them).
function cutDetails(path, keepRecentTokens) {
	let prev = -1;
	for (let i = path.length - 1; i >= 0; i--) {
		if (path[i].type === "compaction") {
			prev = i;
			break;
		}
	}
	let start = 0;
	if (prev >= 0) {
		const k = path.findIndex((e) => e.id === path[prev].firstKeptEntryId);
		start = k >= 0 ? k : prev + 1;
	}
	const cut = findCutPoint(path, start, path.length, keepRecentTokens);
	const e = path[cut.firstKeptEntryIndex];
	return {
		cutClass: cutClass(path, cut),
		rangeStart: start,
		firstKeptIndex: cut.firstKeptEntryIndex,
		firstKeptType: e ? (e.type === "message" ? `message:${e.message.role}` : e.type) : null,
		turnStartIndex: cut.turnStartIndex,
	};
}

// cutClass names the kind of cut a keepRecentTokens value produces.
function cutClass(path, cut) {
	const e = path[cut.firstKeptEntryIndex];
	const type = e ? (e.type === "message" ? `message:${e.message.role}` : e.type) : "none";
	let c = `${type}/${cut.isSplitTurn ? "split" : "clean"}`;
	if (cut.isSplitTurn && cut.turnStartIndex === cut.firstKeptEntryIndex) c += "/emptyPrefix";
	if (cut.turnStartIndex === -1 && type === "message:assistant") c += "/noTurnStart";
	return c;
}

// derivedKeeps sweeps keepRecentTokens over the accumulated estimates of the
// path's messages (walking back from the end, as findCutPoint does) and
// returns one value per kind of cut, so every reachable kind is covered.
function derivedKeeps(file) {
	const sm = openSession(file);
	const path = sm.getBranch();
	const { rangeStart } = cutDetails(path, 1);
	const seen = new Map();
	let acc = 0;
	for (let i = path.length - 1; i >= rangeStart; i--) {
		if (path[i].type !== "message") continue;
		acc += estimateTokens(path[i].message);
		if (acc === 0) continue;
		const cut = findCutPoint(path, rangeStart, path.length, acc);
		const c = cutClass(path, cut);
		if (!seen.has(c)) seen.set(c, acc);
	}
	return seen;
}

function prepareCase(path, dir, file, reserveTokens, keepRecentTokens) {
	const sm = openSession(path);
	const pathEntries = sm.getBranch();
	const settings = { enabled: true, reserveTokens, keepRecentTokens };
	const base = { file, dir, reserveTokens, keepRecentTokens, pathLength: pathEntries.length, leafId: sm.getLeafId() };
	const prep = prepareCompaction(pathEntries, settings);
	if (!prep) {
		const last = pathEntries[pathEntries.length - 1];
		return {
			...base,
			undefined: true,
			reason: last?.type === "compaction" ? "lastEntryIsCompaction" : "firstKeptEntryHasNoId",
			nothingToCompact: true,
		};
	}
	const { readFiles, modifiedFiles } = fileOpsLists(prep.fileOps);
	const sumTokens = (ms) => ms.reduce((a, m) => a + estimateTokens(m), 0);
	return {
		...base,
		nothingToCompact: prep.messagesToSummarize.length === 0 && prep.turnPrefixMessages.length === 0,
		...cutDetails(pathEntries, keepRecentTokens),
		firstKeptEntryId: prep.firstKeptEntryId,
		isSplitTurn: prep.isSplitTurn,
		tokensBefore: prep.tokensBefore,
		messagesToSummarize: prep.messagesToSummarize.length,
		turnPrefixMessages: prep.turnPrefixMessages.length,
		summarizeRoles: prep.messagesToSummarize.map((m) => m.role),
		turnPrefixRoles: prep.turnPrefixMessages.map((m) => m.role),
		summarizeTokens: sumTokens(prep.messagesToSummarize),
		turnPrefixTokens: sumTokens(prep.turnPrefixMessages),
		serializedSummarize: serialized(prep.messagesToSummarize),
		serializedTurnPrefix: serialized(prep.turnPrefixMessages),
		readFiles,
		modifiedFiles,
		previousSummary: prep.previousSummary !== undefined,
	};
}

const args = process.argv.slice(2);
let manifestPath;
let fixturesDir;
let out;
for (let i = 0; i < args.length; i++) {
	if (args[i] === "--manifest") manifestPath = args[++i];
	else if (args[i] === "--fixtures") fixturesDir = args[++i];
	else if (args[i] === "--out") out = args[++i];
	else {
		console.error(`prepare.mjs: unknown argument ${args[i]}`);
		process.exit(2);
	}
}
if (!manifestPath && !fixturesDir) {
	console.error("usage: node prepare.mjs --manifest M [--fixtures DIR] [--out F]");
	process.exit(2);
}

const cases = [];
if (manifestPath) {
	const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
	const base = dirname(manifestPath);
	const derivedPerClass = new Map();
	for (const f of manifest.files) {
		const classes = new Set();
		for (const keep of f.keepRecentTokens) {
			const c = prepareCase(join(base, f.file), "generated", f.file, f.reserveTokens, keep);
			c.keepKind = "manifest";
			cases.push(c);
			classes.add(c.cutClass);
		}
		// Add cuts of kinds this file's manifest values missed, at most
		// MAX_DERIVED per kind over the corpus.
		for (const [cls, keep] of derivedKeeps(join(base, f.file))) {
			const n = derivedPerClass.get(cls) ?? 0;
			if (classes.has(cls) || n >= MAX_DERIVED) continue;
			derivedPerClass.set(cls, n + 1);
			const c = prepareCase(join(base, f.file), "generated", f.file, f.reserveTokens, keep);
			c.keepKind = "derived";
			cases.push(c);
		}
	}
}
if (fixturesDir) {
	for (const f of FIXTURES) {
		for (const keep of f.keep) {
			const c = prepareCase(join(fixturesDir, f.file), "pi-fixtures", f.file, 16384, keep);
			c.keepKind = "fixture";
			cases.push(c);
		}
	}
}

const golden = {
	generator: "conformance/prepare.mjs",
	pi: PI_VERSION,
	dirs: {
		generated: "core/compaction/testdata/generated (from this package: testdata/generated)",
		"pi-fixtures": "../shared/testdata/pi from the repo root (from this package: ../../../shared/testdata/pi)",
	},
	notes: [
		"Path = root to the last entry of the file (pi's default leaf). settings = {enabled:true, reserveTokens, keepRecentTokens}.",
		"rangeStart/firstKeptIndex/turnStartIndex are indices into that path (findCutPoint's view); turnStartIndex -1 = none.",
		"cutClass: <type at the cut>/<split|clean>[/emptyPrefix][/noTurnStart]. keepKind: manifest (from manifest.json) | derived (chosen by sweeping keepRecentTokens so that each kind of cut appears) | fixture.",
		"nothingToCompact: pi returned undefined, or returned a preparation with no messages at all (pi does not treat that as nothing).",
		"serialized*: serializeConversation(convertToLlm(messages)) — chars in UTF-16 units, sha256 of its UTF-8 bytes.",
	],
	cases,
};
if (out) writeGolden(out, golden);
else process.stdout.write(`${pretty(golden)}\n`);
