// pi-leaf.mjs — what pi 0.73.1 makes of session files Pith navigated:
// the leaf pi picks on load and the context it builds there. Used by
// core/branch's TestPiReadsNavigatedFiles.
//
// Usage: node pi-leaf.mjs FILE... → one JSON array on stdout.
import { compaction, openSession } from "../../../conformance/lib.mjs";

const out = process.argv.slice(2).map((file) => {
	const sm = openSession(file);
	const ctx = sm.buildSessionContext();
	return {
		file,
		leafId: sm.getLeafId(),
		messages: ctx.messages.map((m) => ({ role: m.role, tokens: compaction.estimateTokens(m) })),
	};
});
process.stdout.write(JSON.stringify(out));
