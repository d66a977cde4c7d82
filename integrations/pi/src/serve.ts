// A running `pith serve` (PITH_SERVE): SessionService.Propose, whose stream
// carries exactly the CLI's NDJSON objects, one per message. The daemon keeps
// its plugins warm and reloads its configuration, so an edit applies to the
// next compaction of a pi that is already running. The connection is kept for
// the life of pi; this module (and gRPC) is loaded only when PITH_SERVE is set.

import { existsSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import type { CallOptions } from "./cli.ts";
import { parseLine, PithAborted, PithError } from "./protocol.ts";
import type { Settings } from "./settings.ts";

const here = dirname(fileURLToPath(import.meta.url));

type Client = grpc.Client & { Propose(req: object, md: grpc.Metadata): grpc.ClientReadableStream<{ event: Buffer }> };

// Kept on globalThis: pi loads its extensions again on /reload and on a
// session switch, and the daemon's connection should outlive that.
const clients: Map<string, Client> = ((globalThis as any).__pithServeClients ??= new Map<string, Client>());

function client(address: string): Client {
	let c = clients.get(address);
	if (c) return c;
	// The repository's proto files (integrations/pi is two levels below the
	// root); PITH_PROTO_DIR names them elsewhere.
	const protoDir = process.env.PITH_PROTO_DIR || resolve(here, "..", "..", "..", "proto");
	const file = join(protoDir, "pith", "session", "v1", "session.proto");
	if (!existsSync(file)) throw new PithError("missing", `${file} not found (set PITH_PROTO_DIR to Pith's proto directory)`);
	const def = protoLoader.loadSync(file, { includeDirs: [protoDir], keepCase: false, longs: Number, defaults: true });
	const pkg = grpc.loadPackageDefinition(def) as any;
	const Service = pkg.pith.session.v1.SessionService as grpc.ServiceClientConstructor;
	c = new Service(address, grpc.credentials.createInsecure(), {
		// A daemon restarted between two compactions is found again at once.
		"grpc.initial_reconnect_backoff_ms": 100,
		"grpc.max_reconnect_backoff_ms": 2000,
		"grpc.max_receive_message_length": 256 << 20,
		"grpc.max_send_message_length": 64 << 20,
	}) as unknown as Client;
	clients.set(address, c);
	return c;
}

/** The session's path as the daemon names it: relative to its sessions.root. */
export function daemonPath(file: string, root: string | undefined): string {
	const base = root ?? join(process.env.PI_CODING_AGENT_DIR || join(process.env.HOME ?? "", ".pi", "agent"), "sessions");
	const rel = relative(resolve(base), resolve(file));
	if (rel === "" || rel.startsWith(`..${sep}`) || rel === ".." || isAbsolute(rel)) {
		throw new PithError("refused", `${file} is not under the daemon's sessions root ${base} (set PITH_SESSIONS_ROOT)`);
	}
	return rel.split(sep).join("/");
}

export function callServe(settings: Settings, op: string, file: string, request: object, opts: CallOptions): Promise<Record<string, unknown>> {
	return new Promise((resolvePromise, reject) => {
		if (opts.signal?.aborted) return reject(new PithAborted());
		const c = client(settings.serve!);
		const md = new grpc.Metadata();
		if (settings.token) md.set("authorization", `Bearer ${settings.token}`);
		const call = c.Propose({ path: daemonPath(file, settings.sessionsRoot), operation: op, request: Buffer.from(JSON.stringify(request)) }, md);
		let result: Record<string, unknown> | undefined;
		let failure: Error | undefined;
		let settled = false;
		const finish = (err?: Error) => {
			if (settled) return;
			settled = true;
			clearTimeout(timer);
			opts.signal?.removeEventListener("abort", onAbort);
			if (err) reject(err);
			else if (result) resolvePromise(result);
			else reject(new PithError("garbage", "the daemon's stream ended without a result"));
		};
		const stop = (why: Error) => {
			failure ??= why;
			call.cancel();
		};
		const timer = setTimeout(() => stop(new PithError("timeout", `the daemon did not answer within ${Math.round(opts.timeoutMs / 100) / 10}s`)), opts.timeoutMs);
		timer.unref();
		const onAbort = () => stop(new PithAborted());
		opts.signal?.addEventListener("abort", onAbort, { once: true });

		call.on("data", (msg: { event: Buffer }) => {
			if (failure) return;
			try {
				const ev = parseLine(Buffer.from(msg.event).toString("utf8"));
				if (ev.type === "result") {
					if (result) throw new PithError("garbage", "the daemon sent two results");
					result = ev.result;
				} else if (ev.type === "error") {
					throw new PithError("error", ev.message);
				} else if (ev.message) {
					opts.onEvent?.(ev);
				}
			} catch (err) {
				stop(err as Error);
			}
		});
		call.on("error", (err: grpc.ServiceError) => {
			if (failure) return finish(failure);
			const kind = err.code === grpc.status.UNAVAILABLE ? "missing" : err.code === grpc.status.UNIMPLEMENTED ? "missing" : "error";
			finish(new PithError(kind, `pith serve at ${settings.serve}: ${err.details || err.message}`));
		});
		call.on("end", () => finish(failure));
	});
}
