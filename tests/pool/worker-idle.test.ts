/**
 * Idle cost of the worker pool and the watchdog loop (actors/pool/pool.ts,
 * actors/pool/watchdog-loop.ts): the idle wait backs off from `pollMs` to
 * `idlePollMaxMs`, one loop polls for the pool, work enqueued through this
 * process's routes is claimed at once whatever the backoff, a due time
 * known to the store is never slept past, and work enqueued by another
 * process is found within the cap. Real timers, memory store, calls counted
 * by a wrapping store.
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, memoryStore, scriptedModel } from "../../mod.ts";
import type { Gatehouse, GatehouseOptions } from "../../mod.ts";
import { callCounting } from "../helpers/call-counting.ts";
import { jsonRequest } from "../helpers/http.ts";

const quick = defineAgent({
  name: "quick",
  instructions: "answer at once",
  model: scriptedModel(() => ({ toolCalls: [{ name: "submit_result", args: { result: { ok: true } } }] })),
});


const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const post = (path: string, body: unknown) => jsonRequest("POST", path, body, {}, "http://g");

async function stateOf(g: Gatehouse, id: string): Promise<string> {
  return ((await (await g.fetch(new Request(`http://g/v1/agents/${id}`))).json()) as { state: string }).state;
}
async function until(g: Gatehouse, id: string, state: string, limitMs: number): Promise<number> {
  const t0 = Date.now();
  while (Date.now() - t0 < limitMs) {
    if ((await stateOf(g, id)) === state) return Date.now() - t0;
    await sleep(5);
  }
  throw new Error(`Cannot see agent "${id}" ${state}: not within ${limitMs} ms`);
}

const open: Gatehouse[] = [];
function gatehouse(opts: GatehouseOptions): Gatehouse {
  const g = createGatehouse(opts);
  open.push(g);
  return g;
}
afterEach(async () => {
  for (const g of open.splice(0)) await g.stopWorker();
});

describe("idle worker pool", () => {
  it("idle store calls per second fall with the backoff, and do not grow with the loops", async () => {
    const rates: Record<string, { early: number; late: number }> = {};
    for (const concurrency of [1, 8]) {
      const c = callCounting(memoryStore());
      const g = gatehouse({ agents: [quick], store: c.store, concurrency, pollMs: 10, idlePollMaxMs: 160, watchdogIntervalMs: 50, watchdogIdleMaxMs: 400 });
      g.startWorker();
      await sleep(300);
      const early = c.total();
      await sleep(900);
      const mid = c.total();
      await sleep(1000);
      const late = c.total() - mid;
      await g.stopWorker();
      rates[concurrency] = { early: (early * 1000) / 300, late };
      // At the caps: 2 calls (claimNext, nextReadyAt) per 160 ms and one watchdog peek per 400 ms.
      expect(late).toBeLessThanOrEqual(2 * Math.ceil(1000 / 160) + Math.ceil(1000 / 400) + 2);
      expect(late).toBeGreaterThan(0);
      expect(rates[concurrency].early).toBeGreaterThan(late * 1.5);
    }
    // Eight loops cost what one costs: only the sentinel polls.
    expect(rates[8].late).toBeLessThanOrEqual(rates[1].late + 4);
  });

  it("a task enqueued through this process's routes is claimed at once, even at the cap", async () => {
    const c = callCounting(memoryStore());
    // pollMs = idlePollMaxMs = 30 s: the sentinel's first empty poll already sleeps the whole cap.
    const g = gatehouse({ agents: [quick], store: c.store, pollMs: 30_000, idlePollMaxMs: 30_000 });
    g.startWorker();
    await sleep(200);
    const claimsBefore = c.calls.claimNext ?? 0;
    expect((await g.fetch(post("/v1/agents/now1/tasks", { agent: "quick", input: "go" }))).status).toBe(202);
    expect(await until(g, "now1", "done", 2_000)).toBeLessThan(1_000);
    expect(c.calls.claimNext).toBeGreaterThan(claimsBefore);
  });

  it("a task posted to an idle pool of 32 loops costs a few polls, not one per loop", async () => {
    const c = callCounting(memoryStore());
    const g = gatehouse({ agents: [quick], store: c.store, concurrency: 32, pollMs: 10, idlePollMaxMs: 5_000, watchdogIntervalMs: 60_000 });
    g.startWorker();
    await sleep(400);
    const before = c.calls.claimNext ?? 0;
    expect((await g.fetch(post("/v1/agents/n1/tasks", { agent: "quick", input: "x" }))).status).toBe(202);
    await until(g, "n1", "done", 1_000);
    await sleep(50);
    // The sentinel's claim, the sibling it wakes, and a poll or two after the turn: not 32.
    expect((c.calls.claimNext ?? 0) - before).toBeLessThanOrEqual(6);
  });

  it("a due time set in the store (a claim retry backoff) is honoured on time, not at the cap", async () => {
    const c = callCounting(memoryStore(), { failCommits: 1 });
    const g = gatehouse({ agents: [quick], store: c.store, pollMs: 30_000, idlePollMaxMs: 30_000, claimRetryBackoffMs: 400 });
    g.startWorker();
    await sleep(100);
    const t0 = Date.now();
    expect((await g.fetch(post("/v1/agents/retry1/tasks", { agent: "quick", input: "go" }))).status).toBe(202);
    await until(g, "retry1", "done", 5_000);
    const took = Date.now() - t0;
    expect(c.calls.recordClaimFailure).toBe(1);
    expect(took).toBeGreaterThanOrEqual(380);
    expect(took).toBeLessThan(2_000);
  });

  it("a bell rung by another process (no in-process wake) is found within the cap", async () => {
    const shared = memoryStore();
    const worker = gatehouse({ agents: [quick], store: shared, pollMs: 20, idlePollMaxMs: 300 });
    const other = gatehouse({ agents: [quick], store: shared }); // routes only: its wake reaches no running pool
    worker.startWorker();
    await sleep(1_500); // 20 + 40 + … : the sentinel is at the 300 ms cap
    expect((await other.fetch(post("/v1/agents/far1/tasks", { agent: "quick", input: "go" }))).status).toBe(202);
    const took = await until(worker, "far1", "done", 3_000);
    expect(took).toBeLessThan(300 + 400);
  });

  it("with idlePollMaxMs = pollMs a lone sentinel polls at a fixed interval (the cost before the backoff, divided by the loops)", async () => {
    const c = callCounting(memoryStore());
    const g = gatehouse({ agents: [quick], store: c.store, concurrency: 4, pollMs: 100, idlePollMaxMs: 100, watchdogIntervalMs: 1_000, watchdogIdleMaxMs: 1_000 });
    g.startWorker();
    await sleep(500);
    const before = c.calls.claimNext ?? 0;
    await sleep(1_000);
    const polls = (c.calls.claimNext ?? 0) - before;
    expect(polls).toBeGreaterThanOrEqual(5);
    expect(polls).toBeLessThanOrEqual(11);
  });
});

describe("idle watchdog loop", () => {
  const check = defineTool({ name: "slow_check", description: "External check", parameters: z.object({}), timeoutMs: 300 });
  const waiter = defineAgent({
    name: "waiter",
    instructions: "",
    tools: [check],
    model: scriptedModel([
      { toolCalls: [{ id: "k1", name: "slow_check", args: {} }] },
      { toolCalls: [{ name: "submit_result", args: { result: { timedOut: true } } }] },
    ]),
  });

  it("backs off while nothing is due, yet times out a deadline written by this process's claim on time", async () => {
    const c = callCounting(memoryStore());
    const g = gatehouse({ agents: [waiter], store: c.store, watchdogIntervalMs: 50, watchdogIdleMaxMs: 30_000 });
    g.startWorker();
    await sleep(1_600); // peeks after 50, 150, 350, 750, 1550 ms: the next sleep is 1.6 s
    const peeks = c.calls.dueToolCalls ?? 0;
    expect(peeks).toBeLessThanOrEqual(6);
    const t0 = Date.now();
    expect((await g.fetch(post("/v1/agents/w1/tasks", { agent: "waiter", input: "go" }))).status).toBe(202);
    await until(g, "w1", "done", 5_000);
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(300);
    expect(took).toBeLessThan(300 + 50 + 600);
  });
});

describe("idle pool on a single-consumer target held by another process", () => {
  it("sleeps until that lease ends instead of polling the target's due bells, then takes over", async () => {
    const TARGET = "svc1_idle_test_01";
    const svc = defineAgent({
      name: "svc",
      instructions: "x",
      workerTarget: TARGET,
      model: scriptedModel(() => ({ toolCalls: [{ name: "submit_result", args: { result: { ok: true } } }] })),
    });
    const inner = memoryStore();
    const t0 = Date.now();
    expect(await inner.acquireTargetLease({ workerTarget: TARGET, holder: "other-process", leaseMs: 1_000, now: t0 })).toMatchObject({ status: "held" });
    await inner.enqueueTask({ agentId: "s1", agentName: "svc", workerTarget: TARGET, input: "x", options: {}, turnId: "t_s1", now: t0 });
    const c = callCounting(inner);
    // 4 loops: each loop tries once when it starts (counted below), whatever the default concurrency.
    const g = gatehouse({ agents: [svc], store: c.store, concurrency: 4, pollMs: 10, idlePollMaxMs: 30_000, leaseMs: 3_000 });
    g.startWorker();
    await sleep(600);
    // The bell is due all along; sleeping until it (1 ms) would cost a call every few ms. Backing
    // off from 10 ms: 4 first attempts, then about one per doubling (10, 20, 40, … 320 ms).
    expect((c.calls.acquireTargetLease ?? 0) + (c.calls.claimNext ?? 0) + (c.calls.nextReadyAt ?? 0)).toBeLessThanOrEqual(12);
    await until(g, "s1", "done", 3_000);
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(1_000);
    expect(took).toBeLessThan(1_800);
  });
});
