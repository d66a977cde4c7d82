// Where Pith is and how long it may take, read from the environment once per
// call: a shell that changes PITH_* between two compactions of a running pi is
// honoured at the next one.

export const DEFAULT_TIMEOUT_MS = 120_000;

export interface Settings {
	/** The pith executable for one-shot calls (PITH_BIN, default `pith` on PATH). */
	bin: string;
	/** A running `pith serve` (PITH_SERVE: host:port or unix:/path); unset: the CLI. */
	serve?: string;
	/** Bearer token for the daemon (PITH_TOKEN). */
	token?: string;
	/** The directory the daemon's sessions.root names (PITH_SESSIONS_ROOT). */
	sessionsRoot?: string;
	/** How long one Pith call may take before pi compacts by itself (PITH_TIMEOUT). */
	timeoutMs: number;
	/** Problems with the settings, reported once. */
	problems: string[];
}

export function readSettings(env: NodeJS.ProcessEnv = process.env): Settings {
	const problems: string[] = [];
	let timeoutMs = DEFAULT_TIMEOUT_MS;
	const raw = env.PITH_TIMEOUT?.trim();
	if (raw) {
		const parsed = parseDuration(raw);
		if (parsed === undefined) {
			problems.push(`PITH_TIMEOUT=${JSON.stringify(raw)} is not a duration (e.g. 120, 90s, 500ms, 2m); using ${DEFAULT_TIMEOUT_MS / 1000}s`);
		} else {
			timeoutMs = parsed;
		}
	}
	return {
		bin: env.PITH_BIN?.trim() || "pith",
		serve: env.PITH_SERVE?.trim() || undefined,
		token: env.PITH_TOKEN?.trim() || undefined,
		sessionsRoot: env.PITH_SESSIONS_ROOT?.trim() || undefined,
		timeoutMs,
		problems,
	};
}

/** Seconds as a bare number, or a number with ms, s or m; positive only. */
export function parseDuration(s: string): number | undefined {
	const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(s);
	if (!m) return undefined;
	const n = Number(m[1]);
	const ms = m[2] === "ms" ? n : m[2] === "m" ? n * 60_000 : n * 1000;
	return ms > 0 && Number.isFinite(ms) ? Math.round(ms) : undefined;
}
