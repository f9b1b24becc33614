/**
 * Delayed tasks over HTTP (`delayMs` / `runAt` of `POST /v1/agents/:agentId/tasks`,
 * store invariant `delayed-tasks`), on the memory store and on Redis: the
 * 202 with `runAt`, not started before it and started after, cancelled
 * before it and never started, the order rule against immediate tasks,
 * idempotency, `Prefer: wait`, the agent view's `queuedTasks`, bad input;
 * then a running worker pool (system clock, polling turned down to one poll
 * a minute) that starts the task when it comes due, from its bell, and a
 * Workers handler whose cron drives it. The store side is covered by
 * tests/store/store-conformance.ts on every adapter.
 *
 * No verdict depends on machine speed: the clock is a manual one where it
 * decides, and with the system clock "not early" is read from the times the
 * store recorded (the turn's first event is at or after `runAt`), "after"
 * waits with a generous bound.
 */
import { describe, expect, it } from "vitest";
import { createGatehouse, createWorkersHandler, defineAgent, type GatehouseOptions, scriptedModel } from "../../mod.ts";
import type { WorkersExecutionContext } from "../../mod.ts";
import { memoryStore } from "../../store/memory.ts";
import type { Store } from "../../store/port.ts";
import { redisStore } from "../../store/redis.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { configFromEnv } from "../../entry/config.ts";
import { AgentView, EventsPage, MAX_TASK_DELAY_MS, TaskAccepted, TurnView } from "../../routes/schemas.ts";

const T0 = 1_700_000_000_000;
const iso = (ms: number) => new Date(ms).toISOString();
const server = useRedisServer();
let n = 0;

/** Each entry opens clients on one key space per `space` (two calls with the same space share data). */
const memories = new Map<string, Store>();
const stores: Array<[string, (space: string) => Store]> = [
  ["memory", (space) => memories.get(space) ?? (memories.set(space, memoryStore()), memories.get(space)!)],
  ["redis", (space) => redisStore({ url: server.url, prefix: `dly${space}x${process.pid}` })],
];

const agent = () =>
  defineAgent({
    name: "later",
    instructions: "Answer.",
    model: scriptedModel(() => ({ toolCalls: [{ name: "submit_result", args: { result: "ok" } }] })),
  });

/** The turn's events beyond its enqueue and cancel: any of them means it started. */
async function started(store: Store, agentId: string, turnId: string) {
  const events = await store.readEvents(agentId, 0, 10_000);
  return events.filter((e) => e.turnId === turnId && e.type !== "task_enqueued" && e.type !== "task_cancelled");
}

describe.each(stores)("delayed tasks over HTTP on the %s store", (storeName, open) => {
  function setup(over: Partial<GatehouseOptions> = {}) {
    const clock = { t: T0, now: () => clock.t };
    const store = open(`${++n}`);
    const gh = createGatehouse({ agents: [agent()], clock, store, ...over });
    const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
      const res = await gh.fetch(new Request(`http://gh.test${path}`, {
        method,
        headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      }));
      return { status: res.status, headers: res.headers, body: await res.json() as any };
    };
    const post = (body: Record<string, unknown>, headers?: Record<string, string>) =>
      call("POST", "/v1/agents/a1/tasks", { agent: "later", input: "q", ...body }, headers);
    const turn = async (turnId: string) => TurnView.parse((await call("GET", `/v1/agents/a1/tasks/${turnId}`)).body);
    return { gh, clock, store, call, post, turn };
  }

  it("answers 202 with runAt at once; the task does not start before runAt and starts at it", async () => {
    const { gh, clock, store, call, post, turn } = setup();
    const res = await post({ delayMs: 5_000 });
    expect(res.status).toBe(202);
    const ok = TaskAccepted.parse(res.body);
    expect(ok).toEqual({ agentId: "a1", turnId: ok.turnId, duplicate: false, runAt: iso(T0 + 5_000) });
    await gh.drain();
    expect(await turn(ok.turnId)).toEqual({ agentId: "a1", turnId: ok.turnId, status: "queued", input: "q", runAt: iso(T0 + 5_000),
      waiting: { for: "run_at", runAt: iso(T0 + 5_000) },
    });
    const view = AgentView.parse((await call("GET", "/v1/agents/a1")).body);
    expect(view.queuedTasks).toEqual([{ turnId: ok.turnId, enqueuedAt: iso(T0), runAt: iso(T0 + 5_000) }]);
    // The log's task_enqueued carries runAt, as its documented schema says.
    const page = EventsPage.parse((await call("GET", "/v1/agents/a1/events")).body);
    expect(page.events.find((e) => e.type === "task_enqueued")?.data).toMatchObject({ turnId: ok.turnId, runAt: T0 + 5_000 });
    clock.t = T0 + 4_999;
    await gh.drain();
    expect((await turn(ok.turnId)).status).toBe("queued");
    expect(await started(store, "a1", ok.turnId)).toEqual([]);
    clock.t = T0 + 5_000;
    await gh.drain();
    expect((await turn(ok.turnId)).status).toBe("done");
    expect(AgentView.parse((await call("GET", "/v1/agents/a1")).body).queuedTasks).toEqual([]);
    await gh.close();
  });

  it("runAt takes ISO 8601 with any offset; a runAt in the past is due at once", async () => {
    const { gh, post, turn } = setup();
    const at = T0 + 60_000;
    const plus2 = new Date(at + 2 * 3_600_000).toISOString().replace("Z", "+02:00");
    const r = TaskAccepted.parse((await post({ runAt: plus2 })).body);
    expect(r.runAt).toBe(iso(at));
    const past = TaskAccepted.parse((await post({ runAt: iso(T0 - 3_600_000) })).body);
    expect(past.runAt).toBe(iso(T0));
    await gh.drain();
    expect((await turn(past.turnId)).status).toBe("done");
    expect((await turn(r.turnId)).status).toBe("queued");
    await gh.close();
  });

  it("a delayed task cancelled before runAt never starts: past runAt and a margin it reads cancelled", async () => {
    const { gh, clock, store, call, post, turn } = setup();
    const t = TaskAccepted.parse((await post({ delayMs: 1_000 })).body).turnId;
    const del = await call("DELETE", `/v1/agents/a1/tasks/${t}`);
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({ status: "cancelled", duplicate: false });
    clock.t = T0 + 60_000;
    await gh.drain();
    expect(await turn(t)).toEqual({ agentId: "a1", turnId: t, status: "cancelled", input: "q" });
    expect(await started(store, "a1", t)).toEqual([]);
    expect((await store.getAgent("a1"))!.activeTurnId).toBeNull();
    await gh.close();
  });

  it("an immediate task enqueued after a delayed one starts first; the delayed one waits for its time", async () => {
    const { gh, clock, call, post, turn } = setup();
    const later = TaskAccepted.parse((await post({ delayMs: 5_000 })).body).turnId;
    clock.t = T0 + 1;
    const now = TaskAccepted.parse((await post({})).body);
    expect(now.runAt).toBeUndefined();
    await gh.drain();
    expect((await turn(now.turnId)).status).toBe("done");
    expect((await turn(later)).status).toBe("queued");
    expect(AgentView.parse((await call("GET", "/v1/agents/a1")).body).queuedTasks.map((q) => q.turnId)).toEqual([later]);
    clock.t = T0 + 5_000;
    await gh.drain();
    expect((await turn(later)).status).toBe("done");
    await gh.close();
  });

  it("an idempotency duplicate answers the first task's turnId and runAt and enqueues nothing", async () => {
    const { gh, clock, store, post } = setup();
    const first = TaskAccepted.parse((await post({ delayMs: 5_000, idempotencyKey: "k1" })).body);
    clock.t = T0 + 10;
    const dup = await post({ delayMs: 9_000, idempotencyKey: "k1" });
    expect(dup.status).toBe(202);
    expect(TaskAccepted.parse(dup.body)).toEqual({ agentId: "a1", turnId: first.turnId, duplicate: true, runAt: iso(T0 + 5_000) });
    expect((await store.getAgent("a1"))!.pendingTasks).toBe(1);
    await gh.close();
  });

  it("Prefer: wait on a delayed task answers 202 at once, without Preference-Applied", async () => {
    const { gh, post, turn } = setup();
    const res = await post({ delayMs: 5_000 }, { prefer: "wait=5" });
    expect(res.status).toBe(202);
    expect(res.headers.get("preference-applied")).toBeNull();
    expect((await turn(res.body.turnId)).status).toBe("queued");
    await gh.close();
  });

  it("refuses both fields, a negative, fractional or too long delay, a bad or offsetless date, a runAt too far ahead: 400, nothing enqueued", async () => {
    const { gh, store, post } = setup();
    const bad: Array<Record<string, unknown>> = [
      { delayMs: 1_000, runAt: iso(T0 + 1_000) },
      { delayMs: -1 },
      { delayMs: 1.5 },
      { delayMs: "1000" },
      { delayMs: MAX_TASK_DELAY_MS + 1 },
      { runAt: "2026-13-45T00:00:00Z" },
      { runAt: "2026-05-01T09:00:00" },
      { runAt: "tomorrow" },
      { runAt: iso(T0 + MAX_TASK_DELAY_MS + 1) },
    ];
    for (const body of bad) {
      const res = await post(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code, JSON.stringify(body)).toBe("validation_failed");
    }
    expect(await store.getAgent("a1")).toBeNull();
    // The bounds themselves are accepted.
    expect((await post({ delayMs: MAX_TASK_DELAY_MS })).status).toBe(202);
    expect((await post({ runAt: iso(T0 + MAX_TASK_DELAY_MS) })).status).toBe(202);
    await gh.close();
  });

  it("both delayMs and runAt: 400 naming the two fields and the rule, nothing enqueued", async () => {
    const { gh, store, post } = setup();
    const res = await post({ delayMs: 1_000, runAt: iso(T0 + 1_000) });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("validation_failed");
    expect(res.body.detail).toMatch(/delayMs/);
    expect(res.body.detail).toMatch(/runAt/);
    expect(res.body.detail).toMatch(/not both/);
    expect(res.body.errors).toEqual([expect.objectContaining({ path: ["runAt"] })]);
    expect(await store.getAgent("a1")).toBeNull();
    await gh.close();
  });

  it("maxDelayedTasks bounds the delayed tasks an agent holds: one more is 429 too_many_delayed_tasks naming the bound, nothing changes", async () => {
    const { gh, store, call, post } = setup({ maxDelayedTasks: 2 });
    for (const d of [5_000, 6_000]) expect((await post({ delayMs: d })).status).toBe(202);
    const before = await call("GET", "/v1/agents/a1");
    const events = (await store.readEvents("a1", 0, 100)).length;
    const res = await post({ delayMs: 1_000, idempotencyKey: "k-over" });
    expect(res.status).toBe(429);
    expect(res.body.code).toBe("too_many_delayed_tasks");
    expect(res.body.limit).toBe(2);
    expect(res.body.detail).toMatch(/maxDelayedTasks/);
    expect(await call("GET", "/v1/agents/a1")).toEqual(before);
    expect((await store.readEvents("a1", 0, 100)).length).toBe(events);
    // The key was not taken: an immediate task under it enqueues as new.
    const again = await post({ idempotencyKey: "k-over" });
    expect(again.status).toBe(202);
    expect(again.body.duplicate).toBe(false);
    await gh.close();
  });

  it("maxDelayedTasks must be a whole number from 0: createGatehouse refuses another", () => {
    for (const bad of [-1, 1.5, Number.NaN]) {
      expect(() => createGatehouse({ agents: [agent()], store: memoryStore(), maxDelayedTasks: bad })).toThrow(/maxDelayedTasks/);
    }
  });

  it("GATEHOUSE_MAX_DELAYED_TASKS sets maxDelayedTasks for the servers and is checked", () => {
    expect(configFromEnv({ GATEHOUSE_MAX_DELAYED_TASKS: "5" }).gatehouse.maxDelayedTasks).toBe(5);
    expect(configFromEnv({ GATEHOUSE_MAX_DELAYED_TASKS: "0" }).gatehouse.maxDelayedTasks).toBe(0);
    expect(configFromEnv({}).gatehouse.maxDelayedTasks).toBeUndefined();
    expect(() => configFromEnv({ GATEHOUSE_MAX_DELAYED_TASKS: "-1" })).toThrow(/GATEHOUSE_MAX_DELAYED_TASKS/);
    expect(() => configFromEnv({ GATEHOUSE_MAX_DELAYED_TASKS: "many" })).toThrow(/GATEHOUSE_MAX_DELAYED_TASKS/);
  });

  it("a running pool starts the task from its bell when it comes due, not earlier, with polling turned down", async () => {
    // The system clock. On Redis the enqueuer and the worker are two clients (two processes' worth: the
    // bell reaches the worker by the store's pub/sub); the memory store lives in one process, where the
    // enqueue's wake makes the pool read the next due time.
    const space = `${++n}`;
    const pool = { pollMs: 60_000, idlePollMaxMs: 60_000 };
    const worker = createGatehouse({ agents: [agent()], store: open(space), ...pool });
    const front = storeName === "memory" ? worker : createGatehouse({ agents: [agent()], store: open(space) });
    worker.startWorker();
    try {
      // Let the pool settle into its idle sleep (it polls once at start).
      await new Promise((r) => setTimeout(r, 200));
      const res = await front.fetch(new Request("http://gh.test/v1/agents/a1/tasks", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ agent: "later", input: "q", delayMs: 1_500 }),
      }));
      const ok = TaskAccepted.parse(await res.json());
      const runAt = Date.parse(ok.runAt!);
      const deadline = Date.now() + 20_000;
      let status = "";
      while (Date.now() < deadline) {
        status = (await front.store.getTurn("a1", ok.turnId))!.status;
        if (status === "done") break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(status).toBe("done");
      const events = await started(front.store, "a1", ok.turnId);
      expect(events.length).toBeGreaterThan(0);
      // Not early, however slow the machine: the store recorded its first step at or after runAt.
      expect(events[0].at).toBeGreaterThanOrEqual(runAt);
    } finally {
      await worker.close();
      if (front !== worker) await front.close();
    }
  });
});

describe("delayed tasks on Workers", () => {
  it("the request's drive leaves a delayed task queued; the cron drives it once due", async () => {
    const clock = { t: T0, now: () => clock.t };
    const store = memoryStore();
    const h = createWorkersHandler({ agents: [agent()], store: () => store, clock });
    const env = {};
    const pending: Promise<unknown>[] = [];
    const ctx: WorkersExecutionContext = { waitUntil: (p) => void pending.push(p) };
    const settle = async () => void (await Promise.all(pending.splice(0)));
    const cron = { scheduledTime: 0, cron: "* * * * *" };
    const res = await h.fetch(new Request("http://w/v1/agents/a1/tasks", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ agent: "later", input: "q", delayMs: 120_000 }),
    }), env, ctx);
    const { turnId } = TaskAccepted.parse(await res.json());
    await settle();
    expect((await store.getTurn("a1", turnId))!.status).toBe("queued");
    clock.t = T0 + 60_000;
    await h.scheduled(cron, env, ctx);
    await settle();
    expect((await store.getTurn("a1", turnId))!.status).toBe("queued");
    clock.t = T0 + 120_000;
    await h.scheduled(cron, env, ctx);
    await settle();
    expect((await store.getTurn("a1", turnId))!.status).toBe("done");
  });
});
