/**
 * Schedule ticks on a busy pool over one real Redis (docs/architecture.md
 * "Schedules"): firing a due tick does not wait for a free worker loop, and
 * `catchUp` applies only to the ticks no process was up to fire.
 *
 * The pool has 2 worker loops, both held by long turns: their model waits on
 * a promise the test resolves, never on wall time. An `everyMs` schedule on
 * another agent is driven by the test's clock; after each move the test
 * calls `POST /v1/watchdog/tick` (which wakes the process) and waits for the
 * count of the tick tasks, never for a duration:
 * - every tick due while the process was up is fired once, in a steady
 *   walk of one period at a time and after a jump of several periods (a
 *   process that reaches the schedule late fires each tick it missed, not
 *   only the newest), while both loops stay held and the schedule's agent
 *   runs no turn (firing is the enqueue only). The first tick's task is
 *   enqueued; as it still waits in the queue, each later tick is coalesced
 *   into it (store invariant `schedule-bounds`): each one its own step,
 *   logged `schedule_coalesced` with its tick, none skipped;
 * - the ticks due while no process ran are `catchUp`'s: with `last` the next
 *   process fires the newest only, logs `schedule_skipped` with the range and
 *   count of the others, and counts them in `/metrics`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { createGatehouse, defineAgent, scriptedModel } from "../../mod.ts";
import type { Model } from "../../models/types.ts";
import { redisStore } from "../../redis.ts";
import { keySpace } from "../../store/keys.ts";
import { scheduleKey } from "../../common/schedule.ts";
import { manualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/processes.ts";
import { useRedisServer } from "../helpers/redis.ts";

const T0 = Date.UTC(2026, 0, 1, 0, 0, 0);
const EVERY = 1_000;
const WAIT_MS = 20_000;

const redis = useRedisServer();
let raw: Redis;
beforeAll(async () => {
  raw = new Redis(redis.url);
});
afterAll(async () => {
  raw?.disconnect();
});

/** A model whose every call waits until the test opens the gate. */
function gatedModel() {
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  let started = 0;
  const model: Model = {
    name: "gated",
    async generate() {
      started++;
      await gate;
      return { text: "done" };
    },
  };
  return { model, open: () => open(), started: () => started };
}

interface Line { level: string; msg: string; fields: Record<string, unknown> }

function process(prefix: string, clock: ReturnType<typeof manualClock>, slow: Model) {
  const lines: Line[] = [];
  const at = (level: string) => (msg: string, fields: Record<string, unknown> = {}) => void lines.push({ level, msg, fields });
  const gh = createGatehouse({
    agents: [
      defineAgent({ name: "slow", instructions: "", model: slow }),
      defineAgent({ name: "reporter", instructions: "", model: scriptedModel(() => ({ text: "ok" })) }),
    ],
    store: redisStore({ url: redis.url, prefix }),
    clock,
    logger: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") },
    concurrency: 2,
    pollMs: 10,
    // Long enough that moving the clock never ends a held turn's lease.
    leaseMs: 3_600_000,
  });
  const call = (method: string, path: string, body?: unknown) =>
    gh.fetch(new Request(`http://gh.test${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }));
  return { gh, call, lines };
}

/** The schedule's tick keys in r1's idem hash, and how many tasks r1 got. */
async function ticks(prefix: string): Promise<{ keys: string[]; tasks: number }> {
  const k = keySpace(prefix).agent("r1");
  const keys = (await raw.hkeys(k.idem)).filter((f) => f.startsWith("k:schedule:")).map((f) => f.slice(2)).sort();
  const tasks = (await raw.lrange(k.events, 0, -1)).filter((e) => JSON.parse(e).type === "task_enqueued").length;
  return { keys, tasks };
}

const keysOf = (from: number, to: number) => {
  const out: string[] = [];
  for (let t = from; t <= to; t += EVERY) out.push(scheduleKey("beat", t));
  return out.sort();
};

const metric = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? NaN);

describe("schedules on a busy pool (Redis)", () => {
  it("fires every due tick while both loops are held by long turns; catchUp skips (logged, counted) only ticks no process was up for", async () => {
    const prefix = `busy_${Date.now().toString(36)}`;
    const clock = manualClock(T0);
    const slow = gatedModel();
    const p1 = process(prefix, clock, slow.model);
    p1.gh.startWorker();
    try {
      // 4 long turns on 2 loops: both loops are held, 2 tasks wait behind them.
      for (const id of ["s1", "s2", "s3", "s4"]) {
        expect((await p1.call("POST", `/v1/agents/${id}/tasks`, { agent: "slow", input: "hold" })).status).toBe(202);
      }
      await waitFor("both loops held", () => slow.started() === 2, WAIT_MS);
      const put = await p1.call("PUT", "/v1/agents/r1/schedules/beat", { agent: "reporter", input: "tick", everyMs: EVERY, catchUp: "last" });
      expect(put.status).toBe(201);

      // One period at a time: each tick is fired while the loops stay held.
      const coalesced = () => p1.lines.filter((l) => l.msg === "schedule_coalesced").map((l) => l.fields.tick as number);
      const handled = async () => (await ticks(prefix)).tasks + coalesced().length;
      const steady = 5;
      for (let i = 1; i <= steady; i++) {
        clock.advance(EVERY);
        await p1.call("POST", "/v1/watchdog/tick");
        await waitFor(`tick ${i} fired`, async () => (await handled()) >= i, WAIT_MS);
      }
      // Late by several periods (a stalled process): every tick it was up for is fired, not only the newest.
      const jump = 6;
      clock.advance(jump * EVERY);
      await p1.call("POST", "/v1/watchdog/tick");
      const n = steady + jump;
      await waitFor(`${n} ticks fired`, async () => (await handled()) >= n, WAIT_MS);
      // The first tick's task waits (both loops are held); every later tick is coalesced into it, one step each.
      expect(await ticks(prefix)).toEqual({ keys: keysOf(T0 + EVERY, T0 + EVERY), tasks: 1 });
      expect(coalesced()).toEqual(Array.from({ length: n - 1 }, (_, i) => T0 + (i + 2) * EVERY));
      // Firing is the enqueue only: the loops are still held and r1 ran no turn.
      expect(slow.started()).toBe(2);
      expect(p1.lines.filter((l) => l.msg === "turn_end" && l.fields.agentId === "r1")).toEqual([]);
      expect(p1.lines.filter((l) => l.msg === "schedule_skipped")).toEqual([]);
      const text = await (await p1.call("GET", "/metrics")).text();
      expect(metric(text, "gatehouse_schedule_ticks_skipped_total")).toBe(0);
      expect(metric(text, "gatehouse_schedule_ticks_fired_total")).toBe(1);
      expect(metric(text, "gatehouse_schedule_ticks_coalesced_total")).toBe(n - 1);
      // The held turns end; the queued ones, r1's included, run to their end before the process stops.
      slow.open();
      await waitFor("r1's tick task done", async () => (await (await p1.call("GET", "/v1/agents/r1")).json()).state === "done", WAIT_MS);
    } finally {
      slow.open();
      await p1.gh.stopWorker();
      await p1.gh.close();
    }

    // No process runs for 4 periods; the next one fires only the newest (catchUp "last") and reports the others.
    const downFrom = T0 + 12 * EVERY;
    clock.advance(4 * EVERY + 500);
    // Its model answers at once: the turns still queued from the first process run to their end.
    const quick = gatedModel();
    quick.open();
    const p2 = process(prefix, clock, quick.model);
    p2.gh.startWorker();
    try {
      await p2.call("POST", "/v1/watchdog/tick");
      await waitFor("the newest missed tick enqueued", async () => (await ticks(prefix)).keys.includes(scheduleKey("beat", downFrom + 3 * EVERY)), WAIT_MS);
      const skipped = p2.lines.filter((l) => l.msg === "schedule_skipped");
      expect(skipped).toHaveLength(1);
      expect(skipped[0].fields).toMatchObject({
        agentId: "r1", scheduleId: "beat", count: 3,
        from: new Date(downFrom).toISOString(), to: new Date(downFrom + 2 * EVERY).toISOString(),
      });
      const got = await ticks(prefix);
      expect(got.keys).toEqual([scheduleKey("beat", T0 + EVERY), scheduleKey("beat", downFrom + 3 * EVERY)].sort());
      expect(got.tasks).toBe(2);
      const text = await (await p2.call("GET", "/metrics")).text();
      expect(metric(text, "gatehouse_schedule_ticks_skipped_total")).toBe(3);
      expect(metric(text, "gatehouse_schedule_ticks_fired_total")).toBe(1);
    } finally {
      await p2.gh.stopWorker();
      await p2.gh.close();
    }
  }, 120_000);
});
