// sdk.mjs — pi's SDK (createAgentSession) with the Pith extension loaded, one
// scenario per run, for what pi's RPC mode cannot do: tree navigation
// (AgentSession.navigateTree) and Escape during a compaction
// (AgentSession.abortCompaction). The scenario's report is one JSON object
// on stdout.
//
// Usage: node test/sdk.mjs SPEC, SPEC = {"scenario","extension","agentDir",
// "cwd","sessions","args"}.
import { join } from "node:path";
import {
	AuthStorage,
	createAgentSession,
	DefaultResourceLoader,
	ModelRegistry,
	SessionManager,
	SettingsManager,
} from "@mariozechner/pi-coding-agent";

const spec = JSON.parse(process.argv[2]);
const { agentDir, cwd } = spec;

async function open(file, withExtension = true) {
	const authStorage = AuthStorage.create(join(agentDir, "auth.json"));
	const modelRegistry = ModelRegistry.create(authStorage, join(agentDir, "models.json"));
	const settingsManager = SettingsManager.create(cwd, agentDir);
	const resourceLoader = new DefaultResourceLoader({
		cwd,
		agentDir,
		settingsManager,
		additionalExtensionPaths: withExtension ? [spec.extension] : [],
		noSkills: true,
		noPromptTemplates: true,
		noThemes: true,
		noContextFiles: true,
	});
	await resourceLoader.reload();
	const model = modelRegistry.find("loop", "loop-model");
	if (!model) throw new Error("the loop model is not in models.json");
	const sessionManager = file ? SessionManager.open(file, spec.sessions) : SessionManager.create(cwd, spec.sessions);
	const { session } = await createAgentSession({
		cwd,
		agentDir,
		model,
		thinkingLevel: "off",
		authStorage,
		modelRegistry,
		settingsManager,
		resourceLoader,
		sessionManager,
		tools: [],
	});
	return session;
}

/** Resolves with the next line the test writes to stdin. */
function nextLine() {
	return new Promise((resolve) => {
		let buf = "";
		const onData = (chunk) => {
			buf += chunk;
			const nl = buf.indexOf("\n");
			if (nl >= 0) {
				process.stdin.off("data", onData);
				process.stdin.pause();
				resolve(buf.slice(0, nl));
			}
		};
		process.stdin.setEncoding("utf8");
		process.stdin.on("data", onData);
		process.stdin.resume();
	});
}

const scenarios = {
	// Three exchanges, then back to the first reply with a summary of the
	// abandoned two: the extension hands the summary to Pith.
	async tree(args) {
		const session = await open(undefined);
		for (let i = 1; i <= 3; i++) {
			await session.prompt(`Tree step ${i}: ${"work on the parser and report what you changed. ".repeat(6)}`);
		}
		const branch = session.sessionManager.getBranch();
		const firstReply = branch.find((e) => e.type === "message" && e.message.role === "assistant");
		const result = await session.navigateTree(firstReply.id, { summarize: true, label: args.label });
		const report = {
			file: session.sessionFile,
			target: firstReply.id,
			cancelled: result.cancelled,
			summaryEntry: result.summaryEntry ?? null,
			leafId: session.sessionManager.getLeafId(),
			label: result.summaryEntry ? (session.sessionManager.getLabel(result.summaryEntry.id) ?? null) : null,
		};
		session.dispose();
		return report;
	},

	// A compaction of args.file, stopped as Escape stops it once the test
	// says Pith is at work (a line on stdin).
	async abort(args) {
		const session = await open(args.file);
		const compacting = session.compact().then(
			(r) => ({ ok: true, summary: r.summary }),
			(e) => ({ ok: false, error: String(e?.message ?? e) }),
		);
		process.stderr.write("READY compacting\n");
		await nextLine();
		session.abortCompaction();
		const outcome = await compacting;
		session.dispose();
		return { file: session.sessionFile, ...outcome };
	},
};

// The benchmark: one session on a copy of args.file, as a running pi has
// it; args.iterations times two exchanges (untimed), then a compaction timed
// from session.compact() to its end (session_compact and its notification
// included). With args.extension false, pi alone.
scenarios.bench = async (args) => {
	const { copyFileSync } = await import("node:fs");
	const copy = join(spec.sessions, "bench.jsonl");
	copyFileSync(args.file, copy);
	const session = await open(copy, args.extension !== false);
	const ms = [];
	for (let i = 0; i < args.iterations; i++) {
		for (let j = 0; j < 2; j++) await session.prompt(`Bench ${i}.${j}: ${"go on with the importer and report. ".repeat(8)}`);
		const t0 = performance.now();
		const r = await session.compact();
		ms.push(performance.now() - t0);
		if (args.expect && !r.summary.includes(args.expect)) throw new Error(`iteration ${i}: summary ${r.summary}`);
	}
	session.dispose();
	return { ms };
};

const run = scenarios[spec.scenario];
if (!run) throw new Error(`unknown scenario ${spec.scenario}`);
const report = await run(spec.args ?? {});
process.stdout.write(JSON.stringify(report));
process.exit(0);
