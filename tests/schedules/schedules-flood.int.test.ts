/**
 * An every-second schedule flood on one agent (store/port.ts invariant
 * `schedule-bounds`), through the HTTP routes and the worker pool's drain,
 * on the memory store and on a real Redis, with a clock the test moves.
 *
 * The flooded agent's turn waits for an external tool's result, so its
 * queue cannot drain: every task a tick enqueues stays queued. The verdicts
 * are counts and order, read from a store wrapper that records each fire's
 * answer and each claim in the order the pool made them; never a duration
 * (the timed figure is bench/schedule-flood.ts).
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, memoryStore, scriptedModel } from "../../mod.ts";
import type { Store } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { DEFAULTS } from "../../common/defaults.ts";
import { manualClock } from "../helpers/clock.ts";
import { useRedisServer } from "../helpers/redis.ts";

const T0 = Date.UTC(2026, 0, 1, 0, 0, 0);
const LIMIT = DEFAULTS.maxSchedulesPerAgent;
/** About 10 s on a quiet machine (memory); room for two shared cores. */
const FLOOD_TIMEOUT_MS = 180_000;

/** The store, with every fire's answer and every claim recorded in order. */
function recorded(base: Store): { store: Store; log: string[] } {
  const log: string[] = [];
  const store = Object.create(base) as Store;
  store.fireScheduleTick = async (req) => {
    const r = await base.fireScheduleTick(req);
    log.push(`fire ${req.agentId} ${r.status}`);
    return r;
  };
  store.claimNext = async (req) => {
    const r = await base.claimNext(req);
    if (r.status === "claimed") log.push(`claim ${r.agentId}`);
    return r;
  };
  return { store, log };
}

function setup(base: Store) {
  const { store, log } = recorded(base);
  const clock = manualClock(T0);
  const wait = defineTool({ name: "wait", description: "Waits for an answer from outside", parameters: z.object({}) });
  const flood = defineAgent({ name: "flood", instructions: "", model: scriptedModel(() => ({ toolCalls: [{ name: "wait", args: {} }] })), tools: [wait] });
  const other = defineAgent({ name: "other", instructions: "", model: scriptedModel(() => ({ text: "ok" })) });
  const gh = createGatehouse({ agents: [flood, other], store, clock });
  const call = (method: string, path: string, body?: unknown) =>
    gh.fetch(new Request(`http://gh.test${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }));
  /** Puts `n` every-second schedules on f1; answers the statuses. */
  const flooded = async (n: number, catchUp: "last" | "all") => {
    // The flooded agent's first turn waits for an external result: nothing more of f1 runs.
    expect((await call("POST", "/v1/agents/f1/tasks", { agent: "flood", input: "go" })).status).toBe(202);
    await gh.drain();
    expect((await store.getAgent("f1"))!.activeTurnId).not.toBeNull();
    const statuses: number[] = [];
    for (let i = 0; i < n; i++) {
      statuses.push((await call("PUT", `/v1/agents/f1/schedules/s${i}`, { agent: "flood", input: "tick", cron: "* * * * * *", catchUp })).status);
    }
    return statuses;
  };
  /**
   * Enqueues a task of the other agent at the clock's time, moves the clock 1 ms, drains; answers the applied fires
   * of f1 (a loop that lost the race to another answers `stale`, writes nothing and is not counted) before its claim.
   */
  const otherAfterFlood = async () => {
    log.length = 0;
    expect((await call("POST", "/v1/agents/o1/tasks", { agent: "other", input: "hi" })).status).toBe(202);
    clock.advance(1);
    await gh.drain();
    const at = log.indexOf("claim o1");
    expect(at).toBeGreaterThanOrEqual(0);
    const applied = (l: string) => l === "fire f1 fired" || l === "fire f1 coalesced";
    return { before: log.slice(0, at).filter(applied).length, all: log.filter(applied).length };
  };
  return { gh, call, clock, store, log, flooded, otherAfterFlood };
}

function floodSuite(name: string, open: () => Store) {
  describe(`schedule flood on one agent (${name})`, () => {
    it(`${LIMIT + 50} every-second schedules: ${LIMIT} are created, the rest 409 schedule_limit; over 10 s the agent's queue stays within one task per schedule, and another agent's task is claimed after at most one fire per schedule`, async () => {
      const { gh, clock, store, log, flooded, otherAfterFlood, call } = setup(open());
      const statuses = await flooded(LIMIT + 50, "last");
      expect(statuses.filter((s) => s === 201)).toHaveLength(LIMIT);
      expect(statuses.filter((s) => s === 409)).toHaveLength(50);
      expect(await store.listSchedules("f1")).toHaveLength(LIMIT);
      let most = 0;
      for (let sec = 1; sec <= 10; sec++) {
        clock.set(T0 + sec * 1_000);
        await gh.drain();
        most = Math.max(most, (await store.getAgent("f1"))!.pendingTasks);
      }
      expect(most).toBe(LIMIT);
      expect(log.filter((l) => l === "fire f1 coalesced")).toHaveLength(9 * LIMIT);
      const metrics = await (await call("GET", "/metrics")).text();
      expect(metrics).toContain(`gatehouse_schedule_ticks_coalesced_total ${9 * LIMIT}`);
      // Workers fell 2.5 s behind: every schedule is due before the other agent's task.
      clock.set(T0 + 13_500);
      const { before } = await otherAfterFlood();
      expect(before).toBeLessThanOrEqual(LIMIT);
      expect((await store.getAgent("f1"))!.pendingTasks).toBe(LIMIT);
    }, FLOOD_TIMEOUT_MS);

    it(`${LIMIT} catchUp "all" schedules 5 s behind: the other agent's task waits behind one fire per schedule, not their whole catch-up`, async () => {
      const { clock, flooded, otherAfterFlood } = setup(open());
      expect((await flooded(LIMIT, "all")).every((s) => s === 201)).toBe(true);
      clock.set(T0 + 5_500);
      const { before, all } = await otherAfterFlood();
      expect(all).toBe(5 * LIMIT);
      expect(before).toBeLessThanOrEqual(LIMIT);
    }, FLOOD_TIMEOUT_MS);
  });
}

floodSuite("memory", () => memoryStore());

const redis = useRedisServer({}, 30_000);
let n = 0;
floodSuite("redis", () => redisStore({ url: redis.url, prefix: `flood${++n}` }));
