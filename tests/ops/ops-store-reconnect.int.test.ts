/**
 * The TCP adapter's reconnect lines (docs/operations.md): when Redis goes
 * away, `store_reconnecting` with the delay and the last error; when it is
 * back, `store_ready` with how long it was down. Real redis-server, killed
 * and started again on the same port.
 */
import { describe, expect, it } from "vitest";
import { redisStore } from "../../redis.ts";
import { waitFor } from "../helpers/processes.ts";
import { useRedisServer } from "../helpers/redis.ts";

const redis = useRedisServer();

describe("redisStore reconnect log lines", () => {
  it("logs store_reconnecting while Redis is down and store_ready once it is back", async () => {
    const lines: Array<{ msg: string; fields: Record<string, unknown> }> = [];
    const store = redisStore({
      url: redis.url,
      prefix: "reconnect",
      // This server runs without the AOF: the persistence warning is tests/store/store-durability.int.test.ts's subject.
      durability: "none",
      logger: { info: (msg, fields = {}) => void lines.push({ msg, fields }) },
    });
    try {
      expect(await store.getAgent("a1")).toBeNull();
      expect(lines).toEqual([]); // the first connection is no reconnect
      await redis.kill("SIGKILL");
      const down = await waitFor("store_reconnecting", () => lines.find((l) => l.msg === "store_reconnecting"), 5_000);
      expect(typeof down.fields.delayMs).toBe("number");
      expect(String(down.fields.error)).not.toBe("");
      await redis.start();
      const up = await waitFor("store_ready", () => lines.find((l) => l.msg === "store_ready"), 10_000);
      expect(up.fields.downMs as number).toBeGreaterThan(0);
      expect(await store.getAgent("a1")).toBeNull();
    } finally {
      await store.close();
    }
  }, 30_000);
});
