/**
 * An agent's own `retention` bounds its stored history exactly as the same
 * limits given to createGatehouse do (store/retention.ts, `layerRetention`):
 * a per-agent `maxEvents` without its own `checkpointEvery` derives the
 * checkpoint interval from itself, not from the process's default. Checked on
 * the memory store and on a real Redis.
 */
import { describe, expect, it } from "vitest";
import { createGatehouse, defineAgent, type GatehouseOptions, scriptedModel } from "../../mod.ts";
import { memoryStore } from "../../store/memory.ts";
import type { Store } from "../../store/port.ts";
import { redisStore } from "../../store/redis.ts";
import { layerRetention, resolveRetention } from "../../store/retention.ts";
import { useRedisServer } from "../helpers/redis.ts";

const T0 = 1_700_000_000_000;
const server = useRedisServer({}, 60_000);
let n = 0;

const stores: Array<[string, () => Store]> = [
  ["memory", () => memoryStore()],
  ["redis", () => redisStore({ url: server.url, prefix: `reta${++n}x${Date.now() % 100000}` })],
];

const LIMITS = { maxEvents: 20, maxTurns: 3 };

describe.each(stores)("per-agent retention on the %s store", (_name, makeStore) => {
  async function storedAfter(turns: number, where: "agent" | "process"): Promise<{ events: number; trimmed: number }> {
    const clock = { t: T0, now: () => clock.t };
    const agent = defineAgent({
      name: "short",
      instructions: "Answer.",
      model: scriptedModel([{ toolCalls: [{ name: "submit_result", args: { result: "ok" } }] }]),
      ...(where === "agent" ? { retention: LIMITS } : {}),
    });
    const opts: GatehouseOptions = { agents: [agent], clock, store: makeStore(), ...(where === "process" ? { retention: LIMITS } : {}) };
    const gh = createGatehouse(opts);
    for (let i = 0; i < turns; i++) {
      clock.t += 10;
      const res = await gh.fetch(new Request("http://gh.test/v1/agents/a1/tasks", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ agent: "short", input: `q${i}` }),
      }));
      expect(res.status).toBe(202);
      await gh.drain();
    }
    const head = (await gh.store.getAgent("a1"))!;
    let events = 0;
    for (let after = head.eventsTrimmedThrough;;) {
      const page = await gh.store.readEvents("a1", after, 100);
      events += page.length;
      if (page.length < 100) break;
      after = page[page.length - 1].id;
    }
    await gh.close();
    return { events, trimmed: head.eventsTrimmedThrough };
  }

  it("keeps as many events as the same limits on createGatehouse", async () => {
    const global = await storedAfter(15, "process");
    const own = await storedAfter(15, "agent");
    expect(global.trimmed).toBeGreaterThan(0);
    expect(own.trimmed).toBe(global.trimmed);
    expect(own.events).toBe(global.events);
    expect(own.events).toBeLessThan(40);
  }, 60_000);
});

describe("layerRetention", () => {
  it("derives checkpointEvery from the agent's maxEvents when neither gave it", () => {
    expect(layerRetention(resolveRetention(undefined), { maxEvents: 20 }).checkpointEvery).toBe(5);
    expect(layerRetention(resolveRetention({ maxTurns: 7 }), { maxEvents: 400 })).toEqual({ ...resolveRetention({ maxEvents: 400, maxTurns: 7 }) });
  });
  it("keeps a checkpointEvery the process or the agent gave", () => {
    expect(layerRetention(resolveRetention({ checkpointEvery: 3 }), { maxEvents: 400 }).checkpointEvery).toBe(3);
    expect(layerRetention(resolveRetention(undefined), { maxEvents: 400, checkpointEvery: 7 }).checkpointEvery).toBe(7);
    expect(layerRetention(null, { maxEvents: 40 })).toEqual(resolveRetention({ maxEvents: 40 }));
  });
});
