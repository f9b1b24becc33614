/**
 * Property (time travel): for random runs through the host (createGatehouse,
 * memory store, a model following a random plan, in-process and external
 * tools, the verifier gate, cancels, several turns), the snapshot rebuilt
 * by replay at the last event of each commit equals the snapshot that
 * commit stored, and at the log's last event it equals the head; the
 * conversation rebuilt there equals the stored one.
 *
 * The committed snapshots are captured by a store wrapper around `commit`.
 *
 * Commit points (actors/replay/commit-point.ts): every event of a commit
 * that holds a transition resolves to that commit's last event, and the
 * agent there is the snapshot the commit stored; an event of a commit
 * without a transition is its own point, and the agent there is that
 * commit's snapshot too. So no event shows a state between the events of
 * one commit.
 *
 * With retention cutting the log (store/port.ts invariant `retention`): every event
 * after the cut still rebuilds its commit's snapshot (replayed from the base
 * checkpoint), every event at or before it answers EventTrimmedError, and
 * the conversation rebuilt at the last event equals the stored (kept) one.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { EventTrimmedError, historyAt } from "../../actors/replay/time-travel.ts";
import { commitEndOf } from "../../actors/replay/commit-point.ts";
import { createGatehouse, defineAgent, defineTool, memoryStore, scriptedModel, VerificationRejected } from "../../mod.ts";
import type { Store } from "../../mod.ts";
import { ToolError } from "../../errors/errors.ts";
import { manualClock } from "../helpers/clock.ts";

interface Commit {
  agentId: string;
  lastEventId: number;
  /** How many events the commit appended, and whether one was a transition. */
  events: number;
  transitions: boolean;
  snapshot: string;
}

/** A memory store that keeps every applied commit's snapshot, keyed by the commit's last event id. */
function capturingStore(): { store: Store; commits: Commit[] } {
  const inner = memoryStore();
  const commits: Commit[] = [];
  const store: Store = new Proxy(inner, {
    get(target, p, receiver) {
      if (p === "commit") {
        return async (req: Parameters<Store["commit"]>[0]) => {
          const r = await target.commit(req);
          if (r.status === "applied") {
            commits.push({
              agentId: req.agentId, lastEventId: r.lastEventId, snapshot: JSON.stringify(req.snapshot),
              events: req.events.length, transitions: req.events.some((e) => e.type === "transition"),
            });
          }
          return r;
        };
      }
      return Reflect.get(target, p, receiver);
    },
  });
  return { store, commits };
}

type Move = "lookup" | "lookup_fail" | "ask" | "output_good" | "output_bad" | "text";
const moveArb = fc.constantFrom<Move>("lookup", "lookup_fail", "ask", "ask", "output_good", "output_bad", "text");
const afterArb = fc.constantFrom("ok", "error", "terminate", "cancel");
const runArb = fc.record({
  moves: fc.array(moveArb, { minLength: 1, maxLength: 12 }),
  answers: fc.array(afterArb, { minLength: 1, maxLength: 6 }),
  turns: fc.integer({ min: 1, max: 3 }),
  maxSteps: fc.integer({ min: 2, max: 6 }),
});

async function runOnce(
  plan: { moves: Move[]; answers: string[]; turns: number; maxSteps: number },
  retention?: { maxEvents: number; maxTurns: number; checkpointEvery: number },
) {
  const { store, commits } = capturingStore();
  const clock = manualClock();
  let m = 0;
  const lookup = defineTool({
    name: "lookup",
    description: "Look up",
    parameters: z.object({ fail: z.boolean() }),
    execute: ({ fail }) => {
      if (fail) throw new ToolError({ type: "not_found", message: "nothing", retryable: false });
      return { plan: "pro" };
    },
  });
  const ask = defineTool({ name: "ask", description: "Ask a human", parameters: z.object({ q: z.string() }) });
  const agent = defineAgent({
    name: "prop",
    instructions: "Be random.",
    stepLimit: plan.maxSteps,
    model: scriptedModel(() => {
      const move = plan.moves[m++ % plan.moves.length];
      switch (move) {
        case "lookup":
        case "lookup_fail":
          return { toolCalls: [{ name: "lookup", args: { fail: move === "lookup_fail" } }], usage: { inputTokens: 3, outputTokens: 1 } };
        case "ask":
          return { toolCalls: [{ name: "ask", args: { q: `q${m}` } }] };
        case "output_good":
          return { toolCalls: [{ name: "agent_output", args: { n: 2 } }] };
        case "output_bad":
          return { toolCalls: [{ name: "agent_output", args: { n: m % 2 === 0 ? 1 : "x" } }] };
        default:
          return { text: `thinking ${m}` };
      }
    }),
    tools: [lookup, ask],
    output: {
      schema: z.object({ n: z.number() }),
      verify: (c: { n: number }) => {
        if (c.n % 2 !== 0) throw new VerificationRejected({ message: "odd", code: "odd", retryable: true });
      },
    },
    verifyAttempts: 2,
    ...(retention ? { retention } : {}),
  });
  const gh = createGatehouse({ agents: [agent], store, clock, leaseMs: 60_000 });
  let a = 0;
  try {
    for (let t = 0; t < plan.turns; t++) {
      clock.advance(10);
      await store.enqueueTask({ agentId: "p1", agentName: "prop", workerTarget: agent.workerTarget, input: { task: t }, options: {}, turnId: `turn_${t}`, now: clock.now() });
      await gh.drain();
      for (let guard = 0; guard < 12; guard++) {
        const h = (await store.getAgent("p1"))!;
        if (h.state !== "waiting-tools" || h.activeTurnId === null) break;
        const pending = (await store.getToolCalls("p1", h.activeTurnId)).filter((c) => c.status === "pending" && c.external);
        if (pending.length === 0) break;
        clock.advance(5);
        const answer = plan.answers[a++ % plan.answers.length];
        if (answer === "cancel") {
          await store.requestCancel({ agentId: "p1", reason: "enough", now: clock.now() });
        } else {
          for (const c of pending) {
            await store.deliverToolResult({
              agentId: "p1", turnId: h.activeTurnId, toolCallId: c.toolCallId,
              outcome: answer === "error" ? { ok: false, error: { type: "declined", message: "no", retryable: false } } : { ok: true, value: "yes" },
              afterExecution: answer === "terminate" ? "terminate" : "continue", source: "http", now: clock.now(),
            });
          }
        }
        await gh.drain();
      }
    }
    const head = (await store.getAgent("p1"))!;
    return { store, commits, head };
  } finally {
    await gh.close();
  }
}

describe("time travel", () => {
  it("rebuilds, at each commit's last event, the snapshot that commit stored; at the last event, the head", async () => {
    let checked = 0;
    const states = new Set<string>();
    await fc.assert(
      fc.asyncProperty(runArb, async (plan) => {
        const { store, commits, head } = await runOnce(plan);
        expect(commits.length).toBeGreaterThan(0);
        for (const c of commits) {
          const p = await historyAt(store, "p1", c.lastEventId);
          expect(p, `event ${c.lastEventId}`).not.toBeNull();
          expect(JSON.stringify(p!.snapshot), `snapshot at event ${c.lastEventId}`).toBe(c.snapshot);
          states.add(p!.state);
          checked++;
        }
        const last = (await historyAt(store, "p1", head.lastEventId))!;
        expect(last.snapshot).toEqual(head.snapshot);
        expect(last.state).toBe(head.state);
        expect(last.messages).toEqual(await store.readMessages("p1"));
      }),
      { numRuns: 30, seed: 20261128 },
    );
    expect(checked).toBeGreaterThan(30);
    // The runs went through the interesting states (a property over idle agents only would prove little).
    for (const s of ["waiting-tools", "verifying", "done", "failed"]) expect(states, s).toContain(s);
  });

  it("resolves every event of a commit to that commit's end, where the agent is the snapshot it stored", async () => {
    let mid = 0;
    await fc.assert(
      fc.asyncProperty(runArb, async (plan) => {
        const { store, commits } = await runOnce(plan);
        for (const c of commits) {
          for (let id = c.lastEventId - c.events + 1; id <= c.lastEventId; id++) {
            const end = await commitEndOf(store, "p1", id);
            expect(end, `event ${id} of the commit ending at ${c.lastEventId}`).toBe(c.transitions ? c.lastEventId : id);
            if (end !== id) mid++;
            const p = await historyAt(store, "p1", end);
            expect(JSON.stringify(p!.snapshot), `snapshot at event ${id}'s point`).toBe(c.snapshot);
          }
        }
      }),
      { numRuns: 15, seed: 20261128 },
    );
    // Most points moved: the events a commit logs ahead of its transitions.
    expect(mid).toBeGreaterThan(50);
  }, 120_000);

  it("after retention cut the log: events after the cut replay from the base checkpoint, events before it are refused", async () => {
    let cut = 0;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(runArb, fc.integer({ min: 4, max: 9 }), fc.integer({ min: 15, max: 40 }), async (plan, turns, maxEvents) => {
        const { store, commits, head } = await runOnce({ ...plan, turns }, { maxEvents, maxTurns: 1, checkpointEvery: 5 });
        const base = head.eventsTrimmedThrough;
        if (base > 0) cut++;
        for (const c of commits) {
          if (c.lastEventId <= base) {
            await expect(historyAt(store, "p1", c.lastEventId)).rejects.toBeInstanceOf(EventTrimmedError);
            refused++;
            continue;
          }
          const p = await historyAt(store, "p1", c.lastEventId);
          expect(JSON.stringify(p!.snapshot), `snapshot at event ${c.lastEventId} (cut at ${base})`).toBe(c.snapshot);
        }
        const last = (await historyAt(store, "p1", head.lastEventId))!;
        expect(last.snapshot).toEqual(head.snapshot);
        expect(last.messagesFrom).toBe(head.messagesTrimmedThrough);
        expect(last.messages).toEqual(await store.readMessages("p1"));
      }),
      { numRuns: 25, seed: 20261128 },
    );
    // Most runs were long enough to be cut (the property would prove little on whole logs).
    expect(cut).toBeGreaterThan(10);
    expect(refused).toBeGreaterThan(10);
  });
});
