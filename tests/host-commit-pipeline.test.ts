/**
 * Pipelined commits (actors/host/effects.ts, actors/claim/commit-buffer.ts `pipeline`;
 * docs/architecture.md, "Pipelined commits"): a commit that keeps the lease and leaves the turn in
 * `running` is not awaited before the model step that follows; that step's commit waits for its ack.
 *
 * Invariants checked (memory store and a real redis-server, hand-driven clock):
 * - The model call runs while the commit before it is in flight; no two commits of a claim are ever
 *   in flight together, and each is sent only after the one before it applied; a tool is dispatched
 *   only after the commit that recorded its call applied.
 * - A refused commit in flight (another worker took the agent) aborts the model step beside it: the
 *   step's commit is never sent, no tool of it is dispatched, the turn is finished once by the new owner.
 * - A crash with a commit in flight (whether it applied or not) loses nothing acknowledged and runs no
 *   tool twice: the next claim goes on from what the store holds, the task starts once, every tool
 *   runs once.
 * - A step beside a commit in flight sends no live delta before that commit applied, and none at all
 *   when it was refused.
 * - The snapshot cache entry a pipelined commit leaves is the conversation it committed: a claim that
 *   takes the agent over in the same process never sees what the step beside it added.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { lruCache } from "../actors/conversation/cache.ts";
import { runClaim } from "../actors/host/run-claim.ts";
import { type AnyAgent, defineAgent } from "../agents/define.ts";
import { redisStore } from "../redis.ts";
import { memoryStore } from "../store/memory.ts";
import type { LiveChannel, LiveMessage } from "../store/live.ts";
import type { ClaimResult, CommitRequest, CommitResult, Store } from "../store/port.ts";
import { defineTool } from "../tools/define.ts";
import { manualClock } from "./helpers/clock.ts";
import { ctxOf, deferred, enqueue, head, hostDeps, recordingModel, transitionsOf, until } from "./helpers/host.ts";
import { type RedisServer, startRedisServer } from "./helpers/redis-server.ts";

const LEASE = 30_000;

let server: RedisServer;
beforeAll(async () => {
  server = await startRedisServer();
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

type Claimed = Extract<ClaimResult, { status: "claimed" }>;
async function claim(store: Store, agentId: string, workerId: string, now: number): Promise<Claimed> {
  const c = await store.claim({ agentId, workerId, leaseMs: LEASE, now });
  if (c.status !== "claimed") throw new Error(`expected a claim, got ${c.status}`);
  return c;
}

/** What happened, in order: commits sent and answered (per worker), model calls. */
type Mark = { what: "sent" | "answered"; worker: string; n: number; status?: string } | { what: "model"; step: number };

/**
 * A store whose commits are logged, and whose n-th commit of a worker can be held: `hold(worker, n)`
 * answers that commit only when released. `apply: true` lets the commit reach the store first (its
 * reply is what is held: the worker dies after the store applied it), `false` holds it before.
 */
function gatedStore(inner: Store, marks: Mark[]) {
  const sent = new Map<string, number>();
  const holds = new Map<string, { apply: boolean; started: ReturnType<typeof deferred<void>>; release: ReturnType<typeof deferred<CommitResult | null>> }>();
  const store: Store = {
    ...inner,
    async commit(req: CommitRequest): Promise<CommitResult> {
      const n = (sent.get(req.workerId) ?? 0) + 1;
      sent.set(req.workerId, n);
      marks.push({ what: "sent", worker: req.workerId, n });
      const h = holds.get(`${req.workerId}#${n}`);
      let r: CommitResult | null = null;
      if (h?.apply) r = await inner.commit(req);
      if (h) {
        h.started.resolve();
        const instead = await h.release.promise;
        if (instead) r = instead;
      }
      r ??= await inner.commit(req);
      marks.push({ what: "answered", worker: req.workerId, n, status: r.status });
      return r;
    },
  };
  return {
    store,
    hold(worker: string, n = 1, apply = false) {
      const h = { apply, started: deferred<void>(), release: deferred<CommitResult | null>() };
      holds.set(`${worker}#${n}`, h);
      return h;
    },
  };
}

/** Step 1 calls `work` (in process, not retry-safe: its result is committed on its own), step 2 submits. */
function workAgent(marks: Mark[]) {
  const runs: string[] = [];
  const work = defineTool({
    name: "work",
    description: "Does work",
    parameters: z.object({ n: z.number() }),
    execute: (a, ctx) => {
      runs.push(ctx.toolCallId);
      return { done: a.n };
    },
  });
  const model = recordingModel((req) => {
    marks.push({ what: "model", step: req.step });
    if (req.step === 1) return { toolCalls: [{ id: `c${req.step}`, name: "work", args: { n: 1 } }] };
    return { toolCalls: [{ id: `s${req.step}`, name: "submit_result", args: { result: "ok" } }] };
  });
  const agent: AnyAgent = defineAgent({ name: "p", instructions: "work", model, tools: [work], maxStepsPerTurn: 10 });
  return { agent, model, runs };
}

/** Most commits of one worker in flight at once, and whether each was sent only after the one before it was answered. */
function inFlight(marks: Mark[], worker: string): { most: number; inOrder: boolean } {
  let now = 0, most = 0, inOrder = true, answered = 0;
  for (const m of marks) {
    if (m.what === "model" || m.worker !== worker) continue;
    if (m.what === "sent") {
      if (m.n !== answered + 1) inOrder = false;
      most = Math.max(most, ++now);
    } else {
      now--;
      answered = m.n;
    }
  }
  return { most, inOrder };
}

const adapters: Array<[string, (prefix: string) => Store]> = [
  ["memory", () => memoryStore()],
  ["redis", (prefix) => redisStore({ url: server.url, prefix })],
];

describe.each(adapters)("pipelined commits (%s)", (name, open) => {
  let n = 0;
  const fresh = () => {
    const s = open(`pipe-${name}-${Date.now()}-${n++}`);
    cleanups.push(() => s.close?.() ?? Promise.resolve());
    return s;
  };

  it("the first model call runs while the turn's start is in flight; the step's commit waits for its ack", async () => {
    const clock = manualClock();
    const marks: Mark[] = [];
    const gate = gatedStore(fresh(), marks);
    const { agent, model, runs } = workAgent(marks);
    const { turnId } = await enqueue(gate.store, clock, "a1", agent, "go");
    const start = gate.hold("A");
    const recorded = gate.hold("A", 2);
    const result = gate.hold("A", 3);
    const run = runClaim(hostDeps(gate.store, [agent], clock), await claim(gate.store, "a1", "A", clock.now()), "A");
    await start.started;
    await until(() => model.requests.length === 1, 2_000, "the model call beside the start commit");
    // The start commit is still unanswered, and the step's commit has not been sent.
    expect(marks.filter((m) => m.what === "sent")).toHaveLength(1);
    start.release.resolve(null);
    // The step's commit (the second) records the call: the tool is not dispatched before it applied.
    await recorded.started;
    await new Promise((r) => setTimeout(r, 20));
    expect(runs).toEqual([]);
    recorded.release.resolve(null);
    // The tool result's commit (the third) leaves the turn in `running`: step 2's model call runs while it is in flight.
    await result.started;
    await until(() => model.requests.length === 2, 2_000, "step 2's model call beside the result's commit");
    expect(marks.filter((m) => m.what === "sent")).toHaveLength(3);
    expect(runs).toEqual(["c1"]);
    result.release.resolve(null);
    expect(await run).toMatchObject({ status: "released", state: "done" });
    expect(runs).toEqual(["c1"]);
    expect(inFlight(marks, "A")).toEqual({ most: 1, inOrder: true });
    const h = await head(gate.store, "a1");
    expect(h).toMatchObject({ state: "done", activeTurnId: null });
    expect((await transitionsOf(gate.store, "a1")).filter((t) => t.event.type === "TASK_STARTED")).toHaveLength(1);
    expect((await gate.store.getToolCalls("a1", turnId)).map((c) => [c.toolCallId, c.status])).toEqual([["c1", "resolved"]]);
  });

  it("a refused commit in flight aborts the model step beside it: nothing of the step is written or dispatched", async () => {
    const clock = manualClock();
    const marks: Mark[] = [];
    const gate = gatedStore(fresh(), marks);
    const { agent, model, runs } = workAgent(marks);
    const { turnId } = await enqueue(gate.store, clock, "a2", agent, "go");
    const start = gate.hold("A");
    const runA = runClaim(hostDeps(gate.store, [agent], clock), await claim(gate.store, "a2", "A", clock.now()), "A");
    await start.started;
    await until(() => model.requests.length === 1, 2_000, "A's model call beside its start commit");

    // A's lease runs out while its start commit is in flight; B takes the agent and finishes the turn.
    clock.advance(LEASE + 1);
    const outB = await runClaim(hostDeps(gate.store, [agent], clock), await claim(gate.store, "a2", "B", clock.now()), "B");
    expect(outB).toMatchObject({ status: "released", state: "done" });

    // A's start commit reaches the store now: refused (fenced), and A stops.
    start.release.resolve(null);
    expect(await runA).toMatchObject({ status: "fenced", reason: "fenced" });
    expect(marks.filter((m) => m.what !== "model" && m.worker === "A")).toEqual([
      { what: "sent", worker: "A", n: 1 },
      { what: "answered", worker: "A", n: 1, status: "conflict" },
    ]);
    expect(model.requests[0].signal?.aborted).toBe(true);
    // The tool ran once, under B; the turn started once and ended once.
    expect(runs).toEqual(["c1"]);
    expect((await transitionsOf(gate.store, "a2")).filter((t) => t.event.type === "TASK_STARTED")).toHaveLength(1);
    expect((await ctxOf(gate.store, "a2")).output).toBe("ok");
    expect((await gate.store.getToolCalls("a2", turnId)).map((c) => [c.toolCallId, c.status])).toEqual([["c1", "resolved"]]);
  });

  for (const applied of [true, false]) {
    it(`a crash with the start commit in flight (${applied ? "applied, its ack lost" : "never applied"}): the task is not lost, the tool runs once`, async () => {
      const clock = manualClock();
      const marks: Mark[] = [];
      const gate = gatedStore(fresh(), marks);
      const { agent, model, runs } = workAgent(marks);
      const { turnId } = await enqueue(gate.store, clock, "a3", agent, "go");
      // Worker A dies with its start commit in flight: the answer never comes.
      const start = gate.hold("dead", 1, applied);
      const runDead = runClaim(hostDeps(gate.store, [agent], clock), await claim(gate.store, "a3", "dead", clock.now()), "dead");
      cleanups.push(async () => {
        start.release.resolve({ status: "conflict", reason: "fenced" });
        await runDead;
      });
      await start.started;
      await until(() => model.requests.length === 1, 2_000, "the dead worker's model call");
      // Its model step ran beside the commit, but nothing of it was sent or dispatched.
      expect(marks.filter((m) => m.what === "sent" && m.worker === "dead")).toHaveLength(1);
      expect(runs).toEqual([]);
      expect((await head(gate.store, "a3")).state).toBe(applied ? "running" : "idle");

      // The lease ends; another worker claims and finishes the turn from what the store holds.
      clock.advance(LEASE + 1);
      const out = await runClaim(hostDeps(gate.store, [agent], clock), await claim(gate.store, "a3", "B", clock.now()), "B");
      expect(out).toMatchObject({ status: "released", state: "done" });
      expect(runs).toEqual(["c1"]);
      expect((await transitionsOf(gate.store, "a3")).filter((t) => t.event.type === "TASK_STARTED")).toHaveLength(1);
      const msgs = await gate.store.readMessages("a3");
      expect(msgs.filter((m) => m.role === "user")).toEqual([{ role: "user", content: "go" }]);
      expect((await ctxOf(gate.store, "a3")).output).toBe("ok");
      expect((await gate.store.getToolCalls("a3", turnId)).map((c) => [c.toolCallId, c.status])).toEqual([["c1", "resolved"]]);
      expect(inFlight(marks, "B")).toEqual({ most: 1, inOrder: true });
    });
  }

  it("the cache entry of a pipelined commit holds what it committed, not what the step beside it added", async () => {
    const clock = manualClock();
    const marks: Mark[] = [];
    const gate = gatedStore(fresh(), marks);
    const runs: string[] = [];
    const work = defineTool({
      name: "work", description: "Does work", parameters: z.object({ n: z.number() }),
      execute: (a, ctx) => (runs.push(ctx.toolCallId), { done: a.n }),
    });
    const model = recordingModel((req, i) => {
      if (req.step === 1) return { toolCalls: [{ id: "c1", name: "work", args: { n: 1 } }] };
      return { text: `answer ${i}`, toolCalls: [{ id: `s${i}`, name: "submit_result", args: { result: "ok" } }] };
    });
    const agent = defineAgent({ name: "p", instructions: "work", model, tools: [work], maxStepsPerTurn: 10 });
    // One process: both workers share the resident cache.
    const deps = hostDeps(gate.store, [agent], clock, { cache: lruCache() });
    await enqueue(gate.store, clock, "a4", agent, "go");
    // A's third commit (the tool's result, pipelined with step 2) applies, but its ack waits until step 2
    // has grown A's history; A's fourth (step 2's) never applies.
    const result = gate.hold("A", 3, true);
    const step2 = gate.hold("A", 4);
    const runA = runClaim(deps, await claim(gate.store, "a4", "A", clock.now()), "A");
    cleanups.push(async () => {
      step2.release.resolve({ status: "conflict", reason: "fenced" });
      await runA;
    });
    await result.started;
    await until(() => model.requests.length === 2, 2_000, "A's step 2 beside its result commit");
    await new Promise((r) => setTimeout(r, 20));
    result.release.resolve(null);
    await step2.started;

    // A's lease runs out; B, in the same process, takes the agent at the version of A's third commit.
    clock.advance(LEASE + 1);
    const outB = await runClaim(deps, await claim(gate.store, "a4", "B", clock.now()), "B");
    expect(outB).toMatchObject({ status: "released", state: "done" });
    const seenByB = JSON.stringify(model.requests[2].messages);
    expect(seenByB).toContain("done");
    expect(seenByB).not.toContain("answer 1");
    expect(runs).toEqual(["c1"]);
    expect(JSON.stringify(await gate.store.readMessages("a4"))).not.toContain("answer 1");
  });

  for (const applies of [true, false]) {
    it(`deltas of the model step beside the start commit wait for it, and are ${applies ? "sent once it applied" : "dropped when it was refused"}`, async () => {
      const clock = manualClock();
      const marks: Mark[] = [];
      const gate = gatedStore(fresh(), marks);
      const published: Array<{ msg: LiveMessage; startAnswered: boolean }> = [];
      const live: LiveChannel = {
        reach: "process",
        publish: (_agentId, msg) => published.push({ msg, startAnswered: marks.some((m) => m.what === "answered" && m.n === 1) }),
        subscribe: () => () => {},
      };
      const modelDone = deferred<void>();
      const model = recordingModel(async (req) => {
        if (req.step === 1) {
          req.onChunk?.("first ");
          req.onChunk?.("second");
          modelDone.resolve();
        }
        return { toolCalls: [{ id: `s${req.step}`, name: "submit_result", args: { result: "ok" } }] };
      });
      const agent = defineAgent({ name: "p", instructions: "stream", model, tools: [] });
      await enqueue(gate.store, clock, "a5", agent, "go");
      const start = gate.hold("A");
      const runA = runClaim(hostDeps(gate.store, [agent], clock, { live }), await claim(gate.store, "a5", "A", clock.now()), "A");
      await start.started;
      await modelDone.promise;
      await new Promise((r) => setTimeout(r, 20));
      // The call streamed two pieces while the start commit was in flight: nothing of them went out.
      expect(published.filter((p) => p.msg.type === "delta")).toEqual([]);
      start.release.resolve(applies ? null : { status: "conflict", reason: "fenced" });
      const out = await runA;
      const deltas = published.filter((p) => p.msg.type === "delta");
      if (applies) {
        expect(out).toMatchObject({ status: "released", state: "done" });
        expect(deltas.map((d) => (d.msg as { text: string }).text).join("")).toBe("first second");
        expect(deltas.every((d) => d.startAnswered)).toBe(true);
      } else {
        expect(out).toMatchObject({ status: "fenced" });
        expect(deltas).toEqual([]);
      }
    });
  }
});
