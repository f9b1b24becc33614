/**
 * Rate limits over HTTP (routes/rate-limit.ts), on the memory store and on
 * Redis: per token and per agent, 429 `rate_limited` with `Retry-After` and
 * problem+json; a refused request changes nothing in the store; 401 and 403
 * charge nothing; a signed request refused by a limit is not remembered by
 * the transport dedup (its retry runs); two gatehouses on one Redis share
 * the limits; the defaults and the environment variables.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { createGatehouse, defineAgent, memoryStore, scriptedModel } from "../../mod.ts";
import type { GatehouseOptions, Store } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { memoryStoreState } from "../../store/memory.ts";
import { Redis } from "ioredis";
import { memoryStateReader, redisStateReader, type StateReader, statesOf } from "../helpers/store-state.ts";
import { ConfigError, configFromEnv } from "../../entry/config.ts";
import { DEFAULT_RATE_LIMITS } from "../../routes/rate-limit.ts";
import { manualClock } from "../helpers/clock.ts";
import { useRedisServer } from "../helpers/redis.ts";

const ADMIN = "admin-token-0123456789abcdef";
const ACME = "acme-token-0123456789abcdef";
const ACME2 = "acme-token2-0123456789abcde";
const BETA = "beta-token-0123456789abcdef";
const SECRET = "whsec_" + btoa("0123456789abcdef0123456789abcdef");
const agent = defineAgent({ name: "helper", instructions: "x", model: scriptedModel([{ text: "ok" }]) });
const auth = {
  tokens: [ADMIN, { token: ACME, tenants: ["acme-"] }, { token: ACME2, tenants: ["acme-"] }, { token: BETA, tenants: ["beta-"] }],
  webhookSecrets: [SECRET],
};

const server = useRedisServer();
let n = 0;

function world(store: Store, over: Partial<GatehouseOptions> = {}) {
  const clock = manualClock();
  const gh = createGatehouse({ agents: [agent], store, clock, auth, ...over });
  const send = (method: string, path: string, token?: string, body?: unknown, headers: Record<string, string> = {}) =>
    gh.fetch(new Request(`http://gh.test${path}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    }));
  return { gh, clock, send };
}

const task = (i = 0) => ({ agent: "helper", input: `hi ${i}` });

let raw: Redis;
beforeAll(() => {
  raw = new Redis(server.url);
});
afterAll(() => raw?.disconnect());

/** The whole stored state of an agent (every record and index entry), per adapter. */
function stateOf(store: Store): StateReader {
  return store.kind === "memory"
    ? memoryStateReader(store)
    : redisStateReader((c) => raw.call(c[0], ...c.slice(1)), (store as Store & { prefix: string }).prefix);
}

for (const [name, make] of [
  ["memory", () => memoryStore()],
  ["redis", () => redisStore({ url: server.url, prefix: `rl${++n}` })],
] as Array<[string, () => Store]>) {
  describe(`rate limits over HTTP: ${name}`, () => {
    it("per token: the burst passes, then 429 rate_limited with Retry-After and problem+json; another token is not charged", async () => {
      const { gh, clock, send } = world(make(), { rateLimits: { perToken: { limit: 3, periodMs: 60_000 }, perAgent: false } });
      for (let i = 0; i < 3; i++) expect((await send("GET", "/v1/agents/acme-1", ACME)).status).toBe(404);
      const r = await send("GET", "/v1/agents/acme-1", ACME);
      expect(r.status).toBe(429);
      expect(r.headers.get("content-type")).toBe("application/problem+json");
      expect(r.headers.get("retry-after")).toBe("20");
      expect(await r.json()).toMatchObject({ code: "rate_limited", status: 429, scope: "token", limit: 3, periodMs: 60_000, retryAfterMs: 20_000 });
      // The same tenant's other token has its own bucket.
      expect((await send("GET", "/v1/agents/acme-1", ACME2)).status).toBe(404);
      clock.advance(19_999);
      expect((await send("GET", "/v1/agents/acme-1", ACME)).status).toBe(429);
      clock.advance(1);
      expect((await send("GET", "/v1/agents/acme-1", ACME)).status).toBe(404);
      await gh.close();
    });

    it("per agent: every token's requests to one agent share its bucket; other agents are not charged", async () => {
      const { gh, send } = world(make(), { rateLimits: { perToken: false, perAgent: { limit: 2, periodMs: 10_000 } } });
      expect((await send("GET", "/v1/agents/acme-1", ACME)).status).toBe(404);
      expect((await send("GET", "/v1/agents/acme-1", ACME2)).status).toBe(404);
      const r = await send("GET", "/v1/agents/acme-1", ADMIN);
      expect(r.status).toBe(429);
      expect(await r.json()).toMatchObject({ code: "rate_limited", scope: "agent", retryAfterMs: 5_000 });
      expect(r.headers.get("retry-after")).toBe("5");
      expect((await send("GET", "/v1/agents/acme-2", ACME)).status).toBe(404);
      await gh.close();
    });

    it("401 and 403 charge nothing: a stranger or another tenant cannot spend an agent's budget", async () => {
      const { gh, send } = world(make(), { rateLimits: { perToken: { limit: 2, periodMs: 60_000 }, perAgent: { limit: 2, periodMs: 60_000 } } });
      for (let i = 0; i < 10; i++) {
        expect((await send("POST", "/v1/agents/acme-1/tasks", "not-a-token-0123456789", task())).status).toBe(401);
        expect((await send("POST", "/v1/agents/acme-1/tasks", BETA, task())).status).toBe(403);
        expect((await send("POST", "/v1/agents/acme-1/tasks", undefined, task())).status).toBe(401);
      }
      expect((await send("POST", "/v1/agents/acme-1/tasks", ACME, task(1))).status).toBe(202);
      expect((await send("POST", "/v1/agents/acme-1/tasks", ACME, task(2))).status).toBe(202);
      expect((await send("POST", "/v1/agents/acme-1/tasks", ACME, task(3))).status).toBe(429);
      await gh.close();
    });

    it("a refused request changes nothing: the task is not enqueued, the agent not created", async () => {
      const { gh, send } = world(make(), { rateLimits: { perToken: { limit: 1, periodMs: 60_000 }, perAgent: false } });
      expect((await send("POST", "/v1/agents/acme-1/tasks", ACME, task(1))).status).toBe(202);
      const read = stateOf(gh.store);
      const before = await statesOf(read, ["acme-1", "acme-2"]);
      const r = await send("POST", "/v1/agents/acme-2/tasks", ACME, task(2));
      expect(r.status).toBe(429);
      expect((await send("POST", "/v1/agents/acme-1/tool-results", ACME, { turnId: "t", toolCallId: "c", outcome: { ok: true, value: 1 } })).status).toBe(429);
      expect(await statesOf(read, ["acme-1", "acme-2"])).toEqual(before);
      expect(before["acme-1"].records).not.toEqual({});
      if (gh.store.kind === "memory") {
        const before = JSON.stringify(memoryStoreState(gh.store));
        expect((await send("POST", "/v1/agents/acme-1/cancel", ACME, { reason: "x" })).status).toBe(429);
        expect(JSON.stringify(memoryStoreState(gh.store))).toBe(before);
      }
      await gh.close();
    });

    it("a signed delivery refused by the limit is not remembered: the sender's retry after Retry-After runs", async () => {
      const { gh, clock, send } = world(make(), { rateLimits: { perToken: false, perAgent: { limit: 1, periodMs: 4_000 } } });
      const signed = (id: string, body: string) => ({
        "webhook-id": id,
        "webhook-timestamp": String(Math.floor(clock.now() / 1000)),
        "webhook-signature": new Webhook(SECRET).sign(id, new Date(clock.now()), body),
      });
      const b1 = JSON.stringify(task(1));
      const b2 = JSON.stringify(task(2));
      expect((await send("POST", "/v1/agents/acme-1/tasks", undefined, b1, signed("msg_1", b1))).status).toBe(202);
      const refused = await send("POST", "/v1/agents/acme-1/tasks", undefined, b2, signed("msg_2", b2));
      expect(refused.status).toBe(429);
      expect(refused.headers.get("retry-after")).toBe("4");
      clock.advance(4_000);
      const retry = await send("POST", "/v1/agents/acme-1/tasks", undefined, b2, signed("msg_2", b2));
      expect(retry.status).toBe(202);
      expect(retry.headers.get("gatehouse-replayed")).toBeNull();
      expect((await gh.store.getAgent("acme-1"))?.pendingTasks).toBe(2);
      await gh.close();
    });
  });
}

describe("rate limits across processes and by default", () => {
  it("two gatehouses on one Redis share one bucket", async () => {
    const prefix = `rlx${++n}`;
    const clock = manualClock();
    const opts = { agents: [agent], clock, auth, rateLimits: { perToken: false as const, perAgent: { limit: 4, periodMs: 60_000 } } };
    const a = createGatehouse({ ...opts, store: redisStore({ url: server.url, prefix }) });
    const b = createGatehouse({ ...opts, store: redisStore({ url: server.url, prefix }) });
    const get = (gh: typeof a) => gh.fetch(new Request("http://gh.test/v1/agents/acme-1", { headers: { authorization: `Bearer ${ACME}` } }));
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await get(i % 2 === 0 ? a : b)).status);
    expect(statuses).toEqual([404, 404, 404, 404, 429, 429]);
    await a.close();
    await b.close();
  });

  it("with auth and no rateLimits option: the documented defaults (600 a minute per agent)", async () => {
    const { gh, send } = world(memoryStore());
    expect(DEFAULT_RATE_LIMITS.perAgent).toEqual({ limit: 600, periodMs: 60_000 });
    expect(DEFAULT_RATE_LIMITS.perToken).toEqual({ limit: 1_200, periodMs: 60_000 });
    const tokens = [ACME, ACME2];
    for (let i = 0; i < 600; i++) expect((await send("GET", "/v1/agents/acme-1", tokens[i % 2])).status).toBe(404);
    const r = await send("GET", "/v1/agents/acme-1", ACME);
    expect(r.status).toBe(429);
    expect(await r.json()).toMatchObject({ scope: "agent", limit: 600, periodMs: 60_000, retryAfterMs: 100 });
    expect(r.headers.get("retry-after")).toBe("1");
    await gh.close();
  });

  it("without auth: off by default; `rateLimits` turns the agent bucket on; `false` turns every limit off", async () => {
    const open = createGatehouse({ agents: [agent], store: memoryStore(), clock: manualClock() });
    for (let i = 0; i < 700; i++) expect((await open.fetch(new Request("http://gh.test/v1/agents/a1"))).status).toBe(404);
    const limited = createGatehouse({ agents: [agent], store: memoryStore(), clock: manualClock(), rateLimits: { perAgent: { limit: 1, periodMs: 1_000 } } });
    expect((await limited.fetch(new Request("http://gh.test/v1/agents/a1"))).status).toBe(404);
    expect((await limited.fetch(new Request("http://gh.test/v1/agents/a1"))).status).toBe(429);
    expect((await limited.fetch(new Request("http://gh.test/v1/agents/a2"))).status).toBe(404);
    expect((await limited.fetch(new Request("http://gh.test/healthz"))).status).toBe(200);
    const off = world(memoryStore(), { rateLimits: false });
    for (let i = 0; i < 700; i++) expect((await off.send("GET", "/v1/agents/acme-1", ACME)).status).toBe(404);
    await open.close();
    await limited.close();
    await off.gh.close();
  });

  it("refuses bad options at construction", () => {
    const bad = [{ perToken: { limit: 0, periodMs: 1 } }, { perAgent: { limit: 1, periodMs: 1.5 } }, { perTokens: false }, null];
    for (const rateLimits of bad) {
      expect(() => createGatehouse({ agents: [agent], rateLimits: rateLimits as never })).toThrow(/rateLimits/);
    }
  });

  it("the environment: <count>/<period> or off, checked whole", () => {
    expect(configFromEnv({ GATEHOUSE_RATE_LIMIT_PER_TOKEN: "100/30s" }).gatehouse.rateLimits).toEqual({ perToken: { limit: 100, periodMs: 30_000 } });
    expect(configFromEnv({ GATEHOUSE_RATE_LIMIT_PER_AGENT: "5/500ms", GATEHOUSE_RATE_LIMIT_PER_TOKEN: "off" }).gatehouse.rateLimits)
      .toEqual({ perToken: false, perAgent: { limit: 5, periodMs: 500 } });
    expect(configFromEnv({ GATEHOUSE_RATE_LIMIT_PER_AGENT: "off", GATEHOUSE_RATE_LIMIT_PER_TOKEN: "off" }).gatehouse.rateLimits).toBe(false);
    expect(configFromEnv({}).gatehouse.rateLimits).toBeUndefined();
    for (const v of ["100", "0/1m", "10/1d", "10/25h", "ten/1m", "10/1m "]) {
      const raw = v.trim() === "10/1m" ? "10/1 m" : v;
      expect(() => configFromEnv({ GATEHOUSE_RATE_LIMIT_PER_AGENT: raw }), raw).toThrow(ConfigError);
    }
  });
});
