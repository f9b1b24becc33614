// The debugger page's pure state logic (no DOM, no fetch), imported by
// debug-ui/app.js and unit-tested by tests/debug/debug-ui-model.test.ts.
//
// Invariants:
// - `parseSseFrame` reads one SSE frame (the text between blank lines):
//   `event: delta` frames carry `{ turnId, step, text }` and no `id:` line;
//   any other frame with data is a stored event (it has an `id`).
// - `streamingReducer` holds at most one "streaming" message: the text of
//   the deltas of one (turnId, step), appended in arrival order. A delta of
//   another (turnId, step) starts a new one. It is dropped when the stored
//   events that hold that text arrive: a `chunk` or `step` event of the same
//   turn at that step or later, any event of another turn, or a transition
//   into a state that ends the turn (done, failed). So the live text is
//   never shown twice: once the store has it, only the stored form remains.
// - `summarize` gives the meaning of an event first: a verdict reads
//   `NEEDS_CHANGES: <message>`, a tool call `name(args)`, a transition
//   `from → to (EVENT)`; ids and hashes never lead. An event that records
//   who did it (`by`) ends with `· by <name>` (`· by (no name)` for null).
// - `laneLabel` names a task's concurrency key and priority (`key user:42 ·
//   priority 30`; "" when it has neither); `waitingText` says in words why a
//   queued task waits (the agent view's `waiting`, docs/http.md).

/** A task's key and priority in words ("" when it has neither). */
export function laneLabel(t) {
  const parts = [];
  if (t && t.concurrencyKey !== undefined) parts.push(`key ${t.concurrencyKey}`);
  if (t && t.priority !== undefined && t.priority !== 0) parts.push(`priority ${t.priority}`);
  return parts.join(" · ");
}

/** Why a queued task waits, in words (the `waiting` of the agent view). */
export function waitingText(w) {
  if (!w) return "";
  switch (w.for) {
    case "run_at":
      return `delayed until ${w.runAt}`;
    case "turn":
      return `behind ${w.ahead} turn${w.ahead === 1 ? "" : "s"} of this agent`;
    case "concurrency_key":
      return `key ${w.key} at its limit (${w.running} of ${w.limit} running)`;
    case "lane":
      return `waiting for a worker in lane ${w.key === "" ? "(default)" : w.key} (${w.queued} queued)`;
    default:
      return JSON.stringify(w);
  }
}

export const short = (v, n = 160) => {
  const s = typeof v === "string" ? v : JSON.stringify(v);
  return s === undefined ? "" : s.length > n ? `${s.slice(0, n)}…` : s;
};

/** One SSE frame → `{ kind: "delta", delta }`, `{ kind: "event", event }` or null (comments, keep-alives). */
export function parseSseFrame(frame) {
  let name = "message";
  const data = [];
  for (const line of frame.split("\n")) {
    if (line.startsWith("event:")) name = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  if (data.length === 0) return null;
  let value;
  try {
    value = JSON.parse(data.join("\n"));
  } catch {
    return null;
  }
  if (name === "delta") {
    if (!value || typeof value.turnId !== "string" || typeof value.step !== "number" || typeof value.text !== "string") return null;
    return { kind: "delta", delta: value };
  }
  if (!value || typeof value.id !== "number") return null;
  return { kind: "event", event: value };
}

/**
 * The streaming message: `null` or `{ turnId, step, text }`. Actions:
 * `{ type: "delta", delta }`, `{ type: "event", event }` (a stored event),
 * `{ type: "reset" }`.
 */
export function streamingReducer(state, action) {
  switch (action.type) {
    case "delta": {
      const d = action.delta;
      if (state && state.turnId === d.turnId && state.step === d.step) return { ...state, text: state.text + d.text };
      return { turnId: d.turnId, step: d.step, text: d.text };
    }
    case "event":
      return state && storedCovers(action.event, state) ? null : state;
    case "reset":
      return null;
    default:
      return state;
  }
}

const TURN_ENDS = new Set(["done", "failed"]);

/** Whether a stored event holds (or supersedes) the streaming text of `s`. */
function storedCovers(ev, s) {
  if (ev.turnId && ev.turnId !== s.turnId) return true;
  const d = ev.data || {};
  if ((ev.type === "chunk" || ev.type === "step") && typeof d.step === "number" && d.step >= s.step) return true;
  return ev.type === "transition" && TURN_ENDS.has(d.to);
}

/** The human message of a verdict: the writer's message, else the first flag's, else "passed" for PASS. */
export function verdictMessage(v) {
  const m = v.metadata || {};
  if (typeof m.message === "string" && m.message) return m.message;
  const flag = (v.flags || []).find((f) => typeof f?.message === "string");
  if (flag) return flag.message;
  return v.status === "PASS" ? "passed" : "";
}

/** `attempt n of m` of a verdict, or "" when the writer recorded none. */
export function verdictAttempt(v) {
  const m = v.metadata || {};
  return typeof m.attempt === "number" ? `attempt ${m.attempt}${typeof m.maxAttempts === "number" ? ` of ${m.maxAttempts}` : ""}` : "";
}

/** Verdicts grouped by turn (`taskId`), turns and verdicts in write order. */
export function verdictsByTurn(verdicts) {
  const turns = new Map();
  for (const v of verdicts) {
    if (!turns.has(v.taskId)) turns.set(v.taskId, []);
    turns.get(v.taskId).push(v);
  }
  return [...turns.entries()].map(([turnId, list]) => ({ turnId, verdicts: list }));
}

const argsSummary = (args) => {
  if (args === undefined) return "";
  if (args && typeof args === "object" && !Array.isArray(args)) {
    return Object.entries(args).map(([k, v]) => `${k}: ${short(v, 60)}`).join(", ");
  }
  return short(args, 120);
};

/**
 * The definition line of the agent's head: the binding (`agent`), and when a
 * handoff transferred the turn, `binding → definition` (agents/handoff.ts).
 */
export function definitionLabel(view) {
  return view.definition && view.definition !== view.agent ? `${view.agent} → ${view.definition}` : view.agent;
}

/**
 * One-line summary of an event for the timeline, meaning first.
 * `verdicts` maps verdictId → verdict record (for the message of a
 * `verdict_recorded` row); `calls` maps toolCallId → tool name.
 */
export function summarize(ev, verdicts = new Map(), calls = new Map()) {
  const d = ev.data || {};
  const text = meaning(ev, d, verdicts, calls);
  return Object.hasOwn(d, "by") ? `${text}  · ${byLabel(d.by)}` : text;
}

/** Who did it, as the page shows it: `by alice@ops`, or `by (no name)` for a request without a named token. */
export function byLabel(by) {
  return `by ${by ?? "(no name)"}`;
}

function meaning(ev, d, verdicts, calls) {
  switch (ev.type) {
    case "transition":
      return `${d.from ?? "?"} → ${d.to ?? "?"}  (${d.event?.type ?? d.eventType ?? "?"})`;
    case "step": {
      if (d.phase === "completed") {
        const u = d.llmUsage || {};
        return `step ${d.step} completed · ${d.model ?? "model"} · in ${u.inputTokens ?? 0} · out ${u.outputTokens ?? 0} · cost ${d.llmResponseCost ?? 0}`;
      }
      if (d.phase === "planning") return `step ${d.step} planning${d.text ? `: “${short(d.text, 80)}”` : ""}`;
      if (d.phase === "executing") return `step ${d.step} executing ${(d.toolCallIds || []).map((id) => calls.get(id) ?? id).join(", ")}`;
      return `step ${d.step ?? ""} ${d.phase ?? ""}`;
    }
    case "chunk":
      return `“${short(d.text, 120)}”  (step ${d.step})`;
    case "tool_call":
      return `${d.name ?? "?"}(${argsSummary(d.args ?? d.arguments)})${d.external ? "  · external" : ""}`;
    case "tool_result":
    case "tool_result_received": {
      const o = d.outcome || {};
      const name = d.name ?? calls.get(d.toolCallId) ?? d.toolCallId ?? "";
      const via = d.source ? ` via ${d.source}` : "";
      if (o.ok === false) return `${name} failed: ${o.error?.message ?? short(o.error, 120)}`;
      if (o.ok === true) return `${name} → ${short(o.value, 120)}`;
      if (typeof d.ok === "boolean") return `${name} ${d.ok ? "ok" : "error"} received${via}${d.afterExecution === "terminate" ? " · ends the turn" : ""}`;
      return `${name} ${short(d, 150)}`;
    }
    case "verdict_recorded": {
      const v = verdicts.get(d.verdictId);
      const msg = v ? verdictMessage(v) : "";
      return `${d.status ?? v?.status ?? "?"}${msg ? `: ${short(msg, 140)}` : ""}  · ${d.guardianCode ?? v?.guardianCode ?? ""}${d.attempt ? ` · attempt ${d.attempt} of ${d.maxAttempts}` : ""}`;
    }
    case "verification_started":
      return `attempt ${d.attempt} of ${d.maxAttempts}${d.replayed ? " (replayed)" : ""}`;
    case "verification_passed":
      return `PASS · attempt ${d.attempt} of ${d.maxAttempts}`;
    case "verification_rejected":
      return `${d.code ?? "rejected"}: ${short(d.message, 140)} · attempt ${d.attempt} of ${d.maxAttempts}`;
    case "verification_error":
    case "verification_hook_failed":
      return `${short(d.message, 160)}`;
    case "verification_exhausted":
    case "verification_attempt_counted":
      return `${d.attemptsUsed} of ${d.maxAttempts} attempts used`;
    case "task":
      return d.status === "failed"
        ? `failed: ${d.error?.reason ?? ""}${d.error?.message ? ` ${short(d.error.message, 120)}` : ""}`
        : `${d.status ?? "?"}: ${short(d.deliverable, 140)}`;
    case "approval_requested":
      return `${d.name ?? "?"}(${argsSummary(d.args)}) waits for a person's approval${d.external ? "  · external" : ""}`;
    case "approval_decided": {
      const name = calls.get(d.toolCallId) ?? d.toolCallId ?? "";
      const edited = d.args ? `  · edited: ${name}(${argsSummary(d.args)})` : "";
      return `${name} ${d.decision ?? "?"}${d.reason ? `: ${short(d.reason, 100)}` : ""}${edited}`;
    }
    case "handoff":
      return `handed off: ${d.from ?? "?"} → ${d.to ?? "?"} (${d.tool ?? d.toolCallId ?? ""})`;
    case "task_enqueued":
      return `turn ${d.turnId ?? ""} queued · ${d.inputBytes ?? 0} bytes of input`;
    case "model_error":
      return `${d.reason ?? d.code ?? "error"}: ${short(d.message ?? d, 140)}`;
    case "approval_decided":
      return `${calls.get(d.toolCallId) ?? d.toolCallId ?? ""} ${d.decision ?? "?"}${d.reason ? `: ${short(d.reason, 120)}` : ""}`;
    case "cancel_requested":
    case "task_cancelled":
      return `turn ${d.turnId ?? ""}: ${short(d.reason, 120)}`;
    case "schedule_deleted":
      return `schedule ${d.scheduleId ?? ""} deleted`;
    default: {
      const keys = Object.keys(d).filter((k) => k !== "by" && d[k] !== null && d[k] !== undefined);
      return keys.length ? short(Object.fromEntries(keys.map((k) => [k, d[k]])), 180) : "";
    }
  }
}
