/** Pausing schedules and their task options on Redis (a private redis-server; tests/schedules/pause-suite.ts). */
import { afterAll, beforeAll } from "vitest";
import { redisStore } from "../../redis.ts";
import { type RedisServer, startRedisServer } from "../helpers/redis-server.ts";
import { pauseSuite } from "./pause-suite.ts";

let server: RedisServer;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server?.stop();
});

let n = 0;
pauseSuite("redis", () => redisStore({ url: server.url, prefix: `pause${++n}:` }));
