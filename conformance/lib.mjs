// Shared helpers for the conformance scripts: locate pi's modules inside
// node_modules and load session files exactly the way pi does.
import { readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const piCore = join(here, "node_modules", "@mariozechner", "pi-coding-agent", "dist", "core");

async function load(rel) {
	return import(pathToFileURL(join(piCore, rel)).href);
}

export const sessionManager = await load("session-manager.js");
export const compaction = await load("compaction/compaction.js");
export const branchSummarization = await load("compaction/branch-summarization.js");
export const utils = await load("compaction/utils.js");
export const messages = await load("messages.js");

export const PI_VERSION = JSON.parse(
	readFileSync(join(here, "node_modules", "@mariozechner", "pi-coding-agent", "package.json"), "utf8"),
).version;

// openSession loads a session file through pi's own SessionManager in
// non-persisting mode: it parses, migrates in memory (never rewrites the file)
// and indexes the entries, leaving the leaf on the last entry.
export function openSession(path) {
	return new sessionManager.SessionManager(dirname(path), "", path, false);
}

// lineIndexOfEntries maps each entry that pi's loader keeps to its physical
// line number in the file (header = line 0). It repeats the loader's rules
// (skip blank lines, skip lines JSON.parse rejects) so the two stay aligned.
export function lineIndexOfEntries(path) {
	const content = readFileSync(path, "utf8");
	const raw = content.split("\n");
	const lines = [];
	raw.forEach((line, i) => {
		if (!line.trim()) return;
		try {
			JSON.parse(line);
			lines.push(i);
		} catch {
			// pi skips malformed lines silently
		}
	});
	return lines;
}

export function fileRef(path) {
	return basename(path);
}

export function fileOpsLists(fileOps) {
	return utils.computeFileLists(fileOps);
}

// pretty renders golden JSON diff-friendly: objects indented; the elements
// of the top-level record lists (keys in EXPAND) expanded the same way; every
// other array element on one compact line of its own.
const EXPAND = new Set(["files", "cases"]);

export function pretty(value, indent = "", expand = true) {
	const inner = `${indent}  `;
	if (Array.isArray(value)) {
		if (value.length === 0) return "[]";
		if (value.every((v) => v === null || typeof v !== "object")) return JSON.stringify(value);
		return `[\n${value.map((v) => inner + (expand ? pretty(v, inner) : JSON.stringify(v))).join(",\n")}\n${indent}]`;
	}
	if (value !== null && typeof value === "object") {
		const keys = Object.keys(value).filter((k) => value[k] !== undefined);
		if (keys.length === 0) return "{}";
		return `{\n${keys.map((k) => `${inner}${JSON.stringify(k)}: ${pretty(value[k], inner, EXPAND.has(k))}`).join(",\n")}\n${indent}}`;
	}
	return JSON.stringify(value);
}

export function writeGolden(path, value) {
	writeFileSync(path, `${pretty(value)}\n`);
}
