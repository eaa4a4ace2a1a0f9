// The interactive reference: the API key (this tab's sessionStorage only) and what its scopes
// allow (GET /v1/api-key: operations the key cannot use have their Send disabled), the Try-it forms,
// code samples built from them, how responses are shown (status, timing, headers, JSON, pages,
// audio, chart), the search box, and the navigation menu on narrow screens.
// Requests go only to this origin; the key is attached only to this origin's /v1 API.

import { drawChart } from "./chart.js";

const KEY_STORAGE = "workspace-api.key";
const SHOWN_HEADERS = [
  "Content-Type", "Content-Length", "X-Request-Id", "RateLimit-Policy", "RateLimit",
  "Retry-After", "Link", "Location", "Content-Range", "Accept-Ranges", "ETag",
  "WWW-Authenticate", "Allow",
];
// The documented examples use the all-zero UUID for "an id you get elsewhere": ownerUserId is
// filled from the last GET /users, listId from the last GET /lists, ...
const NIL_ID = "00000000-0000-4000-8000-000000000000";
const BODY_PLACEHOLDER = new RegExp(`"(\\w*?)([A-Z]?[a-z]+)Id": "${NIL_ID}"`, "g");
const MAX_HIGHLIGHT = 400_000;

const keyInput = document.getElementById("api-key");
const keyState = document.getElementById("key-state");
const remembered = {}; // resource name -> an id seen in a response, to fill other forms
const objectUrls = new WeakMap(); // result element -> blob: URL to revoke on the next send

// --- the key -----------------------------------------------------------------------------

function currentKey() {
  return (sessionStorage.getItem(KEY_STORAGE) || "").trim();
}

function showKeyState() {
  const set = currentKey() !== "";
  keyState.textContent = set ? "key set for this tab" : "no key";
  keyState.classList.toggle("set", set);
}

keyInput.value = currentKey();
keyInput.addEventListener("input", () => {
  const value = keyInput.value.trim();
  if (value) sessionStorage.setItem(KEY_STORAGE, value);
  else sessionStorage.removeItem(KEY_STORAGE);
  showKeyState();
  clearTimeout(scopeTimer);
  scopeTimer = setTimeout(checkKeyScopes, 400); // once typing or pasting has settled
});
document.getElementById("key-toggle").addEventListener("click", (event) => {
  const show = keyInput.type === "password";
  keyInput.type = show ? "text" : "password";
  event.currentTarget.textContent = show ? "Hide" : "Show";
  event.currentTarget.setAttribute("aria-pressed", String(show));
});
document.getElementById("key-forget").addEventListener("click", () => {
  sessionStorage.removeItem(KEY_STORAGE);
  keyInput.value = "";
  showKeyState();
  checkKeyScopes();
});
document.getElementById("key-form").addEventListener("submit", (event) => event.preventDefault());
showKeyState();

// --- what the key may do: its scopes, from GET /v1/api-key --------------------------------

const keyScopes = document.getElementById("key-scopes");
let scopeTimer = 0;
let scopeCheck = 0; // the newest check's number: an older answer never overwrites a newer one

function showScopes(text, refused) {
  keyScopes.textContent = text;
  keyScopes.classList.toggle("refused", refused);
  keyScopes.hidden = text === "";
}

// Each operation that needs a scope the key lacks gets its Send disabled, saying why.
// `scopes` null: not known (no key, or one not accepted), so nothing is disabled.
function applyScopes(scopes) {
  for (const op of document.querySelectorAll("article.op[data-scope]")) {
    const needed = op.dataset.scope;
    const blocked = scopes !== null && !scopes.includes(needed);
    const send = op.querySelector("form.try .send");
    const why = op.querySelector(".try-blocked");
    if (!send || !why) continue;
    send.disabled = blocked;
    op.classList.toggle("blocked", blocked);
    why.hidden = !blocked;
    why.textContent = blocked
      ? `Your key cannot use this operation: it needs the ${needed} scope, and the key has ${scopes.join(", ")}. Paste a key with ${needed} to try it.`
      : "";
  }
}

function blockedReason(form) {
  const why = form.querySelector(".try-blocked");
  return why && !why.hidden ? why.textContent : null;
}

async function checkKeyScopes() {
  const mine = ++scopeCheck;
  const key = currentKey();
  if (!key) {
    applyScopes(null);
    showScopes("", false);
    return;
  }
  let response;
  let json = null;
  try {
    response = await fetch("/v1/api-key", {
      headers: { Authorization: `Bearer ${key}` }, cache: "no-store", credentials: "omit",
      redirect: "manual", referrerPolicy: "no-referrer",
    });
    json = await response.json();
  } catch {
    if (mine === scopeCheck) showScopes("The key's scopes could not be checked.", true);
    return;
  }
  if (mine !== scopeCheck) return;
  if (response.ok && json && json.apiKey && Array.isArray(json.apiKey.scopes)) {
    const { scopes, expiresAt } = json.apiKey;
    applyScopes(scopes);
    const until = expiresAt ? `; it expires ${expiresAt.replace("T", " ").slice(0, 16)} UTC` : "";
    showScopes(`This key's scopes: ${scopes.join(", ")}${until}.`, false);
  } else {
    applyScopes(null);
    const why = json && typeof json.detail === "string" ? json.detail : `HTTP ${response.status}`;
    showScopes(`This key is not accepted: ${why}.`, true);
  }
}

if (currentKey()) checkKeyScopes();

// --- building a request from a form ------------------------------------------------------

function sameOrigin(target) {
  const url = new URL(target, location.origin);
  if (url.origin !== location.origin) throw new Error("the console only talks to this site");
  return url;
}

function describeRequest(form) {
  const op = form.closest(".op");
  const methodChoice = form.elements.namedItem("__method");
  const method = methodChoice ? methodChoice.value : op.dataset.method;
  let path = op.dataset.path;
  const query = new URLSearchParams();
  const headers = {};
  const missing = [];
  for (const field of form.querySelectorAll("[data-in]")) {
    const value = field.value.trim();
    const where = field.dataset.in;
    if (where === "path") {
      if (!value) missing.push(field.name);
      path = path.replace(`{${field.name}}`, encodeURIComponent(value) || `{${field.name}}`);
    } else if (value && where === "query") {
      query.append(field.name, value);
    } else if (value && where === "header") {
      headers[field.name] = value;
    }
  }
  const search = query.toString();
  const bodyField = form.elements.namedItem("__body");
  const request = { method, path: search ? `${path}?${search}` : path, headers, missing };
  if (bodyField) {
    request.body = bodyField.value;
    request.headers["Content-Type"] = "application/json";
  }
  return request;
}

function updatePreview(form) {
  const request = describeRequest(form);
  form.querySelector(".try-url").textContent = `${request.method} ${request.path}`;
  const samples = form.closest(".op").querySelector(".samples");
  if (samples) {
    const auth = form.closest(".op").dataset.auth === "bearer";
    for (const pre of samples.querySelectorAll("pre.sample")) {
      pre.textContent = SAMPLES[pre.dataset.lang](request, auth);
    }
  }
}

function shellQuote(text) {
  return `'${text.replace(/'/g, "'\\''")}'`;
}

// An absolute URL for a sample; path parameters not filled in yet stay readable as {name}.
function sampleUrl(path) {
  return new URL(path, location.origin).href.replace(/%7B(\w+)%7D/g, "{$1}");
}

function curlFor(request, auth) {
  const parts = ["curl -i"];
  if (request.method === "HEAD") parts.push("--head");
  else if (request.method !== "GET") parts.push(`-X ${request.method}`);
  parts.push(shellQuote(sampleUrl(request.path)));
  if (auth) parts.push('-H "Authorization: Bearer $API_KEY"');
  for (const [name, value] of Object.entries(request.headers)) {
    parts.push(`-H ${shellQuote(`${name}: ${value}`)}`);
  }
  if (request.body !== undefined) parts.push(`--data ${shellQuote(request.body)}`);
  return parts.join(" \\\n  ");
}

// --- code samples: the request of the Try-it form, with the key read from $API_KEY ---------

function pythonValue(value, indent = "") {
  // JSON as a Python literal (true/false/null differ).
  const inner = `${indent}    `;
  if (Array.isArray(value)) {
    if (!value.length) return "[]";
    return `[\n${value.map((v) => inner + pythonValue(v, inner)).join(",\n")},\n${indent}]`;
  }
  if (value && typeof value === "object") {
    const entries = Object.entries(value);
    if (!entries.length) return "{}";
    return `{\n${entries.map(([k, v]) => `${inner}${JSON.stringify(k)}: ${pythonValue(v, inner)}`).join(",\n")},\n${indent}}`;
  }
  if (value === true) return "True";
  if (value === false) return "False";
  if (value === null) return "None";
  return JSON.stringify(value);
}

function parsedBody(request) {
  try {
    return { ok: true, value: JSON.parse(request.body) };
  } catch {
    return { ok: false, value: request.body };
  }
}

function isAudio(request) {
  return /\/recording(\?|$)/.test(request.path);
}

function pythonFor(request, auth) {
  const url = new URL(request.path, location.origin);
  const lines = [];
  if (auth) lines.push("import os", "");
  lines.push("import httpx", "");
  const args = [`    ${JSON.stringify(sampleUrl(url.pathname))}`];
  const params = [...url.searchParams];
  if (params.length) {
    args.push(`    params={${params.map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`).join(", ")}}`);
  }
  const headers = Object.entries(request.headers).filter(([name]) => name !== "Content-Type")
    .map(([name, value]) => `${JSON.stringify(name)}: ${JSON.stringify(value)}`);
  if (auth) headers.unshift('"Authorization": f"Bearer {os.environ[\'API_KEY\']}"');
  if (headers.length) args.push(`    headers={${headers.join(", ")}}`);
  if (request.body !== undefined) {
    const body = parsedBody(request);
    args.push(body.ok ? `    json=${pythonValue(body.value, "    ")}` : `    content=${JSON.stringify(body.value)}`);
  }
  lines.push(`response = httpx.${request.method.toLowerCase()}(`, `${args.join(",\n")},`, ")");
  lines.push("response.raise_for_status()");
  if (request.method === "HEAD") lines.push("print(response.status_code, dict(response.headers))");
  else if (isAudio(request)) {
    lines.push('with open("recording.mp3", "wb") as file:', "    file.write(response.content)");
  } else lines.push("print(response.json())");
  return lines.join("\n");
}

function javascriptFor(request, auth) {
  const url = sampleUrl(request.path);
  const options = [];
  if (request.method !== "GET") options.push(`  method: ${JSON.stringify(request.method)},`);
  const headers = Object.entries(request.headers)
    .map(([name, value]) => `    ${JSON.stringify(name)}: ${JSON.stringify(value)},`);
  if (auth) headers.unshift("    Authorization: `Bearer ${process.env.API_KEY}`,");
  if (headers.length) options.push("  headers: {", ...headers, "  },");
  if (request.body !== undefined) {
    const body = parsedBody(request);
    options.push(body.ok
      ? `  body: JSON.stringify(${JSON.stringify(body.value, null, 2).replaceAll("\n", "\n  ")}),`
      : `  body: ${JSON.stringify(body.value)},`);
  }
  const call = options.length
    ? `const response = await fetch(${JSON.stringify(url)}, {\n${options.join("\n")}\n});`
    : `const response = await fetch(${JSON.stringify(url)});`;
  const lines = [call, "if (!response.ok) throw new Error(`${response.status} ${await response.text()}`);"];
  if (request.method === "HEAD") lines.push("console.log(response.status, Object.fromEntries(response.headers));");
  else if (isAudio(request)) {
    lines.unshift('import { writeFile } from "node:fs/promises";', "");
    lines.push('await writeFile("recording.mp3", Buffer.from(await response.arrayBuffer()));');
  } else lines.push("console.log(await response.json());");
  return lines.join("\n");
}

const SAMPLES = { curl: curlFor, python: pythonFor, javascript: javascriptFor };

function showSample(samples, lang) {
  for (const tab of samples.querySelectorAll(".sample-tab")) {
    tab.setAttribute("aria-selected", String(tab.dataset.lang === lang));
  }
  for (const pre of samples.querySelectorAll("pre.sample")) pre.hidden = pre.dataset.lang !== lang;
}

for (const samples of document.querySelectorAll(".samples")) {
  for (const tab of samples.querySelectorAll(".sample-tab")) {
    tab.addEventListener("click", () => {
      // One language for the whole page: switching here switches every operation's samples.
      for (const other of document.querySelectorAll(".samples")) showSample(other, tab.dataset.lang);
    });
  }
  const copy = samples.querySelector(".sample-copy");
  copy.addEventListener("click", async () => {
    const shown = samples.querySelector("pre.sample:not([hidden])");
    try {
      await navigator.clipboard.writeText(shown.textContent);
      copy.textContent = "Copied";
    } catch {
      copy.textContent = "Select and copy";
    }
    setTimeout(() => { copy.textContent = "Copy"; }, 1500);
  });
}

// --- sending -----------------------------------------------------------------------------

async function send(form, override) {
  const op = form.closest(".op");
  const result = form.querySelector(".result");
  const request = override || describeRequest(form);
  const auth = op.dataset.auth === "bearer";
  result.hidden = false;
  const blocked = blockedReason(form);
  if (blocked) { // a pager button or Enter: nothing is sent that the key may not do
    result.replaceChildren(message(blocked, "error"));
    return;
  }
  if (request.missing.length) {
    result.replaceChildren(message(`Fill in ${request.missing.join(", ")} first.`, "error"));
    return;
  }
  const url = sameOrigin(request.path);
  const headers = { ...request.headers };
  if (auth) {
    const key = currentKey();
    if (!key) {
      result.replaceChildren(message("Enter your API key at the top of the page first.", "error"));
      keyInput.focus();
      return;
    }
    if (url.pathname.startsWith("/v1/")) headers.Authorization = `Bearer ${key}`;
  }
  const button = form.querySelector(".send");
  button.disabled = true;
  button.textContent = "Sending…";
  const started = performance.now();
  try {
    const response = await fetch(url, {
      method: request.method, headers, body: request.body, cache: "no-store",
      credentials: "omit", redirect: "manual", referrerPolicy: "no-referrer",
    });
    const type = response.headers.get("Content-Type") || "";
    let payload = null;
    if (request.method !== "HEAD") {
      payload = type.startsWith("audio/") ? await response.blob() : await response.text();
    }
    const elapsed = performance.now() - started;
    showResult(form, result, request, response, payload, elapsed, auth);
  } catch (error) {
    result.replaceChildren(message(`The request failed: ${error.message}`, "error"));
  } finally {
    button.disabled = blockedReason(form) !== null;
    button.textContent = "Send";
  }
}

// --- showing the response ----------------------------------------------------------------

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === "class") node.className = value;
    else node.setAttribute(name, value);
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

function message(text, kind) {
  return el("p", { class: `result-message ${kind}` }, text);
}

function formatBytes(size) {
  if (size < 1024) return `${size} B`;
  if (size < 1024 * 1024) return `${(size / 1024).toFixed(1)} kB`;
  return `${(size / 1024 / 1024).toFixed(2)} MB`;
}

const REASONS = {
  200: "OK", 201: "Created", 204: "No Content", 206: "Partial Content", 302: "Found",
  400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 405: "Method Not Allowed",
  413: "Payload Too Large", 415: "Unsupported Media Type", 416: "Range Not Satisfiable",
  422: "Unprocessable Content", 429: "Too Many Requests", 500: "Internal Server Error",
  502: "Bad Gateway", 503: "Service Unavailable",
};

function showResult(form, result, request, response, payload, elapsed, auth) {
  const previous = objectUrls.get(result);
  if (previous) URL.revokeObjectURL(previous);
  objectUrls.delete(result);

  const status = response.status;
  const reason = response.statusText || REASONS[status] || "";
  const type = response.headers.get("Content-Type") || "";
  const size = payload instanceof Blob ? payload.size
    : payload !== null ? new TextEncoder().encode(payload).length : 0;
  const parts = [
    el("div", { class: "result-line" },
      el("span", { class: `result-status status-${String(status)[0]}xx` }, `${status} ${reason}`.trim()),
      el("span", { class: "result-meta result-time" }, `${Math.round(elapsed)} ms`),
      el("span", { class: "result-meta" }, formatBytes(size)),
      el("span", { class: "result-meta" }, `${request.method} ${request.path}`)),
  ];

  const headerList = el("dl", { class: "result-headers" });
  for (const name of SHOWN_HEADERS) {
    const value = response.headers.get(name);
    if (value !== null) headerList.append(el("dt", {}, name), el("dd", { "data-header": name }, value));
  }
  parts.push(headerList);

  const links = parseLinks(response.headers.get("Link"));
  const records = /^application\/x-ndjson/.test(type) ? ndjson(payload) : null; // an export
  let json = null;
  if (typeof payload === "string" && /json/.test(type) && payload && records === null) {
    try {
      json = JSON.parse(payload);
    } catch {
      json = null;
    }
  }
  const cursor = json && typeof json.nextCursor === "string" ? json.nextCursor : null;
  if (Object.keys(links).length || cursor) parts.push(pager(form, request, links, json));
  if (json && /problem\+json/.test(type) && typeof json.type === "string") {
    const href = sameOrigin(json.type).href;
    parts.push(el("p", { class: "problem-link" }, "What this error means: ",
      el("a", { href }, `${json.code || "problem"} on the error codes page`)));
  }
  if (payload instanceof Blob) parts.push(player(result, request, payload));
  if (json && Array.isArray(json.byDay) && json.byDay.length) {
    const chart = el("div", { class: "chart" });
    parts.push(chart);
    drawChart(chart, json.byDay);
  }
  if (records !== null) {
    const shown = records.slice(0, EXPORT_SHOWN);
    const more = records.length > shown.length ? `; the first ${shown.length}:` : "";
    parts.push(message(`${records.length} records, one per line (NDJSON)${more}`, "note"));
    parts.push(jsonView(shown));
  }
  if (json !== null) parts.push(jsonView(json));
  else if (records === null && typeof payload === "string" && payload) {
    parts.push(el("pre", { class: "json" }, payload));
  }
  parts.push(el("pre", { class: "curl" }, curlFor(request, auth)));
  result.replaceChildren(...parts);
  if (json && status < 300) remember(json);
}

// An export's body: one JSON record per line. Only its first records are shown, as a JSON array
// (an export of a large workspace holds millions).
const EXPORT_SHOWN = 50;

function ndjson(payload) {
  if (typeof payload !== "string") return null;
  try {
    return payload.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line));
  } catch {
    return null;
  }
}

function parseLinks(header) {
  const links = {};
  if (!header) return links;
  for (const match of header.matchAll(/<([^>]*)>\s*;\s*rel="?([^";,]+)"?/g)) {
    links[match[2]] = match[1];
  }
  return links;
}

// Page-number responses: first/prev/next/last from the Link header, plus "Next by cursor"
// when the response has a nextCursor (switching to cursor paging, which skips and repeats
// nothing while records arrive). Cursor responses (no `page`): "Next" requests
// ?cursor=<nextCursor>; in the sync order (sort=updatedAt) a caught-up walk still has a
// nextCursor, and "Next" then polls for changes; "First" starts over without a cursor.
function pager(form, request, links, json) {
  const nav = el("nav", { class: "pager", "aria-label": "pages" });
  const cursor = json && typeof json.nextCursor === "string" ? json.nextCursor : null;
  const cursorMode = json !== null && !("page" in json) && "nextCursor" in json;
  const targets = { ...links };
  if (cursorMode) {
    targets.first = withCursor(request, null);
    targets.next = cursor ? withCursor(request, cursor) : undefined;
  }
  const next = cursorMode && cursor && json.hasMore === false ? "Poll for changes ›" : "Next ›";
  const labels = [["first", "« First"], ["prev", "‹ Previous"], ["next", next], ["last", "Last »"]];
  if (!cursorMode && cursor) labels.push(["cursor", "Next by cursor ›"]);
  if (!cursorMode && cursor) targets.cursor = withCursor(request, cursor);
  for (const [rel, label] of labels) {
    const button = el("button", { type: "button", class: "secondary", "data-rel": rel }, label);
    if (!targets[rel]) button.disabled = true;
    else button.addEventListener("click", () => followLink(form, targets[rel]));
    nav.append(button);
  }
  if (json && Number.isInteger(json.page) && Number.isInteger(json.pageSize)) {
    const pages = Math.max(1, Math.ceil((json.total || 0) / json.pageSize));
    nav.append(el("span", { class: "page-info" }, `page ${json.page} of ${pages} · ${json.total} in total`));
  } else if (cursorMode) {
    const where = json.hasMore ? "more follow" : cursor ? "caught up: Poll resumes here" : "the end";
    nav.append(el("span", { class: "page-info" }, `by cursor · ${where}`));
  }
  return nav;
}

// The request's path with `page` dropped and `cursor` set (or removed when null); the other
// parameters (filters, sort, pageSize) are kept: a cursor request may repeat them unchanged.
function withCursor(request, cursor) {
  const url = sameOrigin(request.path);
  url.searchParams.delete("page");
  if (cursor === null) url.searchParams.delete("cursor");
  else url.searchParams.set("cursor", cursor);
  return url.pathname + url.search;
}

function followLink(form, link) {
  const url = sameOrigin(link);
  for (const field of form.querySelectorAll('[data-in="query"]')) {
    field.value = url.searchParams.get(field.name) || "";
  }
  updatePreview(form);
  const request = describeRequest(form);
  request.path = url.pathname + url.search;
  send(form, request);
}

function player(result, request, blob) {
  const objectUrl = URL.createObjectURL(blob);
  objectUrls.set(result, objectUrl);
  const id = decodeURIComponent(request.path.split("?")[0].split("/").filter(Boolean).at(-2) || "recording");
  const audio = el("audio", { controls: "", preload: "metadata", src: objectUrl });
  const download = el("a", { class: "download", href: objectUrl, download: `call-${id}.mp3` },
    `Download call-${id}.mp3`);
  return el("div", { class: "player" }, audio, download);
}

function jsonView(value) {
  const text = JSON.stringify(value, null, 2);
  const pre = el("pre", { class: "json", tabindex: "0" });
  if (text.length > MAX_HIGHLIGHT) {
    pre.textContent = text;
    return pre;
  }
  const token = /("(?:\\.|[^"\\])*")(\s*:)?|\b(true|false)\b|\b(null)\b|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/g;
  let last = 0;
  for (const match of text.matchAll(token)) {
    if (match.index > last) pre.append(text.slice(last, match.index));
    const kind = match[1] ? (match[2] ? "k" : "s") : match[3] ? "b" : match[4] ? "z" : "n";
    pre.append(el("span", { class: kind }, match[1] || match[0]));
    if (match[2]) pre.append(match[2]);
    last = match.index + match[0].length;
  }
  pre.append(text.slice(last));
  return pre;
}

// --- ids seen in responses fill the next forms (GET /users -> ownerUserId, ...) ------------

function remember(json) {
  for (const [name, value] of Object.entries(json)) {
    if (Array.isArray(value) && value.length && value[0] && typeof value[0].id === "string") {
      const withRecording = value.find((item) => item.hasRecording === true || item.recording);
      remembered[name] = (withRecording || value[0]).id;
    } else if (value && typeof value === "object" && typeof value.id === "string") {
      remembered[`${name}s`] = value.id;
    }
  }
  for (const form of document.querySelectorAll("form.try")) fillForm(form);
}

function fillForm(form) {
  const path = form.closest(".op").dataset.path;
  for (const field of form.querySelectorAll('[data-in="path"]')) {
    const resource = path.split(`/{${field.name}}`)[0].split("/").at(-1);
    if (!field.value && remembered[resource]) {
      field.value = remembered[resource];
      field.title = `filled in from the last GET /${resource}`;
    }
  }
  const body = form.elements.namedItem("__body");
  if (body) {
    body.value = body.value.replace(BODY_PLACEHOLDER, (whole, prefix, noun) => {
      const id = remembered[`${noun.toLowerCase()}s`];
      return id ? `"${prefix}${noun}Id": ${JSON.stringify(id)}` : whole;
    });
  }
  updatePreview(form);
}

// --- wiring ------------------------------------------------------------------------------

for (const form of document.querySelectorAll("form.try")) {
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    send(form);
  });
  form.addEventListener("input", () => updatePreview(form));
  form.addEventListener("change", () => updatePreview(form));
  updatePreview(form);
}

// The base URL as this browser reaches the service.
const baseUrl = document.getElementById("base-url");
if (baseUrl) baseUrl.textContent = new URL(baseUrl.textContent, location.origin).href;

// Highlight the operation being read in the sidebar.
const navLinks = new Map();
for (const link of document.querySelectorAll(".sidebar a[href^='#op-']")) {
  navLinks.set(link.getAttribute("href").slice(1), link);
}
const observer = new IntersectionObserver((entries) => {
  for (const entry of entries) {
    const link = navLinks.get(entry.target.id);
    if (link) link.classList.toggle("current", entry.isIntersecting);
  }
}, { rootMargin: "-120px 0px -55% 0px" });
for (const op of document.querySelectorAll(".op")) observer.observe(op);

// --- search: filters operations and schemas (sidebar and page) as you type ------------------

const search = document.getElementById("search");
const searchStatus = document.getElementById("search-status");
const schemasSection = document.getElementById("schemas");
const navSchemas = document.getElementById("nav-schemas");

function filter() {
  const terms = search.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
  const matches = (node) => terms.every((term) => node.dataset.search.includes(term));
  let operations = 0;
  let schemas = 0;
  for (const op of document.querySelectorAll("article.op")) {
    op.hidden = !matches(op);
    if (!op.hidden) operations += 1;
  }
  for (const schema of document.querySelectorAll("details.schema")) {
    schema.hidden = !matches(schema);
    if (!schema.hidden) schemas += 1;
  }
  for (const item of document.querySelectorAll(".sidebar li[data-search]")) item.hidden = !matches(item);
  for (const group of document.querySelectorAll(".sidebar .nav-group")) {
    group.hidden = !group.querySelector("li[data-search]:not([hidden])");
  }
  for (const section of document.querySelectorAll("section.tag")) {
    section.hidden = !section.querySelector("article.op:not([hidden])");
  }
  if (terms.length) {
    schemasSection.hidden = schemas === 0;
    schemasSection.open = schemas > 0;
    navSchemas.open = schemas > 0;
    searchStatus.hidden = false;
    searchStatus.textContent = operations + schemas === 0
      ? "Nothing matches."
      : `${operations} operation${operations === 1 ? "" : "s"}, ${schemas} schema${schemas === 1 ? "" : "s"}`;
  } else {
    schemasSection.hidden = false;
    searchStatus.hidden = true;
  }
}

search.addEventListener("input", filter);
search.addEventListener("search", filter);
search.addEventListener("keydown", (event) => {
  if (event.key === "Escape") {
    search.value = "";
    filter();
  }
});
document.addEventListener("keydown", (event) => {
  const typing = event.target.closest("input, textarea, select");
  if (event.key === "/" && !typing) {
    event.preventDefault();
    search.focus();
  }
});

// --- links into folded sections open them -------------------------------------------------

function reveal(hash) {
  const target = hash.length > 1 ? document.getElementById(decodeURIComponent(hash.slice(1))) : null;
  if (!target) return;
  target.hidden = false;
  for (let node = target; node; node = node.parentElement) {
    if (node.tagName === "DETAILS") node.open = true;
  }
  target.scrollIntoView();
}
window.addEventListener("hashchange", () => reveal(location.hash));
if (location.hash) reveal(location.hash);

// --- the navigation menu on narrow screens ------------------------------------------------

const menuToggle = document.getElementById("menu-toggle");
function setMenu(open) {
  document.body.classList.toggle("nav-open", open);
  menuToggle.setAttribute("aria-expanded", String(open));
}
menuToggle.addEventListener("click", () => setMenu(!document.body.classList.contains("nav-open")));
for (const link of document.querySelectorAll(".sidebar a")) {
  link.addEventListener("click", () => setMenu(false));
}
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape") setMenu(false);
});
document.body.addEventListener("click", (event) => {
  if (event.target === document.body) setMenu(false); // the shade beside the open menu
});
