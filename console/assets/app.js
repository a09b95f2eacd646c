// Shale's web console: hash routes, each page one or two GETs of the admin
// API on the node that served it. No framework; every value shown goes
// through esc().
"use strict";

const PAGE = 50;
const main = document.getElementById("main");

function esc(v) {
  return String(v).replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}

function bytes(n) {
  if (n < 0) return "–";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + u[i];
}

function num(n) { return n < 0 ? "–" : Number(n).toLocaleString("en"); }
function ids(a) { return a && a.length ? a.join(", ") : "–"; }
function enc(s) { return encodeURIComponent(s); }

class AuthError extends Error {}

// api GETs an admin path of the node that served the page. The browser
// sends the credentials it was asked for when it loaded the page (HTTP
// Basic with a token as the password, or a client certificate).
async function api(path) {
  const r = await fetch(path, {cache: "no-store", credentials: "same-origin"});
  if (r.status === 401 || r.status === 403) {
    main.innerHTML = `<p class="error" id="auth-error">${r.status} ${esc(r.statusText)}: this admin listener needs a token (admin_auth_tokens_file) or a client certificate. Reload the page to be asked again.</p>`;
    throw new AuthError("authentication required");
  }
  if (!r.ok) throw new Error(path + ": " + r.status + " " + (await r.text()).trim());
  return r.json();
}

// session is the caller's role (GET /v1/console/session), read once: the
// actions are drawn for an admin only. The listener refuses them to a
// read-only token whatever the page draws.
let session = null;
async function getSession() {
  if (!session) session = await api("/v1/console/session");
  return session;
}
function canWrite() { return !!(session && session.can_write); }

// post sends an action (a POST of JSON to the node that served the page;
// same origin, so the listener's cross-origin refusal lets it through) and
// returns {ok, status, body}: the decoded answer, or the refusal's text.
async function post(path, body) {
  const r = await fetch(path, {method: "POST", cache: "no-store", credentials: "same-origin",
    headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
  const text = (await r.text()).trim();
  if (!r.ok) return {ok: false, status: r.status, body: text};
  return {ok: true, status: r.status, body: JSON.parse(text)};
}

// result shows an action's outcome in the page's #action-result.
function result(ok, html) {
  const el = document.getElementById("action-result");
  if (!el) return;
  el.className = ok ? "ok" : "error";
  el.innerHTML = html;
  el.hidden = false;
  el.scrollIntoView({block: "nearest"});
}

// on runs fn when an element matching sel is clicked (the page's HTML is
// redrawn; the listeners stay on main). The content security policy
// allows no inline handlers.
const clicks = [];
function on(sel, fn) { clicks.push([sel, fn]); }
main.addEventListener("click", e => {
  for (const [sel, fn] of clicks) {
    const el = e.target.closest(sel);
    if (el && main.contains(el)) { e.preventDefault(); fn(el); return; }
  }
});

main.addEventListener("submit", e => e.preventDefault());

function table(cols, rows, attrs) {
  return `<table ${attrs || ""}><thead><tr>${cols.map(c => `<th>${esc(c)}</th>`).join("")}</tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

function pager(next, hrefOf) {
  return next === "" || next === -1 || next === undefined ? "" : `<p class="pager"><a id="next-page" href="${hrefOf(next)}">next page →</a></p>`;
}

// ---- Cluster ----

async function clusterPage() {
  const c = await api("/v1/console/cluster");
  const rows = c.nodes.map(n => `<tr data-node="${n.id}"><td>${n.id}${n.id === c.controller ? ' <span class="tag">controller</span>' : ""}</td>
    <td>${esc(n.address)}</td><td>${esc(n.rack || "–")}</td>
    <td class="${n.live ? "ok" : "bad"}">${n.live ? "live" : "fenced"}</td>
    <td>${n.draining ? '<span class="tag warn">draining</span>' : ""}${n.controlled_shutdown ? '<span class="tag warn">stopping</span>' : ""}</td>
    <td>${num(n.replicas)}</td><td>${num(n.leaders)}</td><td>${num(n.preferred)}</td>${bar(n.leaders, n.replicas)}</tr>`);
  main.innerHTML = `<h1>Cluster <small>${esc(c.cluster_id)}</small></h1>
    <div class="cards">
      <div class="card"><b id="node-count">${c.nodes.length}</b> nodes (<span id="live-count">${c.nodes.filter(n => n.live).length}</span> live)</div>
      <div class="card"><b id="controller">${c.controller}</b> controller</div>
      <div class="card"><b>${num(c.topics)}</b> topics</div>
      <div class="card"><b>${num(c.partitions)}</b> partitions</div>
      <div class="card ${c.under_replicated ? "warn" : ""}"><b id="under-replicated">${num(c.under_replicated)}</b> under-replicated</div>
      <div class="card ${c.offline ? "bad" : ""}"><b id="offline">${num(c.offline)}</b> offline</div>
    </div>
    ${c.draining_error ? `<p class="error">draining set unknown: ${esc(c.draining_error)}</p>` : ""}
    <h2>Nodes</h2>
    ${table(["id", "address", "rack", "state", "", "replicas", "leaders", "preferred", "leader share"], rows, 'id="nodes"')}
    <h2>Health of node ${c.node_id}</h2><div id="health">checking NATS and the bucket…</div>`;
  try {
    const h = await api("/v1/health/checks");
    document.getElementById("health").innerHTML = healthHTML(h);
  } catch (e) {
    if (!(e instanceof AuthError)) document.getElementById("health").innerHTML = `<p class="error">${esc(e.message)}</p>`;
  }
}

function bar(part, whole) {
  const w = whole > 0 ? Math.round(100 * part / whole) : 0;
  return `<td><svg class="bar" width="100" height="10"><rect width="100" height="10" class="track"/><rect width="${w}" height="10" class="fill"/></svg></td>`;
}

function healthHTML(h) {
  const nats = h.nats || {};
  const streams = (nats.streams || []).map(s => `<tr><td>${esc(s.name)}</td><td>${esc(s.leader || "–")}</td><td>${num(s.replicas)}</td>
    <td class="${s.error ? "bad" : "ok"}">${esc(s.error || "ok")}</td></tr>`);
  const b = h.bucket;
  return `<div class="cards">
    <div class="card ${nats.connected ? "" : "bad"}" id="nats-state"><b>${nats.connected ? "connected" : "disconnected"}</b> NATS ${esc(nats.server || "")}</div>
    <div class="card ${b && b.error ? "bad" : ""}" id="bucket-state"><b>${b ? (b.error ? "error" : "ok") : "none"}</b> bucket ${b ? esc(b.error || "") : ""}</div>
    <div class="card"><b>${esc(h.version || "")}</b> version</div></div>
    ${streams.length ? table(["stream", "leader", "replicas", "state"], streams) : ""}
    <details><summary>raw health checks</summary><pre>${esc(JSON.stringify(h, null, 2))}</pre></details>`;
}

// ---- Topics ----

async function topicsPage(q) {
  const internal = q.get("internal") === "1";
  const cursor = q.get("cursor") || "";
  const t = await api(`/v1/console/topics?limit=${PAGE}&cursor=${enc(cursor)}${internal ? "&internal=1" : ""}`);
  const rows = t.topics.map(x => `<tr data-topic="${esc(x.name)}"><td><a href="#/topic/${enc(x.name)}">${esc(x.name)}</a>${x.internal ? ' <span class="tag">internal</span>' : ""}</td>
    <td>${num(x.partitions)}</td><td>${x.replication_factor}</td>
    <td class="${x.under_replicated ? "warn" : ""}">${num(x.under_replicated)}</td><td class="${x.offline ? "bad" : ""}">${num(x.offline)}</td>
    <td>${bytes(x.local_bytes)} <small>(${x.local_partitions} here)</small></td><td>${bytes(x.remote_bytes)} <small>(${num(x.remote_segments)} segments)</small></td>
    <td class="configs">${Object.entries(x.configs).map(([k, v]) => `${esc(k)}=${esc(v)}`).join("<br>")}</td></tr>`);
  main.innerHTML = `<h1>Topics <small id="topic-total">${num(t.total)}</small></h1>
    <p><a href="#/topics${internal ? "" : "?internal=1"}">${internal ? "hide" : "show"} internal topics</a></p>
    ${table(["topic", "partitions", "RF", "under-replicated", "offline", "local (this node)", "remote", "configs"], rows, 'id="topics"')}
    ${pager(t.next, n => `#/topics?cursor=${enc(n)}${internal ? "&internal=1" : ""}`)}`;
}

async function topicPage(name, q) {
  const cursor = q.get("cursor") || "";
  const d = await api(`/v1/console/topic?topic=${enc(name)}&limit=${PAGE}${cursor ? "&cursor=" + enc(cursor) : ""}`);
  const t = d.topic;
  const rows = d.partitions.map(p => `<tr data-partition="${p.partition}"><td><a href="#/tier/${enc(name)}/${p.partition}">${p.partition}</a></td>
    <td class="leader">${p.leader < 0 ? '<span class="bad">none</span>' : p.leader}</td><td>${p.leader_epoch}</td>
    <td class="replicas">${ids(p.replicas)}</td><td class="isr ${p.isr.length < p.replicas.length ? "warn" : ""}">${ids(p.isr)}</td><td>${ids(p.elr)}</td>
    <td>${num(p.log_start_offset)}</td><td>${num(p.local_log_start_offset)}</td><td class="hw">${num(p.high_watermark)}</td><td>${num(p.log_end_offset)}</td>
    <td>${bytes(p.local_bytes)}</td><td>${bytes(p.remote_bytes)}</td>${canWrite() ? `<td>${p.replicas.length && p.leader !== p.replicas[0]
      ? `<button class="elect" data-topic="${esc(name)}" data-partition="${p.partition}" title="move leadership to replica ${p.replicas[0]}, the preferred">elect preferred</button>` : ""}</td>` : ""}</tr>`);
  const cols = ["partition", "leader", "epoch", "replicas", "ISR", "ELR", "log start", "local start", "high watermark", "log end", "local", "remote"];
  if (canWrite()) cols.push("action");
  main.innerHTML = `<h1>Topic <span id="topic-name">${esc(t.name)}</span> <small>${esc(t.id)}</small></h1>
    <div class="cards"><div class="card"><b>${num(t.partitions)}</b> partitions</div><div class="card"><b>${t.replication_factor}</b> replicas each</div>
    <div class="card"><b>${bytes(t.local_bytes)}</b> on node ${d.node_id}</div><div class="card"><b>${bytes(t.remote_bytes)}</b> in the bucket</div></div>
    <p class="configs">${Object.entries(t.configs).map(([k, v]) => `<code>${esc(k)}=${esc(v)}</code>`).join(" ") || "no topic configs set"}</p>
    <p id="action-result" hidden></p>
    ${table(cols, rows, 'id="partitions"')}
    ${pager(d.next, n => `#/topic/${enc(name)}?cursor=${n}`)}
    <p class="note">Offsets and local bytes are node ${d.node_id}'s replica's; – where it has none. Click a partition for its tier map.</p>`;
}

// A preferred leader election of one partition (ElectLeaders PREFERRED).
on("button.elect", async b => {
  b.disabled = true;
  const topic = b.dataset.topic, partition = Number(b.dataset.partition);
  const r = await post("/v1/console/elect-preferred", {topic, partitions: [partition]});
  const e = r.ok ? r.body.results[0] : null;
  await route();
  if (!r.ok) result(false, `${esc(topic)}-${partition}: ${r.status} ${esc(r.body)}`);
  else if (e.error) result(false, `${esc(topic)}-${partition}: ${esc(e.error)}`);
  else result(true, `${esc(topic)}-${partition}: leadership moved to its preferred replica.`);
});

// ---- Tier map ----

async function tierPage(name, part) {
  const m = await api(`/v1/console/tiermap?topic=${enc(name)}&partition=${enc(part)}`);
  main.innerHTML = `<h1>Tier map of <a href="#/topic/${enc(name)}">${esc(name)}</a>-${m.partition}</h1>
    <div class="cards">
      <div class="card"><b id="remote-count">${m.remote_segments.length + m.remote_segments_omitted}</b> remote segments</div>
      <div class="card"><b id="local-count">${m.local_segments.length + m.local_segments_omitted}</b> local segments</div>
      <div class="card"><b>${num(m.last_tiered_offset)}</b> last tiered offset</div>
      <div class="card ${m.upload_lag_segments > 0 ? "warn" : ""}"><b id="upload-lag">${num(m.upload_lag_offsets)}</b> offsets not yet uploaded (${m.upload_lag_segments} closed segments, ${bytes(m.upload_lag_bytes)})</div>
    </div>
    ${m.local ? "" : `<p class="note">Node ${m.node_id} holds no replica of this partition (replicas: ${ids(m.replicas)}); open the console of one of those for its local segments.</p>`}
    ${tierSVG(m)}
    <p class="legend"><span class="sw remote"></span> in the bucket <span class="sw tiered"></span> local, also in the bucket <span class="sw local"></span> local only <span class="sw active"></span> active segment</p>
    <table class="edges"><tbody>
      <tr><th>log start</th><td id="edge-log-start">${num(m.log_start_offset)}</td><th>retention.ms</th><td>${num(m.retention_ms)}</td></tr>
      <tr><th>local log start</th><td id="edge-local-start">${num(m.local_log_start_offset)}</td><th>retention.bytes</th><td>${num(m.retention_bytes)}</td></tr>
      <tr><th>high watermark</th><td id="edge-hw">${num(m.high_watermark)}</td><th>local.retention.ms</th><td>${num(m.local_retention_ms)}</td></tr>
      <tr><th>log end</th><td>${num(m.log_end_offset)}</td><th>local.retention.bytes</th><td>${num(m.local_retention_bytes)}</td></tr>
    </tbody></table>
    <h2>Segments</h2>
    ${table(["tier", "base", "last", "size", "max timestamp", "state"],
      m.remote_segments.map(s => segRow("remote", s)).concat(m.local_segments.map(s => segRow("local", s))), 'id="segments"')}`;
}

function segRow(tier, s) {
  return `<tr class="${tier}"><td>${tier}</td><td>${num(s.base_offset)}</td><td>${num(s.end_offset)}</td><td>${bytes(s.size)}</td>
    <td>${s.max_timestamp >= 0 ? new Date(s.max_timestamp).toISOString() : "–"}</td><td>${esc(s.state)}${s.tiered ? " (tiered)" : ""}</td></tr>`;
}

// tierSVG draws two lanes on one offset axis (the bucket above, the local
// disk below), the retention edges as vertical lines, and a time axis of
// the segments' max timestamps beneath.
function tierSVG(m) {
  const W = 960, L = 90, R = 20, segs = m.remote_segments.concat(m.local_segments);
  const lo = Math.min(...segs.map(s => s.base_offset), m.log_start_offset >= 0 ? m.log_start_offset : Infinity);
  const hi = Math.max(...segs.map(s => s.end_offset + 1), m.log_end_offset, m.high_watermark);
  if (!segs.length || !isFinite(lo) || hi <= lo) return `<p class="note" id="tiermap-empty">No segments yet.</p>`;
  const x = o => L + (W - L - R) * (o - lo) / (hi - lo);
  const rect = (cls, s, y) => `<rect class="${cls}" x="${x(s.base_offset).toFixed(1)}" y="${y}" width="${Math.max(x(s.end_offset + 1) - x(s.base_offset) - 1, 1).toFixed(1)}" height="34"
    data-base="${s.base_offset}" data-end="${s.end_offset}"><title>${esc(`${s.base_offset}–${s.end_offset}, ${bytes(s.size)}, ${s.state}`)}</title></rect>`;
  const remote = m.remote_segments.map(s => rect(s.state === "COPY_SEGMENT_FINISHED" ? "remote" : "remote pending", s, 30));
  const local = m.local_segments.map(s => rect(s.state === "active" ? "active" : s.tiered ? "tiered" : "local", s, 80));
  const edge = (o, label, cls, dy) => o < 0 ? "" : `<line class="edge ${cls}" x1="${x(o)}" x2="${x(o)}" y1="20" y2="124"/>` +
    (x(o) > W - 160 ? `<text class="edge-label" x="${x(o) - 3}" y="${134 + dy}" text-anchor="end">${esc(label)} ${o}</text>`
      : `<text class="edge-label" x="${x(o) + 3}" y="${134 + dy}">${esc(label)} ${o}</text>`);
  const ticks = [];
  for (let i = 0; i <= 4; i++) {
    const o = Math.round(lo + (hi - lo) * i / 4);
    ticks.push(`<text class="tick" x="${x(o)}" y="16" text-anchor="middle">${o}</text>`);
  }
  const stamped = segs.filter(s => s.max_timestamp > 0);
  let times = "";
  if (stamped.length) {
    const first = stamped.reduce((a, b) => a.base_offset < b.base_offset ? a : b), last = stamped.reduce((a, b) => a.end_offset > b.end_offset ? a : b);
    times = `<text class="tick" x="${L}" y="176">${esc(new Date(first.max_timestamp).toISOString())}</text>
      <text class="tick" x="${W - R}" y="176" text-anchor="end">${esc(new Date(last.max_timestamp).toISOString())}</text>
      <text class="lane" x="4" y="176">time</text>`;
  }
  return `<svg id="tiermap" viewBox="0 0 ${W} 184" width="100%" role="img" aria-label="segments on the offset axis">
    <text class="lane" x="4" y="52">bucket</text><text class="lane" x="4" y="102">local disk</text>
    ${ticks.join("")}${remote.join("")}${local.join("")}
    ${edge(m.log_start_offset, "log start", "start", 0)}${edge(m.local_log_start_offset, "local start", "local-start", 12)}
    ${edge(m.last_tiered_offset >= 0 ? m.last_tiered_offset + 1 : -1, "tiered to", "tiered-edge", 24)}${edge(m.high_watermark, "HW", "hw", 36)}
    ${times}</svg>`;
}

// ---- Groups ----

async function groupsPage(q) {
  const cursor = q.get("cursor") || "";
  const l = await api(`/v1/console/groups?limit=${PAGE}${cursor ? "&cursor=" + enc(cursor) : ""}`);
  const rows = l.groups.map(g => `<tr data-group="${esc(g.group)}"><td><a href="#/group/${enc(g.group)}">${esc(g.group)}</a></td>
    <td class="state">${esc(g.state)}</td><td class="type">${esc(g.type || "–")}</td><td>${esc(g.protocol_type || "–")}</td>
    <td class="coordinator">${g.coordinator}</td><td class="members">${g.members}</td><td>${num(g.partitions)}</td>
    <td class="lag">${num(g.lag)}${g.lag_unknown ? ` <small class="unknown">+ ${g.lag_unknown} unknown</small>` : ""}</td>
    <td>${g.history_node === l.node_id ? spark(g.history || []) : g.history_node >= 0 ? `<small>on node ${g.history_node}</small>` : ""}</td></tr>
    ${g.error ? `<tr><td></td><td colspan="8" class="error">${esc(g.error)}</td></tr>` : ""}`);
  main.innerHTML = `<h1>Groups <small id="group-total">${num(l.total)}</small></h1>
    ${l.list_errors && l.list_errors.length ? `<p class="error" id="list-errors">Some brokers did not list their groups: ${l.list_errors.map(esc).join("; ")}</p>` : ""}
    ${table(["group", "state", "type", "protocol", "coordinator", "members", "partitions", "lag", "recent lag"], rows, 'id="groups"')}
    ${pager(l.next, n => `#/groups?cursor=${enc(n)}`)}
    <p class="note">Every group of the cluster, consumer and share groups, whichever node coordinates it (ListGroups of every broker); members and lag read now over Kafka. A share group's lag counts its records not yet acknowledged or archived, known where the coordinator or node ${l.node_id} leads the partition. The recent lag is sampled by each group's coordinator: its console draws it.</p>`;
}

function spark(h) {
  if (h.length < 2) return "";
  const mx = Math.max(1, ...h.map(p => p.lag));
  const pts = h.map((p, i) => `${(100 * i / (h.length - 1)).toFixed(1)},${(18 - 16 * p.lag / mx).toFixed(1)}`).join(" ");
  return `<svg class="spark" width="100" height="20"><polyline points="${pts}"/></svg>`;
}

async function groupPage(name, q) {
  const cursor = q.get("cursor") || "";
  const d = await api(`/v1/console/group?group=${enc(name)}&limit=${PAGE}${cursor ? "&cursor=" + enc(cursor) : ""}`);
  const g = d.group, share = g.type === "share";
  const cnt = v => v === undefined || v === null ? "–" : num(v);
  const rows = d.partitions.map(p => `<tr data-partition="${esc(p.topic)}-${p.partition}"><td><a href="#/topic/${enc(p.topic)}">${esc(p.topic)}</a></td>
    <td>${p.partition}</td><td class="offset">${num(p.offset)}</td><td>${num(p.end_offset)}</td><td class="lag">${num(p.lag)}</td>
    ${share ? `<td class="in-flight">${cnt(p.in_flight)}</td><td>${cnt(p.acquired)}</td><td>${cnt(p.available)}</td>`
      : `<td>${p.time_lag_seconds < 0 ? "–" : p.time_lag_seconds.toFixed(1) + " s"}</td>`}</tr>`);
  const cols = share ? ["topic", "partition", "start offset", "end", "lag", "in flight", "acquired", "available"]
    : ["topic", "partition", "committed", "end", "lag", "time lag"];
  const history = g.history_node === d.node_id ? lagChart(g.history || [])
    : g.history_node >= 0 ? `<p class="note" id="history-elsewhere">Sampled by node ${g.history_node}, the group's coordinator: open its console for the lag over time.</p>`
    : `<p class="note" id="history-none">Not sampled.</p>`;
  main.innerHTML = `<h1>Group <span id="group-name">${esc(g.group)}</span></h1>
    <div class="cards"><div class="card"><b id="group-lag">${num(g.lag)}</b> records behind${g.lag_unknown ? ` (+ ${g.lag_unknown} partitions unknown)` : ""}</div>
    <div class="card"><b id="group-state">${esc(g.state)}</b> state</div><div class="card"><b id="group-members">${g.members}</b> members</div>
    <div class="card"><b id="group-type">${esc(g.type || "–")}</b> group type</div><div class="card"><b id="group-coordinator">${g.coordinator}</b> coordinator</div></div>
    ${g.error ? `<p class="error">${esc(g.error)}</p>` : ""}
    <h2>Lag over time</h2>${history}
    ${table(cols, rows, 'id="group-partitions"')}
    ${pager(d.next, n => `#/group/${enc(name)}?cursor=${enc(n)}`)}
    ${share ? `<p class="note">Start offset: every record below it is acknowledged or archived. Lag and the records in flight are known to the partition's leader: – where neither the coordinator (node ${g.coordinator}) nor node ${d.node_id} leads it.</p>` : ""}
    ${canWrite() ? resetForm(g, d.topics) : ""}`;
}

// resetForm is the offset reset of an inactive group (a share group: its
// start offsets): a dry run first, its plan shown, committed on confirm.
function resetForm(g, topics) {
  const share = g.type === "share";
  return `<h2>Reset ${share ? "start offsets" : "offsets"}</h2>
    <form id="reset-form" data-group="${esc(g.group)}">
    <label>topic <select id="reset-topic">${topics.map(t => `<option>${esc(t)}</option>`).join("")}</select></label>
    <label>to <select id="reset-to"><option value="earliest">earliest</option><option value="latest">latest</option>
      <option value="offset">offset</option><option value="timestamp">timestamp (ms or ISO 8601)</option></select></label>
    <label>value <input id="reset-value" size="24" placeholder="offset or time"></label>
    <button id="reset-preview">Preview (dry run)</button></form>
    ${share ? `<p class="note">A share group's reset moves each share-partition's start offset (AlterShareGroupOffsets); the records in flight are dropped.</p>` : ""}
    ${g.members ? `<p class="note">The group has ${g.members} members: the broker refuses a reset until they stop.</p>` : ""}
    <div id="reset-plan"></div>
    <p id="action-result" hidden></p>`;
}

function resetRequest() {
  const to = document.getElementById("reset-to").value, v = document.getElementById("reset-value").value.trim();
  const req = {group: document.getElementById("reset-form").dataset.group, topic: document.getElementById("reset-topic").value, to};
  if (to === "offset") req.offset = Number(v);
  if (to === "timestamp") req.timestamp = /^\d+$/.test(v) ? Number(v) : Date.parse(v);
  if ((to === "offset" || to === "timestamp") && !(req.offset >= 0 || req.timestamp >= 0)) throw new Error("value: want " + (to === "offset" ? "an offset" : "a time"));
  return req;
}

function resetTable(r) {
  return table(["topic", "partition", r.type === "share" ? "start offset" : "committed", "new offset", "log end", "lag after"], r.partitions.map(p =>
    `<tr data-partition="${esc(p.topic)}-${p.partition}"><td>${esc(p.topic)}</td><td>${p.partition}</td><td>${num(p.old_offset)}</td>
    <td class="new">${num(p.new_offset)}</td><td>${num(p.log_end_offset)}</td><td>${num(p.lag)}</td></tr>`), 'id="reset-rows"');
}

let pendingReset = null;
on("#reset-preview", async () => {
  let req;
  try { req = resetRequest(); } catch (e) { result(false, esc(e.message)); return; }
  const r = await post("/v1/console/reset-offsets", {...req, dry_run: true});
  const plan = document.getElementById("reset-plan");
  if (!r.ok) { pendingReset = null; plan.innerHTML = ""; result(false, `${r.status} ${esc(r.body)}`); return; }
  pendingReset = req;
  plan.innerHTML = `<p>Dry run, nothing committed: ${r.body.type === "share" ? "share group" : "group"} <b>${esc(req.group)}</b> would move to</p>${resetTable(r.body)}
    <p><button id="reset-apply" class="danger">Confirm: commit these offsets</button> <button id="reset-cancel">Cancel</button></p>`;
  document.getElementById("action-result").hidden = true;
  plan.scrollIntoView({block: "end"});
});
on("#reset-cancel", () => { pendingReset = null; document.getElementById("reset-plan").innerHTML = ""; });
on("#reset-apply", async b => {
  if (!pendingReset) return;
  b.disabled = true;
  const r = await post("/v1/console/reset-offsets", pendingReset);
  pendingReset = null;
  document.getElementById("reset-plan").innerHTML = "";
  if (!r.ok) { result(false, `${r.status} ${esc(r.body)}`); return; }
  result(true, `${r.body.type === "share" ? "Start offsets" : "Offsets"} of ${esc(r.body.group)} reset.${resetTable(r.body)}`);
});

function lagChart(h) {
  if (!h.length) return `<p class="note">No samples yet.</p>`;
  const W = 960, H = 220, L = 70, B = 30, T = 10, R = 20;
  const t0 = Date.parse(h[0].at), t1 = Math.max(Date.parse(h[h.length - 1].at), t0 + 1);
  const mx = Math.max(1, ...h.map(p => p.lag));
  const x = t => L + (W - L - R) * (Date.parse(t) - t0) / (t1 - t0), y = v => T + (H - T - B) * (1 - v / mx);
  const pts = h.map(p => `${x(p.at).toFixed(1)},${y(p.lag).toFixed(1)}`).join(" ");
  return `<svg id="lag-chart" viewBox="0 0 ${W} ${H}" width="100%" role="img" aria-label="lag over time">
    <line class="axis" x1="${L}" x2="${L}" y1="${T}" y2="${H - B}"/><line class="axis" x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}"/>
    <text class="tick" x="${L - 4}" y="${T + 10}" text-anchor="end">${num(mx)}</text><text class="tick" x="${L - 4}" y="${H - B}" text-anchor="end">0</text>
    <text class="tick" x="${L}" y="${H - 8}">${esc(new Date(t0).toISOString())}</text><text class="tick" x="${W - R}" y="${H - 8}" text-anchor="end">${esc(new Date(t1).toISOString())}</text>
    <polyline class="lag-line" points="${pts}"/>${h.map(p => `<circle class="lag-point" cx="${x(p.at).toFixed(1)}" cy="${y(p.lag).toFixed(1)}" r="2.5"><title>${esc(p.at)}: ${p.lag}</title></circle>`).join("")}</svg>`;
}

// ---- Transactions ----

function ms(t) { return t > 0 ? new Date(t).toISOString() : "–"; }

async function transactionsPage(q) {
  const cursor = q.get("cursor") || "";
  const x = await api(`/v1/console/transactions?limit=${PAGE}${cursor ? "&cursor=" + enc(cursor) : ""}`);
  const now = Date.now();
  const rows = x.transactions.map(t => `<tr data-txn="${esc(t.transactional_id)}"><td>${esc(t.transactional_id)}</td>
    <td class="coordinator">${t.coordinator}</td>
    <td class="state ${t.state === "Ongoing" ? "warn" : ""}">${esc(t.state)}</td><td>${t.producer_id}</td><td>${t.producer_epoch}</td>
    <td>${num(t.timeout_ms)} ms</td><td>${t.start_ms > 0 ? ((now - t.start_ms) / 1000).toFixed(1) + " s" : "–"}</td>
    <td>${t.partitions.map(esc).join(", ") || "–"}</td></tr>`);
  const open = x.open.map(o => `<tr data-open="${esc(o.topic)}-${o.partition}" class="${o.hanging ? "bad" : ""}"><td><a href="#/topic/${enc(o.topic)}">${esc(o.topic)}</a>-${o.partition}</td>
    <td>${o.producer_id}</td><td>${o.producer_epoch}</td><td>${num(o.start_offset)}</td><td>${ms(o.last_timestamp)}</td><td>${o.hanging ? "hanging" : "open"}</td></tr>`);
  main.innerHTML = `<h1>Transactions</h1>
    ${x.list_errors && x.list_errors.length ? `<p class="error" id="txn-list-errors">Some brokers did not list their transactional ids: ${x.list_errors.map(esc).join("; ")}</p>` : ""}
    <div class="cards"><div class="card"><b id="txn-total">${num(x.total)}</b> transactional ids</div>
    <div class="card ${x.ongoing ? "warn" : ""}"><b id="txn-ongoing">${num(x.ongoing)}</b> ongoing</div>
    <div class="card ${x.open.some(o => o.hanging) ? "bad" : ""}"><b id="txn-hanging">${x.open.filter(o => o.hanging).length}</b> hanging in partitions led here</div></div>
    ${table(["transactional id", "coordinator", "state", "producer id", "epoch", "timeout", "open for", "partitions"], rows, 'id="transactions"')}
    ${pager(x.next, n => `#/transactions?cursor=${enc(n)}`)}
    <h2>Open in the partitions node ${x.node_id} leads <small>${num(x.open_total)}</small></h2>
    ${open.length ? table(["partition", "producer id", "epoch", "first offset", "last write", ""], open, 'id="open-transactions"') : "<p>None.</p>"}
    <p class="note">A transaction is hanging when its producer wrote nothing to the partition for longer than transaction_max_timeout (${num(x.max_timeout_ms)} ms): it holds the last stable offset back. The ids are the whole cluster's (ListTransactions of every broker, each described by its coordinator); the open transactions are those in the partitions this node leads: open another node's console for its partitions.</p>`;
}

// ---- Balance ----

async function balancePage() {
  const p = await api("/v1/cluster/balance");
  const brokers = p.brokers.map(b => `<tr><td>${b.broker}</td><td>${esc(b.rack || "–")}</td><td>${num(b.replicas)}</td><td>${num(b.leaders)}</td><td>${num(b.preferred)}</td><td>${b.draining ? "draining" : ""}</td></tr>`);
  const moves = p.moves.map(m => `<tr><td>${esc(m.kind)}</td><td><a href="#/topic/${enc(m.topic)}">${esc(m.topic)}</a>-${m.partition}</td><td>${m.from}</td><td>${m.to}</td>
    <td>${ids(m.replicas)} → ${ids(m.target)}</td><td>${bytes(m.bytes)}</td></tr>`);
  main.innerHTML = `<h1>Balance <small>a dry run: what the balancer's next pass would do</small></h1>
    <div class="cards"><div class="card"><b id="balanced">${p.balanced ? "balanced" : "unbalanced"}</b></div><div class="card"><b>${p.replica_skew}</b> replica skew (bound ${p.skew})</div>
    <div class="card"><b>${p.in_flight}</b> in flight, ${p.pending} pending</div><div class="card"><b>${p.enabled ? "on" : "off"}</b> balancer</div></div>
    ${table(["broker", "rack", "replicas", "leaders", "preferred", ""], brokers, 'id="loads"')}
    <h2>Moves (at most ${p.max_moves})</h2>${moves.length ? table(["kind", "partition", "from", "to", "replicas", "bytes"], moves, 'id="moves"') : "<p>None.</p>"}
    ${p.blocked.length ? `<h2>Blocked</h2><ul>${p.blocked.map(b => `<li>${esc(b)}</li>`).join("")}</ul>` : ""}
    ${canWrite() ? rebalanceForm(p) : ""}`;
  shownPlan = p;
}

// The rebalance: the plan above is the dry run; its reassignments are
// submitted on confirm, and the node refuses them when its plan changed.
let shownPlan = null;
function planMoves(p) {
  return p.moves.filter(m => m.kind !== "leader" && m.target.length).map(m => ({topic: m.topic, partition: m.partition, target: m.target}));
}
function rebalanceForm(p) {
  const n = planMoves(p).length;
  return `<h2>Run the plan</h2>${n === 0 ? "<p>No reassignment to submit (leader moves are the controller's).</p>"
    : p.in_flight ? `<p>${p.in_flight} reassignments in progress: wait for them.</p>`
    : `<p><button id="rebalance-review">Submit these ${n} reassignments…</button></p>`}
    <div id="rebalance-confirm"></div><p id="action-result" hidden></p>`;
}
on("#rebalance-review", () => {
  const ms = planMoves(shownPlan);
  document.getElementById("rebalance-confirm").innerHTML = `<p>Submit ${ms.length} reassignments (AlterPartitionReassignments)? Each copies its bytes to the new replicas.</p>
    <ul>${ms.map(m => `<li>${esc(m.topic)}-${m.partition} → ${ids(m.target)}</li>`).join("")}</ul>
    <p><button id="rebalance-apply" class="danger">Confirm</button> <button id="rebalance-cancel">Cancel</button></p>`;
  document.getElementById("rebalance-confirm").scrollIntoView({block: "end"});
});
on("#rebalance-cancel", () => { document.getElementById("rebalance-confirm").innerHTML = ""; });
on("#rebalance-apply", async b => {
  b.disabled = true;
  const r = await post("/v1/console/rebalance", {max_moves: shownPlan.max_moves, moves: planMoves(shownPlan)});
  document.getElementById("rebalance-confirm").innerHTML = "";
  if (!r.ok) { result(false, `${r.status} ${esc(r.body)}`); return; }
  const bad = r.body.submitted.filter(m => m.error);
  result(bad.length === 0, `${r.body.submitted.length - bad.length} reassignments submitted${bad.length ? `; refused: ${bad.map(m => `${esc(m.topic)}-${m.partition}: ${esc(m.error)}`).join("; ")}` : ""}.
    <span id="rebalance-done">Reload the page to follow them.</span>`);
});

// ---- Router ----

async function route() {
  const hash = location.hash.replace(/^#/, "") || "/cluster";
  const [path, query] = hash.split("?");
  const q = new URLSearchParams(query || "");
  const parts = path.split("/").slice(1).map(decodeURIComponent);
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("current", a.id === "nav-" + (
    {topic: "topics", tier: "topics", group: "groups"}[parts[0]] || parts[0]));
  main.setAttribute("aria-busy", "true");
  document.body.dataset.page = "";
  try {
    await getSession();
    document.getElementById("role").textContent = session.can_write ? "admin" : "read-only";
    switch (parts[0]) {
    case "topics": await topicsPage(q); break;
    case "topic": await topicPage(parts[1], q); break;
    case "tier": await tierPage(parts[1], parts[2]); break;
    case "groups": await groupsPage(q); break;
    case "group": await groupPage(parts[1], q); break;
    case "transactions": await transactionsPage(q); break;
    case "balance": await balancePage(); break;
    default: await clusterPage();
    }
    document.body.dataset.page = parts[0] || "cluster";
  } catch (e) {
    if (!(e instanceof AuthError)) main.innerHTML = `<p class="error" id="error">${esc(e.message)}</p>`;
    document.body.dataset.page = "error";
  } finally {
    main.removeAttribute("aria-busy");
  }
}

window.addEventListener("hashchange", route);
route();
