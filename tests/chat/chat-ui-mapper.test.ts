/**
 * routes/chat/ui-stream.ts on its own: the invariants of its header, over
 * hand-made event logs (no store, no clock).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { StoredEvent } from "../../common/events.ts";
import { foldChunks } from "../../routes/chat/history.ts";
import { type ChatChunk, UiStreamMapper } from "../../routes/chat/ui-stream.ts";

const T = "turn_1";
let id = 0;
const ev = (type: string, data: Record<string, unknown>, turnId: string | null = T): StoredEvent => ({ id: ++id, at: 0, type, data, turnId });
const planning = (step: number, text: string | null) => ev("step", { phase: "planning", step, text });
const texts = (chunks: ChatChunk[]) => foldChunks(chunks).filter((p) => p.type === "text").map((p) => (p as { text: string }).text);

describe("UiStreamMapper", () => {
  it("a step's text read to its end is its stored text, whatever prefix of it the deltas said (seeded)", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 40 }), fc.array(fc.nat(40), { maxLength: 6 }), fc.nat(40), (text, cuts, heardUpTo) => {
        const m = new UiStreamMapper("a", T);
        const chunks = m.start();
        const points = [...new Set([0, ...cuts.map((c) => c % (text.length + 1)), Math.min(heardUpTo, text.length)])].sort((a, b) => a - b);
        for (let i = 0; i + 1 < points.length && points[i + 1] <= heardUpTo; i++) {
          chunks.push(...m.delta({ turnId: T, step: 1, text: text.slice(points[i], points[i + 1]) }));
        }
        chunks.push(...m.event(planning(1, text)));
        chunks.push(...m.delta({ turnId: T, step: 1, text: "late" })); // a late delta of a stored step writes nothing
        expect(texts(chunks)).toEqual([text]);
      }),
      { seed: 32, numRuns: 200, interruptAfterTimeLimit: 20_000 },
    );
  });

  it("deltas that told another text keep their part; the stored text follows in its own", () => {
    const m = new UiStreamMapper("a", T);
    const chunks = [...m.start(), ...m.delta({ turnId: T, step: 1, text: "first try" }), ...m.event(planning(1, "second"))];
    expect(texts(chunks)).toEqual(["first try", "second"]);
  });

  it("deltas of steps before liveFromStep, and of other turns, write nothing", () => {
    const m = new UiStreamMapper("a", T, 3);
    expect(m.delta({ turnId: T, step: 2, text: "x" })).toEqual([]);
    expect(m.delta({ turnId: "turn_other", step: 3, text: "x" })).toEqual([]);
    expect(m.delta({ turnId: T, step: 3, text: "x" }).map((c) => c.type)).toEqual(["start-step", "text-start", "text-delta"]);
  });

  it("ends with finish(tool-calls) only when every open call waits for a person or an external result", () => {
    const m = new UiStreamMapper("a", T);
    m.start();
    m.event(ev("tool_call", { step: 1, toolCallId: "c1", name: "pay", args: {}, external: false }));
    m.event(ev("approval_requested", { step: 1, toolCallId: "c1", name: "pay", args: {}, external: false, deadline: 1 }));
    m.event(ev("tool_call", { step: 1, toolCallId: "c2", name: "look", args: {}, external: false }));
    m.event(ev("transition", { event: { type: "MODEL_STEP", toolCalls: [{ id: "c1", approval: true, external: false }, { id: "c2", external: false }] } }));
    expect(m.settle()).toEqual([]); // c2 runs in process
    m.event(ev("transition", { event: { type: "TOOL_RESULT", toolCallId: "c2", outcome: { ok: true, value: 1 } } }));
    expect(m.settle().at(-1)).toEqual({ type: "finish", finishReason: "tool-calls" });
    expect(m.finished).toBe(true);
  });

  it("a rejected approval ends its call as tool-output-denied once; its error result is not written again", () => {
    const m = new UiStreamMapper("a", T);
    const chunks = [
      ...m.event(ev("tool_call", { step: 1, toolCallId: "c1", name: "pay", args: {}, external: false })),
      ...m.event(ev("approval_decided", { toolCallId: "c1", decision: "rejected", reason: "no", deadline: null })),
      ...m.event(ev("transition", { event: { type: "TOOL_RESULT", toolCallId: "c1", outcome: { ok: false, error: { type: "approval_rejected", message: "no" } } } })),
      ...m.event(ev("task", { status: "done" })),
      ...m.event(ev("task", { status: "done" }, "turn_other")),
    ];
    expect(chunks.filter((c) => c.type.startsWith("tool-output"))).toEqual([{ type: "tool-output-denied", toolCallId: "c1" }]);
    expect(chunks.at(-1)).toEqual({ type: "finish", finishReason: "stop" });
  });
});
