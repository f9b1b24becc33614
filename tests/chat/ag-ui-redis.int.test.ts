/**
 * `POST /v1/ag-ui` on a redis-server started here, over a real socket
 * (@hono/node-server), read by `@ag-ui/client`'s `HttpAgent`: live text
 * arrives while the model works, and an approval interrupt resumed approved
 * runs the tool (tests/chat/ag-ui-cases.ts).
 */
import { serve } from "@hono/node-server";
import { afterAll, beforeAll, describe, it } from "vitest";
import { createGatehouse, type Gatehouse } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { chatAuth, chatWorld } from "../helpers/chat-world.ts";
import { type RedisServer, startRedisServer } from "../helpers/redis-server.ts";
import { type AgUiRig, approval, liveText } from "./ag-ui-cases.ts";

let redis: RedisServer;
let gh: Gatehouse;
let server: ReturnType<typeof serve>;
let r: AgUiRig;

beforeAll(async () => {
  redis = await startRedisServer();
  const w = chatWorld();
  const prefix = `agui${Math.random().toString(36).slice(2, 8)}:`;
  gh = createGatehouse({ agents: [w.agent], store: redisStore({ url: redis.url, prefix }), auth: chatAuth(), sse: { pollMs: 20 } });
  gh.startWorker();
  const url = await new Promise<string>((resolve) => {
    server = serve({ fetch: gh.fetch, port: 0, hostname: "127.0.0.1" }, (info) => resolve(`http://127.0.0.1:${info.port}`));
  });
  r = { gh, url, fetch: (u, init) => fetch(u, init), paid: w.paid, gates: w.gates };
}, 30_000);

afterAll(async () => {
  server?.close();
  await gh?.close();
  await redis?.stop();
});

describe("AG-UI (redis, socket)", () => {
  it("live text arrives while the model works", async () => {
    await liveText(r, "a-live");
  }, 30_000);

  it("an approval interrupt resumed approved runs the tool", async () => {
    await approval(r, "a-pay", true);
  }, 30_000);
});
