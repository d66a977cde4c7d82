// piview.mjs — pi's own reading of a session file: its SessionManager
// (non-persisting, so the file is never rewritten), the leaf it picks, and
// buildSessionContext's messages converted for a model by convertToLlm —
// what `pith context --llm` prints for the same file.
//
// Usage: node test/piview.mjs FILE → one JSON object on stdout.
import { dirname } from "node:path";
import { convertToLlm, SessionManager } from "@mariozechner/pi-coding-agent";

const file = process.argv[2];
const sm = new SessionManager(dirname(file), "", file, false);
const ctx = sm.buildSessionContext();
process.stdout.write(
	JSON.stringify({
		leafId: sm.getLeafId(),
		messages: convertToLlm(ctx.messages),
		roles: ctx.messages.map((m) => m.role),
	}),
);
