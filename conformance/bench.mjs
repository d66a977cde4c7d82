// Times pi 0.73.1's own parse + context build on one session file, for the
// comparison in scripts/bench-vs-pi.sh: readFileSync, parseSessionEntries,
// migration, the id index and buildSessionContext, as pi's SessionManager
// does them when it opens a session. Prints the best of N runs in ms.
import { readFileSync } from "node:fs";
import { sessionManager as sm } from "./lib.mjs";

const file = process.argv[2];
const runs = Number(process.argv[3] ?? 5);
let best = Infinity;
for (let r = 0; r < runs; r++) {
	const t0 = performance.now();
	const entries = sm.parseSessionEntries(readFileSync(file, "utf8"));
	sm.migrateSessionEntries?.(entries);
	const byId = new Map();
	for (const e of entries) if (e.id) byId.set(e.id, e);
	const ctx = sm.buildSessionContext(entries.filter((e) => e.type !== "session"), undefined, byId);
	const ms = performance.now() - t0;
	if (ctx.messages.length === 0) throw new Error("empty context");
	best = Math.min(best, ms);
}
console.log(best.toFixed(1));
