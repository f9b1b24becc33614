/**
 * common/event-form.ts: a commit's events compacted (payloads a transition
 * carries stored once) and appended, then read back in pages cut anywhere,
 * expand to the written events byte for byte; what cannot be expanded
 * exactly is stored whole.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { NewEvent, StoredEvent } from "../../common/events.ts";
import { byIdIn, compactEvents, expandEvents, isCompact, namedOutside, servedPage } from "../../common/event-form.ts";

const stored = (events: NewEvent[], base: number): StoredEvent[] =>
  events.map((e, i) => ({ id: base + i + 1, at: 5, turnId: "t", type: e.type, data: e.data }));
const text = (events: unknown[]) => events.map((e) => JSON.stringify(e));

/** A model step's commit as the host writes it (actors/steps/model-step.ts, tool-runner.ts); `share` false: copies instead of the same values. */
function stepCommit(o: { text: string | null; cuts: number[]; calls: Array<{ args: unknown; value: unknown }>; share: boolean[]; ignored: boolean; builtin: boolean; failed: boolean }): NewEvent[] {
  const s = (i: number) => o.share[i % o.share.length] ?? true;
  const maybeCopy = <T>(v: T, i: number): T => (s(i) ? v : structuredClone(v));
  const calls = o.calls.map((c, i) => ({ id: `c${i}`, name: "t", args: c.args, external: false, deadline: 9 }));
  const usage = { inputTokens: 3, outputTokens: 4 };
  const ev: NewEvent[] = [{ type: "step", data: { phase: "started", step: 1 } }, { type: "step", data: { phase: "planning", step: 1, text: o.text } }];
  if (o.text !== null) {
    const cuts = [...new Set(o.cuts.map((c) => c % (o.text!.length + 1)))].sort((a, b) => a - b);
    let at = 0;
    for (const c of [...cuts, o.text.length]) {
      if (c > at) ev.push({ type: "chunk", data: { step: 1, text: o.text.slice(at, c) } });
      at = Math.max(at, c);
    }
  }
  calls.forEach((c, i) => ev.push({ type: "tool_call", data: { step: 1, toolCallId: c.id, name: c.name, args: maybeCopy(c.args, i), external: false, deadline: 9 } }));
  // The completion tool's call is logged again, marked builtin, without its deadline (actors/steps/model-step.ts).
  if (calls.length > 0 && o.builtin) ev.push({ type: "tool_call", data: { step: 1, toolCallId: calls[0].id, name: calls[0].name, args: calls[0].args, external: false, builtin: true } });
  ev.push({ type: "step", data: { phase: "executing", step: 1, toolCallIds: calls.map((c) => c.id) } });
  if (!o.ignored) ev.push({ type: "transition", data: { seq: 1, from: "running", to: "waiting-tools", event: { type: "MODEL_STEP", at: 1, text: o.text, toolCalls: calls, usage, cost: 0.5 } } });
  else ev.push({ type: "event_ignored", data: { event: "MODEL_STEP", state: "done" } });
  ev.push({ type: "step", data: { phase: "completed", step: 1, model: "m", llmUsage: maybeCopy(usage, 1), llmResponseCost: 0.5, toolCallIds: calls.map((c) => c.id) } });
  o.calls.forEach((c, i) => {
    const outcome = o.failed ? { ok: false, error: { type: "x", message: String(c.value) } } : { ok: true, value: c.value };
    ev.push({ type: "tool_result", data: { toolCallId: `c${i}`, name: "t", ok: outcome.ok, outcome: maybeCopy(outcome, i + 2), afterExecution: "continue", durationMs: 1, contractValidation: { applied: false } } });
    ev.push({ type: "transition", data: { seq: 2 + i, from: "waiting-tools", to: "waiting-tools", event: { type: "TOOL_RESULT", at: 2, toolCallId: `c${i}`, outcome, afterExecution: "continue" } } });
  });
  return ev;
}

const commitArb = fc.record({
  text: fc.option(fc.string({ minLength: 0, maxLength: 40 }), { nil: null }),
  cuts: fc.array(fc.nat(60), { maxLength: 5 }),
  calls: fc.array(fc.record({ args: fc.jsonValue(), value: fc.jsonValue() }), { maxLength: 3 }),
  share: fc.array(fc.boolean(), { minLength: 1, maxLength: 4 }),
  ignored: fc.boolean(),
  builtin: fc.boolean(),
  failed: fc.boolean(),
});

describe("event form", () => {
  it("a commit, compacted and stored, read in pages cut anywhere, expands to the written events byte for byte", async () => {
    await fc.assert(fc.asyncProperty(commitArb, fc.nat(50), fc.nat(30), fc.integer({ min: 1, max: 30 }), async (o, base, from, size) => {
      const written = stored(stepCommit(o), base);
      const log = stored(compactEvents(stepCommit(o)), base);
      expect(log.length).toBe(written.length);
      // Transitions are stored whole.
      expect(text(log.filter((e) => e.type === "transition"))).toEqual(text(written.filter((e) => e.type === "transition")));
      expect(text(expandEvents(log, byIdIn(log)))).toEqual(text(written));
      const read = (after: number, limit: number) => log.filter((e) => e.id > after).slice(0, limit);
      // One store read: the page and the transitions outside it that it names (read_events.lua, the memory store).
      const readServed = (page: StoredEvent[], budget?: number) => servedPage(page, byIdIn([...page, ...namedOutside(page, byIdIn(log))]), budget);
      const after = base + (from % (log.length + 1));
      const page = read(after, size);
      expect(text(readServed(page))).toEqual(text(written.filter((e) => e.id > after).slice(0, size)));
      // With a byte budget: the page format 1 would have served (its budget counts the served bytes).
      const budget = 100 + from * 40;
      const cut = (events: StoredEvent[]) => {
        let used = 0;
        const i = events.findIndex((e, i) => (used += new TextEncoder().encode(JSON.stringify(e)).byteLength) > budget && i > 0);
        return i < 0 ? events : events.slice(0, i);
      };
      const budgeted = readServed(cut(page), budget);
      expect(text(budgeted)).toEqual(text(cut(written.filter((e) => e.id > after).slice(0, size))));
    }), { seed: 20261128, numRuns: 300 });
  });

  it("stores whole what it cannot expand exactly", () => {
    const args = { q: 1 };
    const call = { id: "c0", name: "t", args, external: false, deadline: 9 };
    const step = (extra: NewEvent[]) => [
      ...extra,
      { type: "transition", data: { seq: 1, from: "running", to: "waiting-tools", event: { type: "MODEL_STEP", at: 1, text: "hi there, a text long enough to share", toolCalls: [call], usage: {}, cost: 0 } } },
    ];
    const cases: Array<[string, NewEvent, boolean]> = [
      ["the same call", { type: "tool_call", data: { step: 1, toolCallId: "c0", name: "t", args, external: false, deadline: 9 } }, true],
      ["the completion tool's call (no deadline)", { type: "tool_call", data: { step: 1, toolCallId: "c0", name: "t", args, external: false, builtin: true } }, true],
      ["equal args, another object", { type: "tool_call", data: { step: 1, toolCallId: "c0", name: "t", args: { q: 1 }, external: false, deadline: 9 } }, false],
      ["another deadline", { type: "tool_call", data: { step: 1, toolCallId: "c0", name: "t", args, external: false, deadline: 8 } }, false],
      ["no deadline, not builtin", { type: "tool_call", data: { step: 1, toolCallId: "c0", name: "t", args, external: false } }, false],
      ["another call's id", { type: "tool_call", data: { step: 1, toolCallId: "c9", name: "t", args, external: false, deadline: 9 } }, false],
      ["fields out of order", { type: "tool_call", data: { step: 1, toolCallId: "c0", args, name: "t", external: false, deadline: 9 } }, false],
      ["the step's text", { type: "step", data: { phase: "planning", step: 1, text: "hi there, a text long enough to share" } }, true],
      ["another text", { type: "step", data: { phase: "planning", step: 1, text: "ho" } }, false],
      ["a chunk of the text", { type: "chunk", data: { step: 1, text: "hi there, a text long" } }, true],
      ["a chunk shorter than its reference", { type: "chunk", data: { step: 1, text: "h" } }, false],
      ["a chunk not in the text", { type: "chunk", data: { step: 1, text: "x" } }, false],
      ["a hook's own event", { type: "my_event", data: { args } }, false],
    ];
    for (const [what, e, compact] of cases) {
      const out = compactEvents(step([e]));
      expect(out[0] !== e, what).toBe(compact);
      expect(isCompact(out[0]), what).toBe(compact);
      const log = stored(out, 0);
      expect(text(expandEvents(log, byIdIn(log))), what).toEqual(text(stored(step([e]), 0)));
    }
    // `ref` is the marker: the catalogue's strict data never has it, and the writer leaves alone an event that does.
    const withRef: NewEvent = { type: "tool_call", data: { step: 1, toolCallId: "c0", name: "t", args, ref: 1 } };
    expect(compactEvents(step([withRef]))[0]).toBe(withRef);
    // A sibling before no transition (the machine ignored the step) is stored whole.
    const alone: NewEvent[] = [{ type: "tool_call", data: { step: 1, toolCallId: "c0", name: "t", args, external: false } }];
    expect(compactEvents(alone)).toEqual(alone);
    // A log written before (no ref) is served as stored.
    const old = stored(step([{ type: "tool_call", data: { step: 1, toolCallId: "c0", name: "t", args, external: false } }]), 3);
    expect(expandEvents(old, byIdIn(old))).toBe(old);
  });
});
