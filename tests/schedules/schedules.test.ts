/**
 * Recurring schedules over HTTP and the worker pool, on the memory store with
 * a clock the test moves (the store side runs on every adapter in
 * tests/store/store-conformance-schedules.ts; several worker processes on one Redis
 * in tests/schedules/schedules-processes.int.test.ts).
 *
 * Ticks are counted by the idempotency keys of the tasks they enqueued
 * (`schedule:<id>:<tick ISO>`), read back from the agent's event log, never
 * by how long anything took.
 */
import { describe, expect, it } from "vitest";
import { createGatehouse, defineAgent, memoryStore, scriptedModel } from "../../mod.ts";
import type { Store } from "../../mod.ts";
import { manualClock } from "../helpers/clock.ts";
import { memoryStoreState } from "../../store/memory.ts";
import { MAX_CATCH_UP, nextTickAfter, planTick, scheduleKey } from "../../common/schedule.ts";

const T0 = Date.UTC(2026, 0, 1, 0, 0, 0);

function setup() {
  const store: Store = memoryStore();
  const clock = manualClock(T0);
  const agent = defineAgent({ name: "reporter", instructions: "", model: scriptedModel(() => ({ text: "ok" })) });
  const other = defineAgent({ name: "other", instructions: "", model: scriptedModel(() => ({ text: "ok" })) });
  const gh = createGatehouse({ agents: [agent, other], store, clock });
  const call = (method: string, path: string, body?: unknown) =>
    gh.fetch(new Request(`http://gh.test${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }));
  /**
   * The idempotency keys of the agent's tasks, in enqueue order (the memory store's entries), after checking
   * that every task the agent got is one of them (one `task_enqueued` event per key).
   */
  const keys = async (agentId = "a1") => {
    const entry = memoryStoreState(store).agents.find(([id]) => id === agentId);
    const out = entry ? (entry[1] as unknown as { idempotency: Array<[string, string]> }).idempotency.map(([k]) => k) : [];
    const enqueued = (await store.readEvents(agentId, 0, 10_000)).filter((e) => e.type === "task_enqueued");
    expect(enqueued).toHaveLength(out.length);
    return out;
  };
  return { gh, call, clock, store, keys };
}

async function problem(res: Response, status: number, code: string): Promise<{ detail: string }> {
  expect(res.status).toBe(status);
  const body = await res.json();
  expect(body.code).toBe(code);
  return body;
}

describe("routes: schedules", () => {
  it("PUT creates (201) then replaces (200); GET one and the list; DELETE; an unknown schedule is 404 schedule_not_found", async () => {
    const { call } = setup();
    const put = await call("PUT", "/v1/agents/a1/schedules/nightly", { agent: "reporter", input: "report", cron: "0 3 * * *", timezone: "Europe/Berlin" });
    expect(put.status).toBe(201);
    const view = await put.json();
    expect(view).toMatchObject({
      agentId: "a1", scheduleId: "nightly", agent: "reporter", input: "report", cron: "0 3 * * *", timezone: "Europe/Berlin", catchUp: "last",
      nextRunAt: "2026-01-01T02:00:00.000Z", lastFired: null,
    });
    const again = await call("PUT", "/v1/agents/a1/schedules/nightly", { agent: "reporter", input: { n: 1 }, everyMs: 60_000, catchUp: "all" });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ input: { n: 1 }, everyMs: 60_000, catchUp: "all", nextRunAt: new Date(T0 + 60_000).toISOString() });
    await call("PUT", "/v1/agents/a1/schedules/hourly", { agent: "reporter", input: "x", cron: "0 * * * *" });
    const list = await (await call("GET", "/v1/agents/a1/schedules")).json();
    expect(list.schedules.map((s: { scheduleId: string }) => s.scheduleId)).toEqual(["hourly", "nightly"]);
    expect((await (await call("GET", "/v1/agents/a1/schedules/hourly")).json()).cron).toBe("0 * * * *");
    expect((await call("DELETE", "/v1/agents/a1/schedules/hourly")).status).toBe(200);
    await problem(await call("DELETE", "/v1/agents/a1/schedules/hourly"), 404, "schedule_not_found");
    await problem(await call("GET", "/v1/agents/a1/schedules/hourly"), 404, "schedule_not_found");
  });

  it.each([
    ["a bad cron expression", { cron: "61 * * * *" }, "cron", /minute/],
    ["a cron of 4 fields", { cron: "* * * *" }, "cron", /5 fields/],
    ["a cron of 7 fields", { cron: "0 0 0 1 1 * 2030" }, "cron", /5 fields/],
    ["an unknown time zone", { cron: "0 * * * *", timezone: "Mars/Olympus" }, "timezone", /time zone/],
    ["everyMs under 1000", { everyMs: 500 }, "everyMs", /everyMs must be an integer from 1000 \(1 s\) to 31622400000 \(366 days\), got 500/],
    ["everyMs past 366 days (never fires)", { everyMs: 1e15 }, "everyMs", /everyMs must be an integer from 1000 .* to 31622400000 \(366 days\), got 1000000000000000/],
    ["everyMs not an integer", { everyMs: 1_500.5 }, "everyMs", /everyMs must be an integer/],
    ["both cron and everyMs", { cron: "0 * * * *", everyMs: 60_000 }, "cron", /exactly one of `cron` and `everyMs`, not both/],
    ["neither cron nor everyMs", {}, "cron", /exactly one of `cron` and `everyMs`: neither/],
    ["a cron naming no future time", { cron: "0 0 30 2 *" }, "cron", /no time/],
  ])("%s is 400 validation_failed whose detail names the field and the rule, and nothing is stored", async (_name, timing, field, reason) => {
    const { call, store } = setup();
    const res = await call("PUT", "/v1/agents/a1/schedules/s", { agent: "reporter", input: "x", ...timing });
    const body = await problem(res, 400, "validation_failed") as { detail: string; errors: Array<{ path: string[] }> };
    expect(body.detail).toMatch(reason);
    expect(body.detail).toContain(field);
    expect(body.errors.map((e) => e.path.join("."))).toContain(field);
    expect(await store.listSchedules("a1")).toEqual([]);
  });

  it("an unknown catchUp is 400 validation_failed, and nothing is stored", async () => {
    const { call, store } = setup();
    await problem(await call("PUT", "/v1/agents/a1/schedules/s", { agent: "reporter", input: "x", everyMs: 60_000, catchUp: "some" }), 400, "validation_failed");
    expect(await store.listSchedules("a1")).toEqual([]);
  });

  it("an agent holds at most maxSchedulesPerAgent schedules: a new one past it is 409 schedule_limit and stores nothing; a replace is not refused", async () => {
    const store: Store = memoryStore();
    const agent = defineAgent({ name: "reporter", instructions: "", model: scriptedModel(() => ({ text: "ok" })) });
    const gh = createGatehouse({ agents: [agent], store, clock: manualClock(T0), maxSchedulesPerAgent: 3 });
    const put = (id: string, everyMs = 60_000) => gh.fetch(new Request(`http://gh.test/v1/agents/a1/schedules/${id}`, {
      method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ agent: "reporter", input: "x", everyMs }),
    }));
    for (const id of ["s0", "s1", "s2"]) expect((await put(id)).status).toBe(201);
    const refused = await problem(await put("s3"), 409, "schedule_limit") as { detail: string; limit: number };
    expect(refused.limit).toBe(3);
    expect(refused.detail).toMatch(/maxSchedulesPerAgent/);
    expect((await store.listSchedules("a1")).map((s) => s.scheduleId)).toEqual(["s0", "s1", "s2"]);
    expect((await put("s1", 5_000)).status).toBe(200);
    expect(() => createGatehouse({ agents: [agent], store, maxSchedulesPerAgent: 0 })).toThrow(/maxSchedulesPerAgent/);
  });

  it("binds like a task: another definition is 409, an unknown one 422; the agent view lists its schedules", async () => {
    const { call } = setup();
    expect((await call("POST", "/v1/agents/a1/tasks", { agent: "reporter", input: "hi" })).status).toBe(202);
    await problem(await call("PUT", "/v1/agents/a1/schedules/s", { agent: "other", input: "x", everyMs: 5_000 }), 409, "agent_definition_conflict");
    await problem(await call("PUT", "/v1/agents/a1/schedules/s", { agent: "nobody", input: "x", everyMs: 5_000 }), 422, "unknown_agent_definition");
    await call("PUT", "/v1/agents/a1/schedules/s", { agent: "reporter", input: "x", everyMs: 5_000 });
    const agent = await (await call("GET", "/v1/agents/a1")).json();
    expect(agent.schedules).toEqual([{ scheduleId: "s", everyMs: 5_000, nextRunAt: new Date(T0 + 5_000).toISOString() }]);
  });
});

describe("schedules: ticks fired by the pool", () => {
  it("each due tick enqueues one task under schedule:<id>:<tick ISO>; nothing before it is due, nothing after DELETE", async () => {
    const { gh, call, clock, keys } = setup();
    await call("PUT", "/v1/agents/a1/schedules/s", { agent: "reporter", input: "tick", everyMs: 1_000 });
    await gh.drain();
    expect(await keys()).toEqual([]);
    for (let i = 1; i <= 5; i++) {
      clock.set(T0 + i * 1_000);
      await gh.drain();
      await gh.drain(); // a second pass finds nothing more to fire
    }
    expect(await keys()).toEqual([1, 2, 3, 4, 5].map((i) => scheduleKey("s", T0 + i * 1_000)));
    const view = await (await call("GET", "/v1/agents/a1/schedules/s")).json();
    expect(view.lastFired).toMatchObject({ tickMs: T0 + 5_000 });
    await call("DELETE", "/v1/agents/a1/schedules/s");
    clock.set(T0 + 10_000);
    await gh.drain();
    expect(await keys()).toHaveLength(5);
  });

  it.each([
    ["last", [T0 + 50 * 60_000]],
    ["none", []],
    ["all", Array.from({ length: 10 }, (_, i) => T0 + (i + 1) * 5 * 60_000)],
  ] as const)("catchUp %s: after 10 missed ticks, the right ones fire (once), then the schedule runs on time", async (catchUp, fired) => {
    const { gh, call, clock, keys } = setup();
    await call("PUT", "/v1/agents/a1/schedules/m", { agent: "reporter", input: "x", cron: "*/5 * * * *", catchUp });
    clock.set(T0 + 52 * 60_000); // every worker was down for 10 ticks; the latest is 2 minutes old
    await gh.drain();
    await gh.drain();
    expect(await keys()).toEqual(fired.map((t) => scheduleKey("m", t)));
    expect((await (await call("GET", "/v1/agents/a1/schedules/m")).json()).nextRunAtMs).toBe(T0 + 55 * 60_000);
    clock.set(T0 + 55 * 60_000 + 500);
    await gh.drain();
    expect((await keys()).slice(-1)).toEqual([scheduleKey("m", T0 + 55 * 60_000)]);
    expect(await keys()).toHaveLength(fired.length + 1);
  });

  it.each([
    ["an interval", { everyMs: 1_000 }],
    ["a seconds cron", { cron: "* * * * * *" }],
    ["a seconds cron in a time zone", { cron: "* * * * * *", timezone: "America/New_York" }],
  ])("catchUp all after a day's outage (%s) fires the latest MAX_CATCH_UP ticks, each once, then the next future tick", (_name, timing) => {
    const spec = { input: null, ...timing, catchUp: "all" as const, anchor: T0 };
    const now = T0 + 86_400_000 + 500;
    const fired: number[] = [];
    let due: number | null = T0 + 1_000;
    for (let i = 0; i < 1_000 && due !== null && due <= now; i++) {
      const step = planTick(spec, due, now);
      if (step.fire !== null) fired.push(step.fire);
      due = step.next;
    }
    expect(fired).toHaveLength(MAX_CATCH_UP);
    expect(new Set(fired).size).toBe(MAX_CATCH_UP);
    expect(fired).toEqual([...fired].sort((a, b) => a - b));
    expect(fired[fired.length - 1]).toBe(T0 + 86_400_000);
    expect(due).toBe(nextTickAfter(spec, now));
    expect(planTick({ ...spec, catchUp: "last" }, T0 + 1_000, now)).toEqual({ fire: T0 + 86_400_000, next: T0 + 86_401_000 });
    expect(planTick({ ...spec, catchUp: "none" }, T0 + 1_000, now)).toEqual({ fire: T0 + 86_400_000, next: T0 + 86_401_000 });
  });

  it("deleteAgent removes the agent's schedules: no tick fires after it", async () => {
    const { gh, call, clock, keys, store } = setup();
    await call("PUT", "/v1/agents/a1/schedules/s", { agent: "reporter", input: "x", everyMs: 1_000 });
    clock.set(T0 + 1_000);
    await gh.drain();
    expect(await keys()).toHaveLength(1);
    expect((await call("DELETE", "/v1/agents/a1")).status).toBe(200);
    expect(await store.listSchedules("a1")).toEqual([]);
    clock.set(T0 + 5_000);
    await gh.drain();
    expect(await store.getAgent("a1")).toBeNull();
    expect(await store.nextReadyAt("default")).toBeNull();
  });
});
