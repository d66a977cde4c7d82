// pi-context.mjs — pi 0.73.1's context of session files: the leaf its
// loader picks, the roles of buildSessionContext's messages and
// estimateContextTokens over them. Used by the multi-host test to check
// that every session the hosts wrote to PostgreSQL, exported to a file, is
// what pi reads there.
//
// Usage: node pi-context.mjs FILE... → one JSON array on stdout.
import { compaction, openSession } from "../../../conformance/lib.mjs";

const out = process.argv.slice(2).map((file) => {
	const sm = openSession(file);
	const ctx = sm.buildSessionContext();
	return {
		file,
		leafId: sm.getLeafId(),
		roles: ctx.messages.map((m) => m.role),
		tokens: compaction.estimateContextTokens(ctx.messages).tokens,
	};
});
process.stdout.write(JSON.stringify(out));
