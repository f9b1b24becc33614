// The gatehouse debugger page (bundled by scripts/bundle-debug.ts into
// routes/debug/assets.gen.ts). preact + htm render; @dagrejs/dagre lays the
// statechart out. Data comes only from the HTTP API, with the bearer token
// (when one is needed) kept in sessionStorage and sent as a header.
//
// Hooks for tests: chart nodes `data-state` (+ `data-active="true"` on the
// shown state), chart edge labels `data-edge-label`, timeline items
// `data-event-id` / `data-event-type`, pending call forms
// `data-tool-call-id` (Approve / Reject buttons `data-testid="approve"` /
// `"reject"` inside `data-approval-for` for calls that need approval), verdicts `data-verdict-id` / `data-verdict-status`
// (inside `data-verdict-turn` groups), the streaming message
// `data-streaming`, the card of an agent that has no task yet `data-testid="no-turns"`. The pure state logic (SSE frames, the streaming message,
// timeline summaries, verdict messages) is in debug-ui/model.js.
import { h, render } from "preact";
import { useCallback, useEffect, useMemo, useReducer, useRef, useState } from "preact/hooks";
import htm from "htm";
import dagre from "@dagrejs/dagre";
import { byLabel, definitionLabel, laneLabel, parseSseFrame, short, streamingReducer, summarize, verdictAttempt, verdictMessage, verdictsByTurn, waitingText } from "./model.js";

const html = htm.bind(h);
const TOKEN_KEY = "gatehouse.debug.token";
// How often the page of an agent that does not exist yet asks whether its first task arrived.
const ABSENT_POLL_MS = 1000;

// ------------------------------------------------------------------ API

class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail || problem?.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

const authListeners = new Set();

function headers(extra) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return { accept: "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}), ...extra };
}

async function api(path, { method = "GET", body, signal } = {}) {
  const res = await fetch(path, {
    method,
    signal,
    headers: headers(body === undefined ? {} : { "content-type": "application/json" }),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (res.status === 401) for (const f of authListeners) f();
  if (!res.ok) throw new ApiError(res.status, json);
  return json;
}

/**
 * Follows the SSE route with fetch streaming (EventSource cannot send the
 * Authorization header). Calls onEvent for each stored event and onDelta for
 * each `event: delta` frame (live model text, not stored, no id); reconnects
 * from the last id when the stream ends (bounded streams end by design).
 */
function followEvents(agentId, after, onEvent, onError, onDelta) {
  const ctl = new AbortController();
  let last = after;
  (async () => {
    while (!ctl.signal.aborted) {
      try {
        const res = await fetch(`/v1/agents/${encodeURIComponent(agentId)}/events?format=sse&after=${last}`, {
          headers: headers({ accept: "text/event-stream" }),
          signal: ctl.signal,
        });
        if (!res.ok || !res.body) throw new ApiError(res.status, null);
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let cut;
          while ((cut = buf.indexOf("\n\n")) >= 0) {
            const frame = buf.slice(0, cut);
            buf = buf.slice(cut + 2);
            const parsed = parseSseFrame(frame);
            if (parsed?.kind === "delta") onDelta(parsed.delta);
            else if (parsed?.kind === "event" && parsed.event.id > last) {
              last = parsed.event.id;
              onEvent(parsed.event);
            }
          }
        }
      } catch (err) {
        if (ctl.signal.aborted) return;
        onError(err);
      }
      if (!ctl.signal.aborted) await new Promise((r) => setTimeout(r, 1000));
    }
  })();
  return () => ctl.abort();
}

async function allEvents(agentId) {
  const events = [];
  let after = 0;
  for (;;) {
    const page = await api(`/v1/agents/${encodeURIComponent(agentId)}/events?format=json&limit=500&after=${after}`);
    events.push(...page.events);
    after = page.nextAfter;
    if (!page.more) return events;
  }
}

// ------------------------------------------------------------------ helpers

const agentPath = (id) => `/debug/agents/${encodeURIComponent(id)}`;
const fmtTime = (ms) => (typeof ms === "number" ? new Date(ms).toISOString().replace("T", " ").replace("Z", "") : "");

function navigate(path) {
  history.pushState(null, "", path);
  dispatchEvent(new PopStateEvent("popstate"));
}

function Link({ href, children, ...rest }) {
  const onClick = (e) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey) return;
    e.preventDefault();
    navigate(href);
  };
  return html`<a href=${href} onClick=${onClick} ...${rest}>${children}</a>`;
}

function eventKind(type) {
  if (type === "transition") return "transition";
  if (type.startsWith("model") || type === "step" || type === "chunk") return "model";
  if (type.startsWith("tool")) return "tool";
  if (type.startsWith("verif") || type.startsWith("verdict") || type.startsWith("guardian")) return "verification";
  return "other";
}

// ------------------------------------------------------------------ token

function TokenForm({ onSaved, message }) {
  const [value, setValue] = useState("");
  const submit = (e) => {
    e.preventDefault();
    if (!value.trim()) return;
    sessionStorage.setItem(TOKEN_KEY, value.trim());
    setValue("");
    onSaved();
  };
  return html`<form class="token card" onSubmit=${submit} data-testid="token-form">
    <h2>Bearer token</h2>
    <p>${message || "This server asks for a bearer token. It is kept in this tab's session storage and sent as an Authorization header only."}</p>
    <input type="password" autocomplete="off" placeholder="token" value=${value} onInput=${(e) => setValue(e.target.value)} name="token" />
    <button type="submit">Use token</button>
  </form>`;
}

// ------------------------------------------------------------------ chart

function machineGraph(machine) {
  const src = machine.meta && machine.meta.states ? machine.meta : machine;
  let states = src.states;
  let transitions = src.transitions;
  if (!Array.isArray(states) || !Array.isArray(transitions)) {
    // Fall back to the XState definition (machine.toJSON()) or config.
    const defStates = machine.definition?.states ?? (machine.states && !Array.isArray(machine.states) ? machine.states : {});
    const nameOf = (target, from) => {
      const t = Array.isArray(target) ? target[0] : target;
      return typeof t === "string" ? t.replace(/^#[^.]+\./, "").replace(/^\./, "") : from;
    };
    states = Object.keys(defStates).map((name) => ({ name, initial: false }));
    transitions = [];
    for (const [name, node] of Object.entries(defStates)) {
      const list = node.transitions ?? Object.entries(node.on ?? {}).flatMap(([event, ts]) =>
        (Array.isArray(ts) ? ts : [ts]).map((t) => ({ ...(typeof t === "string" ? { target: t } : t), eventType: event }))
      );
      for (const t of list) transitions.push({ from: name, event: t.eventType, to: nameOf(t.target, name) });
    }
  }
  return { states, transitions };
}

const LABEL_FONT = '10px system-ui, -apple-system, "Segoe UI", sans-serif';
const LABEL_LINE = 12;
let measureCtx = null;

/** Width in px of `text` drawn in the edge labels' font (canvas metrics; an estimate without canvas). */
function textWidth(text) {
  if (measureCtx === null) measureCtx = document.createElement("canvas").getContext("2d") || false;
  if (!measureCtx) return text.length * 6.2;
  measureCtx.font = LABEL_FONT;
  return measureCtx.measureText(text).width;
}

/**
 * Lays the statechart out with dagre. Invariant: edge labels do not overlap
 * one another. Each label (one event name a line) gets its measured size
 * (`width`/`height`, `labelpos: "c"`), so dagre places it as a node of its
 * own, with the spacing of nodes; the label is drawn centred where dagre put
 * it. tests/debug/debug-page.int.test.ts checks the rendered labels' boxes.
 */
function layout(machine) {
  const { states, transitions } = machineGraph(machine);
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: "TB", nodesep: 16, ranksep: 20, edgesep: 8, marginx: 12, marginy: 12 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const s of states) g.setNode(s.name, { width: Math.max(92, s.name.length * 9 + 30), height: 36, label: s.name });
  const pairs = new Map();
  for (const t of transitions) {
    const key = `${t.from}\u0000${t.to}`;
    if (!pairs.has(key)) pairs.set(key, { from: t.from, to: t.to, events: [] });
    const p = pairs.get(key);
    if (!p.events.includes(t.event)) p.events.push(t.event);
  }
  const edges = [...pairs.values()].map((e) => {
    const lines = e.events.map((ev) => String(ev));
    const width = Math.ceil(Math.max(...lines.map(textWidth))) + 8;
    const height = lines.length * LABEL_LINE + 4;
    return { ...e, lines, width, height };
  });
  edges.forEach((e, i) => g.setEdge(e.from, e.to, { width: e.width, height: e.height, labelpos: "c" }, `e${i}`));
  dagre.layout(g);
  const nodes = states.map((s) => ({ ...g.node(s.name), name: s.name, initial: !!s.initial }));
  // dagre may put a self-loop's label far from its node; it moves next to
  // the node when that place overlaps no other label and no node.
  const boxOf = (x, y, w, h) => ({ x0: x - w / 2, y0: y - h / 2, x1: x + w / 2, y1: y + h / 2 });
  const hits = (a, b) => a.x0 < b.x1 + 2 && b.x0 < a.x1 + 2 && a.y0 < b.y1 + 2 && b.y0 < a.y1 + 2;
  const labelBoxes = edges.map((e, i) => {
    const laid = g.edge({ v: e.from, w: e.to, name: `e${i}` });
    return boxOf(laid.x, laid.y, e.width, e.height);
  });
  const nodeBoxes = nodes.map((n) => boxOf(n.x, n.y, n.width, n.height));
  edges.forEach((e, i) => {
    if (e.from !== e.to) return;
    const laid = g.edge({ v: e.from, w: e.to, name: `e${i}` });
    const n = g.node(e.from);
    if (laid.x <= n.x) return;
    const x = n.x + n.width / 2 + 24 + e.width / 2;
    const near = boxOf(x, n.y, e.width, e.height);
    if (x >= laid.x || labelBoxes.some((b, k) => k !== i && hits(near, b)) || nodeBoxes.some((b) => hits(near, b))) return;
    laid.x = x;
    laid.y = n.y;
    labelBoxes[i] = near;
  });
  const laidEdges = edges.map((e, i) => {
    const laid = g.edge({ v: e.from, w: e.to, name: `e${i}` });
    if (e.from === e.to) {
      // dagre puts a self-loop's label beside its node; the loop leaves the
      // node on that side, reaches the label's near edge and comes back.
      const n = g.node(e.from);
      const side = Math.abs(laid.x - n.x) * n.height > Math.abs(laid.y - n.y) * n.width;
      let points;
      if (side) {
        const s = Math.sign(laid.x - n.x) || 1;
        const x = n.x + s * n.width / 2;
        const lx = laid.x - s * e.width / 2;
        // Control points 4/3 of the way out: the curve's far end touches the label.
        const cx = x + (lx - x) * 4 / 3;
        points = [{ x, y: n.y - 8 }, { x: cx, y: n.y - 22 }, { x: cx, y: n.y + 22 }, { x: x + s, y: n.y + 8 }];
      } else {
        const s = Math.sign(laid.y - n.y) || 1;
        const y = n.y + s * n.height / 2;
        const ly = laid.y - s * e.height / 2;
        const cy = y + (ly - y) * 4 / 3;
        points = [{ x: n.x - 14, y }, { x: n.x - 30, y: cy }, { x: n.x + 30, y: cy }, { x: n.x + 14, y: y + s }];
      }
      return { ...e, points, loop: true, lx: laid.x, ly: laid.y };
    }
    return { ...e, points: laid.points, lx: laid.x, ly: laid.y };
  });
  // The view box holds every node, edge point and label.
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  const add = (x, y) => {
    x0 = Math.min(x0, x); y0 = Math.min(y0, y); x1 = Math.max(x1, x); y1 = Math.max(y1, y);
  };
  for (const n of nodes) {
    add(n.x - n.width / 2, n.y - n.height / 2);
    add(n.x + n.width / 2, n.y + n.height / 2);
  }
  for (const e of laidEdges) {
    for (const p of e.points) add(p.x, p.y);
    add(e.lx - e.width / 2, e.ly - e.height / 2);
    add(e.lx + e.width / 2, e.ly + e.height / 2);
  }
  const pad = 6;
  return { x: x0 - pad, y: y0 - pad, width: x1 - x0 + 2 * pad, height: y1 - y0 + 2 * pad, nodes, edges: laidEdges };
}

function pathOf(points, loop) {
  if (loop) {
    const [a, b, c, d] = points;
    return `M${a.x},${a.y} C${b.x},${b.y} ${c.x},${c.y} ${d.x},${d.y}`;
  }
  return points.map((p, i) => `${i === 0 ? "M" : "L"}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(" ");
}

function Chart({ machine, active, lastEdge }) {
  const lay = useMemo(() => layout(machine), [machine]);
  return html`<svg class="chart" viewBox=${`${lay.x} ${lay.y} ${lay.width} ${lay.height}`} width=${lay.width} height=${lay.height} role="img" aria-label="agent statechart">
    <defs>
      <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
        <path d="M0,0 L10,5 L0,10 z" class="arrowhead" />
      </marker>
    </defs>
    ${lay.edges.map((e) => {
      const hot = lastEdge && lastEdge.from === e.from && lastEdge.to === e.to;
      return html`<g class=${`edge${hot ? " hot" : ""}`} data-from=${e.from} data-to=${e.to}>
        <path d=${pathOf(e.points, e.loop)} marker-end="url(#arrow)" />
        <title>${`${e.from} → ${e.to}: ${e.events.join(", ")}`}</title>
        <text data-edge-label=${`${e.from}→${e.to}`} x=${e.lx} y=${e.ly - e.height / 2 + 2 + LABEL_LINE - 3} text-anchor="middle">${e.lines.map((l, k) => html`<tspan x=${e.lx} dy=${k === 0 ? 0 : LABEL_LINE}>${l}</tspan>`)}</text>
      </g>`;
    })}
    ${lay.nodes.map((n) => {
      const on = n.name === active;
      return html`<g class=${`node${on ? " active" : ""}${n.initial ? " initial" : ""}`} data-state=${n.name} data-active=${on ? "true" : undefined} transform=${`translate(${n.x - n.width / 2},${n.y - n.height / 2})`}>
        <rect width=${n.width} height=${n.height} rx="10" ry="10" />
        <text x=${n.width / 2} y=${n.height / 2 + 5} text-anchor="middle">${n.name}</text>
      </g>`;
    })}
  </svg>`;
}

// ------------------------------------------------------------------ agent list

function AgentList() {
  const [agents, setAgents] = useState(null);
  const [error, setError] = useState(null);
  const [q, setQ] = useState("");
  const [state, setState] = useState("");
  const [cursor, setCursor] = useState(null);
  const load = useCallback(async (more) => {
    try {
      const params = new URLSearchParams({ limit: "100" });
      if (state) params.set("state", state);
      if (more && cursor) params.set("cursor", cursor);
      const page = await api(`/v1/agents?${params}`);
      setAgents((prev) => (more && prev ? [...prev, ...page.agents] : page.agents));
      setCursor(page.nextCursor);
      setError(null);
    } catch (err) {
      setError(err);
    }
  }, [state, cursor]);
  useEffect(() => {
    load(false);
    const t = setInterval(() => load(false), 3000);
    return () => clearInterval(t);
  }, [state]);
  const needle = q.trim().toLowerCase();
  const shown = (agents || []).filter((a) => !needle || a.agentId.toLowerCase().includes(needle) || a.agent.toLowerCase().includes(needle));
  return html`<section class="card">
    <div class="toolbar">
      <h2>Agents</h2>
      <input type="search" placeholder="search id or definition" value=${q} onInput=${(e) => setQ(e.target.value)} data-testid="agent-search" />
      <select value=${state} onChange=${(e) => setState(e.target.value)} data-testid="agent-state-filter">
        <option value="">any state</option>
        ${["idle", "running", "waiting-tools", "verifying", "revising", "done", "failed"].map((s) => html`<option value=${s}>${s}</option>`)}
      </select>
    </div>
    ${error && html`<p class="error">${error.message}</p>`}
    ${agents === null ? html`<p>Loading…</p>` : html`<table class="agents">
      <thead><tr><th>agent id</th><th>definition</th><th>state</th><th>turn</th><th>events</th><th>updated</th></tr></thead>
      <tbody>
        ${shown.map((a) => html`<tr data-agent-id=${a.agentId}>
          <td><${Link} href=${agentPath(a.agentId)}>${a.agentId}<//></td>
          <td>${a.agent}</td>
          <td><span class=${`pill s-${a.state}`}>${a.state}</span></td>
          <td class="mono">${a.activeTurnId ?? ""}</td>
          <td>${a.lastEventId}</td>
          <td class="mono">${fmtTime(a.updatedAtMs)}</td>
        </tr>`)}
        ${shown.length === 0 && html`<tr><td colspan="6" class="muted">No agents${needle ? " match" : " yet"}.</td></tr>`}
      </tbody>
    </table>`}
    ${cursor && html`<button onClick=${() => load(true)}>More</button>`}
  </section>`;
}

// ------------------------------------------------------------------ agent page

// A call that needs a person's approval (`approval: "pending"`): Approve / Reject over POST …/approvals;
// "Approve edited" sends the arguments edited in the box (`args`), checked against the tool's schema.
function ApprovalForm({ agentId, turnId, call, onDone }) {
  const [reason, setReason] = useState("");
  const [args, setArgs] = useState(() => JSON.stringify(call.args ?? {}, null, 2));
  const [status, setStatus] = useState(null);
  const decide = async (approved, edited = false) => {
    let parsed;
    if (edited) {
      try {
        parsed = JSON.parse(args);
      } catch {
        setStatus({ error: "The arguments are not JSON" });
        return;
      }
    }
    try {
      const r = await api(`/v1/agents/${encodeURIComponent(agentId)}/approvals`, {
        method: "POST",
        body: { turnId, toolCallId: call.toolCallId, approved, ...(edited ? { args: parsed } : {}), ...(reason.trim() ? { reason: reason.trim() } : {}) },
      });
      setStatus({ ok: `${r.decision}${r.duplicate ? " (already)" : ""}` });
      onDone();
    } catch (err) {
      setStatus({ error: err.message });
    }
  };
  return html`<div class="approval" data-approval-for=${call.toolCallId}>
    <div class="muted">waits for a person's approval${call.deadline ? html` until ${call.deadline}` : ""}</div>
    <label>reason (optional; a rejection's reason reaches the model)<input name="reason" value=${reason} onInput=${(e) => setReason(e.target.value)} /></label>
    <label>arguments (JSON; edit, then "Approve edited": the tool runs with them)<textarea name="args" rows="3" value=${args} onInput=${(e) => setArgs(e.target.value)}></textarea></label>
    <button type="button" data-testid="approve" onClick=${() => decide(true)}>Approve</button>
    <button type="button" data-testid="approve-edited" onClick=${() => decide(true, true)}>Approve edited</button>
    <button type="button" data-testid="reject" onClick=${() => decide(false)}>Reject</button>
    ${status?.ok && html`<span class="okmsg">${status.ok}</span>`}
    ${status?.error && html`<span class="error">${status.error}</span>`}
  </div>`;
}

/** A call waiting for a named event: its name and deadline, and a form that sends the event (POST /v1/events). */
function EventWait({ call, onDone }) {
  const [value, setValue] = useState("{}");
  const [status, setStatus] = useState(null);
  const send = async (e) => {
    e.preventDefault();
    let data;
    try {
      data = JSON.parse(value);
    } catch {
      setStatus({ error: "The data is not JSON" });
      return;
    }
    try {
      const r = await api("/v1/events", { method: "POST", body: { name: call.event, data } });
      setStatus({ ok: `delivered to ${r.delivered} waiting call${r.delivered === 1 ? "" : "s"}` });
      onDone();
    } catch (err) {
      setStatus({ error: err.message });
    }
  };
  return html`<form class="event-wait" data-event-wait=${call.event} onSubmit=${send}>
    <div class="muted">waits for the event <b class="mono" data-testid="event-name">${call.event}</b>${call.deadline ? html` until ${call.deadline}` : ""}</div>
    <label>event data (JSON; every call waiting for this name takes it)<textarea name="data" rows="2" value=${value} onInput=${(e) => setValue(e.target.value)}></textarea></label>
    <button type="submit" data-testid="send-event">Send event</button>
    ${status?.ok && html`<span class="okmsg">${status.ok}</span>`}
    ${status?.error && html`<span class="error">${status.error}</span>`}
  </form>`;
}

function PendingCall({ agentId, turnId, call, onDone }) {
  const [value, setValue] = useState("{}");
  const [ok, setOk] = useState(true);
  const [terminate, setTerminate] = useState(false);
  const [status, setStatus] = useState(null);
  const submit = async (e) => {
    e.preventDefault();
    let parsed;
    try {
      parsed = JSON.parse(value);
    } catch {
      setStatus({ error: "The value is not JSON" });
      return;
    }
    const outcome = ok ? { ok: true, value: parsed } : { ok: false, error: { type: "denied", message: typeof parsed === "string" ? parsed : JSON.stringify(parsed) } };
    try {
      const r = await api(`/v1/agents/${encodeURIComponent(agentId)}/tool-results`, {
        method: "POST",
        body: { turnId, toolCallId: call.toolCallId, outcome, ...(terminate ? { afterExecution: "terminate" } : {}) },
      });
      setStatus({ ok: r.duplicate ? "already delivered" : "delivered" });
      onDone();
    } catch (err) {
      setStatus({ error: err.message });
    }
  };
  // Approved with edited arguments (`proposedArgs` present): the model's proposal, then what runs.
  const argsShown = call.proposedArgs !== undefined
    ? html`<div class="edited-args" data-testid="edited-args">
        <div class="muted">proposed by the model</div><pre class="mono" data-args="proposed">${JSON.stringify(call.proposedArgs, null, 2)}</pre>
        <div class="muted">edited by the person who approved (runs with these)</div><pre class="mono" data-args="edited">${JSON.stringify(call.args, null, 2)}</pre>
      </div>`
    : html`<pre class="mono">${JSON.stringify(call.args, null, 2)}</pre>`;
  const header = html`<div><b>${call.name}</b> <span class="mono muted">${call.toolCallId}</span>${call.approval ? html` <span class="muted" data-approval=${call.approval}>approval: ${call.approval}</span>` : ""}${
    "decidedBy" in call ? html` <span class="muted" data-decided-by>${byLabel(call.decidedBy)}</span>` : ""}${
    "deliveredBy" in call ? html` <span class="muted" data-delivered-by>result ${byLabel(call.deliveredBy)}</span>` : ""}</div>
    ${argsShown}`;
  if (call.event && call.approval !== "pending") {
    return html`<div class="pending" data-tool-call-id=${call.toolCallId}>
      ${header}
      <${EventWait} call=${call} onDone=${onDone} />
    </div>`;
  }
  // No result is taken before the decision; an in-process call runs in the worker once approved.
  if (call.approval === "pending" || call.external === false) {
    return html`<div class="pending" data-tool-call-id=${call.toolCallId}>
      ${header}
      ${call.approval === "pending" ? html`<${ApprovalForm} agentId=${agentId} turnId=${turnId} call=${call} onDone=${onDone} />` : html`<div class="muted">runs in the worker</div>`}
    </div>`;
  }
  return html`<form class="pending" data-tool-call-id=${call.toolCallId} onSubmit=${submit}>
    ${header}
    ${call.deadline && html`<div class="muted">deadline ${call.deadline}</div>`}
    <label>result (JSON)<textarea name="value" rows="3" value=${value} onInput=${(e) => setValue(e.target.value)}></textarea></label>
    <label class="inline"><input type="radio" name="ok" checked=${ok} onChange=${() => setOk(true)} /> ok</label>
    <label class="inline"><input type="radio" name="ok" checked=${!ok} onChange=${() => setOk(false)} /> error</label>
    <label class="inline"><input type="checkbox" name="terminate" checked=${terminate} onChange=${(e) => setTerminate(e.target.checked)} /> end the turn with it</label>
    <button type="submit">Deliver result</button>
    ${status?.ok && html`<span class="okmsg">${status.ok}</span>`}
    ${status?.error && html`<span class="error">${status.error}</span>`}
  </form>`;
}

function Timeline({ events, selected, onSelect, verdicts }) {
  const byId = useMemo(() => new Map((verdicts || []).map((v) => [v.verdictId, v])), [verdicts]);
  const calls = useMemo(() => new Map(events.filter((e) => e.type === "tool_call").map((e) => [e.data?.toolCallId, e.data?.name])), [events]);
  const [kinds, setKinds] = useState({ transition: true, model: true, tool: true, verification: true, other: true });
  const [turn, setTurn] = useState("");
  const turns = useMemo(() => [...new Set(events.map((e) => e.turnId).filter(Boolean))], [events]);
  const shown = events.filter((e) => kinds[eventKind(e.type)] && (!turn || e.turnId === turn));
  const list = useRef(null);
  useEffect(() => {
    const el = list.current?.querySelector(".selected");
    if (el) el.scrollIntoView({ block: "nearest" });
  }, [selected]);
  return html`<section class="card timeline">
    <div class="toolbar">
      <h2>Timeline</h2>
      ${Object.keys(kinds).map((k) => html`<label class="inline"><input type="checkbox" data-filter=${k} checked=${kinds[k]} onChange=${(e) => setKinds({ ...kinds, [k]: e.target.checked })} /> ${k}</label>`)}
      <select value=${turn} onChange=${(e) => setTurn(e.target.value)} data-testid="turn-filter">
        <option value="">all turns</option>
        ${turns.map((t) => html`<option value=${t}>${t}</option>`)}
      </select>
    </div>
    <ol ref=${list}>
      ${shown.map((e) => html`<li data-event-id=${e.id} data-event-type=${e.type} class=${`${eventKind(e.type)}${e.id === selected ? " selected" : ""}`} onClick=${() => onSelect(e.id)}>
        <span class="eid">#${e.id}</span>
        <span class="etype">${e.type}</span>
        <span class="esum">${summarize(e, byId, calls)}</span>
        <span class="etime mono">${fmtTime(e.at).slice(11)}</span>
      </li>`)}
    </ol>
  </section>`;
}

function Messages({ messages, streaming }) {
  if (!messages) return null;
  return html`<div class="messages">
    ${messages.map((m) => html`<div class=${`msg r-${m.role}`}>
      <span class="role">${m.role}</span>
      <pre>${typeof m.content === "string" ? m.content : JSON.stringify(m.content, null, 2)}${m.toolCalls ? `\n${JSON.stringify(m.toolCalls, null, 2)}` : ""}</pre>
    </div>`)}
    ${streaming && html`<div class="msg r-assistant streaming" data-streaming="true" data-turn-id=${streaming.turnId} data-step=${streaming.step}>
      <span class="role">assistant · streaming step ${streaming.step}</span>
      <pre>${streaming.text}</pre>
    </div>`}
  </div>`;
}

const STATUS_CLASS = { PASS: "v-pass", NEEDS_CHANGES: "v-needs", FAIL: "v-fail" };

/** The verdicts of the agent, one group per turn, newest turn first. */
function Verdicts({ verdicts, error }) {
  const turns = verdictsByTurn(verdicts || []).reverse();
  return html`<section class="card verdicts">
    <h2>Verdicts</h2>
    ${error && html`<p class="error">${error}</p>`}
    ${turns.length === 0 ? html`<p class="muted">No verdicts yet.</p>` : turns.map((t) => html`<div class="vturn" data-verdict-turn=${t.turnId}>
      <h3 class="mono">turn ${t.turnId}</h3>
      ${t.verdicts.map((v) => html`<div class="verdict" data-verdict-id=${v.verdictId} data-verdict-status=${v.status}>
        <div class="vhead">
          <span class=${`badge ${STATUS_CLASS[v.status] ?? ""}`}>${v.status}</span>
          <span class="vmsg">${verdictMessage(v)}</span>
          <span class="spacer"></span>
          <span class="muted">${v.guardianCode}</span>
          <span class="muted">${verdictAttempt(v)}</span>
        </div>
        ${v.flags.length > 0 && html`<ul class="flags">${v.flags.map((f) => html`<li><b>${f.severity ?? ""}</b> <span class="mono">${f.code ?? ""}</span> ${f.message ?? short(f, 200)}</li>`)}</ul>`}
        ${v.recommendations.length > 0 && html`<ul class="recs">${v.recommendations.map((r) => html`<li>${r}</li>`)}</ul>`}
        ${Object.keys(v.evidence).length > 0 && html`<details><summary>evidence</summary><pre class="mono">${JSON.stringify(v.evidence, null, 2)}</pre></details>`}
      </div>`)}
    </div>`)}
  </section>`;
}

/** What the agent is doing right now (`activity` of the agent view, when the server reports it). */
function Activity({ activity, now }) {
  if (!activity || typeof activity !== "object") return null;
  const secs = typeof activity.since === "number" ? Math.max(0, Math.round((now - activity.since) / 1000)) : null;
  const calls = Array.isArray(activity.toolCallIds) && activity.toolCallIds.length ? ` · ${activity.toolCallIds.join(", ")}` : "";
  return html`<span class="pill activity" data-testid="activity">${activity.kind}${activity.step !== undefined ? ` · step ${activity.step}` : ""}${calls}${secs !== null ? ` · ${secs}s` : ""}</span>`;
}

function AgentPage({ agentId }) {
  const [machine, setMachine] = useState(null);
  const [view, setView] = useState(null);
  const [events, setEvents] = useState([]);
  const [selected, setSelected] = useState(null); // null: live
  const [hist, setHist] = useState(null);
  const [error, setError] = useState(null);
  const [forkId, setForkId] = useState("");
  const [forked, setForked] = useState(null);
  const [notice, setNotice] = useState(null);
  const [verdicts, setVerdicts] = useState([]);
  const [verdictError, setVerdictError] = useState(null);
  const [streaming, dispatchStream] = useReducer(streamingReducer, null);
  // True while the agent does not exist yet (no task reached it): "no turns yet", not an error.
  const [absent, setAbsent] = useState(false);
  const refreshing = useRef(false);
  const again = useRef(false);

  const refreshView = useCallback(async () => {
    if (refreshing.current) {
      again.current = true;
      return;
    }
    refreshing.current = true;
    try {
      do {
        again.current = false;
        setView(await api(`/v1/agents/${encodeURIComponent(agentId)}`));
        setError(null);
      } while (again.current);
    } catch (err) {
      setError(err);
    } finally {
      refreshing.current = false;
    }
  }, [agentId]);

  const refreshVerdicts = useCallback(async () => {
    try {
      const r = await api(`/v1/agents/${encodeURIComponent(agentId)}/verdicts`);
      setVerdicts(r.verdicts);
      setVerdictError(null);
    } catch (err) {
      setVerdictError(err.message);
    }
  }, [agentId]);

  useEffect(() => {
    let stop = () => {};
    let cancelled = false;
    setEvents([]);
    setSelected(null);
    setHist(null);
    setForked(null);
    setVerdicts([]);
    dispatchStream({ type: "reset" });
    (async () => {
      try {
        const m = await api("/v1/machine");
        if (cancelled) return;
        setMachine(m);
        // An agent exists from its first task on: until then the page says so and asks again.
        let evs;
        for (;;) {
          try {
            evs = await allEvents(agentId);
            break;
          } catch (err) {
            if (cancelled || err.problem?.code !== "agent_not_found") throw err;
            setAbsent(true);
            await new Promise((r) => setTimeout(r, ABSENT_POLL_MS));
            if (cancelled) return;
          }
        }
        if (cancelled) return;
        setEvents(evs);
        await Promise.all([refreshView(), refreshVerdicts()]);
        setAbsent(false);
        const last = evs.length ? evs[evs.length - 1].id : 0;
        stop = followEvents(agentId, last, (ev) => {
          setEvents((prev) => (prev.length && prev[prev.length - 1].id >= ev.id ? prev : [...prev, ev]));
          dispatchStream({ type: "event", event: ev });
          if (ev.type === "verdict_recorded") refreshVerdicts();
          refreshView();
        }, () => refreshView(), (delta) => dispatchStream({ type: "delta", delta }));
      } catch (err) {
        setError(err);
      }
    })();
    // The head also changes without events (claims, leases): poll it slowly.
    const t = setInterval(refreshView, 2000);
    return () => {
      cancelled = true;
      stop();
      clearInterval(t);
    };
  }, [agentId]);

  const lastId = events.length ? events[events.length - 1].id : 0;
  const shownId = selected ?? lastId;

  // History of the shown event: the state, context and messages then.
  useEffect(() => {
    if (!shownId) return;
    let cancelled = false;
    const t = setTimeout(async () => {
      try {
        const h = await api(`/v1/agents/${encodeURIComponent(agentId)}/history/${shownId}`);
        if (!cancelled) setHist(h);
      } catch (err) {
        if (!cancelled) setHist({ error: err.message, eventId: shownId });
      }
    }, selected === null ? 150 : 0);
    return () => {
      cancelled = true;
      clearTimeout(t);
    };
  }, [agentId, shownId, selected === null]);

  if (absent) {
    return html`<section class="card" data-testid="no-turns"><h2 class="mono">${agentId}</h2>
      <p>No turns yet: no task has reached this agent. This page follows its first turn as soon as one is enqueued
      (<span class="mono">POST /v1/agents/${agentId}/tasks</span>).</p></section>`;
  }
  if (error && !view) return html`<section class="card"><p class="error">${error.status === 404 ? `No agent ${agentId}.` : error.message}</p></section>`;
  if (!machine || !view) return html`<section class="card"><p>Loading…</p></section>`;

  const live = selected === null;
  const histOk = hist && !hist.error && hist.eventId === shownId;
  const active = live ? view.state : histOk ? hist.state : null;
  let lastEdge = null;
  for (const e of events) {
    if (e.id > shownId) break;
    if (e.type === "transition") lastEdge = { from: e.data.from, to: e.data.to };
  }
  const idx = events.findIndex((e) => e.id === shownId);
  const step = (d) => {
    const i = Math.min(events.length - 1, Math.max(0, (idx < 0 ? events.length - 1 : idx) + d));
    if (events[i]) setSelected(events[i].id === lastId && d > 0 ? null : events[i].id);
  };
  // External calls take a result here; a call that needs approval (in-process too) takes a decision,
  // and shows who decided it until it leaves the list.
  const pending = (view.pendingToolCalls || []).filter((c) => c.external !== false || c.approval !== undefined);
  const cancel = async () => {
    try {
      await api(`/v1/agents/${encodeURIComponent(agentId)}/cancel`, { method: "POST", body: { reason: "Cancelled from the debugger" } });
      setNotice("cancel sent");
      refreshView();
    } catch (err) {
      setNotice(err.message);
    }
  };
  const fork = async (e) => {
    e.preventDefault();
    const newAgentId = forkId.trim() || `${agentId}-fork-${shownId}`;
    try {
      const r = await api(`/v1/agents/${encodeURIComponent(agentId)}/fork`, { method: "POST", body: { atEventId: shownId, newAgentId } });
      setForked(r);
      setNotice(null);
    } catch (err) {
      setNotice(err.message);
    }
  };
  const u = view.usage || {};
  const tu = view.turnUsage || {};

  return html`<div class="agent">
    <section class="card head">
      <div class="toolbar">
        <h2 class="mono">${agentId}</h2>
        <span class="muted" data-testid="definition" title="The definition the turn runs under (a handoff may have transferred it)">${definitionLabel(view)}</span>
        <span class=${`pill s-${view.state}`} data-testid="live-state">${view.state}</span>
        ${view.activeTurnId && html`<span class="mono muted">turn ${view.activeTurnId}</span>`}
        ${view.activeTurnId && laneLabel(view) && html`<span class="pill" data-testid="turn-lane" title="The turn's concurrency key and priority">${laneLabel(view)}</span>`}
        ${view.turnVersion && html`<span class="mono muted" data-testid="turn-version" title="The definition version the turn runs under">version ${view.turnVersion}</span>`}
        ${view.waiting?.for === "version" && html`<span class="pill s-waiting-tools" data-testid="waiting-version" title="No live process has this version (docs/operations.md, Upgrades)">waits for version ${view.waiting.version}</span>`}
        <${Activity} activity=${view.activity} now=${Date.now()} />
        <span class="spacer"></span>
        <span class="muted">usage: ${u.inputTokens ?? 0} in · ${u.outputTokens ?? 0} out · cost ${u.cost ?? 0} · ${u.steps ?? 0} steps (turn: ${tu.steps ?? 0} steps, cost ${tu.cost ?? 0})</span>
        <button class="danger" onClick=${cancel} disabled=${!view.activeTurnId} data-testid="cancel">Cancel turn</button>
      </div>
      ${notice && html`<p class="muted">${notice}</p>`}
      ${(view.queuedTasks || []).length > 0 && html`<p class="muted" data-testid="queued">
        <b>queued</b> ${view.pendingTasks}${view.waiting && html` · next ${waitingText(view.waiting)}`}:
        ${view.queuedTasks.slice(0, 5).map((t) => html` <span class="mono">${t.turnId}</span>${laneLabel(t) && html` <span class="pill">${laneLabel(t)}</span>`}`)}
      </p>`}
      ${view.error && html`<p class="error">${view.error.reason}: ${view.error.message}</p>`}
      ${view.output !== undefined && html`<p><b>output</b> <span class="mono">${short(view.output, 400)}</span></p>`}
    </section>
    <section class="card chartcard">
        <div class="toolbar">
          <h2>Statechart</h2>
          <span class=${live ? "pill live" : "pill past"} data-testid="mode">${live ? "live" : `at event #${shownId}`}</span>
        </div>
        <${Chart} machine=${machine} active=${active} lastEdge=${lastEdge} />
        <div class="travel">
          <button onClick=${() => step(-1)} disabled=${events.length === 0 || idx === 0} data-testid="step-back" title="previous event">◀</button>
          <input type="range" min="1" max=${Math.max(1, lastId)} value=${shownId || 1} data-testid="slider"
            onInput=${(e) => {
              const v = Number(e.target.value);
              setSelected(v >= lastId ? null : v);
            }} />
          <button onClick=${() => step(1)} disabled=${live} data-testid="step-forward" title="next event">▶</button>
          <button onClick=${() => setSelected(null)} disabled=${live} data-testid="go-live">Live</button>
          <span class="mono">#${shownId} / ${lastId}</span>
        </div>
    </section>
    <div class="grid">
      <section class="card">
        <h2>At event #${shownId}</h2>
        ${hist?.error && html`<p class="error">${hist.error}</p>`}
        ${histOk && hist.throughEventId !== hist.eventId && html`<p class="muted" data-testid="commit-point" data-through-event-id=${hist.throughEventId}>
          shown at the end of the commit that logged #${shownId}: after event #${hist.throughEventId}</p>`}
        ${histOk && html`<div>
          <p>state <span class=${`pill s-${hist.state}`} data-testid="history-state">${hist.state}</span>
            ${hist.activeTurnId && html` <span class="mono muted">turn ${hist.activeTurnId}</span>`}</p>
          <details open><summary>context</summary><pre class="mono">${JSON.stringify(hist.context, null, 2)}</pre></details>
          <details open><summary>messages (${hist.messages.length})</summary><${Messages} messages=${hist.messages} streaming=${live ? streaming : null} /></details>
        </div>`}
        <form class="fork" onSubmit=${fork}>
          <h3>Fork from event #${shownId}${histOk && hist.throughEventId !== hist.eventId ? ` (takes the agent after #${hist.throughEventId}, the end of its commit)` : ""}</h3>
          <input placeholder=${`${agentId}-fork-${shownId}`} value=${forkId} onInput=${(e) => setForkId(e.target.value)} name="newAgentId" />
          <button type="submit" data-testid="fork" disabled=${!shownId}>Fork</button>
          ${forked && html`<span> → <${Link} href=${agentPath(forked.agentId)} data-testid="fork-link">${forked.agentId}<//> (${forked.state})</span>`}
        </form>
      </section>
      <div>
        <section class="card">
          <h2>Pending tool calls <span class="muted">(now)</span></h2>
          ${pending.length === 0 ? html`<p class="muted">None.</p>` : pending.map((c) => html`<${PendingCall} key=${c.toolCallId} agentId=${agentId} turnId=${view.activeTurnId} call=${c} onDone=${refreshView} />`)}
        </section>
        <${Verdicts} verdicts=${verdicts} error=${verdictError} />
      </div>
    </div>
    <${Timeline} events=${events} verdicts=${verdicts} selected=${live ? null : shownId} onSelect=${(id) => setSelected(id === lastId ? null : id)} />
  </div>`;
}

// ------------------------------------------------------------------ app

function route() {
  const m = /^\/debug\/agents\/([^/]+)\/?$/.exec(location.pathname);
  return m ? { agentId: decodeURIComponent(m[1]) } : { list: true };
}

function App() {
  const [r, setR] = useState(route());
  const [needToken, setNeedToken] = useState(false);
  const [gen, setGen] = useState(0);
  useEffect(() => {
    const onPop = () => setR(route());
    addEventListener("popstate", onPop);
    const onAuth = () => setNeedToken(true);
    authListeners.add(onAuth);
    return () => {
      removeEventListener("popstate", onPop);
      authListeners.delete(onAuth);
    };
  }, []);
  const hasToken = !!sessionStorage.getItem(TOKEN_KEY);
  return html`<header>
      <${Link} href="/debug" class="brand">gatehouse <span>debugger</span><//>
      <span class="spacer"></span>
      ${hasToken && html`<button class="ghost" onClick=${() => {
        sessionStorage.removeItem(TOKEN_KEY);
        setNeedToken(true);
      }}>Forget token</button>`}
    </header>
    <main>
      ${needToken ? html`<${TokenForm} message=${hasToken ? "The token was refused. Enter another one." : null} onSaved=${() => {
        setNeedToken(false);
        setGen(gen + 1);
      }} />` : r.agentId ? html`<${AgentPage} key=${`${r.agentId}:${gen}`} agentId=${r.agentId} />` : html`<${AgentList} key=${gen} />`}
    </main>`;
}

render(html`<${App} />`, document.getElementById("app"));
