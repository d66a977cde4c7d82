// Unit tests of what the extension accepts from Pith (node --test, through
// jiti as pi loads the extension): anything but one well-formed result is
// garbage, and garbage means pi compacts by itself.
import assert from "node:assert/strict";
import { test } from "node:test";
import { checkCompactResult, checkNavigateResult, parseLine, PithError } from "../src/protocol.ts";
import { parseDuration, readSettings } from "../src/settings.ts";

const ids = new Set(["a1", "b2"]);
const garbage = (f: () => unknown) => assert.throws(f, (e: unknown) => e instanceof PithError && e.kind === "garbage");

test("a compaction on pi's branch is accepted", () => {
	const r = checkCompactResult(
		{ outcome: "compacted", compaction: { summary: "S", firstKeptEntryId: "b2", tokensBefore: 12.4, details: { x: 1 } }, entries: [{ kind: "message", customType: "p/t", content: "hi" }] },
		ids,
	);
	assert.equal(r.outcome, "compacted");
	if (r.outcome !== "compacted") return;
	assert.deepEqual(r.compaction, { summary: "S", firstKeptEntryId: "b2", tokensBefore: 12, details: { x: 1 } });
	assert.deepEqual(r.entries, [{ kind: "message", customType: "p/t", content: "hi", display: true, details: undefined }]);
});

test("what pi cannot use is garbage", () => {
	const ok = { summary: "S", firstKeptEntryId: "a1", tokensBefore: 1 };
	garbage(() => checkCompactResult({ outcome: "compacted" }, ids));
	garbage(() => checkCompactResult({ outcome: "compacted", compaction: { ...ok, summary: "  " } }, ids));
	garbage(() => checkCompactResult({ outcome: "compacted", compaction: { ...ok, firstKeptEntryId: "zz" } }, ids));
	garbage(() => checkCompactResult({ outcome: "compacted", compaction: { ...ok, tokensBefore: -1 } }, ids));
	garbage(() => checkCompactResult({ outcome: "compacted", compaction: { ...ok, details: [1] } }, ids));
	garbage(() => checkCompactResult({ outcome: "compacted", compaction: ok, entries: [{ kind: "file", customType: "x" }] }, ids));
	garbage(() => checkCompactResult({ outcome: "compacted", compaction: ok, entries: [{ kind: "message", content: "x" }] }, ids));
	garbage(() => checkCompactResult({ outcome: "maybe" }, ids));
	garbage(() => checkNavigateResult({ outcome: "summarized", summary: { summary: "" } }));
	garbage(() => checkNavigateResult({ outcome: "summarized", summary: { summary: "s" }, label: 3 }));
	garbage(() => checkNavigateResult({ outcome: "compacted" }));
	garbage(() => parseLine("not json"));
	garbage(() => parseLine("[1,2]"));
	garbage(() => parseLine('{"no":"type"}'));
});

test("cancels, nothing and none", () => {
	assert.deepEqual(checkCompactResult({ outcome: "cancelled", by: "guard", reason: "no" }, ids), { outcome: "cancelled", by: "guard", reason: "no" });
	assert.deepEqual(checkCompactResult({ outcome: "nothing", reason: "small" }, ids), { outcome: "nothing", reason: "small" });
	assert.deepEqual(checkNavigateResult({ outcome: "none", label: "here" }), { outcome: "none", label: "here" });
	assert.deepEqual(checkNavigateResult({ outcome: "none", label: "" }), { outcome: "none", label: undefined });
});

test("an unknown event type is passed over; records end at LF only", () => {
	assert.equal(parseLine('{"type":"future","x":1}').type, "progress");
	const ev = parseLine('{"type":"warning","message":"a\u2028b"}');
	assert.equal(ev.type, "warning");
});

test("PITH_TIMEOUT", () => {
	assert.equal(parseDuration("120"), 120_000);
	assert.equal(parseDuration("90s"), 90_000);
	assert.equal(parseDuration("500ms"), 500);
	assert.equal(parseDuration("2m"), 120_000);
	assert.equal(parseDuration("0"), undefined);
	assert.equal(parseDuration("soon"), undefined);
	const s = readSettings({ PITH_TIMEOUT: "soon" });
	assert.equal(s.timeoutMs, 120_000);
	assert.equal(s.problems.length, 1);
	assert.equal(readSettings({}).bin, "pith");
});
