/**
 * What storing a turn's start costs in store round trips (docs/store.md,
 * "Round trips per turn"). The claim that takes a task stores the turn's
 * state as `running` (store/port.ts invariant `turn-start`), and
 * `TASK_STARTED` rides with the turn's first commit: a turn of n steps costs
 * n commits, and the turn reads `running` from its claim on all the same.
 *
 * Invariants checked (store calls counted by tests/helpers/call-counting.ts
 * around one claim runner, memory store and a real redis-server,
 * hand-driven clock):
 * - A turn of k steps (k-1 steps of a tool without `retrySafe`, then
 *   `submit_result`) costs PER_TURN + PER_STEP * (k - 1) store calls: 2 per
 *   further step (the step's commit and the tool result's commit), 1 per
 *   turn (the ending step's commit): no commit for the turn's start.
 * - Right after the claim, before any commit, the stored state reads
 *   `running` for the claimed turn (memory and Redis).
 * - Chained turns (the commit that ends a turn claims the next task) pay the
 *   same per turn.
 * - A claim that continues a turn (here: the mail of an external result)
 *   adds no commit.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { claimRunner } from "../../actors/pool/claim-runner.ts";
import { type AnyAgent, defineAgent } from "../../agents/define.ts";
import type { ModelResponse } from "../../models/types.ts";
import { redisStore } from "../../redis.ts";
import { memoryStore } from "../../store/memory.ts";
import type { ClaimResult, Store } from "../../store/port.ts";
import { defineTool } from "../../tools/define.ts";
import { callCounting } from "../helpers/call-counting.ts";
import { manualClock } from "../helpers/clock.ts";
import { enqueue, hostDeps, recordingModel } from "../helpers/host.ts";
import { useRedisServer } from "../helpers/redis.ts";

const server = useRedisServer({}, 60_000);

/** Commits of a turn that has no step but its last (2 while the start was a commit of its own). */
const PER_TURN = 1;
/** Commits of each further step (a model step and a tool without `retrySafe`; unchanged). */
const PER_STEP = 2;

type Claimed = Extract<ClaimResult, { status: "claimed" }>;

async function claimNext(store: Store, now: number): Promise<Claimed> {
  const c = await store.claimNext({ workerTarget: "default", workerId: "w1", leaseMs: 30_000, now });
  if (c.status !== "claimed") throw new Error(`expected a claim, got ${c.status}`);
  return c;
}

/** An agent whose turn calls `work` (in process, or `external`) `toolSteps` times, then submits. */
function workAgent(toolSteps: number, external = false, firstCall?: () => Promise<void>): AnyAgent {
  const work = external
    ? defineTool({ name: "work", description: "Does work", parameters: z.object({ n: z.number() }) })
    : defineTool({ name: "work", description: "Does work", parameters: z.object({ n: z.number() }), execute: (a) => ({ done: a.n }) });
  const model = recordingModel(async (req): Promise<ModelResponse> => {
    if (req.step === 1 && firstCall) await firstCall();
    if (req.step <= toolSteps) return { toolCalls: [{ id: `c${req.step}`, name: "work", args: { n: req.step } }] };
    return { toolCalls: [{ id: `s${req.step}`, name: "submit_result", args: { result: "ok" } }] };
  });
  return defineAgent({ name: "w", instructions: "work", model, tools: [work], stepLimit: 10 });
}

/**
 * Store calls made by the claim runner for `turns` queued turns of `toolSteps` tool steps each. Besides
 * commits, the only calls are the tool registry's `recordToolMethod` (one per successful call until the
 * registry view caches the method), which the start commit does not change.
 */
async function storeCallsOf(toolSteps: number, turns = 1, open: () => Store = memoryStore): Promise<Record<string, number>> {
  const clock = manualClock();
  const inner = open();
  // Each turn's first model call (a chained one too): the stored state reads `running` for that very turn.
  const started: string[] = [];
  const agent = workAgent(toolSteps, false, async () => {
    const h = (await inner.getAgent("a1"))!;
    expect(h.state).toBe("running");
    started.push(h.activeTurnId!);
  });
  const turnIds: string[] = [];
  for (let i = 0; i < turns; i++) turnIds.push((await enqueue(inner, clock, "a1", agent, `go ${i}`)).turnId);
  const first = await claimNext(inner, clock.now());
  // Right after the claim, before any commit: `running`, the claimed turn, the snapshot not written yet.
  expect(await inner.getAgent("a1")).toMatchObject({ state: "running", activeTurnId: turnIds[0], version: 0 });
  const counting = callCounting(inner);
  const out = await claimRunner(hostDeps(counting.store, [agent], clock)).run(first, "w1");
  expect(out).toMatchObject({ status: "released", state: "done" });
  expect((await inner.getAgent("a1"))?.pendingTasks).toBe(0);
  expect(started).toEqual(turnIds);
  expect(Object.keys(counting.calls).filter((m) => m !== "commit" && m !== "recordToolMethod")).toEqual([]);
  await inner.close();
  return { ...counting.calls, total: counting.total() };
}

describe("round trips per turn and per step", () => {
  it("a turn costs PER_TURN + PER_STEP per further step: n commits for n steps, none for the start", async () => {
    const one = await storeCallsOf(0);
    const three = await storeCallsOf(2);
    expect(one).toEqual({ commit: PER_TURN, total: PER_TURN });
    expect(three.commit - one.commit).toBe(2 * PER_STEP);
    expect(three.commit).toBe(PER_TURN + 2 * PER_STEP);
  }, 30_000);

  it("the same counts on Redis (one round trip per store call)", async () => {
    let n = 0;
    const redis = () => redisStore({ url: server.url, prefix: `cost${n++}:` });
    expect(await storeCallsOf(0, 1, redis)).toEqual({ commit: PER_TURN, total: PER_TURN });
    expect((await storeCallsOf(2, 1, redis)).commit).toBe(PER_TURN + 2 * PER_STEP);
    expect((await storeCallsOf(1, 3, redis)).commit).toBe(3 * (PER_TURN + PER_STEP));
  }, 60_000);

  it("chained turns pay the same per turn", async () => {
    const single = await storeCallsOf(1, 1);
    const chained = await storeCallsOf(1, 3);
    expect(single.commit).toBe(PER_TURN + PER_STEP);
    expect(chained.commit).toBe(3 * (PER_TURN + PER_STEP));
    // No claim between chained turns (the chaining commit took each next task): besides commits, each
    // turn makes the same calls (the registry's record of its tool call).
    expect(chained.total - chained.commit).toBe(3 * (single.total - single.commit));
  }, 30_000);

  it("a claim that continues a turn (an external result's mail) adds no commit", async () => {
    const clock = manualClock();
    const inner = memoryStore();
    const agent = workAgent(1, true);
    await enqueue(inner, clock, "a1", agent, "go");
    const runner = claimRunner(hostDeps(inner, [agent], clock));
    expect(await runner.run(await claimNext(inner, clock.now()), "w1")).toMatchObject({ status: "released", state: "waiting-tools" });
    const turnId = (await inner.getAgent("a1"))!.activeTurnId!;
    const [call] = await inner.getToolCalls("a1", turnId);
    const r = await inner.deliverToolResult({
      agentId: "a1", turnId, toolCallId: call.toolCallId, outcome: { ok: true, value: 1 }, afterExecution: "continue",
      source: "http", now: clock.now(),
    });
    expect(r.status).toBe("accepted");
    const counting = callCounting(inner);
    const out = await claimRunner(hostDeps(counting.store, [agent], clock)).run(await claimNext(inner, clock.now()), "w1");
    expect(out).toMatchObject({ status: "released", state: "done" });
    // One commit: the result's mail and the final model step, together (besides reads of the conversation
    // and the tool registry's record of the result, which a continuing claim makes either way).
    expect(counting.calls.commit).toBe(1);
  }, 30_000);
});
