// Pith inside pi: pi's compaction and tree navigation are handed to Pith,
// which runs its whole pipeline (plugins, policies, summarizers, the exploring
// strategy, the summary checks) read-only on pi's session file and answers
// with what pi should write. pi stays the only writer of its file: the
// compaction or branch summary is pi's own entry, and what Pith adds beside it
// (auto-read files, plugins' messages) is written through pi's extension API
// once pi has saved it. Whatever goes wrong with Pith, pi compacts by itself.
//
//   pi -e ./integrations/pi/index.ts       (or `pi install ./integrations/pi`)
//
// Settings (environment): PITH_BIN, PITH_CONFIG, PITH_SERVE, PITH_TOKEN,
// PITH_SESSIONS_ROOT, PITH_TIMEOUT. See README.md beside this file.

import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { isContextOverflow } from "@mariozechner/pi-ai";
import { connect, type Pith } from "./src/pith.ts";
import { type ExtraEntry, PithAborted, PithError, type ProgressEvent } from "./src/protocol.ts";
import { readSettings } from "./src/settings.ts";

/** Extra entries waiting for pi to save the entry they follow. */
interface Pending {
	summary: string;
	entries: ExtraEntry[];
}

export default function pith(pi: ExtensionAPI) {
	let pendingCompact: Pending | undefined;
	let pendingTree: Pending | undefined;
	// Set when Pith failed on the proposal of the operation pi is finishing:
	// its notification is skipped, so a Pith that hangs costs one timeout and
	// one notice, not two.
	let failedCompact = false;
	let failedTree = false;
	let reportedSettings = false;

	const open = (ctx: ExtensionContext): Pith => {
		const settings = readSettings();
		if (!reportedSettings && settings.problems.length) {
			reportedSettings = true;
			for (const p of settings.problems) say(ctx, `Pith: ${p}`, "warning");
		}
		return connect(settings);
	};

	pi.on("session_before_compact", async (event, ctx) => {
		pendingCompact = undefined;
		failedCompact = false;
		const file = ctx.sessionManager.getSessionFile();
		if (!file) return; // an in-memory session: nothing Pith can read
		const prep = event.preparation;
		const request = {
			preparation: {
				firstKeptEntryId: prep.firstKeptEntryId,
				tokensBefore: prep.tokensBefore,
				isSplitTurn: prep.isSplitTurn,
				previousSummary: prep.previousSummary,
				settings: prep.settings,
				// The messages are not sent: Pith reads them from the file.
			},
			leafId: ctx.sessionManager.getLeafId(),
			customInstructions: event.customInstructions,
			reason: compactionReason(event, ctx),
			model: modelInfo(ctx),
		};
		const pathIds = new Set(event.branchEntries.map((e) => e.id));
		try {
			const r = await open(ctx).compact(file, request, pathIds, callOptions(ctx, event.signal));
			switch (r.outcome) {
				case "compacted":
					pendingCompact = { summary: r.compaction.summary, entries: r.entries };
					return { compaction: r.compaction };
				case "cancelled":
					say(ctx, `Compaction cancelled by ${r.by ?? "Pith"}${r.reason ? `: ${r.reason}` : ""}`, "warning");
					return { cancel: true };
				case "nothing":
					say(ctx, `Pith found nothing to compact${r.reason ? ` (${r.reason})` : ""}; pi compacts by itself`, "info");
					return undefined;
			}
		} catch (err) {
			failedCompact = !(err instanceof PithAborted);
			return onFailure(ctx, err, "compacts");
		}
	});

	pi.on("session_compact", async (event, ctx) => {
		const pending = pendingCompact;
		pendingCompact = undefined;
		if (pending && event.fromExtension && event.compactionEntry.summary === pending.summary) write(pi, pending.entries);
		if (failedCompact) {
			failedCompact = false;
			return;
		}
		await notify(ctx, "compact", { compactionEntry: event.compactionEntry, fromExtension: event.fromExtension });
	});

	pi.on("session_before_tree", async (event, ctx) => {
		pendingTree = undefined;
		failedTree = false;
		const prep = event.preparation;
		// Pith summarizes only what pi's user asked to have summarized; a
		// navigation without a summary is pi's alone (its notification still
		// reaches Pith's plugins below).
		if (!prep.userWantsSummary || prep.entriesToSummarize.length === 0) return;
		const file = ctx.sessionManager.getSessionFile();
		if (!file) return;
		const request = {
			targetId: prep.targetId,
			oldLeafId: prep.oldLeafId,
			summarize: prep.userWantsSummary,
			customInstructions: prep.customInstructions,
			replaceInstructions: prep.replaceInstructions,
			label: prep.label,
			model: modelInfo(ctx),
		};
		try {
			const r = await open(ctx).navigate(file, request, callOptions(ctx, event.signal));
			switch (r.outcome) {
				case "summarized":
					pendingTree = { summary: r.summary.summary, entries: r.entries };
					return { summary: r.summary, ...(r.label !== undefined ? { label: r.label } : {}) };
				case "cancelled":
					say(ctx, `Navigation cancelled by ${r.by ?? "Pith"}${r.reason ? `: ${r.reason}` : ""}`, "warning");
					return { cancel: true };
				case "none":
					return r.label !== undefined ? { label: r.label } : undefined;
			}
		} catch (err) {
			failedTree = !(err instanceof PithAborted);
			return onFailure(ctx, err, "summarizes the branch");
		}
	});

	pi.on("session_tree", async (event, ctx) => {
		const pending = pendingTree;
		pendingTree = undefined;
		if (pending && event.fromExtension && event.summaryEntry?.summary === pending.summary) write(pi, pending.entries);
		if (failedTree) {
			failedTree = false;
			return;
		}
		await notify(ctx, "tree", {
			newLeafId: event.newLeafId,
			oldLeafId: event.oldLeafId,
			summaryEntry: event.summaryEntry,
			fromExtension: event.fromExtension ?? false,
		});
	});

	/** Sends Pith's plugins the notification; a failure costs one notice. */
	const notify = async (ctx: ExtensionContext, op: "compact" | "tree", request: Record<string, unknown>) => {
		let file: string | undefined;
		let leafId: string | null;
		try {
			file = ctx.sessionManager.getSessionFile();
			leafId = ctx.sessionManager.getLeafId();
		} catch {
			return; // pi is shutting down (print mode ends before its compaction does)
		}
		if (!file) return;
		try {
			await open(ctx).notify(op, file, { ...request, leafId }, callOptions(ctx, undefined));
		} catch (err) {
			if (err instanceof PithAborted) return;
			say(ctx, `Pith's plugins were not told of the ${op === "compact" ? "compaction" : "navigation"}: ${message(err)}`, "warning");
		}
	};
}

/**
 * pi's event does not say why it compacts; what pi itself decides on is
 * rebuilt from what it decided with: an overflow error of the current model
 * as the last entry is overflow recovery; instructions mean /compact; a
 * context over pi's threshold with auto-compaction on is the threshold;
 * anything else was asked for.
 */
function compactionReason(
	event: { branchEntries: { type: string; message?: any }[]; customInstructions?: string; preparation: { settings: { enabled: boolean; reserveTokens: number } } },
	ctx: ExtensionContext,
): "manual" | "threshold" | "overflow" {
	if (event.customInstructions !== undefined) return "manual";
	const model = ctx.model;
	const last = [...event.branchEntries].reverse().find((e) => e.type === "message");
	const msg = last?.message;
	if (model && msg?.role === "assistant" && msg.stopReason === "error" && msg.provider === model.provider && msg.model === model.id) {
		if (isContextOverflow(msg, model.contextWindow ?? 0)) return "overflow";
	}
	const usage = ctx.getContextUsage();
	const settings = event.preparation.settings;
	if (settings.enabled && model?.contextWindow && usage?.tokens != null && usage.tokens > model.contextWindow - settings.reserveTokens) {
		return "threshold";
	}
	return "manual";
}

function modelInfo(ctx: ExtensionContext) {
	const m = ctx.model;
	return m ? { provider: m.provider, id: m.id, contextWindow: m.contextWindow, maxTokens: m.maxTokens } : undefined;
}

function callOptions(ctx: ExtensionContext, signal: AbortSignal | undefined) {
	return {
		signal,
		timeoutMs: readSettings().timeoutMs,
		onEvent: (ev: ProgressEvent) => say(ctx, `Pith: ${ev.message}`, ev.type === "warning" ? "warning" : "info", ev.type === "progress"),
	};
}

/**
 * The fallback: pi does the work itself, with one notice. Escape is not a
 * failure: Pith was stopped and pi cancels, writing nothing.
 */
function onFailure(ctx: ExtensionContext, err: unknown, what: string): { cancel: true } | undefined {
	if (err instanceof PithAborted) return { cancel: true };
	say(ctx, `Pith failed (${message(err)}); pi ${what} by itself`, "warning");
	return undefined;
}

/** Writes Pith's extra entries through pi, after the entry they follow. */
function write(pi: ExtensionAPI, entries: ExtraEntry[]) {
	for (const e of entries) {
		if (e.kind === "message") {
			pi.sendMessage({ customType: e.customType, content: e.content as any, display: e.display, details: e.details });
		} else {
			pi.appendEntry(e.customType, e.data);
		}
	}
}

/**
 * A notice for pi's user. Without a UI (print mode, JSON mode, the SDK)
 * notify does nothing, so warnings go to stderr — never stdout, which carries
 * pi's answer or event stream there — and progress is dropped.
 */
function say(ctx: ExtensionContext, text: string, level: "info" | "warning" | "error", progress = false) {
	try {
		if (ctx.hasUI) {
			ctx.ui.notify(text, level);
			return;
		}
	} catch {
		// A context pi has torn down (print mode exits while an automatic
		// compaction still runs): stderr is still there.
	}
	if (!progress && level !== "info") process.stderr.write(`${text}\n`);
}

function message(err: unknown): string {
	if (err instanceof PithError) return err.message;
	return err instanceof Error ? err.message : String(err);
}
