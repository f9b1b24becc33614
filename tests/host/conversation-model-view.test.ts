/**
 * `modelView` (actors/conversation/memory.ts) builds the messages a model
 * step is shown in one block copy. Invariant: for every history, memory
 * (first index, summary or none, `through` before, at or after the first
 * index) and lead, it equals the plain definition `[lead, summary message?,
 * ...history from the view's start]`, and it is a new array: changing it
 * leaves the history as it was.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type ConversationMemory, modelView } from "../../actors/conversation/memory.ts";
import type { Message } from "../../common/message.ts";

/** The view as the memory's header defines it. */
function plainView(history: readonly Message[], mem: ConversationMemory, lead?: Message): Message[] {
  const start = Math.max(mem.firstIndex, mem.summary?.through ?? 0);
  const text = mem.summary?.content ?? "";
  return [
    ...(lead ? [lead] : []),
    ...(text === "" ? [] : [{ role: "system" as const, content: `Summary of the earlier conversation:\n${text}` }]),
    ...history.slice(start - mem.firstIndex),
  ];
}

const messageArb: fc.Arbitrary<Message> = fc.oneof(
  fc.string({ maxLength: 5 }).map((content) => ({ role: "user" as const, content })),
  fc.string({ maxLength: 5 }).map((content) => ({ role: "assistant" as const, content })),
);

describe("modelView", () => {
  it("equals the plain definition and is a new array", () => {
    fc.assert(
      fc.property(
        fc.array(messageArb, { maxLength: 40 }),
        fc.nat({ max: 50 }),
        fc.option(fc.record({ content: fc.string({ maxLength: 6 }), ahead: fc.integer({ min: -5, max: 45 }) }), { nil: null }),
        fc.option(messageArb, { nil: undefined }),
        (history, firstIndex, s, lead) => {
          const mem: ConversationMemory = { firstIndex, summary: s ? { content: s.content, through: Math.max(0, firstIndex + s.ahead) } : null };
          const before = history.slice();
          const view = modelView(history, mem, lead);
          expect(view).toEqual(plainView(history, mem, lead));
          expect(view).not.toBe(history);
          view.push({ role: "user", content: "more" });
          view.reverse();
          expect(history).toEqual(before);
        },
      ),
      { numRuns: 500, seed: 20261128 },
    );
  });

  it("shows the whole history when nothing is summarized", () => {
    const history: Message[] = Array.from({ length: 1_400 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `m${i}` }));
    const lead: Message = { role: "system", content: "instructions" };
    const view = modelView(history, { firstIndex: 0, summary: null }, lead);
    expect(view.length).toBe(1_401);
    expect(view[0]).toBe(lead);
    expect(view[1_400]).toBe(history[1_399]);
  });
});
