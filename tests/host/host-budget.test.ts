/**
 * The host's drive-budget hand-back (actors/claim/drive-budget.ts): a claim run with a budget
 * stops at the step boundary where the budget is spent, and the commit that
 * ends that step releases the lease with the agent due at once. Nothing is
 * left under a lease; the next claim goes on where this one stopped, and the
 * turn's result is the same as without a budget.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { startDriveBudget } from "../../actors/claim/drive-budget.ts";
import { runClaim } from "../../actors/host/run-claim.ts";
import { defineAgent } from "../../agents/define.ts";
import { scriptedModel } from "../../models/scripted.ts";
import { memoryStore } from "../../store/memory.ts";
import type { ClaimResult } from "../../store/port.ts";
import { defineTool } from "../../tools/define.ts";
import { manualClock } from "../helpers/clock.ts";
import { enqueue, eventsOf, head, hostDeps } from "../helpers/host.ts";

type Claimed = Extract<ClaimResult, { status: "claimed" }>;

/** Five in-process tool steps, then submit: 11 steps (6 model steps, 5 tool batches). */
function marathon(onTool: () => void = () => {}) {
  const work = defineTool({
    name: "work",
    description: "One unit of work",
    parameters: z.object({ n: z.number() }),
    execute: ({ n }) => {
      onTool();
      return { done: n };
    },
  });
  return defineAgent({
    name: "marathon",
    instructions: "work five times",
    tools: [work],
    model: scriptedModel(({ step }) =>
      step <= 5
        ? { toolCalls: [{ name: "work", args: { n: step } }] }
        : { toolCalls: [{ name: "submit_result", args: { result: { units: 5 } } }] }
    ),
  });
}

async function claim(store: ReturnType<typeof memoryStore>, agentId: string, workerId: string, now: number): Promise<Claimed> {
  const c = await store.claim({ agentId, workerId, leaseMs: 30_000, now });
  if (c.status !== "claimed") throw new Error(`expected a claim, got ${c.status}`);
  return c;
}

describe("host budget", () => {
  it("a spent step budget hands the agent back in the commit that ends the step: lease released, due now, claim_yielded logged", async () => {
    const clock = manualClock();
    const store = memoryStore();
    const agent = marathon();
    const deps = hostDeps(store, [agent], clock);
    await enqueue(store, clock, "m1", agent, "go");

    const budget = startDriveBudget({ steps: 3, ms: 60_000 }, clock);
    const out = await runClaim(deps, await claim(store, "m1", "W1", clock.now()), "W1", budget);
    expect(out).toMatchObject({ status: "released", yielded: true });
    expect(budget.stepsLeft).toBe(0);
    const h = await head(store, "m1");
    expect(h.leaseOwner).toBeNull();
    expect(h.runnableAt).toBe(clock.now());
    expect(h.state).not.toBe("done");
    const y = await eventsOf(store, "m1", "claim_yielded");
    expect(y.map((e) => e.data)).toEqual([{ reason: "budget", steps: 3, elapsedMs: 0 }]);
    // Any worker can take it at once, and it goes on where the budget stopped it.
    const next = await store.claimNext({ workerTarget: agent.workerTarget, workerId: "W2", leaseMs: 30_000, now: clock.now() });
    expect(next.status).toBe("claimed");
  });

  it("claims with budgets finish the turn across claims with the same result as one unbounded claim", async () => {
    const clock = manualClock();
    const store = memoryStore();
    const agent = marathon();
    const deps = hostDeps(store, [agent], clock);
    await enqueue(store, clock, "m2", agent, "go");
    let claims = 0;
    for (; claims < 20; claims++) {
      const c = await store.claim({ agentId: "m2", workerId: `W${claims}`, leaseMs: 30_000, now: clock.now() });
      if (c.status !== "claimed") break;
      const out = await runClaim(deps, c, `W${claims}`, startDriveBudget({ steps: 2, ms: 60_000 }, clock));
      expect(out.status).toBe("released");
      if (out.status === "released" && !out.yielded) {
        claims++;
        break;
      }
    }
    const h = await head(store, "m2");
    expect(h.state).toBe("done");
    expect((h.snapshot as { context: { output: unknown } }).context.output).toEqual({ units: 5 });
    expect(claims).toBe(6); // 11 steps, 2 per claim
    expect((await eventsOf(store, "m2", "claim_yielded")).length).toBe(5);
    expect((await eventsOf(store, "m2", "tool_result")).length).toBe(5); // no tool ran twice
  });

  it("a wall-time budget stops starting steps once its deadline has passed", async () => {
    const clock = manualClock();
    const store = memoryStore();
    // Each tool run takes 400 ms of (manual) time.
    const agent = marathon(() => clock.advance(400));
    const deps = hostDeps(store, [agent], clock);
    await enqueue(store, clock, "m3", agent, "go");
    const budget = startDriveBudget({ steps: 100, ms: 1_000 }, clock);
    const out = await runClaim(deps, await claim(store, "m3", "W1", clock.now()), "W1", budget);
    expect(out).toMatchObject({ status: "released", yielded: true });
    // Model 1, tools (400), model 2, tools (800), model 3, tools (1 200 >= 1 000): handed back after 6 steps.
    expect(budget.limit.steps - budget.stepsLeft).toBe(6);
    const [y] = await eventsOf(store, "m3", "claim_yielded");
    expect(y.data).toEqual({ reason: "budget", steps: 6, elapsedMs: 1_200 });
    expect((await head(store, "m3")).leaseOwner).toBeNull();
  });

  it("a claim that reaches a waiting state within its budget is not a yield", async () => {
    const clock = manualClock();
    const store = memoryStore();
    const agent = marathon();
    const deps = hostDeps(store, [agent], clock);
    await enqueue(store, clock, "m4", agent, "go");
    const out = await runClaim(deps, await claim(store, "m4", "W1", clock.now()), "W1", startDriveBudget({ steps: 100, ms: 60_000 }, clock));
    expect(out).toMatchObject({ status: "released", state: "done", yielded: false });
    expect(await eventsOf(store, "m4", "claim_yielded")).toEqual([]);
  });
});
