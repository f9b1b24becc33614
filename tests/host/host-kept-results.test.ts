/**
 * A tool runs at most once per call in one living process (actors/claim/kept-results.ts):
 * when a claim loses the agent after an in-process tool returned and before the
 * commit of its result applied, and a later claim in the same process meets the
 * call again (recorded, unresolved), that claim commits the kept result instead
 * of running the tool again. A claim in another process (other host deps) still
 * runs it (docs/architecture.md, "What re-runs").
 *
 * On the memory store with a hand-driven clock; the same on a Redis Cluster that
 * fails over is in tests/store/store-redis-cluster-failover.int.test.ts.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { runClaim } from "../../actors/host/run-claim.ts";
import { keptResults } from "../../actors/claim/kept-results.ts";
import { defineAgent } from "../../agents/define.ts";
import { memoryStore } from "../../store/memory.ts";
import type { ClaimResult, Store } from "../../store/port.ts";
import { defineTool } from "../../tools/define.ts";
import { manualClock, type ManualClock } from "../helpers/clock.ts";
import { ctxOf, enqueue, head, hostDeps, observedStore, recordingModel } from "../helpers/host.ts";

const LEASE = 30_000;
type Claimed = Extract<ClaimResult, { status: "claimed" }>;

async function claim(store: Store, agentId: string, workerId: string, now: number): Promise<Claimed> {
  const c = await store.claim({ agentId, workerId, leaseMs: LEASE, now });
  if (c.status !== "claimed") throw new Error(`expected a claim, got ${c.status}`);
  return c;
}

/** A `charge` tool (not retrySafe) that counts its runs; `during` runs inside it before it returns. */
function setup(during: (signal: AbortSignal) => void | Promise<void> = () => {}) {
  const runs: string[] = [];
  const charge = defineTool({
    name: "charge",
    description: "Charge once",
    parameters: z.object({}),
    execute: async (_args, ctx) => {
      runs.push(ctx.toolCallId);
      await during(ctx.signal);
      return `charged-${runs.length}`;
    },
  });
  const model = recordingModel((req) => {
    if (req.step === 1) return { toolCalls: [{ id: "c1", name: "charge", args: {} }] };
    const results = req.messages.filter((m) => m.role === "tool").map((m) => m.content);
    return { toolCalls: [{ name: "submit_result", args: { result: results } }] };
  });
  const agent = defineAgent({ name: "payer", instructions: "", model, tools: [charge] });
  return { agent, runs, model };
}

async function expectDoneWith(store: Store, agentId: string, result: unknown) {
  expect((await head(store, agentId)).state).toBe("done");
  expect((await ctxOf(store, agentId)).output).toEqual(result);
}

describe("kept results of in-process tools", () => {
  it("a refused commit, then a claim in the same process: the kept result is committed, the tool does not run again", async () => {
    const clock = manualClock();
    const store = observedStore(memoryStore());
    const { agent, runs } = setup();
    await enqueue(store, clock, "k1", agent, "go");
    const deps = hostDeps(store, [agent], clock); // one process: one set of deps

    // The first commit (recording the call) applies; the commit of the tool's result is refused.
    const held = store.hold("A", 1);
    const first = runClaim(deps, await claim(store, "k1", "A", clock.now()), "A");
    await held.started;
    held.release.resolve({ status: "conflict", reason: "fenced" });
    expect(await first).toMatchObject({ status: "fenced" });
    expect(runs).toEqual(["c1"]);

    // The lease runs out; the same process claims the agent again and meets the recorded call.
    clock.advance(LEASE + 1);
    expect(await runClaim(deps, await claim(store, "k1", "A", clock.now()), "A")).toMatchObject({ status: "released", state: "done" });
    expect(runs).toEqual(["c1"]);
    await expectDoneWith(store, "k1", ["charged-1"]);
    expect(deps.keptResults?.size).toBe(0); // dropped once committed
  });

  it("a lease that ran out while the tool ran (renewals unanswered), then a claim in the same process: no second run", async () => {
    const clock: ManualClock = manualClock();
    const store = observedStore(memoryStore());
    // The lease runs out while the tool works; the tool notices (its signal fired) and returns anyway.
    const seen: boolean[] = [];
    const { agent, runs } = setup((signal) => {
      if (runs.length === 1) clock.advance(LEASE + 1);
      seen.push(signal.aborted);
    });
    await enqueue(store, clock, "k2", agent, "go");
    const deps = hostDeps(store, [agent], clock);

    expect(await runClaim(deps, await claim(store, "k2", "A", clock.now()), "A")).toMatchObject({ status: "fenced" });
    expect(seen).toEqual([true]);
    expect(runs).toEqual(["c1"]);

    expect(await runClaim(deps, await claim(store, "k2", "A", clock.now()), "A")).toMatchObject({ status: "released", state: "done" });
    expect(runs).toEqual(["c1"]);
    await expectDoneWith(store, "k2", ["charged-1"]);
  });

  it("another process (its own deps) does run the call again, under the same id", async () => {
    const clock = manualClock();
    const store = observedStore(memoryStore());
    const { agent, runs } = setup();
    await enqueue(store, clock, "k3", agent, "go");

    const held = store.hold("A", 1);
    const first = runClaim(hostDeps(store, [agent], clock), await claim(store, "k3", "A", clock.now()), "A");
    await held.started;
    held.release.resolve({ status: "conflict", reason: "fenced" });
    await first;
    clock.advance(LEASE + 1);
    expect(await runClaim(hostDeps(store, [agent], clock), await claim(store, "k3", "B", clock.now()), "B")).toMatchObject({ status: "released", state: "done" });
    expect(runs).toEqual(["c1", "c1"]);
    await expectDoneWith(store, "k3", ["charged-2"]);
  });

  it("is bounded: the oldest result goes first, and a turn's end drops its results", () => {
    const k = keptResults(2);
    const r = { outcome: { ok: true as const, value: 1 }, afterExecution: "continue" as const, contractValidation: { applied: false } as never };
    k.keep("a", "t1", "c1", r);
    k.keep("a", "t1", "c2", r);
    k.keep("b", "t1", "c1", r);
    expect([k.get("a", "t1", "c1"), k.get("a", "t1", "c2"), k.get("b", "t1", "c1")].map(Boolean)).toEqual([false, true, true]);
    k.dropTurn("a", "t1");
    expect([k.get("a", "t1", "c2"), k.get("b", "t1", "c1")].map(Boolean)).toEqual([false, true]);
    k.drop("b", "t1", ["c1"]);
    expect(k.size).toBe(0);
  });
});
