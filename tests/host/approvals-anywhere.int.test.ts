/** Approvals of agentTool calls and handoffs, handoff input filters, on Redis (a private redis-server; tests/host/approvals-anywhere-suite.ts). */
import { afterAll, beforeAll } from "vitest";
import { redisStore } from "../../redis.ts";
import { type RedisServer, startRedisServer } from "../helpers/redis-server.ts";
import { approvalsAnywhereSuite } from "./approvals-anywhere-suite.ts";

let server: RedisServer;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server?.stop();
});

let n = 0;
approvalsAnywhereSuite("redis", () => redisStore({ url: server.url, prefix: `apw${++n}:` }));
