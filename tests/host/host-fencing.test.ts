/**
 * The host under concurrency and failure: epoch fencing of stale workers,
 * crash recovery through lease expiry, and the watchdog racing real results.
 * Time is a hand-driven clock; a "dead" worker is one whose commit never
 * reaches the store (it is released at the end of the test with a conflict,
 * so nothing stays running).
 *
 * Invariants checked:
 * - A worker whose epoch is stale gets its commit refused, its abort signal
 *   fires, and it makes no further model call, tool dispatch or commit; what
 *   it computed after losing the agent reaches neither the store nor the
 *   conversation of the worker that took over, except, within one process,
 *   the result of a tool it ran: the next claim there commits that result
 *   instead of running the tool again (actors/claim/kept-results.ts).
 * - Nothing acknowledged is lost when a worker dies: the task and tool-result
 *   mail survive until a commit applies them; a recorded tool call keeps its
 *   id across re-dispatch; a call never recorded is never dispatched.
 * - An external wait past its deadline becomes exactly one of result or
 *   timeout, and the agent continues with whichever won.
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { lruCache } from "../../actors/conversation/cache.ts";
import { runClaim } from "../../actors/host/run-claim.ts";
import { type AnyAgent, defineAgent } from "../../agents/define.ts";
import { createGatehouse, type Gatehouse } from "../../gatehouse.ts";
import { memoryStore } from "../../store/memory.ts";
import type { ClaimResult, Store } from "../../store/port.ts";
import { defineTool } from "../../tools/define.ts";
import { manualClock } from "../helpers/clock.ts";
import {
  ctxOf,
  type Deferred,
  deferred,
  enqueue,
  eventsOf,
  head,
  hostDeps,
  observedStore,
  recordingModel,
  replayLog,
  toolMessages,
  transitionsOf,
  until,
} from "../helpers/host.ts";
import { memoryStateReader } from "../helpers/store-state.ts";

const LEASE = 30_000;
const open: Gatehouse[] = [];
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
  while (open.length) await open.pop()!.close();
});

type Claimed = Extract<ClaimResult, { status: "claimed" }>;
async function claim(store: Store, agentId: string, workerId: string, now: number): Promise<Claimed> {
  const c = await store.claim({ agentId, workerId, leaseMs: LEASE, now });
  if (c.status !== "claimed") throw new Error(`expected a claim, got ${c.status}`);
  return c;
}

/**
 * A `work` tool whose first invocation blocks until released, and a model
 * that calls it once and then submits what the tool returned.
 */
function blockingSetup() {
  const invocations: Array<{ toolCallId: string; signal: AbortSignal }> = [];
  const entered = deferred<void>();
  const firstResult: Deferred<string> = deferred<string>();
  const work = defineTool({
    name: "work",
    description: "Do the work",
    parameters: z.object({}),
    execute: async (_args, ctx) => {
      invocations.push({ toolCallId: ctx.toolCallId, signal: ctx.signal });
      if (invocations.length === 1) {
        entered.resolve();
        return await firstResult.promise;
      }
      return `from-worker-${invocations.length}`;
    },
  });
  const model = recordingModel((req) => {
    if (req.step === 1) return { toolCalls: [{ id: "w1", name: "work", args: {} }] };
    const results = req.messages.filter((m) => m.role === "tool").map((m) => m.content);
    return { toolCalls: [{ name: "submit_result", args: { result: results } }] };
  });
  const agent = defineAgent({ name: "worker", instructions: "", model, tools: [work] });
  return { agent, model, invocations, entered, firstResult };
}

describe("epoch fencing", () => {
  it("a worker that lost the agent gets its commit refused and stops every side effect", async () => {
    const clock = manualClock();
    const store = observedStore(memoryStore());
    const { agent, model, invocations, entered, firstResult } = blockingSetup();
    const { turnId } = await enqueue(store, clock, "f1", agent, "go");

    // Worker A claims and blocks inside the tool, after committing the tool call.
    const claimA = await claim(store, "f1", "A", clock.now());
    const runA = runClaim(hostDeps(store, [agent], clock), claimA, "A");
    await entered.promise;
    expect(model.requests).toHaveLength(1);
    expect(store.commits).toEqual([{ workerId: "A", epoch: claimA.epoch, status: "applied" }]);

    // A's lease runs out; worker B (another process: its own cache) claims with epoch + 1 and finishes the turn.
    clock.advance(LEASE + 1);
    const claimB = await claim(store, "f1", "B", clock.now());
    expect(claimB.epoch).toBe(claimA.epoch + 1);
    const outB = await runClaim(hostDeps(store, [agent], clock), claimB, "B");
    expect(outB).toMatchObject({ status: "released", state: "done" });
    const after = await head(store, "f1");
    const messagesAfterB = await store.readMessages("f1");
    const stateAfterB = await memoryStateReader(store)("f1");
    expect(model.requests).toHaveLength(2);
    expect(invocations.map((i) => i.toolCallId)).toEqual(["w1", "w1"]);

    // A's tool returns now: its commit is refused and it does nothing more.
    firstResult.resolve("from-worker-A");
    const outA = await runA;
    expect(outA).toMatchObject({ status: "fenced", reason: "fenced" });
    expect(invocations[0].signal.aborted).toBe(true);
    expect(invocations[1].signal.aborted).toBe(false);
    expect(model.requests).toHaveLength(2);
    expect(invocations).toHaveLength(2);
    const commitsOfA = store.commits.filter((c) => c.workerId === "A");
    expect(commitsOfA.map((c) => c.status)).toEqual(["applied", "conflict"]);
    expect(commitsOfA[1].reason).toBe("fenced");

    expect(await memoryStateReader(store)("f1")).toEqual(stateAfterB);
    expect((await ctxOf(store, "f1")).output).toEqual(["from-worker-2"]);
    expect(JSON.stringify(messagesAfterB)).not.toContain("from-worker-A");
    expect(await replayLog(store, "f1")).toEqual(after.snapshot);
    const [call] = await store.getToolCalls("f1", turnId);
    expect(call).toMatchObject({ toolCallId: "w1", status: "resolved", outcome: { ok: true, value: "from-worker-2" } });
  });

  it("in one process, a stale worker's conversation never leaks into the worker that took over; its tool result is committed once", async () => {
    const clock = manualClock();
    const store = observedStore(memoryStore());
    const { agent, model, invocations, entered, firstResult } = blockingSetup();
    // One process: both workers share the resident history cache.
    const cache = lruCache();
    const deps = hostDeps(store, [agent], clock, { cache });
    await enqueue(store, clock, "f2", agent, "go");

    const claimA = await claim(store, "f2", "A", clock.now());
    const runA = runClaim(deps, claimA, "A");
    await entered.promise;
    // A's next commit (the one carrying its tool result) is held in flight.
    const held = store.hold("A");
    firstResult.resolve("from-worker-A");
    await held.started;

    clock.advance(LEASE + 1);
    const claimB = await claim(store, "f2", "B", clock.now());
    const outB = await runClaim(deps, claimB, "B");
    expect(outB).toMatchObject({ status: "released", state: "done" });
    // The process ran the call once: B commits the result A's tool returned (actors/claim/kept-results.ts).
    expect(invocations).toHaveLength(1);

    // B's model saw exactly one result for the call, the committed one.
    const seenByB = model.requests[1].messages;
    expect(toolMessages(seenByB, "w1").map((m) => m.content)).toEqual(["from-worker-A"]);
    expect(toolMessages(await store.readMessages("f2"), "w1").map((m) => m.content)).toEqual(["from-worker-A"]);

    held.release.resolve(null);
    expect(await runA).toMatchObject({ status: "fenced" });
    expect(model.requests).toHaveLength(2);

    // A third claim in the same process (a new task) starts from what was committed, not from A's leftovers.
    await enqueue(store, clock, "f2", agent, "again");
    const claimC = await claim(store, "f2", "C", clock.now());
    await runClaim(deps, claimC, "C");
    const seenByC = model.requests[2].messages;
    expect(toolMessages(seenByC, "w1").map((m) => m.content)).toEqual(["from-worker-A"]);
    expect(seenByC.slice(1)).toEqual([...(await store.readMessages("f2")).slice(0, seenByC.length - 1)]);
  });

  it("a worker whose lease renewal fails stops before its next model call", async () => {
    const clock = manualClock();
    const store = observedStore(memoryStore());
    const { agent, model, invocations, entered, firstResult } = blockingSetup();
    await enqueue(store, clock, "f3", agent, "go");
    // Short lease: the host renews it every leaseMs / 3 (real time); the clock jump makes that renewal fail.
    const claimA = await store.claim({ agentId: "f3", workerId: "A", leaseMs: 300, now: clock.now() });
    if (claimA.status !== "claimed") throw new Error("no claim");
    const runA = runClaim(hostDeps(store, [agent], clock, { leaseMs: 300 }), claimA, "A");
    await entered.promise;
    clock.advance(301);
    await until(() => invocations[0].signal.aborted, 3_000, "the lease renewal to fail");
    firstResult.resolve("late");
    expect(await runA).toMatchObject({ status: "fenced", reason: "lease_lost" });
    expect(model.requests).toHaveLength(1);
    expect(store.commits.filter((c) => c.workerId === "A").map((c) => c.status)).toEqual(["applied"]);
  });
});

describe("crash recovery", () => {
  it("a worker that dies before committing loses nothing: task and mail survive, tool call ids are stable", async () => {
    const clock = manualClock();
    const inner = memoryStore();
    const store = observedStore(inner);
    const dispatched: string[] = [];
    let idSeq = 0;
    const work = defineTool({
      name: "work",
      description: "Work",
      parameters: z.object({}),
      execute: (_a, ctx) => {
        dispatched.push(ctx.toolCallId);
        return "worked";
      },
    });
    const ask = defineTool({ name: "ask", description: "Ask", parameters: z.object({}) });
    // The model names its calls itself (as real APIs do), with a fresh id on every call.
    const model = recordingModel((req) => {
      const id = `m_${idSeq++}`;
      if (req.step === 1) return { toolCalls: [{ id, name: "work", args: {} }] };
      if (req.step === 2) return { toolCalls: [{ id, name: "ask", args: {} }] };
      return { toolCalls: [{ id, name: "submit_result", args: { result: req.messages.filter((m) => m.role === "tool").map((m) => m.content) } }] };
    });
    const agent = defineAgent({ name: "durable", instructions: "", model, tools: [work, ask] });
    const gh = createGatehouse({ agents: [agent], store, clock, leaseMs: LEASE, concurrency: 2 });
    open.push(gh);
    const { turnId } = await enqueue(store, clock, "c1", agent, "the task");

    // 1. Dead worker 1 takes the task (its claim stores the turn's state) and runs a model step, but its commit never arrives.
    const dead1 = store.hold("dead1");
    const run1 = runClaim(hostDeps(store, [agent], clock), await claim(store, "c1", "dead1", clock.now()), "dead1");
    cleanups.push(async () => {
      dead1.release.resolve({ status: "conflict", reason: "fenced" });
      await run1;
    });
    await dead1.started;
    expect(model.requests).toHaveLength(1);
    let h = await head(store, "c1");
    // The turn reads `running` from the claim on; nothing else of its start is stored (store/port.ts invariant `turn-start`).
    expect(h).toMatchObject({ version: 0, activeTurnId: turnId, pendingTasks: 0, state: "running" });
    expect(h.currentTask?.turnId).toBe(turnId);
    expect((await store.getTurn("c1", turnId))?.input).toBe("the task");
    expect(await store.getToolCalls("c1", turnId)).toEqual([]);

    // 2. Dead worker 2 (after the lease ran out) records the call, runs the tool, and dies committing its result.
    clock.advance(LEASE + 1);
    const dead2 = store.hold("dead2", 1);
    const run2 = runClaim(hostDeps(store, [agent], clock), await claim(store, "c1", "dead2", clock.now()), "dead2");
    cleanups.push(async () => {
      dead2.release.resolve({ status: "conflict", reason: "fenced" });
      await run2;
    });
    await dead2.started;
    expect(dispatched).toEqual(["m_1"]);
    expect((await store.getToolCalls("c1", turnId)).map((c) => [c.toolCallId, c.status])).toEqual([["m_1", "pending"]]);

    // 3. The pool takes over: it re-dispatches the recorded call under the same id and reaches the external wait.
    clock.advance(LEASE + 1);
    await gh.drain();
    expect(dispatched).toEqual(["m_1", "m_1"]);
    expect((await head(store, "c1")).state).toBe("waiting-tools");

    // 4. The result arrives; dead worker 3 claims the mail and never commits.
    const r = await store.deliverToolResult({ agentId: "c1", turnId, toolCallId: "m_2", outcome: { ok: true, value: "answer" }, afterExecution: "continue", source: "http", now: clock.now() });
    expect(r.status).toBe("accepted");
    const c3 = await claim(store, "c1", "dead3", clock.now());
    expect(c3.mail.map((m) => m.kind === "tool_result" && m.toolCallId)).toEqual(["m_2"]);
    expect(await gh.drain()).toBe(0); // the dead worker's lease still holds
    clock.advance(LEASE + 1);
    await gh.drain();

    h = await head(store, "c1");
    expect(h.state).toBe("done");
    expect(h.pendingMail).toBe(0);
    expect((await ctxOf(store, "c1")).output).toEqual(["worked", "answer"]);
    // Exactly one start of the turn, one user message, one result per recorded call; the unrecorded id m_0 never appears.
    const msgs = await store.readMessages("c1");
    expect(msgs.filter((m) => m.role === "user")).toEqual([{ role: "user", content: "the task" }]);
    expect((await transitionsOf(store, "c1")).filter((t) => t.event.type === "TASK_STARTED")).toHaveLength(1);
    const recorded = (await store.getToolCalls("c1", turnId)).map((c) => c.toolCallId).sort();
    expect(recorded).toEqual(["m_1", "m_2"]);
    for (const id of recorded) expect(toolMessages(msgs, id)).toHaveLength(1);
    expect(JSON.stringify(msgs)).not.toContain("m_0");
    expect(new Set(dispatched)).toEqual(new Set(["m_1"]));
    expect(await replayLog(store, "c1")).toEqual(h.snapshot);
  });
});

describe("agents a worker cannot run", () => {
  /** Puts a snapshot this build cannot restore (an unknown schema version) under an active turn with pending mail. */
  async function unrestorable(store: Store, clock: ReturnType<typeof manualClock>, agent: AnyAgent) {
    const { turnId } = await enqueue(store, clock, "u1", agent, "go");
    const c = await claim(store, "u1", "old-build", clock.now());
    const snapshot = { status: "active", value: "running", historyValue: {}, children: {}, context: { schemaVersion: 999 } };
    const w = await store.commit({
      agentId: "u1", workerId: "old-build", epoch: c.epoch, expectedVersion: c.head.version, turnId, snapshot, state: "running",
      activeTurnId: turnId, events: [], messages: [], recordToolCalls: [], resolveToolCalls: [], ackMailThrough: 0,
      release: { runnableAt: null }, leaseMs: LEASE, now: clock.now(),
    });
    expect(w.status).toBe("applied");
    expect((await store.requestCancel({ agentId: "u1", reason: "stop", now: clock.now() })).status).toBe("accepted");
    return snapshot;
  }

  it("an unrestorable snapshot is refused, its mail kept, and the agent is not offered again at once", async () => {
    const clock = manualClock();
    const store = memoryStore();
    const agent = defineAgent({ name: "future", instructions: "", model: recordingModel(() => ({ text: "x" })) });
    const snapshot = await unrestorable(store, clock, agent);
    const deps = hostDeps(store, [agent], clock);

    const first = await store.claimNext({ workerTarget: agent.workerTarget, workerId: "W", leaseMs: LEASE, now: clock.now() });
    if (first.status !== "claimed") throw new Error("expected a claim");
    const out = await runClaim(deps, first, "W");
    expect(out.status).toBe("unrestorable");
    if (out.status === "unrestorable") expect(out.message).toMatch(/schema version 999/);

    // Pending mail must not turn the refusal into a hot loop of claims.
    const again = await store.claimNext({ workerTarget: agent.workerTarget, workerId: "W", leaseMs: LEASE, now: clock.now() });
    expect(again.status).not.toBe("claimed");
    const h = await head(store, "u1");
    expect(h.snapshot).toEqual(snapshot);
    expect(h.pendingMail).toBe(1);
    // A snapshot of a newer schema version is a newer build's (docs/operations.md, "Upgrades"): held for a second, not
    // parked for minutes, and logged rather than recorded (it is claimed again every second until a newer build takes it).
    expect(await eventsOf(store, "u1", "snapshot_unrestorable")).toHaveLength(0);
    expect(h.leaseUntil).toBe(clock.now() + 1_000);

    // It is retried later (a build with a migration may have been deployed by then).
    clock.advance(10 * 60_000);
    const later = await store.claimNext({ workerTarget: agent.workerTarget, workerId: "W", leaseMs: LEASE, now: clock.now() });
    expect(later.status).toBe("claimed");
    if (later.status === "claimed") expect(later.mail).toHaveLength(1);
  });

  it("a worker without the agent's definition gives it back without spinning on its mail", async () => {
    const clock = manualClock();
    const store = memoryStore();
    const agent = defineAgent({ name: "elsewhere", instructions: "", model: recordingModel(() => ({ text: "x" })) });
    await unrestorable(store, clock, agent);
    const c = await store.claimNext({ workerTarget: agent.workerTarget, workerId: "W", leaseMs: LEASE, now: clock.now() });
    if (c.status !== "claimed") throw new Error("expected a claim");
    const out = await runClaim(hostDeps(store, [], clock), c, "W");
    expect(out).toMatchObject({ status: "unrestorable", message: expect.stringContaining("elsewhere") });
    const again = await store.claimNext({ workerTarget: agent.workerTarget, workerId: "W", leaseMs: LEASE, now: clock.now() });
    expect(again.status).not.toBe("claimed");
    expect((await head(store, "u1")).pendingMail).toBe(1);
    expect(await eventsOf(store, "u1", "worker_missing_definition")).toHaveLength(1);
  });
});

describe("watchdog", () => {
  const slowAsk = defineTool({ name: "ask", description: "Ask", parameters: z.object({}), timeoutMs: 1_000 });
  const relay = () =>
    recordingModel((req) =>
      req.step === 1
        ? { toolCalls: [{ name: "ask", args: {} }] }
        : { toolCalls: [{ name: "submit_result", args: { result: req.messages.filter((m) => m.role === "tool").map((m) => m.content) } }] }
    );

  function setup(agents: AnyAgent[]) {
    const clock = manualClock();
    const gh = createGatehouse({ agents, clock, leaseMs: LEASE, concurrency: 2 });
    open.push(gh);
    return { gh, clock, store: gh.store };
  }

  it("an external wait past its deadline becomes a timeout result and the agent continues with it", async () => {
    const model = relay();
    const agent = defineAgent({ name: "waiter", instructions: "", model, tools: [slowAsk] });
    const { gh, clock, store } = setup([agent]);
    const { turnId } = await enqueue(store, clock, "w1", agent, "go");
    await gh.drain();
    expect(await gh.tick()).toEqual({ timedOut: 0, alreadyResolved: 0, turnFinished: 0, skipped: 0 });

    clock.advance(1_000);
    expect((await gh.tick()).timedOut).toBe(1);
    await gh.drain();

    expect((await head(store, "w1")).state).toBe("done");
    const [call] = await store.getToolCalls("w1", turnId);
    expect(call).toMatchObject({ status: "resolved", source: "watchdog", outcome: { ok: false, error: { type: "timeout" } } });
    const seen = toolMessages(model.requests[1].messages, call.toolCallId);
    expect(seen).toHaveLength(1);
    expect(JSON.parse(seen[0].content).error.type).toBe("timeout");
    // A late result changes nothing.
    const before = await memoryStateReader(store)("w1");
    const late = await store.deliverToolResult({ agentId: "w1", turnId, toolCallId: call.toolCallId, outcome: { ok: true, value: "late" }, afterExecution: "continue", source: "http", now: clock.now() });
    expect(late).toMatchObject({ status: "already_resolved", resolvedBy: "timeout" });
    expect(await gh.tick()).toEqual({ timedOut: 0, alreadyResolved: 0, turnFinished: 0, skipped: 0 });
    expect(await memoryStateReader(store)("w1")).toEqual(before);
  });

  it("an in-process tool that outlives its deadline: the watchdog's timeout wins and the late result is dropped", async () => {
    const clock = manualClock();
    const store = observedStore(memoryStore());
    const gate = deferred<string>();
    const entered = deferred<void>();
    const hang = defineTool({
      name: "hang",
      description: "Hangs",
      parameters: z.object({}),
      // Its deadline (timeout plus the watchdog's grace) falls inside the worker's lease.
      timeoutMs: 20_000,
      execute: async () => {
        entered.resolve();
        return await gate.promise;
      },
    });
    const model = recordingModel((req) =>
      req.step === 1
        ? { toolCalls: [{ id: "h1", name: "hang", args: {} }] }
        : { toolCalls: [{ name: "submit_result", args: { result: req.messages.filter((m) => m.role === "tool").map((m) => m.content) } }] }
    );
    const agent = defineAgent({ name: "hanger", instructions: "", model, tools: [hang] });
    const gh = createGatehouse({ agents: [agent], store, clock, leaseMs: LEASE, concurrency: 2 });
    open.push(gh);
    const { turnId } = await enqueue(store, clock, "ip1", agent, "go");
    const c = await claim(store, "ip1", "A", clock.now());
    const runA = runClaim(hostDeps(store, [agent], clock), c, "A");
    await entered.promise;
    const [rec] = await store.getToolCalls("ip1", turnId);
    expect(rec.deadline).toBeLessThan(c.head.leaseUntil);

    clock.set(rec.deadline);
    expect((await gh.tick()).timedOut).toBe(1);
    gate.resolve("too late");
    expect(await runA).toMatchObject({ status: "fenced", reason: "tool_call_resolved" });
    await gh.drain();

    expect((await head(store, "ip1")).state).toBe("done");
    const msgs = toolMessages(await store.readMessages("ip1"), "h1");
    expect(msgs).toHaveLength(1);
    expect(JSON.parse(msgs[0].content).error.type).toBe("timeout");
    expect((await ctxOf(store, "ip1")).output).toEqual([msgs[0].content]);
    expect(await store.getToolCalls("ip1", turnId)).toEqual([expect.objectContaining({ source: "watchdog", status: "resolved" })]);
  });

  it("a result racing the watchdog yields exactly one of result or timeout", async () => {
    const model = relay();
    const agent = defineAgent({ name: "racer", instructions: "", model, tools: [slowAsk] });
    const { gh, clock, store } = setup([agent]);
    const winners = { http: 0, watchdog: 0 };
    const yieldTimes = async (n: number) => {
      for (let i = 0; i < n; i++) await Promise.resolve();
    };
    for (let i = 0; i < 40; i++) {
      const agentId = `race${i}`;
      const { turnId } = await enqueue(store, clock, agentId, agent, "go");
      await gh.drain();
      const [call] = await store.getToolCalls(agentId, turnId);
      clock.advance(1_000);
      // Start both at once; vary which one reaches the store first.
      const [delivered, ticked] = await Promise.all([
        yieldTimes(i % 4).then(() =>
          store.deliverToolResult({ agentId, turnId, toolCallId: call.toolCallId, outcome: { ok: true, value: "real" }, afterExecution: "continue", source: "http", now: clock.now() })
        ),
        yieldTimes((i + 2) % 4).then(() => gh.tick()),
      ]);
      const httpWon = delivered.status === "accepted";
      // The loser changes nothing: a late HTTP delivery is told the timeout resolved the call; a late
      // watchdog finds the call already resolved (or, when the result came before its scan, no longer due).
      if (httpWon) expect(ticked.timedOut, `round ${i}`).toBe(0);
      else {
        expect([delivered.status, ticked.timedOut], `round ${i}`).toEqual(["already_resolved", 1]);
        expect(delivered).toMatchObject({ resolvedBy: "timeout" });
      }
      winners[httpWon ? "http" : "watchdog"]++;

      await gh.drain();
      expect((await head(store, agentId)).state).toBe("done");
      const [rec] = await store.getToolCalls(agentId, turnId);
      expect(rec.source).toBe(httpWon ? "http" : "watchdog");
      const msgs = toolMessages(await store.readMessages(agentId), call.toolCallId);
      expect(msgs, `round ${i}`).toHaveLength(1);
      expect(msgs[0].content === "real").toBe(httpWon);
      const received = await eventsOf(store, agentId, "tool_result_received");
      expect(received).toHaveLength(1);
    }
    // Both orders were exercised.
    expect(winners.http).toBeGreaterThan(0);
    expect(winners.watchdog).toBeGreaterThan(0);
  });
});
