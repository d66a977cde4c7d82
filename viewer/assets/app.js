// The Pith session viewer: a read-only page over the JSON API next to it.
// No framework and no build step; every value from the session reaches the
// page through textContent, never as HTML.
"use strict";

const ROW_H = 24;   // must match .row height in app.css
const PAGE = 200;   // rows per api/tree request

const state = {
  version: 0, total: 0, leafId: "", leafRow: -1, settings: null,
  pages: new Map(), pending: new Map(),
  active: -1, selectedId: "", selectedRow: -1,
  compactions: [], compactionId: "", context: null,
  daemon: false, // served by pith serve: the daemon panel is shown
};

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...kids) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") n.className = v;
    else if (k === "text") n.textContent = v;
    else if (k.startsWith("on")) n.addEventListener(k.slice(2), v);
    else n.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids) if (k !== null && k !== undefined && k !== false) n.append(k);
  return n;
}

async function api(path) {
  const r = await fetch(path, { cache: "no-store" });
  if (!r.ok) throw new Error((await r.text()).trim() || r.statusText);
  return r.json();
}

const fmt = (n) => Number(n || 0).toLocaleString("en-US");

// ---- session header ----

async function loadSession() {
  const s = await api("api/session");
  state.version = s.version; state.total = s.entries;
  state.leafId = s.leafId; state.leafRow = s.leafRow; state.settings = s.settings;
  $("session-name").textContent = s.name || s.path.split("/").pop();
  $("session-meta").textContent = `${fmt(s.entries)} entries · ${s.cwd || "no cwd"} · created ${s.created || "?"}` +
    (s.warnings ? ` · ${s.warnings} unreadable lines skipped` : "");
  document.title = `${s.name || s.path.split("/").pop()} — Pith viewer`;
  $("tree-spacer").style.height = `${state.total * ROW_H}px`;
}

// ---- the tree: a listbox that draws only the rows in view ----

function pageOf(row) { return Math.floor(row / PAGE); }

function loadPage(p) {
  if (state.pages.has(p)) return Promise.resolve(state.pages.get(p));
  if (state.pending.has(p)) return state.pending.get(p);
  const version = state.version;
  const pr = api(`api/tree?offset=${p * PAGE}&limit=${PAGE}`).then((d) => {
    state.pending.delete(p);
    if (version === state.version) state.pages.set(p, d.rows);
    return d.rows;
  }, (e) => { state.pending.delete(p); throw e; });
  state.pending.set(p, pr);
  return pr;
}

async function rowData(row) {
  const rows = await loadPage(pageOf(row));
  return rows[row - pageOf(row) * PAGE];
}

let drawQueued = false;
function drawTree() {
  if (drawQueued) return;
  drawQueued = true;
  requestAnimationFrame(() => { drawQueued = false; drawVisible(); });
}

// drawVisible keeps one element per row in view. An element whose row is
// unchanged is updated in place, never replaced: a click whose mousedown
// and mouseup land on different elements is no click at all, and the tree
// redraws whenever the selection or the file changes.
const rowEls = new Map(); // row index → element
let drawnVersion = -1;
function drawVisible() {
  const tree = $("tree"), spacer = $("tree-spacer");
  const first = Math.max(0, Math.floor(tree.scrollTop / ROW_H) - 5);
  const last = Math.min(state.total - 1, Math.ceil((tree.scrollTop + tree.clientHeight) / ROW_H) + 5);
  if (drawnVersion !== state.version) {
    for (const n of rowEls.values()) n.remove();
    rowEls.clear();
    drawnVersion = state.version;
  }
  for (const [i, n] of rowEls) {
    if (i < first || i > last) { n.remove(); rowEls.delete(i); }
  }
  const missing = new Set();
  for (let i = first; i <= last; i++) {
    const rows = state.pages.get(pageOf(i));
    if (!rows) { missing.add(pageOf(i)); continue; }
    const r = rows[i - pageOf(i) * PAGE];
    let n = rowEls.get(i);
    if (n && n.dataset.id !== r.id) { n.remove(); n = undefined; }
    if (!n) {
      n = rowElement(r);
      rowEls.set(i, n);
      spacer.append(n);
    }
    n.classList.toggle("active", i === state.active);
    n.setAttribute("aria-selected", r.id === state.selectedId ? "true" : "false");
  }
  // Point at the active row only while it is drawn: a reference to a
  // missing element is invalid ARIA.
  if (state.active >= 0 && rowEls.has(state.active)) tree.setAttribute("aria-activedescendant", `row-${state.active}`);
  else tree.removeAttribute("aria-activedescendant");
  for (const p of missing) loadPage(p).then(drawTree, showError);
}

function rowElement(r) {
  const cls = ["row", `t-${r.type}`];
  if (r.onPath) cls.push("on-path");
  if (r.row === state.active) cls.push("active");
  const n = el("div", {
    class: cls.join(" "), role: "option", id: `row-${r.row}`, "data-id": r.id,
    "aria-selected": r.id === state.selectedId ? "true" : "false",
    onclick: () => { setActive(r.row); select(r.row); },
  });
  n.style.top = `${r.row * ROW_H}px`;
  n.style.paddingLeft = `${6 + Math.min(r.depth, 40) * 14}px`;
  if (r.fork) n.append(el("span", { class: "id", "aria-hidden": "true", text: "├" }));
  n.append(el("span", { class: "id", text: r.id }));
  if (r.leaf) n.append(el("span", { class: "badge b-leaf", text: "leaf" }));
  if (r.type === "compaction") n.append(el("span", { class: "badge b-compaction", text: "compaction" }));
  if (r.type === "branch_summary") n.append(el("span", { class: "badge b-branch", text: "branch summary" }));
  if (r.fromHook) n.append(el("span", { class: "badge b-plugin", text: "plugin" }));
  if (r.pruned) n.append(el("span", { class: "badge b-pruned", text: "pruned" }));
  for (const l of r.labels || []) n.append(el("span", { class: "badge b-label", text: `label: ${l}` }));
  n.append(document.createTextNode(r.text));
  return n;
}

function setActive(row) {
  if (state.total === 0) return;
  row = Math.max(0, Math.min(state.total - 1, row));
  state.active = row;
  revealActive();
}

// revealActive scrolls the active row into view; it runs again when the
// tree changes size, so the row stays in view while the page lays out.
function revealActive() {
  if (state.active < 0) return;
  const row = state.active;
  const tree = $("tree");
  const top = row * ROW_H;
  if (top < tree.scrollTop) tree.scrollTop = top;
  else if (top + ROW_H > tree.scrollTop + tree.clientHeight) tree.scrollTop = top + ROW_H - tree.clientHeight;
  drawTree();
}

let selectTimer = 0;
function selectSoon(row) {
  clearTimeout(selectTimer);
  selectTimer = setTimeout(() => select(row), 120);
}

async function select(row) {
  clearTimeout(selectTimer); // a click or Enter overrides a pending keyboard move
  const r = await rowData(row);
  if (!r) return;
  state.selectedId = r.id; state.selectedRow = row;
  drawTree();
  await Promise.all([showEntry(r.id), showContext(r.id)]);
  chooseCompaction(r);
}

async function selectById(id) {
  const e = await api(`api/entry?id=${encodeURIComponent(id)}`);
  if (e.row < 0) return;
  setActive(e.row);
  await select(e.row);
}

function onTreeKey(ev) {
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return; // the browser's own shortcuts
  const page = Math.max(1, Math.floor($("tree").clientHeight / ROW_H) - 1);
  let row = state.active < 0 ? 0 : state.active;
  switch (ev.key) {
    case "ArrowDown": row += 1; break;
    case "ArrowUp": row -= 1; break;
    case "PageDown": row += page; break;
    case "PageUp": row -= page; break;
    case "Home": row = 0; break;
    case "End": row = state.total - 1; break;
    case "ArrowLeft":
      ev.preventDefault();
      rowData(row).then((r) => r && r.parentId && selectById(r.parentId)).catch(showError);
      return;
    case "l": goToLeaf(); ev.preventDefault(); return;
    case "Enter": case " ": select(row).catch(showError); ev.preventDefault(); return;
    default: return;
  }
  ev.preventDefault();
  setActive(row);
  selectSoon(state.active);
}

function goToLeaf() {
  if (state.leafRow < 0) return;
  setActive(state.leafRow);
  select(state.leafRow).catch(showError);
}

// ---- the selected entry ----

function contentBlocks(msg) {
  if (typeof msg.content === "string") return [{ type: "text", text: msg.content }];
  return Array.isArray(msg.content) ? msg.content : [];
}

function renderBlocks(msg) {
  const out = [];
  for (const b of contentBlocks(msg)) {
    if (b.type === "text") out.push(el("pre", { text: b.text }));
    else if (b.type === "thinking") out.push(el("details", {}, el("summary", { text: "thinking" }), el("pre", { text: b.thinking })));
    else if (b.type === "toolCall") out.push(el("details", { class: "tool-call" },
      el("summary", { text: `tool call: ${b.name}` }), el("pre", { text: JSON.stringify(b.arguments, null, 2) })));
    else if (b.type === "image") out.push(el("p", { class: "muted", text: `[image ${b.mimeType || ""}]` }));
    else out.push(el("pre", { text: JSON.stringify(b, null, 2) }));
  }
  return out;
}

function renderMessage(e) {
  const m = e.message;
  if (!m) return [];
  switch (m.role) {
    case "toolResult": {
      const head = `output of ${m.toolName || "a tool"} (${fmt(e.tokens)} tokens)${m.isError ? " — error" : ""}`;
      const out = [];
      if (e.pruned) {
        out.push(el("p", {}, el("span", { class: "badge b-pruned", text: "pruned" }),
          `This output was pruned${e.prunedAt ? " on " + new Date(e.prunedAt).toISOString() : ""}; the context carries the notice below.`));
      }
      out.push(el("details", { class: "tool-output" }, el("summary", { text: head }), ...renderBlocks(m)));
      if (e.archived) {
        out.push(el("details", { class: "archived" }, el("summary", { text: "original output, from the prune archive" }), ...renderBlocks(e.archived)));
      } else if (e.pruned) {
        out.push(el("p", { class: "muted", text: "The prune archive does not have the original any more." }));
      }
      return out;
    }
    case "bashExecution":
      return [el("pre", { text: `$ ${m.command}` }),
        el("details", { class: "tool-output" }, el("summary", { text: `output (exit ${m.exitCode ?? "?"})` }), el("pre", { text: m.output || "" }))];
    case "branchSummary": case "compactionSummary":
      return [el("pre", { text: m.summary || "" })];
    default: {
      const out = renderBlocks(m);
      if (m.errorMessage) out.push(el("p", { class: "muted", text: `error: ${m.errorMessage}` }));
      return out;
    }
  }
}

async function showEntry(id) {
  const e = await api(`api/entry?id=${encodeURIComponent(id)}`);
  if (e.id !== state.selectedId) return;
  const body = $("entry-body");
  const kv = el("dl", { class: "kv" },
    el("dt", { text: "id" }), el("dd", { text: e.id }),
    el("dt", { text: "type" }), el("dd", { text: e.role ? `${e.type} (${e.role})` : e.type }),
    el("dt", { text: "time" }), el("dd", { text: e.timestamp || "?" }),
    el("dt", { text: "line" }), el("dd", { text: String(e.line) }));
  if (e.parentId) kv.append(el("dt", { text: "parent" }), el("dd", {}, el("button", { class: "linkbtn", type: "button", text: e.parentId, onclick: () => selectById(e.parentId).catch(showError) })));
  if (e.labels && e.labels.length) kv.append(el("dt", { text: "labels" }), el("dd", { text: e.labels.join(", ") }));
  const parts = [kv];
  if (e.type === "compaction") {
    parts.push(el("pre", { text: e.raw ? e.raw.summary || "" : "" }));
  } else if (e.message) {
    parts.push(...renderMessage(e));
  } else {
    parts.push(el("p", { class: "muted", text: e.text }));
  }
  parts.push(el("details", {}, el("summary", { text: "raw JSON line" }), el("pre", { text: JSON.stringify(e.raw, null, 2) })));
  body.replaceChildren(...parts);
}

// ---- the context at the selected entry ----

const PART_NAMES = { summary: "summary", kept: "kept by the last compaction", after: "added since", message: "messages" };

async function showContext(id) {
  const c = await api(`api/context?leaf=${encodeURIComponent(id)}`);
  if (c.leafId !== state.selectedId) return;
  state.context = c;
  const W = Math.max(1, c.contextWindow);
  const sums = { summary: 0, kept: 0, after: 0, message: 0 };
  for (const m of c.messages) sums[m.part] += m.tokens;
  if (c.omitted) sums[c.messages.length ? c.messages[0].part : "message"] += c.omittedTokens;
  const gauge = el("div", { class: "gauge", role: "img",
    "aria-label": `${fmt(c.tokens)} of ${fmt(c.contextWindow)} tokens in the window; reserve ${fmt(c.reserveTokens)}; compaction fires above ${fmt(c.threshold)}` });
  for (const p of ["summary", "kept", "after", "message"]) {
    if (!sums[p]) continue;
    const s = el("div", { class: `seg ${p}`, title: `${PART_NAMES[p]}: ${fmt(sums[p])} tokens` });
    s.style.width = `${Math.min(100, (100 * sums[p]) / W)}%`;
    gauge.append(s);
  }
  const reserve = el("div", { class: "reserve", title: `reserve: ${fmt(c.reserveTokens)} tokens` });
  reserve.style.width = `${Math.min(100, (100 * c.reserveTokens) / W)}%`;
  gauge.append(reserve);
  if (c.autoCompaction) {
    const t = el("div", { class: "threshold" }, el("span", { text: `compaction fires above ${fmt(c.threshold)}` }));
    t.style.left = `${Math.max(0, Math.min(100, (100 * c.threshold) / W))}%`;
    gauge.append(t);
  }
  const legend = el("ul", { class: "legend" });
  for (const p of ["summary", "kept", "after", "message"]) {
    if (sums[p]) legend.append(el("li", {}, el("i", { class: `seg ${p}` }), `${PART_NAMES[p]} ${fmt(sums[p])}`));
  }
  legend.append(el("li", { text: `reserve ${fmt(c.reserveTokens)} · window ${fmt(c.contextWindow)}` }));
  const how = c.estimateOnly ? "estimated" : `last reported usage ${fmt(c.usageTokens)} + estimates after it`;
  const summary = el("p", {}, `${fmt(c.total)} messages, ${fmt(c.tokens)} tokens (${how}). `,
    c.autoCompaction ? (c.wouldFire ? "Above the threshold: the next turn compacts." : `Compaction fires above ${fmt(c.threshold)} tokens.`) : "Automatic compaction is off.");
  const parts = [summary, gauge, legend];
  if (c.compactedBy && c.compactedTokensBefore > 0) {
    // The same scale before the last compaction: what it took away.
    const before = el("div", { class: "gauge before", role: "img",
      "aria-label": `before the last compaction: ${fmt(c.compactedTokensBefore)} of ${fmt(c.contextWindow)} tokens` });
    const seg = el("div", { class: "seg summarized", title: `before the last compaction: ${fmt(c.compactedTokensBefore)} tokens` });
    seg.style.width = `${Math.min(100, (100 * c.compactedTokensBefore) / W)}%`;
    before.append(seg);
    parts.push(el("p", { class: "muted gauge-label", text: `before the last compaction: ${fmt(c.compactedTokensBefore)} tokens` }), before);
  }
  if (c.compactedBy) {
    parts.push(el("p", { class: "muted" }, `The last compaction on this path (`,
      el("button", { class: "linkbtn", type: "button", text: c.compactedBy, onclick: () => showCompaction(c.compactedBy) }),
      `) replaced ${fmt(c.summarizedMessages)} earlier entries by its summary; the context had ${fmt(c.compactedTokensBefore)} tokens before it.`));
  }
  if (c.omitted) parts.push(el("p", { class: "muted", text: `${fmt(c.omitted)} older messages (${fmt(c.omittedTokens)} tokens) are counted above but not listed.` }));
  const max = Math.max(1, ...c.messages.map((m) => m.tokens));
  const list = el("ol", { class: "bars", "aria-label": "messages in the context, oldest first" });
  for (const m of c.messages) {
    const bar = el("div", { class: `bar seg ${m.part}`, title: `${fmt(m.tokens)} tokens` });
    bar.style.width = `${(100 * m.tokens) / max}%`;
    const li = el("li", { class: m.entryId === state.selectedId ? "current" : "" },
      el("button", { type: "button", text: `${m.label}`, title: `${PART_NAMES[m.part]} · entry ${m.entryId}`,
        onclick: () => selectById(m.entryId).catch(showError) }),
      bar, el("span", { class: "num", text: fmt(m.tokens) }));
    list.append(li);
  }
  parts.push(list);
  $("context-body").replaceChildren(...parts);
}

// ---- compactions and branch summaries ----

async function loadCompactions() {
  const d = await api("api/compactions");
  state.compactions = d.items;
  const list = el("ul", { class: "complist", "aria-label": "all compactions and branch summaries" });
  for (const it of d.items) {
    list.append(el("li", {}, el("button", {
      type: "button", "aria-current": it.id === state.compactionId ? "true" : "false",
      text: `${it.type === "compaction" ? "compaction" : "branch summary"} ${it.id}${it.onPath ? " (on the leaf's path)" : ""} — ${it.short}`,
      onclick: () => showCompaction(it.id),
    })));
  }
  $("compaction-list").replaceChildren(d.items.length ? list : el("p", { class: "muted", text: "This session has no compaction or branch summary yet." }));
}

function chooseCompaction(r) {
  if (r.type === "compaction" || r.type === "branch_summary") return showCompaction(r.id);
  if (state.context && state.context.compactedBy) return showCompaction(state.context.compactedBy);
  if (!state.compactionId && state.compactions.length) return showCompaction(state.compactions[state.compactions.length - 1].id);
}

function refButton(ref) {
  if (!ref) return "—";
  return el("button", { class: "linkbtn", type: "button", text: `${ref.id} ${ref.text}`, onclick: () => selectById(ref.id).catch(showError) });
}

function fileList(files) {
  if (!files || !files.length) return "none";
  return el("ul", {}, ...files.map((f) => el("li", { text: f })));
}

async function showCompaction(id) {
  const c = await api(`api/compaction?id=${encodeURIComponent(id)}`).catch((e) => { showError(e); return null; });
  if (!c) return;
  state.compactionId = id;
  for (const b of $("compaction-list").querySelectorAll("button")) b.setAttribute("aria-current", b.textContent.includes(` ${id}`) ? "true" : "false");
  const kv = el("dl", { class: "kv" },
    el("dt", { text: "entry" }), el("dd", {}, refButton({ id: c.id, text: c.type === "compaction" ? "(compaction)" : "(branch summary)" })),
    el("dt", { text: "reason" }), el("dd", { text: c.reason }),
    el("dt", { text: "produced by" }), el("dd", { text: c.producer }));
  if (c.type === "compaction") {
    kv.append(
      el("dt", { text: "tokens before" }), el("dd", { text: fmt(c.tokensBefore) }),
      el("dt", { text: "tokens after" }), el("dd", { text: `${fmt(c.tokensAfter)} (estimate of the context right after it)` }),
      el("dt", { text: "cut point" }), el("dd", {}, refButton(c.cutPoint)),
      el("dt", { text: "split turn" }), el("dd", {}, c.splitTurn ? el("span", {}, "yes — the turn starts at ", refButton(c.turnStart)) : "no"));
  } else {
    kv.append(el("dt", { text: "summarizes the branch left at" }), el("dd", {}, refButton(c.from)),
      el("dt", { text: "context after" }), el("dd", { text: `${fmt(c.tokensAfter)} tokens` }));
  }
  kv.append(el("dt", { text: "files read" }), el("dd", {}, fileList(c.readFiles)),
    el("dt", { text: "files modified" }), el("dd", {}, fileList(c.modifiedFiles)));
  const parts = [el("h3", { text: `${c.type === "compaction" ? "Compaction" : "Branch summary"} ${c.id}` }), kv];
  parts.push(el("h4", { text: "Hook timeline" }));
  if (Array.isArray(c.timeline) && c.timeline.length) {
    parts.push(timelineList(c.timeline));
  } else {
    parts.push(el("p", { class: "muted", text: "The session file records no hook timeline for this run." }));
  }
  parts.push(el("h4", { text: "Summary" }), el("pre", { class: "summary-text", text: c.summary }));
  if (c.details) parts.push(el("details", {}, el("summary", { text: "details (raw)" }), el("pre", { text: JSON.stringify(c.details, null, 2) })));
  $("compaction-body").replaceChildren(...parts);
}

// ---- the daemon's panel (pith serve only) ----

function timelineList(steps) {
  const t = el("ol", { class: "timeline" });
  for (const s of steps) t.append(el("li", { text: [s.plugin, s.event, s.durationMs !== undefined ? `${s.durationMs} ms` : "", s.result, s.reason].filter(Boolean).join(" · ") }));
  return t;
}

// daemonEvery is how often the daemon's panel is read again: what it shows
// (a compaction run a plugin cancelled, a plugin restarted, a reload)
// changes without the session file changing, which is what the live
// stream reports.
const daemonEvery = 5000;

async function loadDaemon() {
  const r = await fetch("api/daemon", { cache: "no-store" });
  if (r.status === 404) return; // pith view: no daemon
  if (!r.ok) throw new Error(`api/daemon: ${r.status}`);
  state.daemon = true;
  const d = await r.json();
  const parts = [];
  parts.push(el("h3", { text: "Last compaction run" }));
  const run = d.lastRun;
  if (!run) {
    parts.push(el("p", { class: "muted", text: "No compaction ran for this session since the daemon started." }));
  } else {
    let outcome = "saved";
    if (run.cancelled) outcome = `cancelled by plugin ${run.plugin || "?"}`;
    else if (run.aborted) outcome = "aborted";
    else if (run.error) outcome = "failed";
    const kv = el("dl", { class: "kv" },
      el("dt", { text: "reason" }), el("dd", { text: run.reason }),
      el("dt", { text: "outcome" }), el("dd", { id: "last-run-outcome", text: outcome }),
      el("dt", { text: "at" }), el("dd", { text: new Date(run.time).toLocaleString() }));
    if (run.entryId) kv.append(el("dt", { text: "entry" }), el("dd", {}, refButton({ id: run.entryId, text: "(compaction)" })));
    if (run.error) kv.append(el("dt", { text: "error" }), el("dd", { text: run.error }));
    parts.push(kv, el("h4", { text: "Hook timeline of that run" }));
    parts.push(run.timeline && run.timeline.length ? timelineList(run.timeline) : el("p", { class: "muted", text: "No plugin was called." }));
  }
  parts.push(el("h3", { text: "Plugins" }));
  if (d.plugins && d.plugins.length) {
    parts.push(el("ul", {}, ...d.plugins.map((p) => el("li", { text: [p.name, p.version, p.state, `${p.restarts || 0} restarts`, p.lastError ? `last error: ${p.lastError}` : ""].filter(Boolean).join(" · ") }))));
  } else {
    parts.push(el("p", { class: "muted", text: "No plugins are configured." }));
  }
  const c = d.config || {};
  parts.push(el("h3", { text: "Configuration" }), el("p", { text: `generation ${c.generation}${c.lastReload ? ` · last reload ${c.lastReload.outcome} at ${new Date(c.lastReload.time).toLocaleString()}${c.lastReload.outcome === "rejected" ? " (the reason is in the daemon's log)" : ""}` : " · not reloaded since start"}` }));
  $("daemon-body").replaceChildren(...parts);
  $("daemon").hidden = false;
}

// ---- live updates ----

function showError(e) {
  $("live").textContent = `error: ${e.message || e}`;
}

async function refresh() {
  const followLeaf = !state.selectedId || state.selectedId === state.leafId;
  state.pages.clear();
  await loadSession();
  drawTree();
  await loadCompactions();
  await loadDaemon();
  if (followLeaf) { goToLeaf(); return; }
  if (!state.selectedId) return;
  // An entry added to an earlier branch moves the rows after it: find the
  // selected entry's row again, so the keyboard goes on from the right one.
  const e = await api(`api/entry?id=${encodeURIComponent(state.selectedId)}`).catch(() => null);
  if (e && e.row >= 0) { state.active = e.row; state.selectedRow = e.row; drawTree(); }
  await Promise.all([showEntry(state.selectedId), showContext(state.selectedId)]);
}

function connect() {
  const es = new EventSource("api/events");
  es.addEventListener("version", (ev) => {
    const d = JSON.parse(ev.data);
    $("live").textContent = `live · ${fmt(d.entries)} entries`;
    $("live").classList.add("on");
    if (d.version !== state.version) refresh().catch(showError);
  });
  es.onerror = () => {
    $("live").textContent = "reconnecting…";
    $("live").classList.remove("on");
    // A refused stream (503: the viewer's streams are at their cap) is
    // not retried by the browser: try again after the Retry-After.
    if (es.readyState === EventSource.CLOSED) setTimeout(connect, 5000);
  };
}

async function start() {
  const tree = $("tree");
  tree.addEventListener("scroll", drawTree);
  tree.addEventListener("keydown", onTreeKey);
  new ResizeObserver(() => { revealActive(); drawTree(); }).observe(tree);
  $("to-leaf").addEventListener("click", goToLeaf);
  // The list of compactions is not needed for the first picture: fetch it
  // beside the rest instead of before it.
  const compactions = loadCompactions();
  await loadSession();
  drawTree();
  goToLeaf();
  await compactions;
  await loadDaemon().catch(showError);
  if (!state.compactionId && state.compactions.length) showCompaction(state.compactions[state.compactions.length - 1].id);
  connect();
  if (state.daemon) {
    setInterval(() => { if (!document.hidden) loadDaemon().catch(() => {}); }, daemonEvery);
  }
  document.body.dataset.ready = "1";
}

start().catch(showError);
