/**
 * A call waiting for a named event survives a SIGKILL of its worker process
 * (Redis): the wait is in the store from the commit that recorded the call
 * (store invariant `named-event-waits`), so the event delivered after a new
 * worker started resumes the call and the turn finishes with the event's data.
 */
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createGatehouse } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { EVENT_AGENT } from "../helpers/event-worker.ts";
import { spawnScript, waitFor, type WorkerHandle } from "../helpers/processes.ts";
import { type RedisServer, startRedisServer } from "../helpers/redis-server.ts";

const SCRIPT = fileURLToPath(new URL("../helpers/event-worker.ts", import.meta.url));
let redis: RedisServer;
const workers: WorkerHandle[] = [];
beforeAll(async () => {
  redis = await startRedisServer();
});
afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await redis?.stop();
});

it("SIGKILL of the worker while a call waits; the event delivered after a restart resumes it", async () => {
  const cfg = { url: redis.url, prefix: `nek-${Date.now()}:` };
  // The HTTP side: no worker of its own.
  const gh = createGatehouse({ agents: [EVENT_AGENT], store: redisStore(cfg) });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await gh.fetch(new Request(`http://gh.test${path}`, {
      method, headers: body === undefined ? {} : { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body),
    }));
    return await res.json() as Record<string, any>;
  };
  const a = await spawnScript(SCRIPT, "event-worker-a", { GH_EVENT_WORKER: JSON.stringify(cfg) });
  workers.push(a);
  await a.ready;
  await call("POST", "/v1/agents/k1/tasks", { agent: "event-waiter", input: "o1" });
  await waitFor("the call waits", async () => (await call("GET", "/v1/agents/k1")).pendingToolCalls?.[0]?.event === "payment.settled:o1", 20_000);
  a.signal("SIGKILL");
  await a.exited;
  const b = await spawnScript(SCRIPT, "event-worker-b", { GH_EVENT_WORKER: JSON.stringify(cfg) });
  workers.push(b);
  await b.ready;
  expect(await call("POST", "/v1/events", { name: "payment.settled:o1", data: { amount: 9 } })).toMatchObject({ delivered: 1 });
  const done = await waitFor("the turn finishes", async () => {
    const v = await call("GET", "/v1/agents/k1");
    return v.state === "done" ? v : undefined;
  }, 20_000);
  expect(String(done.output)).toContain("9");
  await gh.close();
}, 60_000);
