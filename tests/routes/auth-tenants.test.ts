/**
 * Tenant scoping beyond one agent: the agents list filtered to a token's
 * prefixes with correct paging (nothing skipped, nothing repeated, across
 * the per-request scan budget), and signing secrets configured with tenants
 * and verbs (a sender of one tenant gets 403 on another tenant's agents,
 * and its refused request changes nothing).
 */
import { describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { createGatehouse, defineAgent, memoryStore, scriptedModel } from "../../mod.ts";
import { authFromEnv } from "../../mod.ts";
import { memoryStoreState } from "../../store/memory.ts";
import { SCAN_BUDGET } from "../../routes/agent-list.ts";
import { manualClock } from "../helpers/clock.ts";

const ADMIN = "admin-token-0123456789abcdef";
const ACME = "acme-token-0123456789abcdef";
const TWO = "two-tenants-token-0123456789";
const ACME_SECRET = "whsec_" + btoa("acme-secret-0123456789abcdef0123");
const BETA_SECRET = "whsec_" + btoa("beta-secret-0123456789abcdef0123");
const QSTASH = { currentSigningKey: "sig_current_key_0123456789", nextSigningKey: "sig_next_key_abcdefghijklmn" };
const agent = defineAgent({ name: "helper", instructions: "x", model: scriptedModel([{ text: "ok" }]) });

describe("GET /v1/agents under tenant tokens", () => {
  it("pages exactly the token's agents, newest first, across the scan budget", async () => {
    const clock = manualClock();
    const store = memoryStore();
    const gh = createGatehouse({
      agents: [agent], store, clock, rateLimits: false,
      auth: { tokens: [ADMIN, { token: ACME, tenants: ["acme-"], verbs: ["read"] }, { token: TWO, tenants: ["acme-", "beta-"], verbs: ["read"] }] },
    });
    // 1 500 agents of other tenants between acme's, so one page of acme's needs more than one scan budget.
    const expected: string[] = [];
    for (let i = 0; i < 1_560; i++) {
      const id = i % 130 === 0 ? `acme-${i}` : i % 3 === 0 ? `beta-${i}` : `globex-${i}`;
      clock.advance(1);
      await store.enqueueTask({ agentId: id, agentName: "helper", workerTarget: "default", input: "x", options: {}, turnId: `t${i}`, now: clock.now() });
      if (id.startsWith("acme-")) expected.unshift(id);
    }
    expect(expected.length).toBe(12);
    const pageAll = async (token: string, limit: number) => {
      const seen: string[] = [];
      let cursor: string | null = null;
      let requests = 0;
      do {
        const q = `limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
        const res = await gh.fetch(new Request(`http://gh.test/v1/agents?${q}`, { headers: { authorization: `Bearer ${token}` } }));
        expect(res.status).toBe(200);
        const body = (await res.json()) as { agents: Array<{ agentId: string }>; nextCursor: string | null };
        expect(body.agents.length).toBeLessThanOrEqual(limit);
        seen.push(...body.agents.map((a) => a.agentId));
        cursor = body.nextCursor;
        requests++;
      } while (cursor !== null && requests < 100);
      return { seen, requests };
    };
    const acme = await pageAll(ACME, 5);
    expect(acme.seen).toEqual(expected);
    // More than one request: the budget (SCAN_BUDGET index entries) ends a request before the index does.
    expect(acme.requests).toBeGreaterThan(Math.ceil(1_560 / SCAN_BUDGET));
    const two = await pageAll(TWO, 50);
    expect(two.seen.every((id) => id.startsWith("acme-") || id.startsWith("beta-"))).toBe(true);
    expect(two.seen.length).toBe(12 + 520 - 4);
    expect(new Set(two.seen).size).toBe(two.seen.length);
    const all = await pageAll(ADMIN, 100);
    expect(all.seen.length).toBe(1_560);
    await gh.close();
  });
});

describe("signing secrets with tenants and verbs", () => {
  const task = JSON.stringify({ agent: "helper", input: "hi" });
  function world(over: { qstashTenants?: string[] } = {}) {
    const clock = manualClock();
    const store = memoryStore();
    const gh = createGatehouse({
      agents: [agent], store, clock, rateLimits: false,
      auth: {
        tokens: [ADMIN],
        webhookSecrets: [{ secret: ACME_SECRET, tenants: ["acme-"] }, { secret: BETA_SECRET, tenants: ["beta-"], verbs: ["enqueue"] }],
        qstash: { ...QSTASH, ...(over.qstashTenants ? { tenants: over.qstashTenants } : {}) },
      },
    });
    const signed = (secret: string, path: string, body: string, id = `msg_${crypto.randomUUID()}`) =>
      gh.fetch(new Request(`http://gh.test${path}`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "webhook-id": id,
          "webhook-timestamp": String(Math.floor(clock.now() / 1000)),
          "webhook-signature": new Webhook(secret).sign(id, new Date(clock.now()), body),
        },
        body,
      }));
    return { gh, store, signed };
  }

  it("a tenant's secret reaches its agents only; elsewhere 403 forbidden, and nothing changes", async () => {
    const { gh, store, signed } = world();
    expect((await signed(ACME_SECRET, "/v1/agents/acme-1/tasks", task)).status).toBe(202);
    expect((await signed(BETA_SECRET, "/v1/agents/beta-1/tasks", task)).status).toBe(202);
    const before = JSON.stringify(memoryStoreState(store));
    const r = await signed(ACME_SECRET, "/v1/agents/beta-1/tasks", task);
    expect(r.status).toBe(403);
    expect(await r.json()).toMatchObject({ code: "forbidden" });
    expect((await signed(BETA_SECRET, "/v1/agents/acme-1/tasks", task)).status).toBe(403);
    // The beta secret may enqueue only: cancel is refused before anything runs.
    expect((await signed(BETA_SECRET, "/v1/agents/beta-1/cancel", JSON.stringify({ reason: "x" }))).status).toBe(403);
    expect(JSON.stringify(memoryStoreState(store))).toBe(before);
    // A refused message id is not remembered: the same id, sent where it belongs, runs.
    expect((await signed(ACME_SECRET, "/v1/agents/beta-2/tasks", task, "msg_same")).status).toBe(403);
    expect((await signed(BETA_SECRET, "/v1/agents/beta-2/tasks", task, "msg_same")).status).toBe(202);
    await gh.close();
  });

  it("QStash-signed requests reach only qstash.tenants", async () => {
    const { gh, store } = world({ qstashTenants: ["acme-"] });
    const enc = new TextEncoder();
    const b64url = (b: Uint8Array) => btoa(String.fromCharCode(...b)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    const jwt = async (body: string, path: string) => {
      const nowSec = Math.floor(1_700_000_000_000 / 1000);
      const header = b64url(enc.encode(JSON.stringify({ alg: "HS256", typ: "JWT" })));
      const hash = b64url(new Uint8Array(await crypto.subtle.digest("SHA-256", enc.encode(body))));
      const claims = { iss: "Upstash", sub: `http://gh.test${path}`, exp: nowSec + 300, nbf: nowSec, iat: nowSec, jti: `jwt_${crypto.randomUUID()}`, body: hash };
      const payload = b64url(enc.encode(JSON.stringify(claims)));
      const k = await crypto.subtle.importKey("raw", enc.encode(QSTASH.currentSigningKey), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
      return `${header}.${payload}.${b64url(new Uint8Array(await crypto.subtle.sign("HMAC", k, enc.encode(`${header}.${payload}`))))}`;
    };
    const send = async (path: string) =>
      gh.fetch(new Request(`http://gh.test${path}`, { method: "POST", headers: { "content-type": "application/json", "upstash-signature": await jwt(task, path) }, body: task }));
    expect((await send("/v1/agents/acme-7/tasks")).status).toBe(202);
    const before = JSON.stringify(memoryStoreState(store));
    expect((await send("/v1/agents/globex-7/tasks")).status).toBe(403);
    expect(JSON.stringify(memoryStoreState(store))).toBe(before);
    await gh.close();
  });

  it("the environment: GATEHOUSE_WEBHOOK_SECRETS as a JSON array with scopes, GATEHOUSE_QSTASH_TENANTS", () => {
    const auth = authFromEnv({
      GATEHOUSE_WEBHOOK_SECRETS: JSON.stringify([ACME_SECRET, { secret: BETA_SECRET, tenants: ["beta-"] }]),
      QSTASH_CURRENT_SIGNING_KEY: QSTASH.currentSigningKey,
      QSTASH_NEXT_SIGNING_KEY: QSTASH.nextSigningKey,
      GATEHOUSE_QSTASH_TENANTS: "acme-, beta-",
    });
    expect(auth).toEqual({
      webhookSecrets: [ACME_SECRET, { secret: BETA_SECRET, tenants: ["beta-"] }],
      qstash: { ...QSTASH, tenants: ["acme-", "beta-"] },
    });
    expect(() => authFromEnv({ GATEHOUSE_QSTASH_TENANTS: "acme-" })).toThrow(/QSTASH_CURRENT_SIGNING_KEY/);
    expect(() => authFromEnv({ GATEHOUSE_WEBHOOK_SECRETS: "[oops" })).toThrow(/not valid JSON/);
    for (const bad of [{ secret: ACME_SECRET, tenants: [] }, { secret: ACME_SECRET, verbs: ["read"] }, { secret: "short" }]) {
      expect(() => createGatehouse({ agents: [agent], auth: { webhookSecrets: [bad as never] } })).toThrow(/webhook secret/);
    }
  });
});
