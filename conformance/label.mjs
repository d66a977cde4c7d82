// label.mjs — where pi's AgentSession.navigateTree puts a navigation label
// (options.label, or a session_before_tree extension's label), with and
// without a branch summary. navigateTree is run on pi's own SessionManager
// with an extension that answers the summary, so no model is called; the
// records say which entry the label names and hangs from, relative to the
// entries the navigation involved (the ids are random).
//
// Usage: node label.mjs --session F [--out F]
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { openSession, PI_VERSION, writeGolden } from "./lib.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const { AgentSession } = await import(
	pathToFileURL(join(here, "node_modules", "@mariozechner", "pi-coding-agent", "dist", "core", "agent-session.js")).href
);

const args = process.argv.slice(2);
const arg = (name) => {
	const i = args.indexOf(name);
	return i >= 0 ? args[i + 1] : undefined;
};
const source = arg("--session");
const out = arg("--out");

// The cases: the target, whether a summary is asked for, the label given,
// and what the extension answers.
const cases = [
	{ name: "option label, extension summary", target: "f75e41fb", summarize: true, label: "tried caching", answer: { summary: { summary: "ext summary" } } },
	{ name: "extension label and summary", target: "f75e41fb", summarize: true, answer: { summary: { summary: "ext summary" }, label: "from ext" } },
	{ name: "option label, no summary", target: "f75e41fb", summarize: false, label: "here" },
	{ name: "option label, no summary, user message", target: "85790ee4", summarize: false, label: "retry here" },
	{ name: "extension label, no summary", target: "f75e41fb", summarize: false, answer: { label: "from ext" } },
];

const records = [];
for (const c of cases) {
	const dir = mkdtempSync(join(tmpdir(), "pith-label-"));
	try {
		const path = join(dir, "s.jsonl");
		copyFileSync(source, path);
		const sm = openSession(path);
		const before = new Set(sm.getEntries().map((e) => e.id));
		const target = sm.getEntry(c.target);
		const self = {
			sessionManager: sm,
			model: {},
			agent: { state: {} },
			_extractUserMessageText: AgentSession.prototype._extractUserMessageText,
			_extensionRunner: {
				hasHandlers: (type) => type === "session_before_tree",
				emit: async (ev) => (ev.type === "session_before_tree" ? c.answer : undefined),
			},
		};
		const res = await AgentSession.prototype.navigateTree.call(self, c.target, { summarize: c.summarize, label: c.label });
		const added = sm.getEntries().filter((e) => !before.has(e.id));
		const summary = added.find((e) => e.type === "branch_summary");
		const label = added.find((e) => e.type === "label");
		const position = target.type === "message" && target.message.role === "user" ? target.parentId : c.target;
		const rel = (id) => (id == null ? "root" : summary && id === summary.id ? "summary" : id === c.target ? "target" : id === position ? "position" : id);
		records.push({
			case: c.name,
			targetId: c.target,
			summarize: c.summarize,
			label: c.label ?? null,
			answer: c.answer ?? null,
			cancelled: res.cancelled,
			summaryWritten: !!summary,
			labelEntry: label ? { label: label.label, targetId: rel(label.targetId), parentId: rel(label.parentId) } : null,
		});
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
}
writeGolden(out, { piVersion: PI_VERSION, cases: records });
