// The events Pith streams back for one propose or notify call, and the checks
// that turn anything else into a PithError: an answer that does not have
// exactly the shape pi needs is garbage, and pi compacts by itself.

export type FailureKind = "missing" | "crashed" | "garbage" | "timeout" | "error" | "refused";

/** A Pith call that did not give an answer pi can use. */
export class PithError extends Error {
	constructor(
		readonly kind: FailureKind,
		message: string,
	) {
		super(message);
		this.name = "PithError";
	}
}

/** The user pressed Escape: Pith's work was stopped. */
export class PithAborted extends Error {
	constructor() {
		super("aborted");
		this.name = "PithAborted";
	}
}

/** What the extension writes through pi after pi saved the entry. */
export type ExtraEntry =
	| { kind: "message"; customType: string; content: string | unknown[]; display: boolean; details?: unknown }
	| { kind: "custom"; customType: string; data?: unknown };

export interface Compaction {
	summary: string;
	firstKeptEntryId: string;
	tokensBefore: number;
	details?: unknown;
}

export type CompactResult =
	| { outcome: "compacted"; compaction: Compaction; entries: ExtraEntry[] }
	| { outcome: "cancelled"; reason: string; by?: string }
	| { outcome: "nothing"; reason: string };

export type NavigateResult =
	| { outcome: "summarized"; summary: { summary: string; details?: unknown }; label?: string; entries: ExtraEntry[] }
	| { outcome: "cancelled"; reason: string; by?: string }
	| { outcome: "none"; label?: string };

export interface ProgressEvent {
	type: "progress" | "warning";
	stage?: string;
	message: string;
}

/** One NDJSON line: a progress or warning, the result, or an error. */
export type StreamEvent = ProgressEvent | { type: "result"; result: Record<string, unknown> } | { type: "error"; message: string };

export function parseLine(line: string): StreamEvent {
	let v: unknown;
	try {
		v = JSON.parse(line);
	} catch {
		throw new PithError("garbage", `Pith wrote a line that is not JSON: ${clip(line)}`);
	}
	if (!isObject(v) || typeof v.type !== "string") {
		throw new PithError("garbage", `Pith wrote an event without a type: ${clip(line)}`);
	}
	switch (v.type) {
		case "progress":
		case "warning":
			return { type: v.type, stage: typeof v.stage === "string" ? v.stage : undefined, message: String(v.message ?? "") };
		case "result":
			return { type: "result", result: v };
		case "error":
			return { type: "error", message: typeof v.message === "string" ? v.message : clip(line) };
		default:
			// A newer Pith may add event types; an unknown one is not an answer
			// and is passed over, as a progress line would be.
			return { type: "progress", message: "" };
	}
}

export function checkCompactResult(r: Record<string, unknown>, pathIds: ReadonlySet<string>): CompactResult {
	switch (r.outcome) {
		case "compacted": {
			const c = r.compaction;
			if (!isObject(c)) throw garbage("a compaction result without its compaction");
			if (typeof c.summary !== "string" || c.summary.trim() === "") throw garbage("an empty summary");
			if (typeof c.firstKeptEntryId !== "string" || !pathIds.has(c.firstKeptEntryId)) {
				throw garbage(`firstKeptEntryId ${JSON.stringify(c.firstKeptEntryId)}, which is not on pi's current branch`);
			}
			if (typeof c.tokensBefore !== "number" || !Number.isFinite(c.tokensBefore) || c.tokensBefore < 0) {
				throw garbage("a compaction without a token count");
			}
			if (c.details !== undefined && c.details !== null && !isObject(c.details)) throw garbage("details that are not an object");
			return {
				outcome: "compacted",
				compaction: {
					summary: c.summary,
					firstKeptEntryId: c.firstKeptEntryId,
					tokensBefore: Math.round(c.tokensBefore),
					details: c.details ?? undefined,
				},
				entries: checkEntries(r.entries),
			};
		}
		case "cancelled":
			return { outcome: "cancelled", reason: typeof r.reason === "string" ? r.reason : "", by: typeof r.by === "string" ? r.by : undefined };
		case "nothing":
			return { outcome: "nothing", reason: typeof r.reason === "string" ? r.reason : "" };
	}
	throw garbage(`outcome ${JSON.stringify(r.outcome)} for a compaction`);
}

export function checkNavigateResult(r: Record<string, unknown>): NavigateResult {
	switch (r.outcome) {
		case "summarized": {
			const s = r.summary;
			if (!isObject(s) || typeof s.summary !== "string" || s.summary.trim() === "") throw garbage("an empty branch summary");
			if (s.details !== undefined && s.details !== null && !isObject(s.details)) throw garbage("details that are not an object");
			if (r.label !== undefined && r.label !== null && typeof r.label !== "string") throw garbage("a label that is not a string");
			return {
				outcome: "summarized",
				summary: { summary: s.summary, details: s.details ?? undefined },
				label: typeof r.label === "string" && r.label !== "" ? r.label : undefined,
				entries: checkEntries(r.entries),
			};
		}
		case "cancelled":
			return { outcome: "cancelled", reason: typeof r.reason === "string" ? r.reason : "", by: typeof r.by === "string" ? r.by : undefined };
		case "none":
			if (r.label !== undefined && r.label !== null && typeof r.label !== "string") throw garbage("a label that is not a string");
			return { outcome: "none", label: typeof r.label === "string" && r.label !== "" ? r.label : undefined };
	}
	throw garbage(`outcome ${JSON.stringify(r.outcome)} for a navigation`);
}

function checkEntries(v: unknown): ExtraEntry[] {
	if (v === undefined || v === null) return [];
	if (!Array.isArray(v)) throw garbage("entries that are not a list");
	return v.map((e, i): ExtraEntry => {
		if (!isObject(e) || typeof e.customType !== "string" || e.customType === "") throw garbage(`entry ${i} without a customType`);
		if (e.kind === "message") {
			if (typeof e.content !== "string" && !Array.isArray(e.content)) throw garbage(`entry ${i} without content`);
			return { kind: "message", customType: e.customType, content: e.content, display: e.display !== false, details: e.details ?? undefined };
		}
		if (e.kind === "custom") return { kind: "custom", customType: e.customType, data: e.data ?? undefined };
		throw garbage(`entry ${i} of kind ${JSON.stringify(e.kind)}`);
	});
}

function garbage(what: string): PithError {
	return new PithError("garbage", `Pith answered with ${what}`);
}

export function isObject(v: unknown): v is Record<string, unknown> {
	return typeof v === "object" && v !== null && !Array.isArray(v);
}

export function clip(s: string, n = 200): string {
	const one = s.replace(/\s+/g, " ").trim();
	return one.length > n ? `${one.slice(0, n)}…` : one;
}
