/**
 * Writes an event-log fixture: the run of tests/helpers/event-log-run.ts on
 * the memory store and on a private Redis, each agent's stored records and
 * what the routes served (`memory.json`, `redis.json` in `dir`). Used by the
 * capture scripts under tests/fixtures/event-log-v<n>/, each run once when
 * its format was current; the files they wrote are never regenerated.
 */
import { writeFileSync } from "node:fs";
import { memoryStore } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { memoryStoreState } from "../../store/memory.ts";
import { AGENT_ID, fixtureGatehouse, readings, runFixture } from "./event-log-run.ts";
import { startRedisServer } from "./redis-server.ts";
import { redisStateReader } from "./store-state.ts";

export async function captureEventLogFixture(dir: URL): Promise<void> {
  const write = (name: string, v: unknown) => writeFileSync(new URL(name, dir), JSON.stringify(v) + "\n");
  {
    const store = memoryStore();
    const { gh, clock } = fixtureGatehouse(store);
    await runFixture(gh, clock);
    const agent = memoryStoreState(store).agents.find(([id]) => id === AGENT_ID)![1];
    write("memory.json", { records: agent, readings: await readings(gh) });
    await gh.close();
  }
  {
    const server = await startRedisServer();
    const prefix = "evlog";
    const store = redisStore({ url: server.url, prefix });
    const { gh, clock } = fixtureGatehouse(store);
    await runFixture(gh, clock);
    const { default: Redis } = await import("ioredis");
    const raw = new Redis(server.url);
    const state = await redisStateReader((c) => raw.call(c[0], ...c.slice(1)), prefix)(AGENT_ID);
    write("redis.json", { prefix, records: state.records, readings: await readings(gh) });
    raw.disconnect();
    await gh.close();
    await server.stop();
  }
}
