// context.mjs — pi's view of session files: parse + migrate, build the
// context with the default leaf, and the token estimates.
//
// Usage: node context.mjs [--out-context F] [--out-estimates F] [--dir-note TEXT] session.jsonl...
// Without --out-* options the combined report is printed to stdout.
import { compaction, fileRef, lineIndexOfEntries, openSession, PI_VERSION, pretty, sessionManager, writeGolden } from "./lib.mjs";

const { estimateTokens, estimateContextTokens } = compaction;

function argChars(message) {
	if (message.role !== "assistant" || !Array.isArray(message.content)) return undefined;
	const out = [];
	for (const b of message.content) {
		if (b.type === "toolCall") out.push({ name: b.name, argsJsonChars: JSON.stringify(b.arguments).length });
	}
	return out.length ? out : undefined;
}

// otherLeaves builds the context at leaves other than the default: entries
// on abandoned branches, compactions and the entries just before them, the
// first entry, an unknown id (pi falls back to the last entry) and an explicit
// null (empty context).
function otherLeaves(sm, entries) {
	const onPath = new Set(sm.getBranch().map((e) => e.id));
	const picks = [];
	const add = (id, why) => {
		if (picks.length < 12 && !picks.some((p) => p.leafId === id)) picks.push({ leafId: id, why });
	};
	const off = entries.filter((e) => !onPath.has(e.id));
	if (off.length) {
		add(off[Math.floor(off.length / 2)].id, "abandoned");
		add(off[off.length - 1].id, "abandoned");
	}
	entries.forEach((e, i) => {
		if (e.type === "compaction") {
			add(e.id, "compaction");
			if (i > 0) add(entries[i - 1].id, "beforeCompaction");
		}
	});
	if (entries.length) {
		add(entries[0].id, "first");
		add(entries[Math.floor(entries.length / 2)].id, "middle");
	}
	add("ffffffff", "unknownFallsBackToLast");
	add(null, "explicitNull");
	const byId = new Map(entries.map((e) => [e.id, e]));
	return picks.map(({ leafId, why }) => {
		const ctx = sessionManager.buildSessionContext(entries, leafId, byId);
		const est = estimateContextTokens(ctx.messages);
		return {
			leafId,
			why,
			messages: ctx.messages.length,
			roles: ctx.messages.map((m) => m.role),
			tokens: est.tokens,
			usageTokens: est.usageTokens,
			trailingTokens: est.trailingTokens,
			lastUsageIndex: est.lastUsageIndex,
			model: ctx.model,
			thinkingLevel: ctx.thinkingLevel,
		};
	});
}

// report describes one file. rawVersion is the header version as written in
// the file; v1 files get random ids from pi's migration, so their ids are
// left out and entries are identified by line.
function report(path, rawVersion) {
	const idsRandom = rawVersion < 2;
	const sm = openSession(path);
	const header = sm.getHeader();
	const entries = sm.getEntries();
	const lines = lineIndexOfEntries(path);
	// fileEntries includes the header; entries excludes it. Lines align with fileEntries.
	const lineOf = new Map();
	const all = [header, ...entries];
	if (all.length !== lines.length) throw new Error(`${path}: loader kept ${all.length} entries, line scan ${lines.length}`);
	all.forEach((e, i) => lineOf.set(e, lines[i]));
	const msgLine = new Map();
	for (const e of entries) if (e.type === "message") msgLine.set(e.message, lineOf.get(e));
	const idToLine = new Map(entries.map((e) => [e.id, lineOf.get(e)]));

	const ctx = sm.buildSessionContext();
	const est = estimateContextTokens(ctx.messages);
	const leaf = sm.getLeafEntry();
	const perMessage = ctx.messages.map((m, index) => ({
		index,
		role: m.role,
		estimate: estimateTokens(m),
		...(msgLine.has(m) ? { line: msgLine.get(m) } : {}),
	}));
	const perEntry = [];
	for (const e of entries) {
		const rec = { line: lineOf.get(e), type: e.type };
		if (!idsRandom) rec.id = e.id;
		if (e.type === "message") {
			rec.role = e.message.role;
			rec.estimate = estimateTokens(e.message);
			const ac = argChars(e.message);
			if (ac) rec.toolCalls = ac;
		} else if (e.type === "compaction") {
			rec.firstKeptLine = idToLine.has(e.firstKeptEntryId) ? idToLine.get(e.firstKeptEntryId) : null;
			rec.estimate = estimateTokens({ role: "compactionSummary", summary: e.summary });
		} else if (e.type === "branch_summary") {
			rec.estimate = estimateTokens({ role: "branchSummary", summary: e.summary });
		} else if (e.type === "custom_message") {
			rec.estimate = estimateTokens({ role: "custom", content: e.content });
		}
		perEntry.push(rec);
	}
	return {
		leaves: idsRandom ? undefined : otherLeaves(sm, entries),
		file: fileRef(path),
		fileVersion: rawVersion,
		idsFromFile: !idsRandom,
		entries: entries.length,
		leafId: idsRandom ? null : (leaf?.id ?? null),
		leafLine: leaf ? lineOf.get(leaf) : null,
		messages: ctx.messages.length,
		roles: ctx.messages.map((m) => m.role),
		tokens: est.tokens,
		usageTokens: est.usageTokens,
		trailingTokens: est.trailingTokens,
		lastUsageIndex: est.lastUsageIndex,
		model: ctx.model,
		thinkingLevel: ctx.thinkingLevel,
		perMessage,
		perEntry,
	};
}


const args = process.argv.slice(2);
let outContext;
let outEstimates;
let dirNote = "shared/testdata/pi (repo-root relative: ../shared/testdata/pi; from a package dir: ../../../shared/testdata/pi)";
const files = [];
for (let i = 0; i < args.length; i++) {
	if (args[i] === "--out-context") outContext = args[++i];
	else if (args[i] === "--dir-note") dirNote = args[++i];
	else if (args[i] === "--out-estimates") outEstimates = args[++i];
	else files.push(args[i]);
}
if (files.length === 0) {
	console.error("usage: node context.mjs [--out-context F] [--out-estimates F] session.jsonl...");
	process.exit(2);
}

const reports = [];
for (const f of files) {
	const first = sessionManager.loadEntriesFromFile(f)[0];
	reports.push(report(f, first?.version ?? 1));
}

const meta = {
	generator: "conformance/context.mjs",
	pi: PI_VERSION,
	fixtureDir: dirNote,
};
if (!outContext && !outEstimates) {
	process.stdout.write(`${pretty({ ...meta, files: reports })}\n`);
} else {
	if (outContext) {
		// leaves go last so the per-file summary stays at the top of each record
		const ctx = reports.map(({ perEntry, leaves, ...rest }) => ({ ...rest, leaves }));
		writeGolden(outContext, { ...meta, files: ctx });
	}
	if (outEstimates) {
		const est = reports.map((r) => ({ file: r.file, fileVersion: r.fileVersion, idsFromFile: r.idsFromFile, perEntry: r.perEntry }));
		writeGolden(outEstimates, { ...meta, files: est });
	}
}
