/**
 * Delegation under crashes, on the Redis (TCP) store, with worker processes
 * (tests/helpers/worker-process.ts running tests/helpers/delegation-team.ts)
 * that are SIGKILLed: a `lead` hands its task to a `helper` child. Kills
 * land in the middle of the child's turn, around the child's end (before,
 * between its final commit and its push, after), while the lead's worker
 * holds the lead with the child's result in its inbox, and after a failing
 * child's end; two workers race pushes and pulls.
 *
 * Invariants checked after every run (`checkTeamRun`):
 * - the lead's turn ends `done` exactly once, and its output is the helper's
 *   result (or, for a failing helper, the `delegation_failed` error);
 * - the lead's call is resolved once, by the delegation (source
 *   `delegation`), and applied once (one TOOL_RESULT in the lead's log),
 *   although the push, the pull and a test's extra deliveries may all try;
 * - the helper's task was enqueued once and its turn ended once, although
 *   dispatch is repeated by every poll claim of the lead;
 * - a delivery made again afterwards changes nothing (`duplicate`).
 */
import { afterAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { redisStore } from "../../redis.ts";
import type { Store } from "../../store/port.ts";
import { childAgentId, childOutcome, childTurnIdOf, deliverChildResult } from "../../actors/delegation/delegation.ts";
import type { TeamRecord, TeamTaskInput } from "../helpers/delegation-team.ts";
import { sleep, spawnWorker, waitFor, type WorkerHandle } from "../helpers/processes.ts";
import { useRedisServer } from "../helpers/redis.ts";

const LEASE_MS = 500;
const POLL_MS = 300;

const redis = useRedisServer();
const workers: WorkerHandle[] = [];
afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
});

let runs = 0;
async function teamRun() {
  const prefix = `deleg_${Date.now().toString(36)}_${++runs}`;
  const store: Store = redisStore({ url: redis.url, prefix });
  const side = new Redis(redis.url);
  const sideKey = `${prefix}:side`;
  const spawn = async (name: string) => {
    const w = await spawnWorker({
      name, store: { kind: "redis", url: redis.url, prefix }, sideUrl: redis.url, sideKey,
      leaseMs: LEASE_MS, concurrency: 2, modelMs: 5, logLevel: "warn", delegationPollMs: POLL_MS,
    });
    workers.push(w);
    await w.ready;
    return w;
  };
  const records = async () => (await side.lrange(sideKey, 0, -1)).map((x) => JSON.parse(x) as TeamRecord);
  const enqueue = async (agentId: string, input: TeamTaskInput) => {
    const r = await store.enqueueTask({ agentId, agentName: "lead", workerTarget: "default", input, options: {}, turnId: `turn_${input.label}`, now: Date.now() });
    if (r.status === "definition_conflict") throw new Error(`${agentId} is bound to ${r.boundTo}`);
    if (r.status === "agent_deleted") throw new Error(`${agentId} was deleted`);
    if (r.status === "too_many_delayed") throw new Error(`${agentId} holds ${r.limit} delayed tasks`);
    return r.turnId;
  };
  const close = async () => {
    side.disconnect();
    await store.close();
  };
  return { store, spawn, records, enqueue, close };
}

async function waitDone(store: Store, agentId: string, ms = 20_000) {
  await waitFor(`${agentId} done`, async () => {
    const h = await store.getAgent(agentId);
    return h && h.activeTurnId === null && (h.state === "done" || h.state === "failed") && h;
  }, ms);
}

async function checkTeamRun(store: Store, leadId: string, turnId: string, expected: "ok" | "failed") {
  const lead = await store.getAgent(leadId);
  expect(lead!.state).toBe("done");
  const events = await store.readEvents(leadId, 0, 10_000);
  expect(events.filter((e) => e.type === "task")).toHaveLength(1);
  const calls = (await store.getToolCalls(leadId, turnId)).filter((c) => c.name === "helper");
  expect(calls).toHaveLength(1);
  const call = calls[0];
  const results = events.filter((e) => e.type === "transition" && (e.data as any).event.type === "TOOL_RESULT" && (e.data as any).event.toolCallId === call.toolCallId);
  expect(results).toHaveLength(1);
  expect(call).toMatchObject({ status: "resolved", source: "delegation", name: "helper" });

  const childId = await childAgentId(leadId, turnId, call.toolCallId, "helper");
  const childTurn = await childTurnIdOf(leadId, turnId, call.toolCallId);
  const childEvents = await store.readEvents(childId, 0, 10_000);
  expect(childEvents.filter((e) => e.type === "task_enqueued")).toHaveLength(1);
  expect(childEvents.filter((e) => e.type === "task")).toHaveLength(1);
  expect(childEvents.filter((e) => e.type === "delegated_by").map((e) => (e.data as any).parentAgentId)).toEqual([leadId]);
  const output = (lead!.snapshot as any).context.output;
  if (expected === "ok") {
    expect(call.outcome).toMatchObject({ ok: true, value: { label: expect.any(String) } });
    expect(output).toEqual({ child: (call.outcome as any).value });
  } else {
    expect(call.outcome).toMatchObject({ ok: false, error: { type: "delegation_failed", metadata: { reason: "model_error" } } });
    expect(output).toEqual({ child: { error: (call.outcome as any).error } });
  }
  // A late delivery (a push retried after all, a second pull) changes nothing.
  const outcome = await childOutcome(store, childId, childTurn);
  expect(outcome).toEqual(call.outcome);
  const again = await deliverChildResult(store, {
    link: { parentAgentId: leadId, parentAgentName: "lead", toolName: "helper", parentTurnId: turnId, toolCallId: call.toolCallId, depth: 1 },
    childAgentId: childId, childTurnId: childTurn, outcome: outcome!, tool: undefined, now: Date.now(),
  });
  expect(again.status).toBe("duplicate");
  expect((await store.getToolCalls(leadId, turnId)).find((c) => c.toolCallId === call.toolCallId)).toEqual(call);
}

describe("faults: delegation with SIGKILLed workers (Redis)", () => {
  it("the child's worker is killed mid-turn: another worker takes the child over and the result still reaches the parent once", async () => {
    const run = await teamRun();
    try {
      const w1 = await run.spawn("w1");
      const turnId = await run.enqueue("lead-1", { label: "a", ms: 1_500 });
      // The helper's work tool is running in w1: kill w1 in the middle of the child's turn.
      await waitFor("helper work started", async () => (await run.records()).some((r) => r.phase === "start" && r.worker === "w1"), 10_000);
      w1.signal("SIGKILL");
      await w1.exited;
      await run.spawn("w2");
      await waitDone(run.store, "lead-1");
      await checkTeamRun(run.store, "lead-1", turnId, "ok");
      const recs = await run.records();
      expect(recs.some((r) => r.phase === "done" && r.worker === "w2")).toBe(true);
      expect(recs.some((r) => r.phase === "done" && r.worker === "w1")).toBe(false);
    } finally {
      await run.close();
    }
  }, 40_000);

  it("the worker is killed around the moment the child finishes (before, during or after its push): the parent still gets the result once", async () => {
    // Delays after the child's work reported `done`: the kill lands before the child's commit, between
    // the commit and the push, or while the parent applies the result.
    // "ended": the kill follows the commit that ended the child's turn as closely as the test can see it,
    // which lands between that commit and the push to the parent in some runs.
    for (const trigger of [0, 5, 20, "ended", "ended", "ended"] as const) {
      const run = await teamRun();
      try {
        const w1 = await run.spawn("w1");
        const turnId = await run.enqueue("lead-k", { label: `k${trigger}`, ms: 300 });
        await waitFor("helper work done", async () => (await run.records()).some((r) => r.phase === "done"), 10_000, 1);
        if (trigger === "ended") {
          const [call] = await run.store.getToolCalls("lead-k", turnId);
          const childId = await childAgentId("lead-k", turnId, call.toolCallId, "helper");
          await waitFor("helper turn ended", async () => (await run.store.getAgent(childId))?.state === "done", 10_000, 1);
        } else if (trigger > 0) await sleep(trigger);
        w1.signal("SIGKILL");
        await w1.exited;
        const w2 = await run.spawn("w2");
        await waitDone(run.store, "lead-k");
        await checkTeamRun(run.store, "lead-k", turnId, "ok");
        await w2.stop();
      } finally {
        await run.close();
      }
    }
  }, 120_000);

  it("the parent's worker is killed while the child finishes: the result pushed into the held parent's inbox is applied once by the next worker", async () => {
    const run = await teamRun();
    try {
      const w1 = await run.spawn("w1");
      // The lead holds its lease in w1 (its stall tool runs 2 s) while the helper, run by w1's other loop, finishes.
      const turnId = await run.enqueue("lead-p", { label: "p", ms: 100, leadMs: 2_000 });
      // The helper's result lands in the lead's inbox while w1 still holds the lead.
      const lead = await waitFor("helper result pushed", async () => {
        const h = await run.store.getAgent("lead-p");
        return h && h.pendingMail > 0 && h.leaseOwner !== null && h.leaseUntil > Date.now() && h;
      }, 10_000, 1);
      expect(lead!.state).toBe("waiting-tools");
      w1.signal("SIGKILL");
      await w1.exited;
      await run.spawn("w2");
      await waitDone(run.store, "lead-p");
      await checkTeamRun(run.store, "lead-p", turnId, "ok");
    } finally {
      await run.close();
    }
  }, 40_000);

  it("a child that fails arrives as an error outcome, also when the worker dies right after the child's turn ended", async () => {
    const run = await teamRun();
    try {
      const w1 = await run.spawn("w1");
      const turnId = await run.enqueue("lead-f", { label: "f", ms: 0, fail: true });
      await waitDone(run.store, "lead-f");
      await checkTeamRun(run.store, "lead-f", turnId, "failed");
      w1.signal("SIGKILL");
      await w1.exited;

      // The same with a kill as soon as the child's failed turn is committed.
      const w2 = await run.spawn("w2");
      const turn2 = await run.enqueue("lead-g", { label: "g", ms: 0, fail: true });
      await waitFor("helper failed", async () => {
        const calls = await run.store.getToolCalls("lead-g", turn2);
        if (calls.length === 0) return false;
        const h = await run.store.getAgent(await childAgentId("lead-g", turn2, calls[0].toolCallId, "helper"));
        return h?.state === "failed";
      }, 10_000, 1);
      w2.signal("SIGKILL");
      await w2.exited;
      await run.spawn("w3");
      await waitDone(run.store, "lead-g");
      await checkTeamRun(run.store, "lead-g", turn2, "failed");
    } finally {
      await run.close();
    }
  }, 60_000);

  it("duplicate deliveries: several parents' results pushed and pulled by two workers are applied once each", async () => {
    const run = await teamRun();
    try {
      await run.spawn("w1");
      await run.spawn("w2");
      const turns = await Promise.all(Array.from({ length: 6 }, (_, i) => run.enqueue(`lead-d${i}`, { label: `d${i}`, ms: 50 + 40 * i })));
      for (let i = 0; i < 6; i++) await waitDone(run.store, `lead-d${i}`);
      for (let i = 0; i < 6; i++) await checkTeamRun(run.store, `lead-d${i}`, turns[i], "ok");
    } finally {
      await run.close();
    }
  }, 60_000);
});
