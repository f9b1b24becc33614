/**
 * The debugger page's state logic (debug-ui/model.js), as a unit: SSE frames
 * (`event: delta` frames of live model text next to stored events), the
 * streaming message of the messages panel (deltas appended, dropped when the
 * stored chunk/step events arrive), timeline summaries that lead with the
 * meaning, the verdict panel's message / attempt / per-turn grouping, and the
 * head's definition line (a handoff shows `binding → target`).
 * The page imports exactly this module (scripts/bundle-debug.ts bundles it).
 */
import { describe, expect, it } from "vitest";

type Delta = { turnId: string; step: number; text: string };
type Ev = { id: number; type: string; turnId?: string | null; data?: Record<string, unknown>; at?: number };
type Streaming = Delta | null;
type Verdict = Record<string, any>;
interface Model {
  parseSseFrame(frame: string): { kind: "delta"; delta: Delta } | { kind: "event"; event: Ev } | null;
  streamingReducer(s: Streaming, a: { type: "delta"; delta: Delta } | { type: "event"; event: Ev } | { type: "reset" }): Streaming;
  summarize(ev: Ev, verdicts?: Map<string, Verdict>, calls?: Map<string, string>): string;
  verdictMessage(v: Verdict): string;
  verdictAttempt(v: Verdict): string;
  verdictsByTurn(vs: Verdict[]): { turnId: string; verdicts: Verdict[] }[];
  definitionLabel(view: { agent: string; definition?: string }): string;
  laneLabel(t: { concurrencyKey?: string; priority?: number }): string;
  waitingText(w: Record<string, unknown> | undefined): string;
}

// A plain JS module of the page (no .d.ts): loaded by URL, typed by `Model` above.
const MODEL_URL = new URL("../../debug-ui/model.js", import.meta.url).href;
const model: Model = await import(MODEL_URL);

const frame = (lines: string[]) => lines.join("\n");
const delta = (d: Delta) => ({ type: "delta" as const, delta: d });
const stored = (e: Ev) => ({ type: "event" as const, event: e });

describe("SSE frames", () => {
  it("reads `event: delta` frames (no id line) as deltas and id'd frames as stored events", () => {
    expect(model.parseSseFrame(frame(["event: delta", 'data: {"turnId":"t1","step":2,"text":"Hel"}'])))
      .toEqual({ kind: "delta", delta: { turnId: "t1", step: 2, text: "Hel" } });
    expect(model.parseSseFrame(frame(["id: 7", "event: transition", 'data: {"id":7,"type":"transition","data":{}}'])))
      .toEqual({ kind: "event", event: { id: 7, type: "transition", data: {} } });
    expect(model.parseSseFrame(frame(['data: {"id":8,"type":"chunk"}']))).toEqual({ kind: "event", event: { id: 8, type: "chunk" } });
  });

  it("ignores comments, keep-alives, malformed data and deltas of the wrong shape", () => {
    expect(model.parseSseFrame(": keep-alive")).toBeNull();
    expect(model.parseSseFrame("data: {not json")).toBeNull();
    expect(model.parseSseFrame(frame(["event: delta", 'data: {"turnId":"t1","text":"x"}']))).toBeNull();
    expect(model.parseSseFrame('data: {"type":"no id"}')).toBeNull();
  });
});

describe("the streaming message", () => {
  it("appends the deltas of one (turn, step) in arrival order", () => {
    let s: Streaming = null;
    for (const text of ["The ", "units ", "are ", "fixed."]) s = model.streamingReducer(s, delta({ turnId: "t1", step: 1, text }));
    expect(s).toEqual({ turnId: "t1", step: 1, text: "The units are fixed." });
  });

  it("starts over on a delta of another step or turn", () => {
    let s = model.streamingReducer(null, delta({ turnId: "t1", step: 1, text: "one" }));
    s = model.streamingReducer(s, delta({ turnId: "t1", step: 2, text: "two" }));
    expect(s).toEqual({ turnId: "t1", step: 2, text: "two" });
    s = model.streamingReducer(s, delta({ turnId: "t2", step: 2, text: "three" }));
    expect(s).toEqual({ turnId: "t2", step: 2, text: "three" });
  });

  it("is dropped when the step's stored chunk or step event arrives, kept for earlier steps and other events", () => {
    const s = model.streamingReducer(null, delta({ turnId: "t1", step: 3, text: "Looking" }));
    expect(model.streamingReducer(s, stored({ id: 9, type: "chunk", turnId: "t1", data: { step: 3, text: "Looking" } }))).toBeNull();
    expect(model.streamingReducer(s, stored({ id: 9, type: "step", turnId: "t1", data: { step: 3, phase: "planning" } }))).toBeNull();
    expect(model.streamingReducer(s, stored({ id: 9, type: "step", turnId: "t1", data: { step: 4, phase: "planning" } }))).toBeNull();
    // An earlier step's event, or an event that holds no text, leaves it.
    expect(model.streamingReducer(s, stored({ id: 9, type: "step", turnId: "t1", data: { step: 2, phase: "completed" } }))).toBe(s);
    expect(model.streamingReducer(s, stored({ id: 9, type: "tool_call", turnId: "t1", data: { step: 3, name: "x" } }))).toBe(s);
    expect(model.streamingReducer(s, stored({ id: 9, type: "transition", turnId: "t1", data: { from: "idle", to: "running" } }))).toBe(s);
  });

  it("is dropped when the turn ends or another turn's event arrives, and on reset", () => {
    const s = model.streamingReducer(null, delta({ turnId: "t1", step: 1, text: "x" }));
    expect(model.streamingReducer(s, stored({ id: 2, type: "transition", turnId: "t1", data: { from: "running", to: "failed" } }))).toBeNull();
    expect(model.streamingReducer(s, stored({ id: 2, type: "transition", turnId: "t1", data: { from: "running", to: "done" } }))).toBeNull();
    expect(model.streamingReducer(s, stored({ id: 2, type: "transition", turnId: "t2", data: { from: "done", to: "running" } }))).toBeNull();
    expect(model.streamingReducer(s, { type: "reset" })).toBeNull();
    expect(model.streamingReducer(null, stored({ id: 2, type: "chunk", turnId: "t1", data: { step: 1 } }))).toBeNull();
  });
});

const needsChanges: Verdict = {
  verdictId: "verdict_0123456789ab",
  taskId: "turn_1",
  guardianCode: "output_verifier:invoicer",
  status: "NEEDS_CHANGES",
  flags: [{ severity: "error", code: "bad_units", message: "units must be positive" }],
  evidence: { durationMs: 3 },
  recommendations: ['Revise the output to resolve "bad_units" and call agent_output again'],
  metadata: { attempt: 1, maxAttempts: 3, outcome: "rejected", code: "bad_units", message: "units must be positive" },
};

describe("timeline summaries lead with the meaning", () => {
  it("a verdict row reads `STATUS: message`, not its id", () => {
    const ev = { id: 5, type: "verdict_recorded", turnId: "turn_1", data: { verdictId: needsChanges.verdictId, guardianCode: needsChanges.guardianCode, status: "NEEDS_CHANGES", attempt: 1, maxAttempts: 3 } };
    const line = model.summarize(ev, new Map([[needsChanges.verdictId, needsChanges]]));
    expect(line.startsWith("NEEDS_CHANGES: units must be positive")).toBe(true);
    expect(line).toContain("attempt 1 of 3");
    expect(line).not.toContain("verdict_0123456789ab");
    // Before the verdicts are loaded: still the status first.
    expect(model.summarize(ev).startsWith("NEEDS_CHANGES")).toBe(true);
  });

  it("a tool call reads name(args), a result names its tool, a rejection its message", () => {
    expect(model.summarize({ id: 1, type: "tool_call", data: { toolCallId: "call_1", name: "ask_human", args: { q: "Ship the fix?" }, external: true } }))
      .toBe('ask_human(q: Ship the fix?)  · external');
    const calls = new Map([["call_1", "ask_human"]]);
    expect(model.summarize({ id: 2, type: "tool_result_received", data: { toolCallId: "call_1", ok: true, source: "http", afterExecution: "continue" } }, new Map(), calls))
      .toBe("ask_human ok received via http");
    expect(model.summarize({ id: 3, type: "tool_result", data: { toolCallId: "call_2", name: "lookup", outcome: { ok: false, error: { type: "x", message: "not found" } } } }))
      .toBe("lookup failed: not found");
    expect(model.summarize({ id: 4, type: "verification_rejected", data: { code: "bad_units", message: "units must be positive", attempt: 2, maxAttempts: 3 } }))
      .toBe("bad_units: units must be positive · attempt 2 of 3");
    expect(model.summarize({ id: 5, type: "chunk", data: { step: 1, text: "Let me ask." } })).toBe("“Let me ask.”  (step 1)");
  });

  it("an event that records who did it ends with `· by <name>`, or `by (no name)`; one without by says nothing of it", () => {
    const calls = new Map([["call_1", "pay"]]);
    expect(model.summarize({ id: 1, type: "approval_decided", data: { toolCallId: "call_1", decision: "rejected", reason: "too much", by: "alice@ops", deadline: null } }, new Map(), calls))
      .toBe("pay rejected: too much  · by alice@ops");
    expect(model.summarize({ id: 2, type: "tool_result_received", data: { toolCallId: "call_1", ok: true, source: "http", afterExecution: "continue", by: null } }, new Map(), calls))
      .toBe("pay ok received via http  · by (no name)");
    expect(model.summarize({ id: 3, type: "approval_decided", data: { toolCallId: "call_1", decision: "timeout", reason: null, deadline: null } }, new Map(), calls))
      .toBe("pay timeout");
    expect(model.summarize({ id: 4, type: "forked_to", data: { agentId: "b", atEventId: 3, by: "ops" } })).toBe('{"agentId":"b","atEventId":3}  · by ops');
  });
});

describe("verdicts panel data", () => {
  it("message, attempt n of m, and grouping by turn in write order", () => {
    expect(model.verdictMessage(needsChanges)).toBe("units must be positive");
    expect(model.verdictAttempt(needsChanges)).toBe("attempt 1 of 3");
    const pass = { ...needsChanges, verdictId: "verdict_0123456789ac", status: "PASS", flags: [], metadata: { attempt: 2, maxAttempts: 3, outcome: "passed" } };
    expect(model.verdictMessage(pass)).toBe("passed");
    const guardian = { ...needsChanges, verdictId: "verdict_0123456789ad", taskId: "turn_2", status: "FAIL", metadata: {}, flags: [{ severity: "critical", code: "secret", message: "a key leaked" }] };
    expect(model.verdictMessage(guardian)).toBe("a key leaked");
    expect(model.verdictAttempt(guardian)).toBe("");
    expect(model.verdictsByTurn([needsChanges, guardian, pass]).map((t) => [t.turnId, t.verdicts.map((v) => v.status)]))
      .toEqual([["turn_1", ["NEEDS_CHANGES", "PASS"]], ["turn_2", ["FAIL"]]]);
  });
});

describe("the definition a turn runs under (handoffs)", () => {
  it("the head shows the binding, and binding → target once a handoff transferred the turn", () => {
    expect(model.definitionLabel({ agent: "triage", definition: "triage" })).toBe("triage");
    expect(model.definitionLabel({ agent: "triage" })).toBe("triage");
    expect(model.definitionLabel({ agent: "triage", definition: "billing" })).toBe("triage → billing");
  });

  it("a handoff event reads as who handed off to whom", () => {
    const ev = { id: 9, type: "handoff", data: { step: 1, toolCallId: "c1", tool: "transfer_to_billing", from: "triage", to: "billing" } };
    expect(model.summarize(ev)).toBe("handed off: triage → billing (transfer_to_billing)");
  });
});

describe("laneLabel and waitingText", () => {
  it("name a task's key and priority, and why a queued task waits", async () => {
    const { laneLabel, waitingText } = model;
    expect(laneLabel({ concurrencyKey: "user:42", priority: 30 })).toBe("key user:42 · priority 30");
    expect(laneLabel({ priority: 0 })).toBe("");
    expect(laneLabel({})).toBe("");
    expect(waitingText({ for: "concurrency_key", key: "user:42", limit: 2, running: 2 })).toBe("key user:42 at its limit (2 of 2 running)");
    expect(waitingText({ for: "turn", ahead: 1 })).toBe("behind 1 turn of this agent");
    expect(waitingText({ for: "lane", key: "", queued: 3 })).toBe("waiting for a worker in lane (default) (3 queued)");
    expect(waitingText({ for: "run_at", runAt: "2026-01-01T00:00:00.000Z" })).toBe("delayed until 2026-01-01T00:00:00.000Z");
    expect(waitingText(undefined)).toBe("");
  });
});
