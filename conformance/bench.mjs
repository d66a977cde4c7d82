// Times pi 0.73.1 on one session file, for scripts/bench-vs-pi.sh. Mode
// "open": readFileSync, parseSessionEntries, migration, the id index and
// buildSessionContext, as pi's SessionManager does when it opens a session.
// Mode "prepare": prepareCompaction on the path root → last entry of an
// already opened session. Prints the best of N runs in milliseconds.
import { readFileSync } from "node:fs";
import { compaction, openSession, sessionManager as sm } from "./lib.mjs";

const [mode, file, runsArg] = process.argv.slice(2);
const runs = Number(runsArg ?? 5);
let best = Infinity;
if (mode === "open") {
	for (let r = 0; r < runs; r++) {
		const t0 = performance.now();
		const entries = sm.parseSessionEntries(readFileSync(file, "utf8"));
		sm.migrateSessionEntries?.(entries);
		const byId = new Map();
		for (const e of entries) if (e.id) byId.set(e.id, e);
		const ctx = sm.buildSessionContext(entries.filter((e) => e.type !== "session"), undefined, byId);
		best = Math.min(best, performance.now() - t0);
		if (ctx.messages.length === 0) throw new Error("empty context");
	}
} else if (mode === "prepare") {
	const path = openSession(file).getBranch();
	const settings = { enabled: true, reserveTokens: 16384, keepRecentTokens: 20000 };
	for (let r = 0; r < runs; r++) {
		const t0 = performance.now();
		compaction.prepareCompaction(path, settings);
		best = Math.min(best, performance.now() - t0);
	}
} else {
	throw new Error("usage: bench.mjs open|prepare FILE [RUNS]");
}
console.log(best.toFixed(1));
