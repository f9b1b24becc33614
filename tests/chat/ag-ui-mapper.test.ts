/**
 * routes/chat/ag-ui-stream.ts on its own, over hand-made event logs (no
 * store, no clock): every event it writes is one `@ag-ui/core`'s own schema
 * accepts; text messages and tool calls are ended before the run's last
 * event; a failed turn is `RUN_ERROR`; a wait for approval is an interrupt,
 * a wait for external results `pendingToolCallIds`; verdicts are `CUSTOM`.
 */
import { EventSchemas } from "@ag-ui/core/schemas";
import { describe, expect, it } from "vitest";
import type { StoredEvent } from "../../common/events.ts";
import { AgUiMapper, type AgUiEvent } from "../../routes/chat/ag-ui-stream.ts";

const T = "turn_1";
let id = 0;
const ev = (type: string, data: Record<string, unknown>): StoredEvent => ({ id: ++id, at: 0, type, data, turnId: T });
const call = (toolCallId: string, name: string, external = false) => ev("tool_call", { step: 1, toolCallId, name, args: { n: 1 }, external });

function read(events: StoredEvent[], deltas: string[] = []): { out: AgUiEvent[]; m: AgUiMapper } {
  const m = new AgUiMapper("a-1", T, "run-1");
  const out = [...m.start()];
  for (const text of deltas) out.push(...m.delta({ turnId: T, step: 1, text }));
  for (const e of events) out.push(...m.event(e));
  out.push(...m.settle());
  return { out, m };
}

function valid(out: AgUiEvent[]): void {
  for (const e of out) {
    const r = EventSchemas.safeParse(e);
    expect(r.success, `${JSON.stringify(e)}: ${r.success ? "" : r.error.message}`).toBe(true);
  }
}

describe("AgUiMapper", () => {
  it("a failed turn mid-text: the text message ends, then RUN_ERROR; every event fits the protocol's schema", () => {
    const { out, m } = read([ev("step", { phase: "started", step: 1 }), ev("task", { status: "failed", error: { reason: "model_error", message: "boom" } })], ["Hel"]);
    valid(out);
    expect(out.map((e) => e.type)).toEqual([
      "RUN_STARTED", "STATE_SNAPSHOT", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "STATE_SNAPSHOT", "RUN_ERROR",
    ]);
    expect(out.at(-1)).toEqual({ type: "RUN_ERROR", message: "model_error: boom", code: "turn_failed" });
    expect(m.finished).toBe(true);
  });

  it("a call waiting for approval ends the run with an interrupt; one waiting for an external result with pendingToolCallIds", () => {
    const approval = read([
      call("c1", "pay"),
      ev("approval_requested", { step: 1, toolCallId: "c1", name: "pay", args: {}, external: false, deadline: 1 }),
      call("c2", "ask", true),
      ev("transition", { event: { type: "MODEL_STEP", toolCalls: [{ id: "c1", approval: true, external: false }, { id: "c2", external: true }] } }),
    ]).out;
    valid(approval);
    expect(approval.filter((e) => e.type.startsWith("TOOL_CALL")).map((e) => e.type)).toEqual([
      "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END",
    ]);
    expect(approval.at(-1)).toMatchObject({
      type: "RUN_FINISHED", threadId: "a-1", runId: "run-1",
      outcome: { type: "interrupt", interrupts: [{ id: "c1", toolCallId: "c1", reason: "tool_approval", metadata: { turnId: T } }] },
    });
    const external = read([call("c3", "ask", true), ev("transition", { event: { type: "MODEL_STEP", toolCalls: [{ id: "c3", external: true }] } })]).out;
    valid(external);
    expect(external.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success", pendingToolCallIds: ["c3"] } });
  });

  it("results, a denied call and a verdict; the done turn finishes with success", () => {
    const { out } = read([
      call("c1", "look"),
      ev("transition", { event: { type: "TOOL_RESULT", toolCallId: "c1", outcome: { ok: true, value: { found: 1 } } } }),
      call("c2", "pay"),
      ev("approval_decided", { toolCallId: "c2", decision: "rejected", reason: "no", deadline: null }),
      ev("verdict_recorded", { verdictId: "v1", passed: true }),
      ev("step", { phase: "planning", step: 2, text: "done" }),
      ev("task", { status: "done" }),
    ]);
    valid(out);
    const results = out.filter((e) => e.type === "TOOL_CALL_RESULT") as Array<{ toolCallId: string; content: string }>;
    expect(results.map((r) => [r.toolCallId, JSON.parse(r.content)])).toEqual([["c1", { found: 1 }], ["c2", { denied: true }]]);
    expect(out.find((e) => e.type === "CUSTOM")).toMatchObject({ name: "gatehouse-verdict", value: { verdictId: "v1" } });
    expect(out.at(-1)).toEqual({ type: "RUN_FINISHED", threadId: "a-1", runId: "run-1", outcome: { type: "success" } });
  });
});
