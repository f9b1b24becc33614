/**
 * Pausing and resuming a schedule, and the task options a schedule carries
 * (routes/schedules.ts `PATCH`, routes/task-options.ts), over HTTP and the
 * worker pool on one store adapter, with a clock the test moves: a paused
 * schedule fires nothing however far the clock goes; resuming fires the next
 * tick after the resume and none of the ticks passed while paused (even with
 * `catchUp: "all"`); each fired task carries the schedule's options; bad
 * input is 400 and changes nothing; an unknown schedule is 404. Ticks are
 * counted by the agent's `task_enqueued` events, never by how long
 * anything took. Run on memory (pause.test.ts) and Redis (pause.int.test.ts).
 */
import { describe, expect, it } from "vitest";
import { createGatehouse, defineAgent, scriptedModel, type Store } from "../../mod.ts";
import { manualClock } from "../helpers/clock.ts";

const T0 = Date.UTC(2026, 0, 1, 0, 0, 0);

function setup(open: () => Store) {
  const store = open();
  const clock = manualClock(T0);
  const agent = defineAgent({ name: "reporter", instructions: "", model: scriptedModel(() => ({ text: "ok" })) });
  const gh = createGatehouse({ agents: [agent], store, clock });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await gh.fetch(new Request(`http://gh.test${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    }));
    return { status: res.status, body: await res.json() };
  };
  /** The options of the agent's enqueued tasks, in order. */
  const tasks = async () =>
    (await store.readEvents("a1", 0, 10_000)).filter((e) => e.type === "task_enqueued").map((e) => (e.data as { options: unknown }).options);
  /** Moves the clock and lets the pool fire what is due (twice: a second pass finds nothing more). */
  const at = async (ms: number) => {
    clock.set(ms);
    await gh.drain();
    await gh.drain();
  };
  return { gh, call, store, tasks, at };
}

export function pauseSuite(name: string, open: () => Store): void {
  describe(`schedules: pause, resume and task options (${name})`, () => {
    it("a paused schedule fires nothing; resuming fires the next future tick only, not the ticks passed while paused; options ride along", async () => {
      const { call, store, tasks, at } = setup(open);
      const put = await call("PUT", "/v1/agents/a1/schedules/s", {
        agent: "reporter", input: "tick", everyMs: 1_000, catchUp: "all", verifyAttempts: 2, spendLimit: { maxTokensPerTurn: 500 },
      });
      expect(put.status).toBe(201);
      expect(put.body).toMatchObject({ paused: false, verifyAttempts: 2, spendLimit: { maxTokensPerTurn: 500 } });
      const options = { verifyMaxAttempts: 2, budget: { maxTokensPerTurn: 500 }, budgetMayRaise: true };
      await at(T0 + 1_000);
      expect(await tasks()).toEqual([options]);

      const paused = await call("PATCH", "/v1/agents/a1/schedules/s", { paused: true });
      expect(paused.status).toBe(200);
      expect(paused.body).toMatchObject({ scheduleId: "s", paused: true, nextRunAt: null, nextRunAtMs: null, everyMs: 1_000 });
      expect((await call("PATCH", "/v1/agents/a1/schedules/s", { paused: true })).body).toEqual(paused.body);
      expect((await call("GET", "/v1/agents/a1")).body.schedules).toEqual([{ scheduleId: "s", everyMs: 1_000, nextRunAt: null, paused: true }]);
      for (const t of [T0 + 2_000, T0 + 5_500, T0 + 60_000]) await at(t);
      expect(await tasks()).toHaveLength(1);
      expect(await store.nextDueSchedule({ workerTarget: "default", now: T0 + 60_000 })).toEqual({ status: "none", next: null });

      const resumed = await call("PATCH", "/v1/agents/a1/schedules/s", { paused: false });
      expect(resumed.status).toBe(200);
      expect(resumed.body).toMatchObject({ paused: false, nextRunAtMs: T0 + 61_000, verifyAttempts: 2, catchUp: "all" });
      await at(T0 + 60_999);
      expect(await tasks()).toHaveLength(1);
      await at(T0 + 61_000);
      expect(await tasks()).toEqual([options, options]);
      expect((await call("GET", "/v1/agents/a1/schedules/s")).body.lastFired).toMatchObject({ tickMs: T0 + 61_000 });
      await at(T0 + 62_000);
      expect(await tasks()).toHaveLength(3);
    });

    it("a schedule written paused fires nothing until resumed; PUT without options stores none", async () => {
      const { call, tasks, at } = setup(open);
      const put = await call("PUT", "/v1/agents/a1/schedules/p", { agent: "reporter", input: "x", cron: "* * * * *", paused: true });
      expect(put.status).toBe(201);
      expect(put.body).toMatchObject({ paused: true, nextRunAt: null });
      expect(put.body).not.toHaveProperty("verifyAttempts");
      await at(T0 + 10 * 60_000);
      expect(await tasks()).toEqual([]);
      expect((await call("PATCH", "/v1/agents/a1/schedules/p", { paused: false })).body.nextRunAtMs).toBe(T0 + 11 * 60_000);
      await at(T0 + 11 * 60_000);
      expect(await tasks()).toEqual([{}]);
    });

    it.each([
      ["an empty body", {}],
      ["paused not a boolean", { paused: "yes" }],
      ["an unknown key", { paused: true, at: 1 }],
      ["not JSON", "{"],
    ])("PATCH with %s is 400 and changes nothing", async (_name, body) => {
      const { call, store } = setup(open);
      await call("PUT", "/v1/agents/a1/schedules/s", { agent: "reporter", input: "x", everyMs: 1_000 });
      const before = await store.getSchedule("a1", "s");
      const res = await call("PATCH", "/v1/agents/a1/schedules/s", body);
      expect(res.status).toBe(400);
      expect(["validation_failed", "malformed_json"]).toContain(res.body.code);
      expect(await store.getSchedule("a1", "s")).toEqual(before);
    });

    it("PATCH of an unknown schedule is 404 schedule_not_found and creates nothing", async () => {
      const { call, store } = setup(open);
      const res = await call("PATCH", "/v1/agents/a1/schedules/nope", { paused: false });
      expect(res.status).toBe(404);
      expect(res.body.code).toBe("schedule_not_found");
      expect(await store.listSchedules("a1")).toEqual([]);
    });

    it.each([
      ["verifyAttempts 0", { verifyAttempts: 0 }, "verifyAttempts"],
      ["verifyAttempts not an integer", { verifyAttempts: 1.5 }, "verifyAttempts"],
      ["a negative spend limit", { spendLimit: { maxTokensPerTurn: -1 } }, "spendLimit.maxTokensPerTurn"],
      ["an unknown spend-limit key", { spendLimit: { maxTokens: 5 } }, "spendLimit"],
    ])("a schedule with %s is 400 validation_failed as a task with it is, and nothing is stored", async (_name, bad, path) => {
      const { call, store } = setup(open);
      const sched = await call("PUT", "/v1/agents/a1/schedules/s", { agent: "reporter", input: "x", everyMs: 1_000, ...bad });
      const task = await call("POST", "/v1/agents/a2/tasks", { agent: "reporter", input: "x", ...bad });
      expect([sched.status, sched.body.code]).toEqual([400, "validation_failed"]);
      expect([task.status, task.body.code]).toEqual([400, "validation_failed"]);
      const paths = (b: { errors?: Array<{ path: Array<string | number> }> }) => (b.errors ?? []).map((e) => e.path.join("."));
      expect(paths(sched.body)).toEqual(paths(task.body));
      expect(paths(sched.body).some((p) => p.startsWith(path))).toBe(true);
      expect(await store.listSchedules("a1")).toEqual([]);
    });
  });
}
