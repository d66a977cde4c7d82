// One-shot Pith: `pith propose <op> FILE`, the request as one JSON object on
// stdin, NDJSON events on stdout. The process runs in a process group of its
// own so that a timeout or an Escape ends it and everything it started
// (plugins, a summarizer's helpers) — TERM first, KILL after a grace period.

import { spawn } from "node:child_process";
import { clip, parseLine, PithAborted, PithError, type ProgressEvent } from "./protocol.ts";

/** Time Pith gets between TERM and KILL. */
const KILL_GRACE_MS = 2000;
/** One line longer than this is garbage (the largest answer carries auto-read files). */
const MAX_LINE_BYTES = 256 << 20;
/** What is kept of stderr for the notice when Pith fails. */
const STDERR_TAIL = 4096;

export interface CallOptions {
	signal?: AbortSignal;
	timeoutMs: number;
	onEvent?: (ev: ProgressEvent) => void;
}

/**
 * Runs `bin args…` with request on stdin and resolves with the one result
 * event's object; rejects with PithError (missing, crashed, garbage, timeout,
 * error) or PithAborted.
 */
export function runCli(bin: string, args: string[], request: unknown, opts: CallOptions): Promise<Record<string, unknown>> {
	return new Promise((resolve, reject) => {
		if (opts.signal?.aborted) {
			reject(new PithAborted());
			return;
		}
		let settled = false;
		let failure: Error | undefined;
		let result: Record<string, unknown> | undefined;
		let errorMessage: string | undefined;
		let stderrTail = "";
		let pending = "";
		let killTimer: NodeJS.Timeout | undefined;

		const child = spawn(bin, args, {
			stdio: ["pipe", "pipe", "pipe"],
			detached: process.platform !== "win32",
			windowsHide: true,
		});

		const kill = (why: Error) => {
			failure ??= why;
			signalGroup("SIGTERM");
			killTimer ??= setTimeout(() => signalGroup("SIGKILL"), KILL_GRACE_MS);
			killTimer.unref();
		};
		const signalGroup = (sig: NodeJS.Signals) => {
			// Even once the leader has exited its group may live on (a plugin
			// that ignored TERM), so the group is signalled, not the pid.
			try {
				if (child.pid !== undefined && process.platform !== "win32") process.kill(-child.pid, sig);
				else child.kill(sig);
			} catch {
				// ESRCH: the group has ended already.
			}
		};

		const timer = setTimeout(() => kill(new PithError("timeout", `Pith did not answer within ${Math.round(opts.timeoutMs / 100) / 10}s`)), opts.timeoutMs);
		timer.unref();
		const onAbort = () => kill(new PithAborted());
		opts.signal?.addEventListener("abort", onAbort, { once: true });

		const handleLine = (line: string) => {
			if (line.endsWith("\r")) line = line.slice(0, -1);
			if (line.trim() === "") return;
			const ev = parseLine(line);
			switch (ev.type) {
				case "progress":
				case "warning":
					if (ev.message) opts.onEvent?.(ev);
					break;
				case "result":
					if (result) throw new PithError("garbage", "Pith sent two results");
					result = ev.result;
					break;
				case "error":
					errorMessage = ev.message;
					break;
			}
		};

		child.stdout.setEncoding("utf8");
		child.stdout.on("data", (chunk: string) => {
			if (failure) return;
			pending += chunk;
			// Records end at LF only: U+2028 and U+2029 are valid inside JSON strings.
			let nl = pending.indexOf("\n");
			try {
				while (nl >= 0) {
					handleLine(pending.slice(0, nl));
					pending = pending.slice(nl + 1);
					nl = pending.indexOf("\n");
				}
				if (pending.length > MAX_LINE_BYTES) throw new PithError("garbage", "Pith wrote a line longer than 256 MiB");
			} catch (err) {
				kill(err as Error);
			}
		});
		child.stderr.setEncoding("utf8");
		child.stderr.on("data", (chunk: string) => {
			stderrTail = (stderrTail + chunk).slice(-STDERR_TAIL);
		});
		// Pith may exit before reading all of stdin (an early error): EPIPE is
		// not ours to report, its exit status is.
		child.stdin.on("error", () => {});

		const finish = (err: Error | undefined, value?: Record<string, unknown>) => {
			if (settled) return;
			settled = true;
			clearTimeout(timer);
			opts.signal?.removeEventListener("abort", onAbort);
			if (err) reject(err);
			else resolve(value!);
		};

		child.on("error", (err: NodeJS.ErrnoException) => {
			clearTimeout(killTimer);
			if (err.code === "ENOENT") finish(new PithError("missing", `${bin} was not found (set PITH_BIN to the pith binary)`));
			else if (err.code === "EACCES") finish(new PithError("missing", `${bin} cannot be run: ${err.message}`));
			else finish(failure ?? new PithError("crashed", `${bin}: ${err.message}`));
		});
		child.on("close", (code, sig) => {
			// The leader is gone: whatever is left of its group goes too.
			if (failure) signalGroup("SIGKILL");
			clearTimeout(killTimer);
			if (failure) return finish(failure);
			if (pending.trim() !== "") {
				try {
					handleLine(pending);
				} catch (err) {
					return finish(err as Error);
				}
			}
			if (code === 0 && result) return finish(undefined, result);
			const said = errorMessage ?? lastLine(stderrTail);
			if (code === 0) return finish(new PithError("garbage", "Pith exited without a result"));
			const how = sig ? `was killed by ${sig}` : `exited with status ${code}`;
			finish(new PithError(errorMessage ? "error" : "crashed", `Pith ${how}${said ? `: ${clip(said, 300)}` : ""}`));
		});

		child.stdin.end(`${JSON.stringify(request)}\n`);
	});
}

function lastLine(s: string): string {
	const lines = s.split("\n").filter((l) => l.trim() !== "");
	return lines.length ? lines[lines.length - 1] : "";
}
