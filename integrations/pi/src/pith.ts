// The two ways to reach Pith, behind one interface: the one-shot CLI
// (PITH_BIN) or a running daemon (PITH_SERVE). Both stream progress and end
// in one result, checked the same way.

import { type CallOptions, runCli } from "./cli.ts";
import { checkCompactResult, checkNavigateResult, type CompactResult, type NavigateResult, PithError } from "./protocol.ts";
import type { Settings } from "./settings.ts";

export interface Pith {
	compact(file: string, request: object, pathIds: ReadonlySet<string>, opts: CallOptions): Promise<CompactResult>;
	navigate(file: string, request: object, opts: CallOptions): Promise<NavigateResult>;
	notify(op: "compact" | "tree", file: string, request: object, opts: CallOptions): Promise<void>;
}

/** A call: the operation, pi's session file, the request; the result object. */
export type Call = (op: string, file: string, request: object, opts: CallOptions) => Promise<Record<string, unknown>>;

export function connect(settings: Settings): Pith {
	const call: Call = settings.serve
		? async (op, file, request, opts) => (await import("./serve.ts")).callServe(settings, op, file, request, opts)
		: (op, file, request, opts) => runCli(settings.bin, ["propose", op, file], request, opts);
	return {
		async compact(file, request, pathIds, opts) {
			return checkCompactResult(await call("compact", file, request, opts), pathIds);
		},
		async navigate(file, request, opts) {
			return checkNavigateResult(await call("navigate", file, request, opts));
		},
		async notify(op, file, request, opts) {
			const r = await call(op === "compact" ? "notify-compact" : "notify-tree", file, request, opts);
			if (r.outcome !== "notified") throw new PithError("garbage", `Pith answered a notification with outcome ${JSON.stringify(r.outcome)}`);
		},
	};
}
