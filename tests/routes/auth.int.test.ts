/**
 * Auth over HTTP, on the memory store and on Redis: requests signed with the
 * `standardwebhooks` package and with QStash-format JWTs (built with Web
 * Crypto), tampered with and replayed; scoped tokens across tenants and
 * verbs on every route; fail closed; nothing secret in the logs.
 */
import { describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, memoryStore, scriptedModel } from "../../mod.ts";
import type { GatehouseOptions, Store } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { authFromEnv } from "../../mod.ts";
import { DELIVERY_DEDUP_MS, DELIVERY_HOLD_MS, tokenBucketKey } from "../../routes/auth.ts";
import { useRedisServer } from "../helpers/redis.ts";

const T0 = 1_700_000_000_000;
const SECRET = "whsec_" + btoa("0123456789abcdef0123456789abcdef");
const OLD_SECRET = "whsec_" + btoa("fedcba9876543210fedcba9876543210");
const QSTASH = { currentSigningKey: "sig_current_key_0123456789", nextSigningKey: "sig_next_key_abcdefghijklmn" };
const ADMIN = "admin-token-0123456789abcdef";
const TENANT_A = "tenant-a-token-0123456789ab";
const READER_A = "reader-a-token-0123456789ab";
const REPLAYER_A = "replayer-a-token-012345678";

const ask = defineTool({ name: "ask_human", description: "Ask a human", parameters: z.object({ q: z.string() }) });
const helper = () =>
  defineAgent({
    name: "helper",
    instructions: "Ask, then submit.",
    model: scriptedModel([
      { toolCalls: [{ name: "ask_human", args: { q: "ok?" } }] },
      { toolCalls: [{ name: "submit_result", args: { result: "yes" } }] },
    ]),
    tools: [ask],
  });

const enc = new TextEncoder();
const b64url = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

/** A QStash `Upstash-Signature` as documented: HS256 JWT, claims iss/sub/exp/nbf/iat/jti/body (base64url SHA-256 of the body). */
async function qstashJwt(key: string, body: string, nowSec: number, over: Record<string, unknown> = {}): Promise<string> {
  const header = b64url(enc.encode(JSON.stringify({ alg: "HS256", typ: "JWT" })));
  const hash = b64url(new Uint8Array(await crypto.subtle.digest("SHA-256", enc.encode(body))));
  const claims = { iss: "Upstash", sub: "http://gh.test/v1/agents/q1/tasks", exp: nowSec + 300, nbf: nowSec, iat: nowSec, jti: `jwt_${crypto.randomUUID()}`, body: hash, ...over };
  const payload = b64url(enc.encode(JSON.stringify(claims)));
  const k = await crypto.subtle.importKey("raw", enc.encode(key), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const sig = new Uint8Array(await crypto.subtle.sign("HMAC", k, enc.encode(`${header}.${payload}`)));
  return `${header}.${payload}.${b64url(sig)}`;
}

const server = useRedisServer();
let n = 0;

const stores: Array<[string, () => Store]> = [
  ["memory", () => memoryStore()],
  ["redis", () => redisStore({ url: server.url, prefix: `auth${++n}x${Date.now() % 100000}` })],
];

describe.each(stores)("auth on the %s store", (_name, makeStore) => {
  function setup(auth: GatehouseOptions["auth"]) {
    const clock = { t: T0, now: () => clock.t };
    const logs: string[] = [];
    const log = (level: string) => (msg: string, fields?: unknown) => void logs.push(`${level} ${msg} ${JSON.stringify(fields ?? {})}`);
    const real = makeStore();
    // The tasks route's store call can be held open, so a delivery stays in flight while the test looks.
    const gate = {
      held: null as null | { entered: () => void; until: Promise<void> },
      hold() {
        let entered!: () => void;
        let release!: () => void;
        const e = new Promise<void>((r) => (entered = r));
        const until = new Promise<void>((r) => (release = r));
        gate.held = { entered, until };
        return { entered: e, release };
      },
    };
    const store: Store = new Proxy(real, {
      get(target, key, receiver) {
        const v = Reflect.get(target, key, receiver);
        if (key !== "enqueueTask") return typeof v === "function" ? v.bind(target) : v;
        return async (...args: unknown[]) => {
          const h = gate.held;
          if (h) {
            gate.held = null;
            h.entered();
            await h.until;
          }
          return (v as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const gh = createGatehouse({
      agents: [helper()], clock, store,
      logger: { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") },
      auth,
    });
    const send = (method: string, path: string, body?: string, headers: Record<string, string> = {}) =>
      gh.fetch(new Request(`http://gh.test${path}`, {
        method,
        headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
        body,
      }));
    return { gh, clock, store, logs, send, gate };
  }
  const task = JSON.stringify({ agent: "helper", input: "hello" });

  describe("Standard Webhooks", () => {
    const signed = (secret: string, id: string, atMs: number, body: string) => ({
      "webhook-id": id,
      "webhook-timestamp": String(Math.floor(atMs / 1000)),
      "webhook-signature": new Webhook(secret).sign(id, new Date(atMs), body),
    });

    it("accepts a request signed by the standardwebhooks package in place of a token; a replay in the window gets the first answer and enqueues nothing", async () => {
      const { gh, clock, store, send } = setup({ webhookSecrets: [SECRET], tokens: [ADMIN] });
      try {
        const h = signed(SECRET, "msg_1", T0, task);
        const first = await send("POST", "/v1/agents/w1/tasks", task, h);
        expect(first.status).toBe(202);
        const firstBody = await first.text();
        clock.t += 60_000;
        const again = await send("POST", "/v1/agents/w1/tasks", task, h);
        expect(again.status).toBe(202);
        expect(await again.text()).toBe(firstBody);
        expect(again.headers.get("gatehouse-replayed")).toBe("true");
        const events = await store.readEvents("w1", 0, 100);
        expect(events.filter((e) => e.type === "task_enqueued")).toHaveLength(1);
        await gh.drain();
      } finally {
        await gh.close();
      }
    });

    it("refuses a tampered body, id or timestamp with 401 and changes nothing", async () => {
      const { gh, store, send } = setup({ webhookSecrets: [SECRET] });
      try {
        const h = signed(SECRET, "msg_2", T0, task);
        const tampered = task.replace("hello", "hellp");
        for (const [body, headers] of [
          [tampered, h],
          [task, { ...h, "webhook-id": "msg_3" }],
          [task, { ...h, "webhook-timestamp": String(Number(h["webhook-timestamp"]) + 1) }],
          [task, { ...h, "webhook-signature": h["webhook-signature"].slice(0, -4) + "AAA=" }],
          [task, signed("whsec_" + btoa("another-secret-0123456789abcdef"), "msg_2", T0, task)],
        ] as Array<[string, Record<string, string>]>) {
          const r = await send("POST", "/v1/agents/w2/tasks", body, headers);
          expect(r.status).toBe(401);
          expect((await r.json()).code).toBe("unauthorized");
        }
        expect(await store.getAgent("w2")).toBeNull();
      } finally {
        await gh.close();
      }
    });

    it("refuses a replay outside the 5-minute window with 401, and a timestamp too far ahead", async () => {
      const { gh, clock, send } = setup({ webhookSecrets: [SECRET] });
      try {
        const h = signed(SECRET, "msg_4", T0, task);
        expect((await send("POST", "/v1/agents/w4/tasks", task, h)).status).toBe(202);
        clock.t = T0 + 301_000;
        const late = await send("POST", "/v1/agents/w4/tasks", task, h);
        expect(late.status).toBe(401);
        expect((await late.json()).detail).toMatch(/window/);
        const ahead = await send("POST", "/v1/agents/w4/tasks", task, signed(SECRET, "msg_5", clock.t + 301_000, task));
        expect(ahead.status).toBe(401);
      } finally {
        await gh.close();
      }
    });

    it("verifies with any of several secrets (rotation); signed tool results and cancels are accepted, reads are not", async () => {
      const { gh, clock, send } = setup({ webhookSecrets: [SECRET, OLD_SECRET] });
      try {
        expect((await send("POST", "/v1/agents/w5/tasks", task, signed(OLD_SECRET, "m1", T0, task))).status).toBe(202);
        await gh.drain();
        const r = await send("GET", "/v1/agents/w5", undefined, signed(SECRET, "m2", T0, ""));
        expect(r.status).toBe(401);
        const cancel = JSON.stringify({});
        const c = await send("POST", "/v1/agents/w5/cancel", cancel, signed(SECRET, "m3", clock.t, cancel));
        expect(c.status).toBeLessThan(500);
        expect(c.status).not.toBe(401);
      } finally {
        await gh.close();
      }
    });

    it("answers a signed request to an agent id that cannot be a key with 400 invalid_agent_id, and one over the body cap with 413", async () => {
      const { gh, send } = setup({ webhookSecrets: [SECRET] });
      try {
        const r = await send("POST", "/v1/agents/bad%7Bid/tasks", task, signed(SECRET, "msg_k", T0, task));
        expect(r.status).toBe(400);
        expect((await r.json()).code).toBe("invalid_agent_id");
        const big = JSON.stringify({ agent: "helper", input: "x".repeat(2_000_000) });
        expect((await send("POST", "/v1/agents/w7/tasks", big, signed(SECRET, "msg_b", T0, big))).status).toBe(413);
      } finally {
        await gh.close();
      }
    });

    it("answers 409 delivery_in_progress while the first delivery is being handled, then the first answer", async () => {
      const { gh, store, send, gate } = setup({ webhookSecrets: [SECRET] });
      try {
        const h = signed(SECRET, "msg_6", T0, task);
        const held = gate.hold();
        const first = send("POST", "/v1/agents/w6/tasks", task, h);
        await held.entered;
        const r = await send("POST", "/v1/agents/w6/tasks", task, h);
        expect(r.status).toBe(409);
        expect(r.headers.get("retry-after")).toBe("1");
        expect((await r.json()).code).toBe("delivery_in_progress");
        held.release();
        const answer = await first;
        expect(answer.status).toBe(202);
        const again = await send("POST", "/v1/agents/w6/tasks", task, h);
        expect(again.headers.get("gatehouse-replayed")).toBe("true");
        expect(await again.json()).toEqual(await answer.json());
        expect((await store.readEvents("w6", 0, 100)).filter((e) => e.type === "task_enqueued")).toHaveLength(1);
      } finally {
        await gh.close();
      }
    });

    it("refuses a captured delivery replayed to other agents' paths or another signed route with 409 delivery_replayed, running nothing", async () => {
      const { gh, store, send } = setup({ webhookSecrets: [SECRET] });
      try {
        const h = signed(SECRET, "msg_r", T0, task);
        const first = await send("POST", "/v1/agents/w8/tasks", task, h);
        expect(first.status).toBe(202);
        const firstBody = await first.json();
        for (const other of ["w8-a", "w8-b", "w8-c", "w8-d", "w8-e", "w8-f"]) {
          const r = await send("POST", `/v1/agents/${other}/tasks`, task, h);
          expect(r.status).toBe(409);
          expect((await r.json()).code).toBe("delivery_replayed");
          expect(await store.getAgent(other)).toBeNull();
        }
        for (const route of ["/v1/agents/w8/cancel", "/v1/agents/w8/tool-results"]) {
          expect((await (await send("POST", route, task, h)).json()).code).toBe("delivery_replayed");
        }
        // The same path still gets the first answer.
        const again = await send("POST", "/v1/agents/w8/tasks", task, h);
        expect([again.status, await again.json()]).toEqual([202, firstBody]);
        expect((await store.readEvents("w8", 0, 100)).filter((e) => e.type === "task_enqueued")).toHaveLength(1);
        // A replay that reaches another agent first binds the message there: the original path is refused then.
        const h2 = signed(SECRET, "msg_r2", T0, task);
        expect((await send("POST", "/v1/agents/w8-x/tasks", task, h2)).status).toBe(202);
        expect((await (await send("POST", "/v1/agents/w8/tasks", task, h2)).json()).code).toBe("delivery_replayed");
      } finally {
        await gh.close();
      }
    });

    it("a retry after its holder died (the hold not renewed for DELIVERY_HOLD_MS) runs once, or is the turn the dead holder enqueued", async () => {
      const { gh, clock, store, send } = setup({ webhookSecrets: [SECRET] });
      try {
        const tag = (await tokenBucketKey(SECRET)).slice(2, 18);
        const claim = (id: string, agentId: string) =>
          store.claimDelivery({
            messageId: `webhook:${tag}:${id}`, target: `POST /v1/agents/${agentId}/tasks`, holder: "process-that-died",
            now: clock.t, windowMs: DELIVERY_DEDUP_MS, holdMs: DELIVERY_HOLD_MS,
          });
        // Died before the route ran: in_progress until the hold ends, then the retry runs it.
        expect(await claim("msg_d1", "w9")).toEqual({ status: "fresh" });
        const h1 = signed(SECRET, "msg_d1", T0, task);
        clock.t += DELIVERY_HOLD_MS - 1;
        expect((await (await send("POST", "/v1/agents/w9/tasks", task, h1)).json()).code).toBe("delivery_in_progress");
        clock.t += 1;
        const ran = await send("POST", "/v1/agents/w9/tasks", task, h1);
        expect(ran.status).toBe(202);
        expect((await ran.json()).duplicate).toBe(false);
        expect((await send("POST", "/v1/agents/w9/tasks", task, h1)).headers.get("gatehouse-replayed")).toBe("true");
        expect((await store.readEvents("w9", 0, 100)).filter((e) => e.type === "task_enqueued")).toHaveLength(1);
        // Died after enqueueing (under the message id's key), before the answer was recorded: the retry is that turn.
        clock.t = T0;
        expect(await claim("msg_d2", "w10")).toEqual({ status: "fresh" });
        const enq = await store.enqueueTask({
          agentId: "w10", agentName: "helper", workerTarget: "default", input: "hello", options: {},
          idempotencyKey: "delivery:webhook:msg_d2", turnId: "turn_dead", now: T0,
        });
        expect(enq.status).toBe("enqueued");
        clock.t += DELIVERY_HOLD_MS;
        const retry = await send("POST", "/v1/agents/w10/tasks", task, signed(SECRET, "msg_d2", T0, task));
        expect(retry.status).toBe(202);
        expect(await retry.json()).toEqual({ agentId: "w10", turnId: "turn_dead", duplicate: true });
        expect((await store.readEvents("w10", 0, 100)).filter((e) => e.type === "task_enqueued")).toHaveLength(1);
      } finally {
        await gh.close();
      }
    });
  });

  describe("QStash", () => {
    const now = Math.floor(T0 / 1000);
    const Q2 = "http://gh.test/v1/agents/q2/tasks";

    it("accepts a JWT signed with the current or the next key over the raw body; a replay gets the first answer", async () => {
      const { gh, store, send } = setup({ qstash: QSTASH });
      try {
        const jwt = await qstashJwt(QSTASH.nextSigningKey, task, now);
        const first = await send("POST", "/v1/agents/q1/tasks", task, { "upstash-signature": jwt });
        expect(first.status).toBe(202);
        const again = await send("POST", "/v1/agents/q1/tasks", task, { "upstash-signature": jwt });
        expect(again.status).toBe(202);
        expect(await again.json()).toEqual(await first.json());
        const cur = await send("POST", "/v1/agents/q1/tasks", task, { "upstash-signature": await qstashJwt(QSTASH.currentSigningKey, task, now) });
        expect(cur.status).toBe(202);
        expect((await store.readEvents("q1", 0, 100)).filter((e) => e.type === "task_enqueued")).toHaveLength(2);
      } finally {
        await gh.close();
      }
    });

    it("refuses a token replayed to another URL (its sub) with 401, running nothing; behind a proxy publicUrl names the URL senders call", async () => {
      const { gh, store, send } = setup({ qstash: QSTASH });
      try {
        const jwt = await qstashJwt(QSTASH.currentSigningKey, task, now);
        expect((await send("POST", "/v1/agents/q1/tasks", task, { "upstash-signature": jwt })).status).toBe(202);
        for (const other of ["q3", "q4", "q5", "q6", "q7", "q8"]) {
          const r = await send("POST", `/v1/agents/${other}/tasks`, task, { "upstash-signature": jwt });
          expect(r.status).toBe(401);
          expect((await r.json()).detail).toMatch(/another URL/);
          expect(await store.getAgent(other)).toBeNull();
        }
        // The request's own URL is not the public one behind a proxy: refused unless publicUrl says so.
        const proxied = await qstashJwt(QSTASH.currentSigningKey, task, now, { sub: "https://api.example.com/gh/v1/agents/q9/tasks" });
        expect((await send("POST", "/v1/agents/q9/tasks", task, { "upstash-signature": proxied })).status).toBe(401);
      } finally {
        await gh.close();
      }
      const behind = setup({ qstash: QSTASH, publicUrl: "https://api.example.com/gh/" });
      try {
        const sub = "https://api.example.com/gh/v1/agents/q9/tasks";
        const ok = await behind.send("POST", "/v1/agents/q9/tasks", task, { "upstash-signature": await qstashJwt(QSTASH.currentSigningKey, task, now, { sub }) });
        expect(ok.status).toBe(202);
        const direct = await qstashJwt(QSTASH.currentSigningKey, task, now, { sub: "http://gh.test/v1/agents/q9/tasks" });
        expect((await behind.send("POST", "/v1/agents/q9/tasks", task, { "upstash-signature": direct })).status).toBe(401);
      } finally {
        await behind.gh.close();
      }
    });

    it("refuses a tampered body, a wrong key, an expired or old token and a wrong issuer with 401", async () => {
      const { gh, store, send } = setup({ qstash: QSTASH });
      try {
        const cases: Array<[string, string]> = [
          [task.replace("hello", "hellp"), await qstashJwt(QSTASH.currentSigningKey, task, now, { sub: Q2 })],
          [task, await qstashJwt("some-other-key-0123456789", task, now, { sub: Q2 })],
          [task, await qstashJwt(QSTASH.currentSigningKey, task, now - 600, { exp: now - 1, sub: Q2 })],
          [task, await qstashJwt(QSTASH.currentSigningKey, task, now - 301, { exp: now + 60, sub: Q2 })],
          [task, await qstashJwt(QSTASH.currentSigningKey, task, now, { iss: "Someone", sub: Q2 })],
          [task, "not.a.jwt"],
        ];
        for (const [body, jwt] of cases) {
          const r = await send("POST", "/v1/agents/q2/tasks", body, { "upstash-signature": jwt });
          expect(r.status).toBe(401);
        }
        expect(await store.getAgent("q2")).toBeNull();
      } finally {
        await gh.close();
      }
    });
  });

  describe("scoped tokens", () => {
    const auth = {
      tokens: [
        ADMIN,
        { token: TENANT_A, tenants: ["acme-"], verbs: ["read", "enqueue", "deliver", "cancel", "admin"] as const },
        { token: READER_A, tenants: ["acme-"], verbs: ["read"] as const },
        { token: REPLAYER_A, tenants: ["acme-"], verbs: ["read", "replay"] as const },
      ].map((t) => (typeof t === "string" ? t : { ...t, verbs: [...t.verbs] })),
    };
    const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

    it("gives 403 to a token of tenant A on every route of tenant B's agent, SSE and verdicts included; 401 without a token", async () => {
      const { gh, send, store } = setup(auth);
      try {
        expect((await send("POST", "/v1/agents/globex-1/tasks", task, bearer(ADMIN))).status).toBe(202);
        expect((await send("POST", "/v1/agents/acme-1/tasks", task, bearer(TENANT_A))).status).toBe(202);
        await gh.drain();
        const before = await store.readEvents("globex-1", 0, 1000);
        const routes: Array<[string, string, string?, Record<string, string>?]> = [
          ["GET", "/v1/agents/globex-1"],
          ["GET", "/v1/agents/globex-1/events"],
          ["GET", "/v1/agents/globex-1/events", undefined, { accept: "text/event-stream" }],
          ["GET", "/v1/agents/globex-1/verdicts"],
          ["GET", "/v1/agents/globex-1/tasks/turn_x"],
          ["POST", "/v1/agents/globex-1/tasks", task],
          ["POST", "/v1/agents/globex-1/tool-results", JSON.stringify({ toolCallId: "x", result: 1 })],
          ["POST", "/v1/agents/globex-1/cancel", "{}"],
          ["POST", "/v1/agents/globex-1/reset", "{}"],
          ["DELETE", "/v1/agents/globex-1/tasks/turn_x"],
          ["GET", "/v1/verdicts/verdict_0123456789ab"],
          ["POST", "/v1/watchdog/tick"],
        ];
        for (const [method, path, body, headers] of routes) {
          const r = await send(method, path, body, { ...headers, ...bearer(TENANT_A) });
          expect([method, path, r.status]).toEqual([method, path, 403]);
          expect((await r.json()).code).toBe("forbidden");
          const none = await send(method, path, body, headers);
          expect([method, path, none.status]).toEqual([method, path, 401]);
        }
        expect(await store.readEvents("globex-1", 0, 1000)).toEqual(before);
        // Its own tenant: reads, the SSE stream, a reset.
        expect((await send("GET", "/v1/agents/acme-1", undefined, bearer(TENANT_A))).status).toBe(200);
        expect((await send("GET", "/v1/agents/acme-1/verdicts", undefined, bearer(TENANT_A))).status).toBe(200);
        const ac = new AbortController();
        const sse = await gh.fetch(new Request("http://gh.test/v1/agents/acme-1/events", { headers: { accept: "text/event-stream", ...bearer(TENANT_A) }, signal: ac.signal }));
        expect(sse.status).toBe(200);
        ac.abort();
        await sse.body?.cancel().catch(() => {});
        // The full-access token reaches both.
        expect((await send("GET", "/v1/agents/acme-1", undefined, bearer(ADMIN))).status).toBe(200);
        expect((await send("POST", "/v1/watchdog/tick", undefined, bearer(ADMIN))).status).toBe(200);
      } finally {
        await gh.close();
      }
    });

    it("scopes the list, history, export, fork, what-if and metrics routes; /healthz and /readyz need no token", async () => {
      const { gh, send, store } = setup(auth);
      try {
        expect((await send("POST", "/v1/agents/globex-1/tasks", task, bearer(ADMIN))).status).toBe(202);
        expect((await send("POST", "/v1/agents/acme-1/tasks", task, bearer(TENANT_A))).status).toBe(202);
        await gh.drain();
        // The list spans tenants: a tenant-limited token sees its own agents only (401 without a token).
        const ids = async (token: string) =>
          ((await (await send("GET", "/v1/agents", undefined, bearer(token))).json()) as { agents: Array<{ agentId: string }> }).agents.map((a) => a.agentId).sort();
        expect(await ids(ADMIN)).toEqual(["acme-1", "globex-1"]);
        expect(await ids(TENANT_A)).toEqual(["acme-1"]);
        expect(await ids(READER_A)).toEqual(["acme-1"]);
        expect((await send("GET", "/v1/agents")).status).toBe(401);
        // The tool registry spans agents too: a read token over every tenant; 404 for a role it does not hold.
        expect((await send("GET", "/v1/tools", undefined, bearer(ADMIN))).status).toBe(200);
        expect((await send("GET", "/v1/tools/web_fetcher", undefined, bearer(ADMIN))).status).toBe(404);
        expect((await send("GET", "/v1/tools", undefined, bearer(READER_A))).status).toBe(403);
        expect((await send("GET", "/v1/tools/web_fetcher", undefined, bearer(TENANT_A))).status).toBe(403);
        expect((await send("GET", "/v1/tools")).status).toBe(401);
        // History and export: read, with the tenant check.
        for (const path of ["/history/1", "/export"]) {
          expect((await send("GET", `/v1/agents/acme-1${path}`, undefined, bearer(READER_A))).status).toBe(200);
          expect((await send("GET", `/v1/agents/globex-1${path}`, undefined, bearer(READER_A))).status).toBe(403);
        }
        // What-if: replay (it spends verifier calls; a read token may not), tenant-checked.
        const beforeA = await store.readEvents("acme-1", 0, 1000);
        expect((await send("POST", "/v1/agents/acme-1/what-if", "{}", bearer(READER_A))).status).toBe(403);
        expect((await send("POST", "/v1/agents/acme-1/what-if", "{}", bearer(REPLAYER_A))).status).not.toBe(403);
        expect((await send("POST", "/v1/agents/globex-1/what-if", "{}", bearer(REPLAYER_A))).status).toBe(403);
        expect(await store.readEvents("acme-1", 0, 1000)).toEqual(beforeA);
        // Fork: admin over the source and the new id.
        const fork = (to: string) => JSON.stringify({ atEventId: 1, newAgentId: to });
        expect((await send("POST", "/v1/agents/acme-1/fork", fork("acme-9"), bearer(READER_A))).status).toBe(403);
        expect((await send("POST", "/v1/agents/globex-1/fork", fork("acme-9"), bearer(TENANT_A))).status).toBe(403);
        expect((await send("POST", "/v1/agents/acme-1/fork", fork("globex-9"), bearer(TENANT_A))).status).toBe(403);
        expect(await store.getAgent("globex-9")).toBeNull();
        expect(await store.getAgent("acme-9")).toBeNull();
        expect(await store.readEvents("acme-1", 0, 1000)).toEqual(beforeA);
        expect((await send("POST", "/v1/agents/acme-1/fork", fork("acme-9"), bearer(TENANT_A))).status).toBe(201);
        expect(await store.getAgent("acme-9")).not.toBeNull();
        // Metrics: admin over every tenant.
        expect((await send("GET", "/metrics", undefined, bearer(TENANT_A))).status).toBe(403);
        expect((await send("GET", "/metrics")).status).toBe(401);
        expect((await send("GET", "/metrics", undefined, bearer(ADMIN))).status).toBe(200);
        expect((await send("GET", "/healthz")).status).toBe(200);
        expect((await send("GET", "/readyz")).status).toBe(200);
      } finally {
        await gh.close();
      }
    });

    it("gives 403 to a verb the token lacks, and changes nothing", async () => {
      const { gh, send, store } = setup(auth);
      try {
        expect((await send("GET", "/v1/agents/acme-2", undefined, bearer(READER_A))).status).toBe(404);
        for (const [method, path, body] of [
          ["POST", "/v1/agents/acme-2/tasks", task],
          ["POST", "/v1/agents/acme-2/cancel", "{}"],
          ["POST", "/v1/agents/acme-2/tool-results", JSON.stringify({ toolCallId: "x", result: 1 })],
          ["POST", "/v1/agents/acme-2/reset", "{}"],
        ] as const) {
          expect((await send(method, path, body, bearer(READER_A))).status).toBe(403);
        }
        expect(await store.getAgent("acme-2")).toBeNull();
      } finally {
        await gh.close();
      }
    });

    it("fails closed: with only signing keys configured, every route but /healthz and /readyz answers 401", async () => {
      const { gh, send } = setup({ webhookSecrets: [SECRET] });
      try {
        expect((await send("GET", "/healthz")).status).toBe(200);
        for (const path of ["/v1/agents/x", "/v1/machine", "/openapi.json", "/v1/agents/x/events"]) {
          expect((await send("GET", path)).status).toBe(401);
        }
      } finally {
        await gh.close();
      }
    });

    it("logs neither tokens nor signatures", async () => {
      const { gh, send, logs } = setup({ ...auth, webhookSecrets: [SECRET] });
      try {
        const sig = new Webhook(SECRET).sign("m_log", new Date(T0), task);
        await send("POST", "/v1/agents/globex-9/tasks", task, bearer(TENANT_A));
        await send("POST", "/v1/agents/acme-9/tasks", task, bearer(TENANT_A + "x"));
        await send("POST", "/v1/agents/acme-9/tasks", task.replace("h", "H"), { "webhook-id": "m_log", "webhook-timestamp": String(T0 / 1000), "webhook-signature": sig });
        await send("POST", "/v1/agents/acme-9/tasks", task, { "webhook-id": "m_log", "webhook-timestamp": String(T0 / 1000), "webhook-signature": sig });
        await gh.drain();
        const all = logs.join("\n");
        for (const secret of [TENANT_A, ADMIN, sig.slice(3), SECRET.slice(6)]) expect(all).not.toContain(secret);
      } finally {
        await gh.close();
      }
    });
  });
});

describe("auth configuration", () => {
  it("reads the environment variables of the entries", () => {
    expect(authFromEnv({})).toBeUndefined();
    expect(authFromEnv({
      GATEHOUSE_WEBHOOK_SECRETS: `${SECRET}, ${OLD_SECRET}`,
      QSTASH_CURRENT_SIGNING_KEY: QSTASH.currentSigningKey,
      QSTASH_NEXT_SIGNING_KEY: QSTASH.nextSigningKey,
      GATEHOUSE_TOKENS: JSON.stringify([{ token: TENANT_A, tenants: ["acme-"], verbs: ["read"] }]),
      GATEHOUSE_TOKEN: ADMIN,
    })).toEqual({
      tokens: [{ token: TENANT_A, tenants: ["acme-"], verbs: ["read"] }, ADMIN],
      webhookSecrets: [SECRET, OLD_SECRET],
      qstash: QSTASH,
    });
    expect(() => authFromEnv({ QSTASH_CURRENT_SIGNING_KEY: "x" })).toThrow(/together/);
  });

  it("refuses bad entries at construction", () => {
    const agents = [helper()];
    expect(() => createGatehouse({ agents, auth: {} })).toThrow(/at least one/);
    expect(() => createGatehouse({ agents, auth: { tokens: [{ token: ADMIN, verbs: ["write" as "read"] }] } })).toThrow(/verbs/);
    expect(() => createGatehouse({ agents, auth: { tokens: [{ token: ADMIN, tenants: [] }] } })).toThrow(/tenants/);
    expect(() => createGatehouse({ agents, auth: { webhookSecrets: ["not base64!"] } })).toThrow(/whsec_/);
    expect(() => createGatehouse({ agents, auth: { qstash: { currentSigningKey: "short", nextSigningKey: "" } } })).toThrow(/qstash/);
  });
});
