// branch.mjs — pi's branch-summary preparation for tree navigation:
// collectEntriesForBranchSummary(oldLeaf = last entry, target) and
// prepareBranchEntries(entries, budget) over chosen targets and budgets.
//
// Usage: node branch.mjs --manifest generated/manifest.json [--out F]
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import {
	branchSummarization,
	compaction,
	fileOpsLists,
	messages as piMessages,
	openSession,
	PI_VERSION,
	pretty,
	utils,
	writeGolden,
} from "./lib.mjs";

const { collectEntriesForBranchSummary, prepareBranchEntries } = branchSummarization;
const { estimateTokens } = compaction;

const DEFAULT_BUDGET = 128000 - 16384;

function serialized(msgs) {
	const text = utils.serializeConversation(piMessages.convertToLlm(msgs));
	return { chars: text.length, sha256: createHash("sha256").update(text, "utf8").digest("hex") };
}

// yieldsMessage mirrors which entries give prepareBranchEntries a message,
// so budgets can be chosen that land on its interesting edges.
function messageTokens(entry) {
	switch (entry.type) {
		case "message":
			return entry.message.role === "toolResult" ? undefined : estimateTokens(entry.message);
		case "custom_message":
			return estimateTokens({ role: "custom", content: entry.content });
		case "branch_summary":
			return estimateTokens({ role: "branchSummary", summary: entry.summary });
		case "compaction":
			return estimateTokens({ role: "compactionSummary", summary: entry.summary });
		default:
			return undefined;
	}
}

// budgets returns the budgets to try for one entry list: the default, two
// small fixed ones, and ones derived from the walk so that (a) the cut falls
// on an ordinary message, (b) a summary entry is still taken under the 90 %
// rule, (c) a summary entry is refused because the total is already >= 90 %.
function budgets(entries) {
	const out = [
		{ budget: DEFAULT_BUDGET, kind: "default" },
		{ budget: 1500, kind: "small" },
		{ budget: 400, kind: "small" },
	];
	let total = 0;
	let cut = false;
	let take = false;
	let refuse = false;
	for (let i = entries.length - 1; i >= 0; i--) {
		const t = messageTokens(entries[i]);
		if (t === undefined) continue;
		const summary = entries[i].type === "compaction" || entries[i].type === "branch_summary";
		if (!summary && !cut && total > 0 && t > 1) {
			out.push({ budget: total + t - 1, kind: "cutMessage" });
			cut = true;
		}
		if (summary && t > 1) {
			const b = Math.floor(total / 0.9) + 1; // total < 0.9*b
			if (!take && total > 0 && b < total + t) {
				out.push({ budget: b, kind: "ninetyTake" });
				take = true;
			}
			if (!refuse && total >= 9 && total + 1 < total + t && total >= 0.9 * (total + 1)) {
				out.push({ budget: total + 1, kind: "ninetyRefuse" });
				refuse = true;
			}
		}
		total += t;
	}
	return out;
}

// targets picks navigation targets for a session: entries on abandoned
// branches, ancestors on the current path, the root, and summary entries.
function targets(sm) {
	const all = sm.getEntries();
	const leaf = sm.getLeafId();
	const onPath = new Set(sm.getBranch().map((e) => e.id));
	const off = all.filter((e) => !onPath.has(e.id));
	const path = all.filter((e) => onPath.has(e.id) && e.id !== leaf);
	const picks = [];
	const add = (e, relation) => {
		if (e && !picks.some((p) => p.id === e.id)) picks.push({ id: e.id, relation });
	};
	if (off.length) {
		add(off[Math.floor(off.length / 3)], "abandoned");
		add(off[Math.floor((2 * off.length) / 3)], "abandoned");
		add(off[off.length - 1], "abandoned");
	}
	if (path.length) {
		add(path[Math.floor(path.length / 2)], "ancestor");
		add(path[0], "root");
	}
	add(
		all.find((e) => e.type === "message" && e.message.role === "user" && !onPath.has(e.id)),
		"abandonedUser",
	);
	// Navigating to the current leaf: pi's navigateTree returns early, but
	// collect must still give nothing (the leaf is its own common ancestor).
	add(all.find((e) => e.id === leaf), "self");
	return picks;
}

function cases(path, file) {
	const sm = openSession(path);
	const oldLeafId = sm.getLeafId();
	const out = [];
	for (const t of targets(sm)) {
		const { entries, commonAncestorId } = collectEntriesForBranchSummary(sm, oldLeafId, t.id);
		for (const { budget, kind } of budgets(entries)) {
			const prep = prepareBranchEntries(entries, budget);
			const { readFiles, modifiedFiles } = fileOpsLists(prep.fileOps);
			out.push({
				file,
				oldLeafId,
				targetId: t.id,
				targetRelation: t.relation,
				budget,
				budgetKind: kind,
				commonAncestorId,
				entriesToSummarize: entries.length,
				entryIds: entries.map((e) => e.id),
				messages: prep.messages.length,
				messageRoles: prep.messages.map((m) => m.role),
				tokens: prep.totalTokens,
				overBudget: prep.totalTokens > budget,
				serialized: serialized(prep.messages),
				readFiles,
				modifiedFiles,
			});
		}
	}
	return out;
}

const args = process.argv.slice(2);
let manifestPath;
let out;
for (let i = 0; i < args.length; i++) {
	if (args[i] === "--manifest") manifestPath = args[++i];
	else if (args[i] === "--out") out = args[++i];
	else {
		console.error(`branch.mjs: unknown argument ${args[i]}`);
		process.exit(2);
	}
}
if (!manifestPath) {
	console.error("usage: node branch.mjs --manifest M [--out F]");
	process.exit(2);
}
const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
const all = [];
for (const f of manifest.files) all.push(...cases(join(dirname(manifestPath), f.file), f.file));

const golden = {
	generator: "conformance/branch.mjs",
	pi: PI_VERSION,
	dir: "core/branch/testdata/generated (from this package: testdata/generated)",
	notes: [
		"oldLeafId = last entry of the file (pi's leaf after loading); entries = collectEntriesForBranchSummary(session, oldLeafId, targetId).",
		"messages/tokens/readFiles/modifiedFiles = prepareBranchEntries(entries, budget); default budget = 128000 - 16384.",
		"budgetKind: default | small (fixed) | cutMessage (stops at an ordinary message) | ninetyTake (a summary entry taken past the budget under the 90% rule) | ninetyRefuse (a summary entry refused, total already >= 90%).",
		"overBudget: totalTokens > budget (only possible through the 90% rule).",
		"serialized = serializeConversation(convertToLlm(messages)): UTF-16 length, sha256 of UTF-8.",
	],
	cases: all,
};
if (out) writeGolden(out, golden);
else process.stdout.write(`${pretty(golden)}\n`);
