// mcpq task dashboard: the caller's tasks (GET /v1/tasks), their live
// status over one subscriptions/listen SSE stream, results (images shown),
// input requests answered through a form built from the requested schema,
// and cancel. Everything goes through the public API of the front end that
// served this page, with the API key given above (none in mcpq dev) or the
// access token of the OAuth sign-in (signin.js).
"use strict";

const PROTOCOL = "2026-07-28";
const TASKS_EXT = "io.modelcontextprotocol/tasks";
const TERMINAL = new Set(["completed", "failed", "cancelled"]);
const $ = (id) => document.getElementById(id);

let apiKey = sessionStorage.getItem("mcpq-key") || "";
const tasks = new Map(); // taskId → task (the latest state seen)
let selected = "";
let listening = ""; // the sorted ids the open listen stream follows
let listenAbort = null;
let nextId = 1;

function meta() {
  return {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL,
    "io.modelcontextprotocol/clientCapabilities": { elicitation: {}, extensions: { [TASKS_EXT]: {} } },
    "io.modelcontextprotocol/clientInfo": { name: "mcpq-dashboard", version: "0.1.0" },
  };
}

function authHeaders(h) {
  if (apiKey) h.Authorization = "Bearer " + apiKey;
  return h;
}

// post sends one JSON-RPC request to /mcp and returns the fetch response.
function post(method, name, params, signal) {
  params = Object.assign({}, params, { _meta: meta() });
  const headers = authHeaders({
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": PROTOCOL,
    "Mcp-Method": method,
  });
  if (name) headers["Mcp-Name"] = name;
  const body = JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params });
  return fetch("/mcp", { method: "POST", headers, body, signal });
}

// readSSE calls onMessage with each JSON message of an SSE response body.
async function readSSE(resp, onMessage) {
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const event = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      const data = event.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
      if (data) onMessage(JSON.parse(data));
    }
  }
}

// rpc runs one request and returns its result (or throws its error).
async function rpc(method, name, params) {
  const resp = await post(method, name, params);
  let answer = null;
  if ((resp.headers.get("Content-Type") || "").startsWith("text/event-stream")) {
    await readSSE(resp, (m) => { if (m.id !== undefined) answer = m; });
  } else {
    answer = await resp.json();
  }
  if (!answer) throw new Error(method + ": no answer (HTTP " + resp.status + ")");
  if (answer.error) throw new Error(answer.error.message);
  return answer.result;
}

function showError(err) {
  $("error").textContent = err ? String(err.message || err) : "";
  $("error").hidden = !err;
}

// getJSON GETs one of the front end's /v1 endpoints; it resolves to
// {status, body}.
async function getJSON(path) {
  const resp = await fetch(path, { headers: authHeaders({ Accept: "application/json" }) });
  let body = null;
  try { body = await resp.json(); } catch (_) { /* not JSON */ }
  return { status: resp.status, body };
}

// listQuery is GET /v1/tasks with the filters of the form.
function listQuery(cursor) {
  const q = new URLSearchParams({ limit: "50" });
  if ($("f-status").value) q.set("status", $("f-status").value);
  if ($("f-tool").value.trim()) q.set("tool", $("f-tool").value.trim());
  if ($("f-since").value) q.set("since", String(Date.now() - Number($("f-since").value)));
  if ($("f-id").value.trim()) q.set("id", $("f-id").value.trim());
  if (cursor) q.set("cursor", cursor);
  return "/v1/tasks?" + q;
}

let nextCursor = "";

// refresh reads the first page of the caller's tasks (more: the next
// page) and follows the live ones.
async function refresh(more) {
  try {
    const { status, body } = await getJSON(listQuery(more ? nextCursor : ""));
    if (status !== 200) throw new Error((body && body.error) || "HTTP " + status);
    nextCursor = body.nextCursor || "";
    $("more").hidden = !nextCursor;
    for (const t of body.tasks) {
      const known = tasks.get(t.taskId);
      if (!known || known.lastUpdatedAt <= t.lastUpdatedAt) tasks.set(t.taskId, Object.assign({}, known, t, { via: (known && known.lastUpdatedAt === t.lastUpdatedAt && known.via) || "list", seenAt: Date.now() }));
    }
    showError(null);
    renderList();
    follow();
  } catch (err) {
    showError(err);
  }
  refreshOps();
}

// shown keeps the tasks the filters keep (the stream may bring others).
function shown(t) {
  const st = $("f-status").value, tool = $("f-tool").value.trim(), id = $("f-id").value.trim();
  return (!st || t.status === st) && (!tool || t.tool === tool) && (!id || t.taskId === id);
}

const PROGRESS = /(\d+(?:\.\d+)?)[a-zA-Z]{0,3}\s*(?:of|\/)\s*(\d+(?:\.\d+)?)|(\d+(?:\.\d+)?)\s*%/;

// progressOf mirrors the front end's reading of a status message
// (frontend/console.go) so live updates move the bar too.
function progressOf(t) {
  if (t.status !== "working" && t.status !== "completed") return null;
  const m = PROGRESS.exec(t.statusMessage || "");
  if (!m) return null;
  if (m[3]) return { done: Math.min(Number(m[3]), 100), total: 100 };
  const done = Number(m[1]), total = Number(m[2]);
  return total > 0 && done <= total ? { done, total } : null;
}

function duration(ms) {
  if (ms === undefined || ms === null) return "";
  if (ms < 1000) return ms + " ms";
  const s = ms / 1000;
  if (s < 120) return s.toFixed(1) + " s";
  return Math.floor(s / 60) + " min " + Math.round(s % 60) + " s";
}

function costText(c) {
  if (!c) return "";
  if (c.charged || c.released) return c.charged + " charged, " + c.released + " refunded";
  return c.reserved + " reserved";
}

// elapsed is a running task's time since its first claim, counted on.
function elapsed(t) {
  if (t.elapsedMs === undefined) return undefined;
  if (TERMINAL.has(t.status) || !t.seenAt) return t.elapsedMs;
  return t.elapsedMs + (Date.now() - t.seenAt);
}

// refreshOps reads the operator view; a principal that is not an admin
// gets 403 and the view stays hidden.
async function refreshOps() {
  try {
    const paths = ["/v1/ops/queues", "/v1/ops/workers", "/v1/ops/catalog", "/v1/ops/series?minutes=60"];
    const [q, w, c, s] = await Promise.all(paths.map(getJSON));
    if ([q, w, c, s].some((r) => r.status !== 200)) { $("ops").hidden = true; return; }
    $("ops").hidden = false;
    fill("ops-queues", q.body.queues, (x) => [x.queue, x.pending, x.active, x.scheduled, duration(x.oldestMs)]);
    fill("ops-workers", w.body.workers, (x) => [x.name, (x.queues || []).join(", "), x.busy + " / " + x.slots,
      (x.tools || []).join(", "), new Date(x.heartbeat).toLocaleTimeString()]);
    fill("ops-catalog", c.body.catalog, (x) => [x.title ? x.key + " (" + x.title + ")" : x.key, x.queue,
      x.workers.length ? x.workers.join(", ") : "none"]);
    renderSeries(s.body);
  } catch (err) {
    $("ops").hidden = true;
  }
}

let lastSeries = null; // the latest /v1/ops/series, redrawn when the tool choice changes

// toolChoice keeps the tasks chart's tool list in step with the series
// and returns the chosen tool's series (null: all tools).
function toolChoice(byTool) {
  const sel = $("chart-tool");
  const tools = Object.keys(byTool).filter((name) => name !== "").sort();
  const have = [...sel.options].slice(1).map((o) => o.value);
  if (have.join("\n") !== tools.join("\n")) {
    const keep = sel.value;
    sel.replaceChildren(sel.options[0], ...tools.map((name) => { const o = document.createElement("option"); o.value = o.textContent = name; return o; }));
    sel.value = tools.includes(keep) ? keep : "";
  }
  return sel.value ? byTool[sel.value] : null;
}

// renderSeries draws the operator view's charts and billing from
// GET /v1/ops/series.
function renderSeries(v) {
  lastSeries = v;
  const r = v.rates;
  $("ops-rates").textContent = "in " + r.createdPerSec.toFixed(2) + " tasks/s · out " + r.claimedPerSec.toFixed(2) +
    " jobs/s · ended " + r.endedPerSec.toFixed(2) + " tasks/s (last 60 s)";
  const chart = (id, title, lines, unit) => lineChart($(id), { from: v.from, stepMs: v.stepMs, title, lines }, unit);
  const S = v.series;
  const T = toolChoice(v.byTool) || S;
  const tool = $("chart-tool").value;
  chart("chart-tasks", "Tasks per minute" + (tool ? " of " + tool : ""), [{ name: "created", values: T.created }, { name: "completed", values: T.completed },
    { name: "failed", values: T.failed }, { name: "cancelled", values: T.cancelled }]);
  chart("chart-depth", "Queue depth", Object.keys(v.depth).sort().map((q) => ({ name: q, values: v.depth[q] })));
  const L = v.latency;
  chart("chart-latency", "Pickup and duration", [{ name: "pickup p50", values: L.pickupP50Ms }, { name: "pickup p99", values: L.pickupP99Ms },
    { name: "duration p50", values: L.durationP50Ms }, { name: "duration p99", values: L.durationP99Ms }], " ms");
  chart("chart-trouble", "Takeovers, cancels, refusals", [{ name: "takeovers", values: S.takeovers },
    { name: "cancel requests", values: S.cancelRequests }, { name: "refusals", values: S.refusals }]);
  fill("ops-billing", v.billing, (x) => [x.tool, x.reserved, x.charged, x.released, x.refused]);
}

function fill(id, rows, cells) {
  $(id).tBodies[0].replaceChildren(...(rows || []).map((r) => {
    const tr = document.createElement("tr");
    for (const text of cells(r)) {
      const td = document.createElement("td");
      td.textContent = String(text);
      tr.append(td);
    }
    return tr;
  }));
}

// follow keeps one listen stream open on the tasks that have not ended.
function follow() {
  const live = [...tasks.values()].filter((t) => !TERMINAL.has(t.status)).map((t) => t.taskId).sort().slice(0, 100);
  const key = live.join(",");
  if (key === listening) return;
  if (listenAbort) listenAbort.abort();
  listenAbort = null;
  listening = key;
  setLive(false);
  if (live.length === 0) {
    $("live").textContent = "nothing running";
    return;
  }
  const ctl = new AbortController();
  listenAbort = ctl;
  post("subscriptions/listen", "", { notifications: { taskIds: live } }, ctl.signal)
    .then((resp) => {
      if (!resp.ok) throw new Error("listen: HTTP " + resp.status);
      return readSSE(resp, (m) => {
        if (m.method === "notifications/subscriptions/acknowledged") setLive(true);
        if (m.method === "notifications/tasks") update(m.params, "stream");
      });
    })
    .catch((err) => { if (err.name !== "AbortError") showError(err); })
    .finally(() => {
      if (listenAbort === ctl) { listenAbort = null; listening = ""; setLive(false); }
    });
}

function setLive(on) {
  $("live").textContent = on ? "live" : "not live";
  $("live").className = on ? "on" : "off";
}

// update takes a task's new state from the listen stream or tasks/get
// (via says which; the row shows it as data-via).
function update(t, via) {
  const known = tasks.get(t.taskId) || {};
  const merged = Object.assign({}, known, t, { via });
  if (!t.inputRequests) delete merged.inputRequests;
  tasks.set(t.taskId, merged);
  renderList();
  if (t.taskId === selected) renderDetail(merged);
  if (TERMINAL.has(t.status)) follow();
}

function renderList() {
  const body = $("tasks").tBodies[0];
  const rows = [...tasks.values()].filter(shown).sort((a, b) => (a.createdAt < b.createdAt ? 1 : -1));
  body.replaceChildren(...rows.map((t) => {
    const tr = document.createElement("tr");
    tr.dataset.task = t.taskId;
    tr.dataset.via = t.via || "";
    tr.tabIndex = 0;
    if (t.taskId === selected) tr.className = "selected";
    const cell = (text, cls) => {
      const td = document.createElement("td");
      td.textContent = text;
      if (cls) td.className = cls;
      tr.append(td);
      return td;
    };
    cell(t.taskId.slice(0, 10) + "…").title = t.taskId;
    cell(t.title || t.tool || "", "tool").title = t.tool || "";
    cell(t.status, "status " + t.status).title = t.statusMessage || "";
    const p = progressOf(t) || t.progress;
    const pc = cell("", "progress");
    if (p) {
      const bar = document.createElement("progress");
      bar.max = p.total;
      bar.value = p.done;
      bar.textContent = bar.title = p.done + " of " + p.total;
      pc.append(bar);
    } else {
      pc.textContent = t.statusMessage || "";
    }
    cell(duration(t.queuedMs), "queued");
    cell(duration(elapsed(t)), "elapsed");
    cell(costText(t.cost), "cost");
    tr.addEventListener("click", () => select(t.taskId));
    tr.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); select(t.taskId); } });
    return tr;
  }));
  $("empty").hidden = rows.length > 0;
}

async function select(id) {
  selected = id;
  renderList();
  try {
    await loadPage(id);
    update(await rpc("tasks/get", id, { taskId: id }), "get");
  } catch (err) {
    showError(err);
  }
}

// loadPage reads the task page's data (GET /v1/tasks/{id}): timeline,
// attempts, arguments, receipt and the facts of the listing.
async function loadPage(id) {
  const { status, body } = await getJSON("/v1/tasks/" + encodeURIComponent(id));
  if (status !== 200) throw new Error((body && body.error) || "HTTP " + status);
  const known = tasks.get(id) || {};
  tasks.set(id, Object.assign({}, known, body, { via: known.via || "get", seenAt: Date.now() }));
}

function renderDetail(t) {
  $("detail").hidden = false;
  $("d-id").textContent = t.taskId;
  $("d-status").textContent = t.status;
  $("d-status").className = "status " + t.status;
  $("d-message").textContent = t.statusMessage || "";
  $("d-cancel").hidden = TERMINAL.has(t.status);
  const facts = [t.title ? t.tool + " (" + t.title + ")" : t.tool, t.queuedMs !== undefined ? "queued " + duration(t.queuedMs) : "waiting for a worker",
    t.elapsedMs !== undefined ? "ran " + duration(elapsed(t)) : "", costText(t.cost)];
  $("d-facts").textContent = facts.filter(Boolean).join(" · ");
  renderInput(t);
  renderResult(t);
  renderTimeline(t);
  renderArgs(t);
  $("d-receipt").textContent = t.receipt ? "Receipt: " + JSON.stringify(t.receipt) : "";
}

const KINDS = { started: "attempt started", input_requested: "asked for input", answered: "answer received",
  lost: "worker lost: taken over", cancel_requested: "cancel requested", ended: "ended" };

// renderTimeline lists what happened, with the time since the step before.
function renderTimeline(t) {
  const ol = $("d-timeline");
  let prev = new Date(t.createdAt).getTime();
  const items = [{ kind: "created", at: t.createdAt }].concat(t.timeline || []);
  ol.replaceChildren(...items.map((e) => {
    const li = document.createElement("li");
    li.dataset.kind = e.kind;
    const at = new Date(e.at).getTime();
    let text = (KINDS[e.kind] || e.kind);
    if (e.attempt) text += " #" + e.attempt;
    if (e.worker) text += " on " + e.worker;
    if (e.detail) text += ": " + e.detail;
    li.textContent = text + " (" + new Date(e.at).toLocaleTimeString() + (at > prev ? ", +" + duration(at - prev) : "") + ")";
    prev = at;
    return li;
  }));
}

function renderArgs(t) {
  const box = $("d-args");
  box.replaceChildren();
  if (!t.argumentsPreview && !t.argumentsRef) return;
  const h = document.createElement("h3");
  h.textContent = "Arguments";
  box.append(h);
  if (t.argumentsPreview) {
    const pre = document.createElement("pre");
    let text = t.argumentsPreview;
    try { text = JSON.stringify(JSON.parse(text), null, 2); } catch (_) { text += "…"; }
    pre.textContent = text;
    box.append(pre);
  }
  if (t.argumentsBytes > (t.argumentsPreview || "").length) {
    const btn = document.createElement("button");
    btn.type = "button";
    btn.textContent = "Download all " + t.argumentsBytes + " bytes";
    btn.addEventListener("click", () => download(t.taskId));
    box.append(btn);
  }
  if (t.argumentsRef) {
    const p = document.createElement("p");
    p.textContent = "Stored object: " + t.argumentsRef;
    box.append(p);
  }
}

async function download(id) {
  const resp = await fetch("/v1/tasks/" + encodeURIComponent(id) + "/arguments", { headers: authHeaders({}) });
  if (!resp.ok) { showError(new Error("arguments: HTTP " + resp.status)); return; }
  const a = document.createElement("a");
  a.href = URL.createObjectURL(await resp.blob());
  a.download = id + "-arguments.json";
  a.click();
  URL.revokeObjectURL(a.href);
}

function renderResult(t) {
  const out = $("d-result");
  out.replaceChildren();
  if (t.error) {
    const p = document.createElement("p");
    p.className = "error";
    p.textContent = "Error " + t.error.code + ": " + t.error.message;
    out.append(p);
  }
  if (!t.result) return;
  for (const block of t.result.content || []) {
    const el = renderBlock(block);
    if (el) out.append(el);
  }
  if (t.result.structuredContent) out.append(jsonBlock(t.result.structuredContent));
  if (t.result.isError) out.classList.add("error"); else out.classList.remove("error");
}

// renderBlock shows one content block as what it is: text (JSON
// pretty-printed), an image, audio or video with a player, an embedded
// resource, or a link to a stored object that loads it through
// resources/read (mcpq's own API) into the page.
function renderBlock(block) {
  switch (block.type) {
    case "text": return textBlock(block.text, "");
    case "image": case "audio": return media(block.mimeType, "data:" + block.mimeType + ";base64," + block.data);
    case "resource": {
      const r = block.resource || {};
      if (r.blob !== undefined) return media(r.mimeType || "application/octet-stream", "data:" + (r.mimeType || "application/octet-stream") + ";base64," + r.blob, r.uri);
      return textBlock(r.text || "", r.mimeType || "");
    }
    case "resource_link": return storedLink(block);
  }
  return null;
}

function textBlock(text, mimeType) {
  if (mimeType === "application/json" || /^\s*[{[]/.test(text)) {
    try { return jsonBlock(JSON.parse(text)); } catch (_) { /* not JSON: as text */ }
  }
  const pre = document.createElement("pre");
  pre.textContent = text;
  return pre;
}

function jsonBlock(value) {
  const pre = document.createElement("pre");
  pre.className = "json";
  pre.textContent = JSON.stringify(value, null, 2);
  return pre;
}

// media is an image, audio or video element (by mimeType) playing src, or
// a download link for any other type.
function media(mimeType, src, name) {
  const kind = (mimeType || "").split("/")[0];
  if (kind === "image") {
    const img = document.createElement("img");
    img.alt = "result image";
    img.src = src;
    return img;
  }
  if (kind === "audio" || kind === "video") {
    const el = document.createElement(kind);
    el.controls = true;
    el.preload = "metadata";
    el.src = src;
    el.dataset.mimeType = mimeType;
    return el;
  }
  const a = document.createElement("a");
  a.href = src;
  a.download = (name || "result").split("/").pop();
  a.textContent = "Download " + a.download + " (" + mimeType + ")";
  return a;
}

// storedLink is a resource_link: its name, type and size, and a button
// that reads it with resources/read and shows it in place.
function storedLink(block) {
  const box = document.createElement("div");
  box.className = "stored";
  const p = document.createElement("p");
  const size = block.size !== undefined ? ", " + block.size + " bytes" : "";
  p.textContent = "Stored object: " + (block.name || "") + " " + block.uri + (block.mimeType ? " (" + block.mimeType + size + ")" : "");
  const btn = document.createElement("button");
  btn.type = "button";
  btn.textContent = /^(video|audio|image)\//.test(block.mimeType || "") ? "Show" : "Open";
  btn.addEventListener("click", async () => {
    try {
      const res = await rpc("resources/read", block.uri, { uri: block.uri });
      const c = (res.contents || [])[0] || {};
      const type = c.mimeType || block.mimeType || "application/octet-stream";
      if (c.blob === undefined) { box.append(textBlock(c.text || "", type)); }
      else {
        const bytes = Uint8Array.from(atob(c.blob), (ch) => ch.charCodeAt(0));
        box.append(media(type, URL.createObjectURL(new Blob([bytes], { type })), block.name || block.uri));
      }
      btn.remove();
    } catch (err) {
      showError(err);
    }
  });
  box.append(p, btn);
  return box;
}

// renderInput builds one form per elicitation request from its
// requestedSchema (string, number, integer, boolean and enum fields).
function renderInput(t) {
  const box = $("d-input");
  const reqs = t.inputRequests || {};
  if (box.dataset.for === t.taskId + ":" + Object.keys(reqs).sort().join(",")) return; // keep what is typed
  box.dataset.for = t.taskId + ":" + Object.keys(reqs).sort().join(",");
  box.replaceChildren();
  for (const [key, req] of Object.entries(reqs)) {
    const form = document.createElement("form");
    form.dataset.key = key;
    const fs = document.createElement("fieldset");
    const legend = document.createElement("legend");
    legend.textContent = (req.params && req.params.message) || key;
    fs.append(legend);
    if (req.method !== "elicitation/create") {
      const p = document.createElement("p");
      p.textContent = "This task asks for " + req.method + ", which the dashboard cannot answer.";
      fs.append(p);
      form.append(fs);
      box.append(form);
      continue;
    }
    const schema = (req.params && req.params.requestedSchema) || { properties: {} };
    const required = new Set(schema.required || []);
    for (const [name, prop] of Object.entries(schema.properties || {})) {
      const label = document.createElement("label");
      label.textContent = (prop.title || name) + (required.has(name) ? " *" : "") + " ";
      let input;
      if (Array.isArray(prop.enum)) {
        input = document.createElement("select");
        for (const v of prop.enum) {
          const o = document.createElement("option");
          o.value = o.textContent = String(v);
          input.append(o);
        }
      } else {
        input = document.createElement("input");
        input.type = prop.type === "boolean" ? "checkbox" : (prop.type === "number" || prop.type === "integer") ? "number" : "text";
        if (prop.type === "integer") input.step = "1";
        if (prop.default !== undefined) input[prop.type === "boolean" ? "checked" : "value"] = prop.default;
      }
      input.name = name;
      input.dataset.type = prop.type || "string";
      input.required = required.has(name) && prop.type !== "boolean";
      if (prop.description) input.title = prop.description;
      label.append(input);
      fs.append(label);
    }
    const accept = document.createElement("button");
    accept.type = "submit";
    accept.textContent = "Send";
    const decline = document.createElement("button");
    decline.type = "button";
    decline.textContent = "Decline";
    decline.addEventListener("click", () => answer(t.taskId, key, { action: "decline" }));
    fs.append(accept, decline);
    form.append(fs);
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const content = {};
      for (const el of form.querySelectorAll("[name]")) {
        const type = el.dataset.type;
        if (type === "boolean") content[el.name] = el.checked;
        else if (el.value === "") continue;
        else if (type === "number" || type === "integer") content[el.name] = Number(el.value);
        else content[el.name] = el.value;
      }
      answer(t.taskId, key, { action: "accept", content });
    });
    box.append(form);
  }
}

async function answer(id, key, response) {
  try {
    await rpc("tasks/update", id, { taskId: id, inputResponses: { [key]: response } });
    update(await rpc("tasks/get", id, { taskId: id }), "get");
  } catch (err) {
    showError(err);
  }
}

$("d-cancel").addEventListener("click", async () => {
  try {
    await rpc("tasks/cancel", selected, { taskId: selected });
    update(await rpc("tasks/get", selected, { taskId: selected }), "get");
  } catch (err) {
    showError(err);
  }
});

$("d-copy").addEventListener("click", () => {
  const line = "mcpq task get " + selected;
  if (navigator.clipboard) navigator.clipboard.writeText(line).catch(() => {});
  $("d-copy").dataset.copied = line;
});
$("filters").addEventListener("submit", (ev) => { ev.preventDefault(); tasks.clear(); refresh(); });
$("more").addEventListener("click", () => refresh(true));
$("chart-tool").addEventListener("change", () => { if (lastSeries) renderSeries(lastSeries); });
// Elapsed times count on, in place (a rebuilt row would lose the keyboard focus).
setInterval(() => {
  for (const tr of $("tasks").tBodies[0].rows) {
    const t = tasks.get(tr.dataset.task);
    const td = tr.querySelector("td.elapsed");
    if (t && td) td.textContent = duration(elapsed(t));
  }
}, 1000);

// useCredential makes key (an API key or an access token) the page's
// credential, kept for this tab, and reloads the caller's tasks.
function useCredential(key) {
  apiKey = key;
  sessionStorage.setItem("mcpq-key", apiKey);
  tasks.clear();
  selected = "";
  $("detail").hidden = true;
  follow();
  refresh();
}

$("key").value = apiKey;
$("auth").addEventListener("submit", (ev) => {
  ev.preventDefault();
  useCredential($("key").value.trim());
  $("who").textContent = "";
});

// Where the deployment uses OAuth the page offers a sign-in, and finishes
// the one the authorization server sent the person back from.
async function setupSignIn() {
  const cfg = await signInConfig();
  if (!cfg) return;
  $("signin").hidden = false;
  $("signin").addEventListener("click", () => startSignIn(cfg).catch(signInFailed));
  const token = await finishSignIn(cfg);
  if (token) {
    $("key").value = "";
    $("who").className = "signed-in";
    $("who").textContent = "signed in at " + cfg.issuer;
    useCredential(token);
  }
}

function signInFailed(err) {
  $("who").className = "error";
  $("who").textContent = String(err.message || err);
}

setupSignIn().catch(signInFailed);
refresh();
setInterval(refresh, 5000); // new tasks; state changes come over the stream
