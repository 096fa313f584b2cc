// mcpq task dashboard: the caller's tasks (GET /v1/tasks), their live
// status over one subscriptions/listen SSE stream, results (images shown),
// input requests answered through a form built from the requested schema,
// and cancel. Everything goes through the public API of the front end that
// served this page, with the API key given above (none in mcpq dev).
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

// refresh reads the caller's task list and follows the live ones.
async function refresh() {
  try {
    const resp = await fetch("/v1/tasks?limit=100", { headers: authHeaders({ Accept: "application/json" }) });
    const body = await resp.json();
    if (!resp.ok) throw new Error(body.error || "HTTP " + resp.status);
    for (const t of body.tasks) {
      const known = tasks.get(t.taskId);
      if (!known || known.lastUpdatedAt < t.lastUpdatedAt) tasks.set(t.taskId, Object.assign({}, known, t, { via: "list" }));
    }
    showError(null);
    renderList();
    follow();
  } catch (err) {
    showError(err);
  }
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
  const rows = [...tasks.values()].sort((a, b) => (a.createdAt < b.createdAt ? 1 : -1));
  body.replaceChildren(...rows.map((t) => {
    const tr = document.createElement("tr");
    tr.dataset.task = t.taskId;
    tr.dataset.via = t.via || "";
    if (t.taskId === selected) tr.className = "selected";
    const cells = [t.taskId, t.status, t.statusMessage || "", new Date(t.createdAt).toLocaleTimeString()];
    cells.forEach((text, i) => {
      const td = document.createElement("td");
      td.textContent = text;
      if (i === 1) td.className = "status " + t.status;
      tr.append(td);
    });
    tr.addEventListener("click", () => select(t.taskId));
    return tr;
  }));
  $("empty").hidden = rows.length > 0;
}

async function select(id) {
  selected = id;
  renderList();
  try {
    update(await rpc("tasks/get", id, { taskId: id }), "get");
  } catch (err) {
    showError(err);
  }
}

function renderDetail(t) {
  $("detail").hidden = false;
  $("d-id").textContent = t.taskId;
  $("d-status").textContent = t.status;
  $("d-status").className = "status " + t.status;
  $("d-message").textContent = t.statusMessage || "";
  $("d-cancel").hidden = TERMINAL.has(t.status);
  renderInput(t);
  renderResult(t);
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
    if (block.type === "text") {
      const pre = document.createElement("pre");
      pre.textContent = block.text;
      out.append(pre);
    } else if (block.type === "image") {
      const img = document.createElement("img");
      img.alt = "result image";
      img.src = "data:" + block.mimeType + ";base64," + block.data;
      out.append(img);
    } else if (block.type === "resource_link") {
      const p = document.createElement("p");
      p.textContent = "Resource: " + block.uri;
      out.append(p);
    }
  }
  if (t.result.structuredContent) {
    const pre = document.createElement("pre");
    pre.textContent = JSON.stringify(t.result.structuredContent, null, 2);
    out.append(pre);
  }
  if (t.result.isError) out.classList.add("error"); else out.classList.remove("error");
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

$("key").value = apiKey;
$("auth").addEventListener("submit", (ev) => {
  ev.preventDefault();
  apiKey = $("key").value.trim();
  sessionStorage.setItem("mcpq-key", apiKey);
  tasks.clear();
  selected = "";
  $("detail").hidden = true;
  follow();
  refresh();
});

refresh();
setInterval(refresh, 5000); // new tasks; state changes come over the stream
