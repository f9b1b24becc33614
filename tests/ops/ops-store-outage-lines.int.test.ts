/**
 * A Redis outage as an operator reads it: one line when the connection is
 * lost (`store_reconnecting`), one when it is back (`store_ready`, with the
 * reconnect attempts and connection errors in between), whatever the number
 * of attempts; no line per attempt or per error (store/redis.ts
 * `watchConnection`, entry/startup.ts). Real redis-server, killed and
 * started again on the same port, through the entries' startup path.
 */
import { describe, expect, it } from "vitest";
import { prepareFromEnv } from "../../entry/startup.ts";
import { defineAgent, scriptedModel } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { waitFor } from "../helpers/processes.ts";
import { useRedisServer } from "../helpers/redis.ts";

const redis = useRedisServer();

const agent = defineAgent({ name: "a", instructions: "x", model: scriptedModel([{ text: "ok" }]) });

describe("store outage log lines", () => {
  it("an outage of many reconnect attempts logs two lines: down, then up with the attempts and errors counted", async () => {
    const lines: Array<{ level: string; msg: string; fields: Record<string, unknown> }> = [];
    const at = (level: string) => (msg: string, fields: Record<string, unknown> = {}) => void lines.push({ level, msg, fields });
    const { gatehouse, store } = await prepareFromEnv({
      agents: [agent],
      env: { GATEHOUSE_REDIS_URL: redis.url, GATEHOUSE_REDIS_PREFIX: "outage-lines" },
      redis: redisStore,
      logger: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") },
    });
    try {
      expect(await store.getAgent("a1")).toBeNull();
      const before = lines.length;
      await redis.kill("SIGKILL");
      await waitFor("store_reconnecting", () => lines.find((l) => l.msg === "store_reconnecting"), 10_000);
      // Stay down through several attempts (ioredis retries after 50 ms, 100 ms, 150 ms, …).
      await new Promise((r) => setTimeout(r, 2_000));
      await redis.start();
      const up = await waitFor("store_ready", () => lines.find((l) => l.msg === "store_ready"), 20_000);
      expect(await store.getAgent("a1")).toBeNull();
      const outage = lines.slice(before);
      expect(outage.map((l) => l.msg)).toEqual(["store_reconnecting", "store_ready"]);
      expect(up.fields.attempts as number).toBeGreaterThan(2);
      expect(up.fields.errors as number).toBeGreaterThan(0);
      expect(typeof up.fields.lastError).toBe("string");
      expect(up.fields.downMs as number).toBeGreaterThan(1_000);
    } finally {
      await gatehouse.close();
      await store.close();
    }
  }, 60_000);
});
