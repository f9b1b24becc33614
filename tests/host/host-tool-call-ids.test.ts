/**
 * The used tool-call ids kept next to the history (actors/conversation/tool-call-ids.ts)
 * give every call the id the whole-history scan gave it.
 *
 * Random conversations run through the host with a scripted model whose
 * calls carry no id, unsafe ids, ids of earlier calls (also ones retention
 * already dropped), ids shaped like the host's fallbacks, and duplicates
 * within one response; claims alternate at random between two workers with
 * their own caches (hits and misses), with and without retention and a
 * memory policy. Two checks:
 * - the rule as it was written before (a scan of the conversation, copied
 *   below), applied to what the model is shown, predicts every id (without
 *   a memory policy the model is shown exactly the host's history);
 * - the same conversation on a second store with `rebuildToolCallIds` (the
 *   set rebuilt from the history at every step) stores the same messages
 *   and the same events, memory policy included.
 */
import { byIdIn, expandEvents } from "../../common/event-form.ts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { lruCache } from "../../actors/conversation/cache.ts";
import { runClaim } from "../../actors/host/run-claim.ts";
import { assignToolCallIds, UsedToolCallIds } from "../../actors/conversation/tool-call-ids.ts";
import { defineAgent } from "../../agents/define.ts";
import type { Message } from "../../common/message.ts";
import { ID_PATTERN } from "../../common/ids.ts";
import type { ModelRequest, ModelResponse } from "../../models/types.ts";
import { memoryStore } from "../../store/memory.ts";
import type { RetentionLimits, Store } from "../../store/port.ts";
import { defineTool } from "../../tools/define.ts";
import { manualClock } from "../helpers/clock.ts";
import { hostDeps, recordingModel } from "../helpers/host.ts";

/** How a scripted call picks its id. */
type IdChoice =
  | { kind: "none" }
  | { kind: "fixed"; id: string }
  | { kind: "reuse"; n: number };

interface Script {
  turns: Array<{ worker: "A" | "B"; steps: Array<Array<{ id: IdChoice; name: "work" | "nope" }>>; submitId: IdChoice }>;
  retention: Partial<RetentionLimits> | null;
  keepTurns: number | null;
}

/** The rule as the host applied it before it kept the ids: a scan of the conversation at every step. */
function oldRule(history: readonly Message[], calls: ReadonlyArray<{ id?: unknown }>, tId: string, step: number): string[] {
  const seen = new Set<string>();
  for (const m of history) {
    if (m.toolCalls) for (const c of m.toolCalls) seen.add(c.id);
  }
  return calls.map((c, i) => {
    let id = typeof c.id === "string" && ID_PATTERN.test(c.id) && !seen.has(c.id) ? c.id : `call_${tId}_${step}_${i}`;
    if (seen.has(id)) id = `call_${tId}_${step}_${i}_${seen.size}`;
    seen.add(id);
    return id;
  });
}

const idChoice: fc.Arbitrary<IdChoice> = fc.oneof(
  fc.constant<IdChoice>({ kind: "none" }),
  fc.constantFrom("a", "b", "c", "bad id!", "", "call_t1_1_0", "call_t1_2_0", "call_t2_1_1", "call_t2_1_0_3").map((id): IdChoice => ({ kind: "fixed", id })),
  fc.nat(50).map((n): IdChoice => ({ kind: "reuse", n })),
);
const call = fc.record({ id: idChoice, name: fc.constantFrom<"work" | "nope">("work", "work", "nope") });
const script: fc.Arbitrary<Script> = fc.record({
  turns: fc.array(
    fc.record({
      worker: fc.constantFrom<"A" | "B">("A", "A", "B"),
      steps: fc.array(fc.array(call, { minLength: 1, maxLength: 3 }), { maxLength: 4 }),
      submitId: idChoice,
    }),
    { minLength: 1, maxLength: 8 },
  ),
  retention: fc.option(fc.constant<Partial<RetentionLimits>>({ maxTurns: 2, maxEvents: 30, checkpointEvery: 5 }), { nil: null }),
  keepTurns: fc.option(fc.integer({ min: 1, max: 2 }), { nil: null }),
});

function idOf(choice: IdChoice, shown: readonly Message[]): string | undefined {
  if (choice.kind === "none") return undefined;
  if (choice.kind === "fixed") return choice.id;
  const earlier = shown.flatMap((m) => m.toolCalls?.map((c) => c.id) ?? []);
  return earlier.length === 0 ? "a" : earlier[choice.n % earlier.length];
}

/** Runs the script on a fresh store; returns the stored conversation and events, the ids assigned and the ids predicted. */
async function run(s: Script, rebuild: boolean) {
  const clock = manualClock();
  const store: Store = memoryStore();
  const assigned: string[][] = [];
  const predicted: string[][] = [];
  const committed = store.commit.bind(store);
  store.commit = (req) => {
    // The commit's events as readers get them (common/event-form.ts: `completed` names its ids in the MODEL_STEP).
    const page = req.events.map((e, i) => ({ ...e, id: i + 1, at: 0, turnId: null }));
    for (const e of expandEvents(page, byIdIn(page))) if (e.type === "step" && e.data.phase === "completed") assigned.push(e.data.toolCallIds as string[]);
    return committed(req);
  };
  let turn = -1;
  let step = 0;
  const model = recordingModel((req: ModelRequest): ModelResponse => {
    if (req.tools.length === 0) return { text: "summary" };
    const t = s.turns[turn];
    const shown = req.messages.slice(1);
    const planned = step < t.steps.length ? t.steps[step] : null;
    step++;
    const toolCalls = planned
      ? planned.map((c) => ({ id: idOf(c.id, shown), name: c.name, args: { n: step } }))
      : [{ id: idOf(t.submitId, shown), name: "submit_result", args: { result: `turn ${turn}` } }];
    predicted.push(oldRule(shown, toolCalls, req.turnId, req.step));
    return { toolCalls } as ModelResponse;
  });
  const work = defineTool({ name: "work", description: "Work", parameters: z.object({ n: z.number() }), execute: ({ n }) => ({ done: n }) });
  const agent = defineAgent({
    name: "ids", instructions: "Work.", model, tools: [work],
    ...(s.keepTurns !== null ? { memory: { keepTurns: s.keepTurns } } : {}),
  });
  const over = { retention: s.retention === null ? null : { maxEvents: 10_000, maxEventBytes: 10_000_000, maxTurns: 100, checkpointEvery: 50, ...s.retention }, rebuildToolCallIds: rebuild };
  const workers = { A: hostDeps(store, [agent], clock, { ...over, cache: lruCache() }), B: hostDeps(store, [agent], clock, { ...over, cache: lruCache() }) };
  for (const [i, t] of s.turns.entries()) {
    turn = i;
    step = 0;
    clock.advance(1_000);
    await store.enqueueTask({ agentId: "c1", agentName: agent.name, workerTarget: agent.workerTarget, input: `task ${i}`, options: {}, turnId: `t${i + 1}`, now: clock.now() });
    for (let k = 0; k < 5; k++) {
      const claim = await store.claim({ agentId: "c1", workerId: t.worker, leaseMs: 30_000, now: clock.now() });
      if (claim.status !== "claimed") break;
      const out = await runClaim(workers[t.worker], claim, t.worker);
      if (out.status !== "released") throw new Error(`turn ${i + 1}: ${out.status}`);
      if (out.state === "done" || out.state === "failed") break;
    }
  }
  const conv = await store.readConversation("c1");
  return { messages: conv?.messages ?? [], events: await store.readEvents("c1", 0, 100_000), assigned, predicted, steps: model.requests.length };
}

describe("tool-call ids kept next to the history", () => {
  it("assignToolCallIds keeps fresh safe ids, replaces used, unsafe, missing and repeated ones", () => {
    const used = UsedToolCallIds.of([{ role: "assistant", content: "", toolCalls: [{ id: "a", name: "w", args: {} }, { id: "call_t_2_1", name: "w", args: {} }] }]);
    expect(assignToolCallIds([{ id: "x" }, { id: "a" }, {}, { id: "bad id" }, { id: "x" }], used, "t", 2))
      .toEqual(["x", "call_t_2_1_3", "call_t_2_2", "call_t_2_3", "call_t_2_4"]);
    expect(used.size).toBe(2);
  });

  it("counts an id per message that carries it: it stays used until every one has left", () => {
    const m = (id: string): Message => ({ role: "assistant", content: "", toolCalls: [{ id, name: "w", args: {} }] });
    const used = UsedToolCallIds.of([m("a"), m("a"), m("b")]);
    expect([used.has("a"), used.size]).toEqual([true, 2]);
    used.drop(m("a"));
    expect([used.has("a"), used.size]).toEqual([true, 2]);
    used.drop(m("a"));
    used.drop(m("b"));
    expect([used.has("a"), used.has("b"), used.size]).toEqual([false, false, 0]);
  });

  it("random conversations: the ids are those of the whole-history scan, with cache hits, misses, retention and memory", async () => {
    let sawRetained = 0;
    let sawReplaced = 0;
    await fc.assert(
      fc.asyncProperty(script, async (s) => {
        const kept = await run(s, false);
        // Every model step's ids were recorded once and match the old rule on what the model was shown.
        expect(kept.assigned.length).toBe(kept.steps);
        if (s.keepTurns === null) expect(kept.assigned).toEqual(kept.predicted);
        const rebuilt = await run(s, true);
        expect(kept.assigned).toEqual(rebuilt.assigned);
        expect(kept.messages).toEqual(rebuilt.messages);
        expect(kept.events).toEqual(rebuilt.events);
        if (s.retention && kept.events[0]?.id > 1) sawRetained++;
        if (kept.assigned.flat().some((id) => id.startsWith("call_"))) sawReplaced++;
      }),
      { numRuns: 60, seed: 1207 },
    );
    // The runs reached the cases that matter: trimmed conversations and replaced ids.
    expect(sawRetained).toBeGreaterThan(0);
    expect(sawReplaced).toBeGreaterThan(10);
  });
});
