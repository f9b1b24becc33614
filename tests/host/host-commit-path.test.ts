/**
 * The commit path: one commit per model step where tools declare themselves
 * safe to re-run, and turn chaining (docs/architecture.md, "Commits and crash
 * points"). Time is a hand-driven clock; a "dead" worker is one whose model
 * call never returns (it is let go at the end, and its commit is refused).
 *
 * Invariants checked:
 * - Results of `retrySafe` tools are stored with the commit of the model step
 *   that follows them; other results are committed before the next effect.
 * - A crash between a retry-safe tool's return and that commit runs the tool
 *   again under the same `toolCallId`; a tool without the flag is not run
 *   again when the crash hits the model step after it.
 * - A riding result that the watchdog timed out first loses: the model
 *   step's commit is refused and the step is run again with the timeout.
 * - The commit that ends a turn starts the next queued task (no claim in
 *   between); after `maxChainedTurns` the agent goes back to the ready queue
 *   behind the bells already due; a worker that dies right after such a
 *   commit leaves a task that the next claim runs, once.
 * - Whatever the path, the stored snapshot equals the replay of the log, and
 *   no call has two `tool_call` or `tool_result` events.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { claimRunner } from "../../actors/pool/claim-runner.ts";
import { watchdogTick } from "../../actors/pool/watchdog.ts";
import { type AnyAgent, defineAgent } from "../../agents/define.ts";
import { memoryStore } from "../../store/memory.ts";
import type { ClaimResult, Store } from "../../store/port.ts";
import { defineTool } from "../../tools/define.ts";
import type { ModelRequest, ModelResponse } from "../../models/types.ts";
import { callCounting } from "../helpers/call-counting.ts";
import { manualClock } from "../helpers/clock.ts";
import { type Deferred, deferred, enqueue, eventsOf, head, hostDeps, observedStore, recordingModel, replayLog, until } from "../helpers/host.ts";

const LEASE = 30_000;
type Claimed = Extract<ClaimResult, { status: "claimed" }>;

async function claimNext(store: Store, workerId: string, now: number): Promise<Claimed> {
  const c = await store.claimNext({ workerTarget: "default", workerId, leaseMs: LEASE, now });
  if (c.status !== "claimed") throw new Error(`expected a claim, got ${c.status}`);
  return c;
}

/**
 * An agent whose turn is: work, work, submit_result. `hangAt(req)` may answer
 * a deferred to hold a model call (the worker making it is "dead").
 */
function workAgent(opts: { retrySafe: boolean; timeoutMs?: number; hangAt?: (req: ModelRequest, i: number) => Deferred<void> | undefined }) {
  const runs: Array<{ toolCallId: string; turnId: string }> = [];
  const work = defineTool({
    name: "work",
    description: "Does work",
    parameters: z.object({ n: z.number() }),
    retrySafe: opts.retrySafe,
    ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}),
    execute: (args, ctx) => {
      runs.push({ toolCallId: ctx.toolCallId, turnId: ctx.turnId });
      return { done: args.n };
    },
  });
  const model = recordingModel(async (req, i): Promise<ModelResponse> => {
    const hold = opts.hangAt?.(req, i);
    if (hold) await hold.promise;
    if (req.step <= 2) return { toolCalls: [{ id: `c${req.step}`, name: "work", args: { n: req.step } }] };
    return { toolCalls: [{ id: "s", name: "submit_result", args: { result: "ok" } }] };
  });
  const agent: AnyAgent = defineAgent({ name: "w", instructions: "work", model, tools: [work], stepLimit: 6 });
  return { agent, runs, model };
}

/** No call of the agent has two `tool_call` or two `tool_result` events, and the snapshot replays. */
async function checkLog(store: Store, agentId: string) {
  const events = await eventsOf(store, agentId);
  for (const type of ["tool_call", "tool_result"]) {
    const ids = events.filter((e) => e.type === type).map((e) => `${e.turnId}/${String((e.data as { toolCallId: string }).toolCallId)}`);
    expect(new Set(ids).size, `${type} events per call`).toBe(ids.length);
  }
  expect((await head(store, agentId)).snapshot).toEqual(await replayLog(store, agentId));
}

describe("one commit per step", () => {
  it("results of retry-safe tools ride with the next model step: 3 commits for a 3-step turn, against 5 without", async () => {
    for (const [retrySafe, commits] of [[true, 3], [false, 5]] as const) {
      const clock = manualClock();
      const store = observedStore(memoryStore());
      const { agent, runs } = workAgent({ retrySafe });
      const runner = claimRunner(hostDeps(store, [agent], clock));
      await enqueue(store, clock, "a1", agent, "go");
      const out = await runner.run(await claimNext(store, "w1", clock.now()), "w1");
      expect(out).toMatchObject({ status: "released", state: "done" });
      expect(store.commits.filter((c) => c.status === "applied")).toHaveLength(commits);
      expect(runs).toHaveLength(2);
      await checkLog(store, "a1");
      // The riding results are stored with the model step's commit: their tool_result and the next step's events share a commit time and sit together.
      const types = (await eventsOf(store, "a1")).map((e) => e.type);
      expect(types.filter((t) => t === "tool_result")).toHaveLength(2);
    }
  });

  it("a crash after a retry-safe tool returned, before the next commit, runs it again under the same toolCallId", async () => {
    const clock = manualClock();
    const store = observedStore(memoryStore());
    const hold = deferred<void>();
    let held = false;
    const { agent, runs } = workAgent({
      retrySafe: true,
      // Worker w1's second model step never returns (w1 is dead).
      hangAt: (req) => (req.step === 2 && !held ? ((held = true), hold) : undefined),
    });
    const runner = claimRunner(hostDeps(store, [agent], clock));
    await enqueue(store, clock, "a1", agent, "go");
    const dead = runner.run(await claimNext(store, "w1", clock.now()), "w1");
    await until(() => held, 2_000, "w1's second model step");
    // w1 ran the tool of step 1, and committed only step 1 (the call is recorded, its result rides).
    expect(runs).toHaveLength(1);
    expect(store.commits.filter((c) => c.status === "applied")).toHaveLength(1);
    expect((await store.getToolCalls("a1", runs[0].turnId)).map((r) => r.status)).toEqual(["pending"]);
    clock.advance(LEASE + 1);
    const out = await claimRunner(hostDeps(store, [agent], clock)).run(await claimNext(store, "w2", clock.now()), "w2");
    expect(out).toMatchObject({ status: "released", state: "done" });
    // The tool of step 1 ran twice, under one id; the one of step 2 once.
    expect(runs.map((r) => r.toolCallId)).toEqual([runs[0].toolCallId, runs[0].toolCallId, runs[2].toolCallId]);
    await checkLog(store, "a1");
    hold.resolve();
    expect(await dead).toMatchObject({ status: "fenced" });
  });

  it("a tool without retrySafe is committed before the model step: a crash in that step does not run it again", async () => {
    const clock = manualClock();
    const store = observedStore(memoryStore());
    const hold = deferred<void>();
    let held = false;
    const { agent, runs } = workAgent({ retrySafe: false, hangAt: (req) => (req.step === 2 && !held ? ((held = true), hold) : undefined) });
    await enqueue(store, clock, "a1", agent, "go");
    const dead = claimRunner(hostDeps(store, [agent], clock)).run(await claimNext(store, "w1", clock.now()), "w1");
    await until(() => held, 2_000, "w1's second model step");
    expect((await store.getToolCalls("a1", runs[0].turnId)).map((r) => r.status)).toEqual(["resolved"]);
    clock.advance(LEASE + 1);
    const out = await claimRunner(hostDeps(store, [agent], clock)).run(await claimNext(store, "w2", clock.now()), "w2");
    expect(out).toMatchObject({ status: "released", state: "done" });
    expect(runs).toHaveLength(2);
    expect(new Set(runs.map((r) => r.toolCallId)).size).toBe(2);
    await checkLog(store, "a1");
    hold.resolve();
    expect(await dead).toMatchObject({ status: "fenced" });
  });

  it("a riding result the watchdog timed out first loses: the step's commit is refused and the step runs again with the timeout", async () => {
    const clock = manualClock();
    const store = observedStore(memoryStore());
    const hold = deferred<void>();
    let held = false;
    const { agent, runs, model } = workAgent({ retrySafe: true, timeoutMs: 1_000, hangAt: (req) => (req.step === 2 && !held ? ((held = true), hold) : undefined) });
    await enqueue(store, clock, "a1", agent, "go");
    const deps = hostDeps(store, [agent], clock);
    const first = claimRunner(deps).run(await claimNext(store, "w1", clock.now()), "w1");
    await until(() => held, 2_000, "the second model step");
    // The model step outlasts the call's deadline (timeout + 5 s grace); the watchdog answers it.
    clock.advance(7_000);
    expect((await watchdogTick(store, clock)).timedOut).toBe(1);
    hold.resolve();
    expect(await first).toMatchObject({ status: "fenced", reason: "tool_call_resolved" });
    const out = await claimRunner(deps).run(await claimNext(store, "w1", clock.now()), "w1");
    expect(out).toMatchObject({ status: "released", state: "done" });
    // Step 2 was asked twice; the second time it saw the timeout, not the result that lost.
    const step2 = model.requests.filter((r) => r.step === 2);
    expect(step2).toHaveLength(2);
    const toolMsg = step2[1].messages.find((m) => m.role === "tool" && m.toolCallId === runs[0].toolCallId)!;
    expect(toolMsg.content).toContain("timeout");
    expect(runs).toHaveLength(2); // step 1's tool was not run again: the timeout answered it
    await checkLog(store, "a1");
  });
});

describe("turn chaining", () => {
  it("the commit that ends a turn starts the next queued task: three tasks, one claim", async () => {
    const clock = manualClock();
    const { store, calls } = callCounting(observedStore(memoryStore()));
    const { agent } = workAgent({ retrySafe: true });
    for (let i = 0; i < 3; i++) await enqueue(store, clock, "a1", agent, `task ${i}`);
    const out = await claimRunner(hostDeps(store, [agent], clock)).run(await claimNext(store, "w1", clock.now()), "w1");
    expect(out).toMatchObject({ status: "released", state: "done" });
    expect(calls.claimNext).toBe(1);
    expect(calls.claim ?? 0).toBe(0);
    // 3 turns x 3 steps, one commit each, and nothing else.
    expect(calls.commit).toBe(9);
    const h = await head(store, "a1");
    expect([h.activeTurnId, h.pendingTasks, h.leaseOwner]).toEqual([null, 0, null]);
    expect((await eventsOf(store, "a1", "task")).map((e) => (e.data as { status: string }).status)).toEqual(["done", "done", "done"]);
    await checkLog(store, "a1");
  });

  it("after maxChainedTurns the agent goes back to the ready queue, behind the bells already due", async () => {
    const clock = manualClock();
    const store = memoryStore();
    const { agent } = workAgent({ retrySafe: true });
    for (let i = 0; i < 4; i++) await enqueue(store, clock, "busy", agent, `task ${i}`);
    clock.advance(1);
    await enqueue(store, clock, "other", agent, "one task");
    clock.advance(1);
    const runner = claimRunner(hostDeps(store, [agent], clock, { maxChainedTurns: 1 }));
    await runner.run(await claimNext(store, "w1", clock.now()), "w1");
    // Two turns ran (the claimed one and one chained), then the agent was handed back with work left.
    const busy = await head(store, "busy");
    expect([busy.pendingTasks, busy.leaseOwner, busy.activeTurnId]).toEqual([2, null, null]);
    expect(await eventsOf(store, "busy", "task")).toHaveLength(2);
    // The next claim serves the agent that waited longest, not the busy one again.
    clock.advance(1);
    const next = await claimNext(store, "w1", clock.now());
    expect(next.agentId).toBe("other");
    await runner.run(next, "w1");
    clock.advance(1);
    expect((await claimNext(store, "w1", clock.now())).agentId).toBe("busy");
  });

  it("maxChainedTurns 0 turns chaining off: every turn starts with its own claim", async () => {
    const clock = manualClock();
    const { store, calls } = callCounting(memoryStore());
    const { agent } = workAgent({ retrySafe: true });
    for (let i = 0; i < 2; i++) await enqueue(store, clock, "a1", agent, `task ${i}`);
    const runner = claimRunner(hostDeps(store, [agent], clock, { maxChainedTurns: 0 }));
    await runner.run(await claimNext(store, "w1", clock.now()), "w1");
    expect((await head(store, "a1")).pendingTasks).toBe(1);
    await runner.run(await claimNext(store, "w1", clock.now()), "w1");
    expect(calls.claimNext).toBe(2);
    expect(await eventsOf(store, "a1", "task")).toHaveLength(2);
  });

  it("a worker that dies right after the chaining commit: the next claim runs the chained task, once", async () => {
    const clock = manualClock();
    const store = observedStore(memoryStore());
    const hold = deferred<void>();
    let held = false;
    // The first model step of the second turn never returns in w1.
    const { agent } = workAgent({ retrySafe: true, hangAt: (req) => (req.step === 1 && req.turnId !== first && !held ? ((held = true), hold) : undefined) });
    const first = (await enqueue(store, clock, "a1", agent, "one")).turnId;
    const second = (await enqueue(store, clock, "a1", agent, "two")).turnId;
    const dead = claimRunner(hostDeps(store, [agent], clock)).run(await claimNext(store, "w1", clock.now()), "w1");
    await until(() => held, 2_000, "the chained turn's model step");
    const mid = await head(store, "a1");
    expect([mid.activeTurnId, mid.leaseOwner, mid.pendingTasks]).toEqual([second, "w1", 0]);
    expect(await store.getTurn("a1", first)).toMatchObject({ status: "done" });
    // Nobody can take it while w1's lease runs; after it, a fresh claim carries the chained task over.
    expect((await store.claimNext({ workerTarget: "default", workerId: "w2", leaseMs: LEASE, now: clock.now() })).status).toBe("empty");
    clock.advance(LEASE + 1);
    const c = await claimNext(store, "w2", clock.now());
    expect(c.task?.turnId).toBe(second);
    expect(c.previousLease?.workerId).toBe("w1");
    expect(await claimRunner(hostDeps(store, [agent], clock)).run(c, "w2")).toMatchObject({ status: "released", state: "done" });
    const tasks = (await eventsOf(store, "a1", "task")).map((e) => (e.data as { turnId: string }).turnId);
    expect(tasks).toEqual([first, second]);
    const started = (await eventsOf(store, "a1", "transition")).filter((e) => (e.data as { event: { type: string } }).event.type === "TASK_STARTED");
    expect(started).toHaveLength(2);
    await checkLog(store, "a1");
    hold.resolve();
    expect(await dead).toMatchObject({ status: "fenced" });
  });
});
