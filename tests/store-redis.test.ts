import { afterAll, beforeAll } from "vitest";
import { redisStore } from "../store/redis.ts";
import { startRedisServer, type RedisServer } from "./helpers/redis-server.ts";
import { storeConformance } from "./store-conformance.ts";

let server: RedisServer;
let n = 0;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server?.stop();
});

storeConformance("redis", async () => {
  const prefix = `t${++n}_${Math.random().toString(36).slice(2, 8)}`;
  return {
    store: redisStore({ url: server.url, prefix }),
    open: async () => redisStore({ url: server.url, prefix }),
    cleanup: async () => {},
  };
});
