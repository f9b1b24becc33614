/**
 * Schedules on several worker processes over one real Redis (store
 * invariant `schedule-tick-once`): a schedule ticking every second, found
 * due by two processes at once, enqueues exactly one task per tick, and none
 * after it is deleted; a process SIGKILLed while firing a tick (before its
 * store step is sent, while it is in flight, or after it was applied) leaves
 * every tick enqueued exactly once: the survivor, started after the kill,
 * fires the tick the killed process was firing (unless its step applied)
 * and the ticks missed meanwhile.
 *
 * Verdicts count ticks by the tasks' idempotency keys
 * (`schedule:<id>:<tick ISO>`, the agent's idem hash) and the agent's
 * `task_enqueued` events, never by time: the schedule uses `catchUp: "all"`,
 * so however slow the machine, every tick from the first to the last fired
 * must be there, once.
 */
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { redisStore } from "../../redis.ts";
import { keySpace } from "../../store/keys.ts";
import type { Store } from "../../store/port.ts";
import { nextTickAfter, type ScheduleSpec, scheduleKey } from "../../common/schedule.ts";
import { sleep, spawnScript, waitFor, type WorkerHandle } from "../helpers/processes.ts";
import { useRedisServer } from "../helpers/redis.ts";
import type { ScheduleWorkerConfig } from "../helpers/schedule-worker.ts";

const SCRIPT = fileURLToPath(new URL("../helpers/schedule-worker.ts", import.meta.url));
const EVERY = 1_000;

const redis = useRedisServer();
let raw: Redis;
const workers: WorkerHandle[] = [];
beforeAll(async () => {
  raw = new Redis(redis.url);
});
afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  raw?.disconnect();
});

async function worker(name: string, prefix: string, extra: Partial<ScheduleWorkerConfig> = {}): Promise<WorkerHandle> {
  const cfg: ScheduleWorkerConfig = { name, url: redis.url, prefix, ...extra };
  const w = await spawnScript(SCRIPT, name, { GH_SCHEDULE_WORKER: JSON.stringify(cfg) });
  workers.push(w);
  await w.ready;
  return w;
}

/** Starts a schedule ticking every second from now; answers its spec. */
async function schedule(store: Store): Promise<ScheduleSpec> {
  const now = Date.now();
  const spec: ScheduleSpec = { input: "tick", everyMs: EVERY, catchUp: "all", anchor: now };
  const r = await store.putSchedule({ agentId: "a1", scheduleId: "s", agentName: "reporter", workerTarget: "default", spec, nextTick: nextTickAfter(spec, now), now });
  expect(r.status).toBe("created");
  return spec;
}

/** The schedule's keys in the agent's idem hash, and how many tasks the agent got. */
async function ticks(prefix: string): Promise<{ keys: string[]; tasks: number }> {
  const k = keySpace(prefix).agent("a1");
  const keys = (await raw.hkeys(k.idem)).filter((f) => f.startsWith("k:schedule:")).map((f) => f.slice(2)).sort();
  const tasks = (await raw.lrange(k.events, 0, -1)).filter((e) => JSON.parse(e).type === "task_enqueued").length;
  return { keys, tasks };
}

/** Every tick from the first through `last`, once each. */
function expectEveryTickOnce(spec: ScheduleSpec, got: { keys: string[]; tasks: number }, last: number) {
  const want: string[] = [];
  for (let t = spec.anchor + EVERY; t <= last; t += EVERY) want.push(scheduleKey("s", t));
  expect(got.keys).toEqual(want.sort());
  expect(got.tasks).toBe(want.length);
}

describe("schedules on several worker processes (one Redis)", () => {
  it("two processes: exactly one task per tick over 5+ ticks, none after DELETE", async () => {
    const prefix = `sp_${Date.now().toString(36)}`;
    const store = redisStore({ url: redis.url, prefix });
    await worker("w1", prefix);
    await worker("w2", prefix);
    const spec = await schedule(store);
    const last = await waitFor("6 ticks fired", async () => {
      const rec = await store.getSchedule("a1", "s");
      return rec?.lastFired && rec.lastFired.tick >= spec.anchor + 6 * EVERY ? rec.lastFired.tick : undefined;
    }, 60_000, 100);
    expect(await store.deleteSchedule("a1", "s")).toEqual({ status: "deleted" });
    const atDelete = await ticks(prefix);
    expectEveryTickOnce(spec, atDelete, spec.anchor + atDelete.keys.length * EVERY);
    expect(atDelete.keys.length).toBeGreaterThanOrEqual(6);
    expect(atDelete.keys).toContain(scheduleKey("s", last));
    await sleep(3 * EVERY);
    expect(await ticks(prefix)).toEqual(atDelete);
    await store.close();
  }, 120_000);

  it.each(["before", "inside", "after"] as const)("a process SIGKILLed %s its store step of a tick: the survivor fires every tick exactly once", async (crash) => {
    const prefix = `sk_${crash}_${Date.now().toString(36)}`;
    const store = redisStore({ url: redis.url, prefix });
    const doomed = await worker(`doomed-${crash}`, prefix, { crash, crashAt: 3 });
    const spec = await schedule(store);
    // Alone, it fires ticks 1 and 2 and dies in its third step; only then does the survivor start.
    await waitFor("the doomed worker's kill", () => (doomed.alive() ? undefined : true), 60_000, 50);
    expect(await doomed.exited).toBeNull(); // killed by a signal
    // Its first two fires answered (printed, unless the kill cut the pipe); the third never returned.
    expect(doomed.lines.filter((l) => l.fire !== undefined).length).toBeLessThanOrEqual(2);
    await worker(`survivor-${crash}`, prefix);
    const diedAt = Date.now();
    await waitFor("3 more ticks after the kill", async () => {
      const rec = await store.getSchedule("a1", "s");
      return rec?.lastFired && rec.lastFired.tick >= diedAt + 3 * EVERY ? true : undefined;
    }, 60_000, 100);
    expect(await store.deleteSchedule("a1", "s")).toEqual({ status: "deleted" });
    const got = await ticks(prefix);
    expectEveryTickOnce(spec, got, spec.anchor + got.keys.length * EVERY);
    await store.close();
  }, 120_000);
});
