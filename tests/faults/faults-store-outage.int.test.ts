/**
 * The store down or stalled, seen from HTTP (createGatehouse over a real
 * redis-server with the AOF on and `appendfsync always`):
 *
 * - a stall (SIGSTOP: connections stay open, nothing answers) and a shutdown
 *   (SIGKILL) both answer 503 `store_unavailable` with `Retry-After` within
 *   about `storeTimeoutMs`, never a hang and never 500;
 * - `/readyz` answers 503 meanwhile and 200 again once the store is back;
 *   `/healthz` (liveness) stays 200;
 * - nothing acknowledged is lost: every task answered 202 before, during or
 *   after the outage is in the store afterwards and runs to done.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createGatehouse, defineAgent, memoryStore, scriptedModel } from "../../mod.ts";
import { redisStore } from "../../store/redis.ts";
import { keySpace } from "../../store/keys.ts";
import { scriptStore } from "../../store/lua-store.ts";
import { EvictionPolicyError } from "../../store/script-runner.ts";
import { startRedisServer } from "../helpers/redis-server.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { jsonRequest } from "../helpers/http.ts";

const TIMEOUT_MS = 400;

const redis = useRedisServer({ appendonly: true, appendfsync: "always" });
afterAll(async () => {
  redis?.resume();
});

function app(prefix: string) {
  const agent = defineAgent({
    name: "echo",
    instructions: "Echo.",
    model: scriptedModel([{ toolCalls: [{ name: "submit_result", args: { result: "ok" } }] }]),
  });
  const store = redisStore({ url: redis.url, prefix });
  const gh = createGatehouse({ agents: [agent], store, storeTimeoutMs: TIMEOUT_MS });
  const call = async (method: string, path: string, body?: unknown) => {
    const started = Date.now();
    const res = await gh.fetch(jsonRequest(method, path, body));
    return { res, ms: Date.now() - started, json: await res.json() as Record<string, unknown> };
  };
  return { gh, call };
}

async function expectUnavailable(r: { res: Response; ms: number; json: Record<string, unknown> }) {
  expect(r.res.status).toBe(503);
  expect(r.res.headers.get("content-type")).toBe("application/problem+json");
  expect(r.res.headers.get("retry-after")).toBe("1");
  expect(r.json.code).toBe("store_unavailable");
  // Bounded by the store timeout (plus scheduling slack on a loaded machine), not by the outage.
  expect(r.ms).toBeLessThan(TIMEOUT_MS + 1_500);
}

describe("faults: the store stalled or down, seen from HTTP", () => {
  it("a stall answers 503 with Retry-After within the timeout; readiness follows; nothing acknowledged is lost", async () => {
    const { gh, call } = app(`stall_${Date.now().toString(36)}`);
    const acked: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await call("POST", `/v1/agents/a${i}/tasks`, { agent: "echo", input: `before ${i}`, idempotencyKey: `k${i}` });
      expect(r.res.status).toBe(202);
      acked.push(`a${i}`);
    }
    expect((await call("GET", "/readyz")).res.status).toBe(200);

    redis.pause();
    try {
      await expectUnavailable(await call("POST", "/v1/agents/b1/tasks", { agent: "echo", input: "during", idempotencyKey: "kb" }));
      await expectUnavailable(await call("GET", "/v1/agents/a0"));
      await expectUnavailable(await call("GET", "/readyz"));
      expect((await call("GET", "/healthz")).res.status).toBe(200);
    } finally {
      redis.resume();
    }

    // Back: readiness recovers, the enqueue that timed out is retried with its key (applied once either way).
    let ready = 0;
    for (let i = 0; i < 50 && ready !== 200; i++) {
      ready = (await call("GET", "/readyz")).res.status;
      if (ready !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(ready).toBe(200);
    const retry = await call("POST", "/v1/agents/b1/tasks", { agent: "echo", input: "during", idempotencyKey: "kb" });
    expect(retry.res.status).toBe(202);
    acked.push("b1");
    await gh.drain();
    for (const id of acked) {
      const tasks = (await gh.store.readEvents(id, 0, 100)).filter((e) => e.type === "task");
      expect(tasks.map((e) => e.data.status), id).toEqual(["done"]);
    }
    await gh.close();
  });

  it("a shutdown answers 503 within the timeout, not after the client's retries; tasks acknowledged before survive the restart", async () => {
    const { gh, call } = app(`down_${Date.now().toString(36)}`);
    const before = await call("POST", "/v1/agents/c1/tasks", { agent: "echo", input: "before" });
    expect(before.res.status).toBe(202);

    await redis.kill("SIGKILL");
    try {
      await expectUnavailable(await call("POST", "/v1/agents/c2/tasks", { agent: "echo", input: "during" }));
      await expectUnavailable(await call("POST", "/v1/agents/c1/cancel"));
      await expectUnavailable(await call("GET", "/readyz"));
      expect((await call("GET", "/healthz")).res.status).toBe(200);
    } finally {
      await redis.start();
    }

    let ready = 0;
    for (let i = 0; i < 50 && ready !== 200; i++) {
      ready = (await call("GET", "/readyz")).res.status;
      if (ready !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(ready).toBe(200);
    await gh.drain();
    const tasks = (await gh.store.readEvents("c1", 0, 100)).filter((e) => e.type === "task");
    expect(tasks.map((e) => [e.turnId, e.data.status])).toEqual([[before.json.turnId, "done"]]);
    await gh.close();
  });
});

describe("faults: the startup check after an outage", () => {
  it("an eviction check that failed because the store was unreachable is tried again at the next call", async () => {
    let checks = 0;
    const store = scriptStore({
      kind: "redis",
      keys: keySpace("unit"),
      run: async () => "pong",
      async checkEviction() {
        if (++checks === 1) throw new Error("connect ECONNREFUSED");
        return { policy: "noeviction" };
      },
      close: async () => {},
    });
    await expect(store.ping()).rejects.toThrow(/ECONNREFUSED/);
    await expect(store.ping()).resolves.toBeUndefined();
    expect(checks).toBe(2);
    // A refused policy is an answer: it stays refused without asking again.
    let refusedChecks = 0;
    const refused = scriptStore({
      kind: "redis", keys: keySpace("unit"), run: async () => "pong", close: async () => {},
      async checkEviction() {
        refusedChecks++;
        throw new EvictionPolicyError("allkeys-lru");
      },
    });
    await expect(refused.ping()).rejects.toBeInstanceOf(EvictionPolicyError);
    await expect(refused.ping()).rejects.toBeInstanceOf(EvictionPolicyError);
    expect(refusedChecks).toBe(1);
  });
});

describe("faults: the store down from the start", () => {
  it("a process started while Redis is down answers 503, then serves once Redis is up (the startup check is retried)", async () => {
    const late = await startRedisServer({ appendonly: true, appendfsync: "always" });
    await late.kill("SIGKILL");
    try {
      const agent = defineAgent({ name: "echo", instructions: "Echo.", model: scriptedModel([{ text: "ok" }]) });
      const gh = createGatehouse({ agents: [agent], store: redisStore({ url: late.url, prefix: "late" }), storeTimeoutMs: TIMEOUT_MS });
      const get = () => gh.fetch(new Request("http://gh.test/readyz"));
      const down = await get();
      expect(down.status).toBe(503);
      await late.start();
      let status = 0;
      for (let i = 0; i < 50 && status !== 200; i++) {
        status = (await get()).status;
        if (status !== 200) await new Promise((r) => setTimeout(r, 100));
      }
      expect(status).toBe(200);
      await gh.close();
    } finally {
      await late.stop();
    }
  });
});

describe("faults: a stalled store in process", () => {
  it("a store whose calls never settle answers 503 within the timeout on every route kind, and readiness says so", async () => {
    const inner = memoryStore();
    let stalled = false;
    const store = new Proxy(inner, {
      get(t, p, r) {
        const v = Reflect.get(t, p, r);
        if (typeof v !== "function" || p === "close") return v;
        return (...args: unknown[]) => (stalled ? new Promise(() => {}) : v.apply(t, args));
      },
    });
    const agent = defineAgent({ name: "echo", instructions: "Echo.", model: scriptedModel([{ text: "ok" }]) });
    const gh = createGatehouse({ agents: [agent], store, storeTimeoutMs: TIMEOUT_MS });
    const call = async (method: string, path: string, body?: unknown) => {
      const started = Date.now();
      const res = await gh.fetch(new Request(`http://gh.test${path}`, {
        method, headers: body === undefined ? {} : { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body),
      }));
      return { res, ms: Date.now() - started, json: await res.json() as Record<string, unknown> };
    };
    expect((await call("POST", "/v1/agents/m1/tasks", { agent: "echo", input: "before" })).res.status).toBe(202);
    stalled = true;
    await expectUnavailable(await call("POST", "/v1/agents/m1/tasks", { agent: "echo", input: "during" }));
    await expectUnavailable(await call("GET", "/v1/agents/m1"));
    await expectUnavailable(await call("GET", "/v1/agents/m1/events"));
    await expectUnavailable(await call("POST", "/v1/agents/m1/reset"));
    await expectUnavailable(await call("POST", "/v1/watchdog/tick"));
    await expectUnavailable(await call("GET", "/readyz"));
    expect((await call("GET", "/healthz")).res.status).toBe(200);
    stalled = false;
    expect((await call("GET", "/readyz")).res.status).toBe(200);
    await gh.drain();
    expect((await gh.store.readEvents("m1", 0, 100)).filter((e) => e.type === "task").map((e) => e.data.status)).toEqual(["done"]);
    await gh.close();
  });
});
