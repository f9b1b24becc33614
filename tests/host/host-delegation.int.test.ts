/**
 * Delegation on every store: memory, Redis over TCP, and Upstash over REST
 * (through tests/helpers/upstash-bridge.ts against a real redis-server).
 */
import { Redis as TcpRedis } from "ioredis";
import { afterAll, beforeAll } from "vitest";
import { memoryStore } from "../../store/memory.ts";
import { redisStore } from "../../store/redis.ts";
import { upstashStore } from "../../store/upstash.ts";
import { delegationSuite } from "../helpers/delegation-suite.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { startUpstashBridge, type UpstashBridge } from "../helpers/upstash-bridge.ts";

const server = useRedisServer();
let bridge: UpstashBridge;
let n = 0;
const prefix = () => `d${++n}_${Math.random().toString(36).slice(2, 8)}`;
beforeAll(async () => {
  bridge = await startUpstashBridge({ redisUrl: server.url });
});
afterAll(async () => {
  await bridge?.close();
});

delegationSuite("memory", async () => ({ store: memoryStore() }));
delegationSuite("redis", async () => {
  const client = new TcpRedis(server.url, { enableAutoPipelining: false });
  return { store: redisStore({ client, prefix: prefix() }), cleanup: async () => void client.disconnect() };
});
delegationSuite("upstash", async () => ({ store: upstashStore({ url: bridge.url, token: bridge.token, prefix: prefix() }) }));
