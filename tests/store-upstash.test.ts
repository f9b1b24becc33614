import { afterAll, beforeAll } from "vitest";
import { upstashStore } from "../store/upstash.ts";
import { startRedisServer, type RedisServer } from "./helpers/redis-server.ts";
import { storeConformance } from "./store-conformance.ts";
import { startUpstashBridge, type UpstashBridge } from "./upstash-bridge.ts";

let server: RedisServer;
let bridge: UpstashBridge;
let n = 0;
beforeAll(async () => {
  server = await startRedisServer();
  bridge = await startUpstashBridge({ redisUrl: server.url });
});
afterAll(async () => {
  await bridge?.close();
  await server?.stop();
});

storeConformance("upstash", async () => {
  const prefix = `u${++n}_${Math.random().toString(36).slice(2, 8)}`;
  return {
    store: upstashStore({ url: bridge.url, token: bridge.token, prefix }),
    open: async () => upstashStore({ url: bridge.url, token: bridge.token, prefix }),
    cleanup: async () => {},
  };
});
