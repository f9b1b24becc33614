/**
 * The package shape: `@gatehouse-runtime/core` (mod.ts) is Web-only and no longer exports
 * the TCP adapter; `@gatehouse-runtime/core/redis` (redis.ts) does. Imported by package
 * name, so this resolves through `exports` of package.json, under Node
 * (vitest) and under Deno (deno test), and the adapter it gives runs against
 * a real redis-server.
 */
import { describe, expect, it } from "vitest";
import * as gatehouse from "@gatehouse-runtime/core";
import { redisStore } from "@gatehouse-runtime/core/redis";
import { useRedisServer } from "../helpers/redis.ts";

const server = useRedisServer();

describe("package subpaths", () => {
  it("gatehouse exports the Web-only stores and not redisStore", () => {
    expect("redisStore" in gatehouse).toBe(false);
    expect(typeof gatehouse.memoryStore).toBe("function");
    expect(typeof gatehouse.upstashStore).toBe("function");
    expect(typeof gatehouse.createWorkersHandler).toBe("function");
  });

  it("redisStore from @gatehouse-runtime/core/redis runs a turn's first write on a real Redis", async () => {
    const store = redisStore({ url: server.url, prefix: "subpath" });
    try {
      const r = await store.enqueueTask({ agentId: "a1", agentName: "x", workerTarget: "default", input: 1, options: {}, turnId: "t1", now: 1 });
      expect(r).toEqual({ status: "enqueued", turnId: "t1" });
      expect((await store.getAgent("a1"))?.agentName).toBe("x");
    } finally {
      await store.close();
    }
  });
});
