/**
 * Fuzzing every route with hostile requests (fast-check): deep nesting, huge
 * strings and arrays, wrong types, unicode, prototype keys (`__proto__`,
 * `constructor`), numbers JSON cannot hold (1e309), invalid UTF-8, wrong or
 * missing content types, bad agent and verdict ids, odd queries and headers,
 * unknown paths and methods.
 *
 * Two invariants, checked on every request:
 * 1. no 5xx: the server answers every request, and every error is
 *    problem+json with a documented code;
 * 2. a 4xx changes nothing: the memory store's whole state (every agent's
 *    records, ready queues, deadlines, verdicts) is byte-identical before and
 *    after the request.
 *
 * With auth on (the groups named "auth: ..."): scoped tokens of two tenants
 * and a reader, a wrong token, none; requests signed with Standard Webhooks
 * and QStash, correctly and mis-signed (another secret or key, a tampered
 * body, a stale timestamp, a replayed message id, a JWT without the body
 * hash); stream session cookies, minted and forged; rate limits low enough
 * to answer 429 now and then. The same two invariants hold on every route.
 * Admission bookkeeping (rate-limit buckets, delivery records) is not agent
 * state and is not compared.
 *
 * FUZZ_RUNS (default 1 000 per group, 11 groups: 11 000 requests, about
 * 40 s on two cores) sets the
 * size; a failure prints fast-check's seed and path to replay it.
 *
 * Each group runs on a seed of its own (from its name), so the checks that
 * the run reached given statuses (a 429 needs several admitted requests to
 * one bucket in a short stretch) do not rest on one run's luck. FUZZ_SEED
 * shifts every group's seed (FUZZ_SEED=random: a new one per run); the
 * invariants hold whatever the seed.
 */
import fc from "fast-check";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, scriptedModel } from "../../mod.ts";
import type { Gatehouse } from "../../mod.ts";
import { memoryStore, memoryStoreState } from "../../store/memory.ts";
import { PROBLEMS } from "../../routes/problem.ts";
import { manualClock, type ManualClock } from "../helpers/clock.ts";

const ENV = (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env ?? {};
const RUNS = Number(ENV.FUZZ_RUNS ?? 1_000);
const SEED_SHIFT = ENV.FUZZ_SEED === "random" ? Math.floor(Math.random() * 2 ** 31) : Number(ENV.FUZZ_SEED ?? 0);

/** A group's seed: a hash of its name, shifted by FUZZ_SEED. */
function seedOf(name: string): number {
  let h = 2166136261;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
  return ((h >>> 0) + SEED_SHIFT) % 2 ** 31;
}
/** A fresh gatehouse every this many requests keeps the state (and so each comparison) small. */
const FRESH_EVERY = 60;
const MAX_BODY = 64 * 1024;

const ask = defineTool({ name: "ask_human", description: "Ask a human", parameters: z.object({ q: z.string() }) });

interface World {
  gh: Gatehouse;
  dump(): string;
  turnId: string;
  toolCallId: string;
  requests: number;
  /** Auth worlds: a hand-moved clock (signatures, sessions, rate limits) and a minted stream session cookie. */
  clock?: ManualClock;
  session?: string;
}

const ADMIN = "fuzz-admin-token-0123456789";
const ACME = "fuzz-acme-token-0123456789a";
const ACME_READER = "fuzz-acme-reader-012345678";
const GLOBEX = "fuzz-globex-token-01234567";
const SECRET = "whsec_" + btoa("fuzz-secret-0123456789abcdef0123");
const OTHER_SECRET = "whsec_" + btoa("other-secret-0123456789abcdef01");
const QSTASH = { currentSigningKey: "sig_fuzz_current_0123456789", nextSigningKey: "sig_fuzz_next_0123456789abc" };
const AUTH = {
  tokens: [
    ADMIN,
    { token: ACME, tenants: ["acme-"] },
    { token: ACME_READER, tenants: ["acme-"], verbs: ["read" as const] },
    { token: GLOBEX, tenants: ["globex-"] },
  ],
  webhookSecrets: [{ secret: SECRET, tenants: ["acme-"] }],
  qstash: QSTASH,
};

async function freshWorld(auth = false): Promise<World> {
  const store = memoryStore();
  const clock = auth ? manualClock() : undefined;
  const gh = createGatehouse({
    agents: [defineAgent({
      name: "helper",
      instructions: "Ask, then submit.",
      model: scriptedModel([
        { toolCalls: [{ name: "ask_human", args: { q: "ok?" } }] },
        { toolCalls: [{ name: "submit_result", args: { result: "yes" } }] },
      ]),
      tools: [ask],
    })],
    store,
    maxBodyBytes: MAX_BODY,
    ...(clock ? { clock, auth: AUTH, rateLimits: { perToken: { limit: 8, periodMs: 1_000 }, perAgent: { limit: 5, periodMs: 1_000 } } } : {}),
  });
  const seed = auth ? "acme-1" : "a1";
  const res = await gh.fetch(new Request(`http://gh.test/v1/agents/${seed}/tasks`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(auth ? { authorization: `Bearer ${ADMIN}` } : {}) },
    body: JSON.stringify({ agent: "helper", input: "hi", idempotencyKey: "k1" }),
  }));
  const { turnId } = await res.json() as { turnId: string };
  await gh.drain();
  const call = (await gh.store.readEvents(seed, 0, 100)).find((e) => e.type === "tool_call" && e.data.external)!;
  let session: string | undefined;
  if (auth) {
    const minted = await gh.fetch(new Request(`http://gh.test/v1/agents/${seed}/events/session`, { method: "POST", headers: { authorization: `Bearer ${ACME_READER}` } }));
    session = minted.headers.get("set-cookie")!.split(";")[0];
  }
  return { gh, dump: () => JSON.stringify(memoryStoreState(store)), turnId, toolCallId: call.data.toolCallId as string, requests: 0, clock, session };
}

// ------------------------------------------------------------------ hostile pieces

const PROTO_KEYS = ["__proto__", "constructor", "prototype", "toString", "hasOwnProperty", "__defineGetter__", "valueOf"];

/** JSON text of hostile values (numbers JSON.stringify cannot write are spliced in as text). */
const hostileText: fc.Arbitrary<string> = fc.letrec<{ v: string }>((tie) => ({
  v: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constantFrom("null", "true", "false", "0", "-0", "1e309", "-1e309", "1e-400", "123456789012345678901234567890", "1.5", "\"\"", "[]", "{}"),
    fc.string({ unit: "grapheme", maxLength: 30 }).map((s) => JSON.stringify(s)),
    fc.string({ unit: "binary", maxLength: 20 }).map((s) => JSON.stringify(s)),
    fc.constantFrom("\"\\ud800\"", "\"\\u0000\"", "\"\\\\\"", "\"\\/\\b\\f\\n\\r\\t\""),
    fc.array(tie("v"), { maxLength: 4 }).map((xs) => `[${xs.join(",")}]`),
    fc.array(fc.tuple(fc.oneof(fc.constantFrom(...PROTO_KEYS), fc.string({ maxLength: 8 })), tie("v")), { maxLength: 4 })
      .map((kv) => `{${kv.map(([k, x]) => `${JSON.stringify(k)}:${x}`).join(",")}}`),
  ),
})).v;

/** Nesting from just under the default limit (64) to far beyond it, as arrays, objects or a mix. */
const deepText = fc.tuple(fc.oneof(fc.integer({ min: 55, max: 70 }), fc.integer({ min: 71, max: 6_000 })), fc.constantFrom("[", "{\"a\":", "[{\"b\":")).map(([depth, open]) => {
  const close = open === "[" ? "]" : open === "{\"a\":" ? "}" : "}]";
  const n = open === "[{\"b\":" ? Math.ceil(depth / 2) : depth;
  return open.repeat(n) + "1" + close.repeat(n);
});

/** Strings and arrays around the limits (string 262 144 characters is above the 64 KiB body limit here). */
const bigText = fc.oneof(
  fc.integer({ min: 1, max: 70_000 }).map((n) => JSON.stringify("x".repeat(n))),
  fc.integer({ min: 9_995, max: 10_005 }).map((n) => `[${"0,".repeat(n - 1)}0]`),
  fc.integer({ min: 9_995, max: 10_005 }).map((n) => `{${Array.from({ length: n }, (_, i) => `"k${i}":0`).join(",")}}`),
);

/** A body of the right shape for `route` with one field replaced by something hostile. */
function shapedBody(route: RouteName, w: World) {
  const fields = {
    tasks: { agent: "\"helper\"", input: "\"hi\"", idempotencyKey: "\"k2\"", verifyAttempts: "3" },
    "tool-results": { turnId: JSON.stringify(w.turnId), toolCallId: JSON.stringify(w.toolCallId), outcome: "{\"ok\":true,\"value\":1}" },
    cancel: { reason: "\"stop\"" },
    reset: { reason: "\"stuck\"" },
    watchdog: {},
    fork: { atEventId: "2", newAgentId: "\"acme-fork\"" },
    "what-if": {},
  } as Partial<Record<RouteName, Record<string, string>>>;
  const base = fields[route] ?? {};
  const text = (kv: Record<string, string>) => `{${Object.entries(kv).map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(",")}}`;
  const mutated = fc.tuple(
    fc.oneof(fc.constantFrom(...Object.keys(base), ...PROTO_KEYS, "extra"), fc.string({ maxLength: 10 })),
    fc.oneof({ weight: 10, arbitrary: hostileText }, { weight: 2, arbitrary: deepText }, { weight: 1, arbitrary: bigText }),
    fc.boolean(),
  ).map(([key, value, drop]) => {
    const kv = { ...base, [key]: value };
    if (drop) delete kv[Object.keys(base)[0] ?? key];
    return text(kv);
  });
  // Now and then the body as it should be, so accepted requests (and their writes) are part of the run.
  return fc.oneof({ weight: 2, arbitrary: fc.constant(text(base)) }, { weight: 5, arbitrary: mutated });
}

const garbageBody: fc.Arbitrary<string | Uint8Array> = fc.oneof(
  fc.constant(""),
  fc.string({ unit: "binary", maxLength: 200 }),
  fc.uint8Array({ maxLength: 200 }),
  fc.constantFrom(new Uint8Array([0xff, 0xfe, 0x7b, 0x7d]), new Uint8Array([0xc3, 0x28]), new Uint8Array([0xed, 0xa0, 0x80])),
  fc.constantFrom("{", "[", "{\"a\":", "nul", "{\"agent\":\"helper\",\"input\":\"x\"}garbage", "\ufeff{}", "{\"a\":1,\"a\":2}"),
  deepText,
);

const contentType = fc.oneof(
  { weight: 6, arbitrary: fc.constant("application/json") },
  { weight: 1, arbitrary: fc.constantFrom(undefined, "text/plain", "application/x-www-form-urlencoded", "application/problem+json", "application/json; charset=utf-16", "APPLICATION/JSON", "application/", "multipart/form-data; boundary=x", "application/json;;", "application/json+x") },
  { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
);

const agentId = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom("a1", "a2") },
  {
    weight: 2,
    arbitrary: fc.constantFrom(".", "..", "%2E", "%7Ba%7D", "a%00b", "a%0Ab", "%ZZ", "caf%C3%A9", "x".repeat(129), "__proto__", "constructor", "a%2Fb", "%F0%9F%98%80", ""),
  },
  { weight: 1, arbitrary: fc.string({ unit: "grapheme", minLength: 1, maxLength: 12 }).map(encodeURIComponent) },
);

type RouteName = "tasks" | "tool-results" | "cancel" | "reset" | "watchdog" | "fork" | "what-if" | "reads" | "routing";

interface Req {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  /** Auth worlds: how the request proves who sends it (headers computed when it is sent). */
  credential?: Credential;
}

function headersWith(ct: string | undefined, extra: Record<string, string> = {}): Record<string, string> {
  const h: Record<string, string> = { ...extra };
  if (ct !== undefined) h["content-type"] = ct;
  return h;
}

function bodyRequest(route: Exclude<RouteName, "reads" | "routing">, w: World): fc.Arbitrary<Req> {
  const path = (id: string) => route === "watchdog" ? "/v1/watchdog/tick" : `/v1/agents/${id}/${route}`;
  return fc.tuple(
    agentId,
    contentType,
    fc.oneof({ weight: 4, arbitrary: shapedBody(route, w) }, { weight: 1, arbitrary: hostileText }, { weight: 1, arbitrary: garbageBody }),
    fc.option(fc.constantFrom("0", "1", "-1", "abc", "99999999999999999999", "1e3", ""), { freq: 8 }),
  ).map(([id, ct, body, cl]) => ({
    method: "POST",
    path: path(id),
    headers: headersWith(ct, cl === null ? {} : { "content-length": cl }),
    body,
  }));
}

const readRequest: fc.Arbitrary<Req> = fc.tuple(
  agentId,
  fc.constantFrom("", "/events", "/verdicts", "/tasks/turn_x", "/tasks/%00", "/tasks/" + "t".repeat(300), "/history/1", "/history/0", "/history/x", "/export"),
  fc.array(fc.tuple(
    fc.constantFrom("after", "limit", "turnId", "status", "__proto__", "x"),
    fc.oneof(fc.constantFrom("0", "-1", "1e309", "500", "501", "NaN", "0x10", " 1", "PASS", "%00", ""), fc.string({ maxLength: 10 }).map(encodeURIComponent)),
  ), { maxLength: 3 }),
  fc.option(fc.constantFrom("1", "-1", "abc", "9007199254740993", " 2", ""), { freq: 3 }),
  fc.option(fc.constantFrom("text/event-stream", "application/json", "*/*", "text/html"), { freq: 3 }),
).map(([id, sub, query, lastId, accept]) => {
  const qs = query.length ? `?${query.map(([k, v]) => `${k}=${v}`).join("&")}` : "";
  const headers: Record<string, string> = {};
  if (lastId !== null) headers["last-event-id"] = lastId;
  if (accept !== null) headers.accept = accept;
  return { method: "GET", path: `/v1/agents/${id}${sub}${qs}`, headers };
});

const routingRequest: fc.Arbitrary<Req> = fc.tuple(
  fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"),
  fc.oneof(
    fc.constantFrom(
      "/", "/healthz", "/readyz", "/openapi.json", "/v1/machine", "/v1/machine?format=x", "/v1/verdicts/verdict_0123456789ab",
      "/v1/verdicts/bad", "/v1/verdicts/%00", "/v1/agents", "/v1/agents/", "/v1/agents/a1/tasks/extra", "/v1/watchdog/tick",
      "/v1/agents/a1/tool-results", "/v1/agents/a1/cancel", "/v1/agents/a1/reset", "/v1/agents/a1/tasks/turn_x",
      "/v1/agents/a1/tasks/%7B%7D", "/v1/agents/a2/tasks/turn_1", "/%2e%2e/%2e%2e/etc/passwd", "/v1//agents//a1",
      "/v1/agents/a1/events/session", "/v1/agents/a1/fork", "/v1/agents/a1/what-if", "/v1/agents/a1/history/1", "/v1/agents/a1/export",
      "/v1/agents?limit=5&state=done", "/v1/agents?cursor=bad", "/v1/agents?limit=0", "/metrics", "/debug", "/debug/agents/a1",
      "/debug/app.js", "/debug/app.css", "/debug/agents/%00",
    ),
    fc.string({ unit: "grapheme", maxLength: 20 }).map((s) => `/${encodeURIComponent(s)}`),
  ),
  fc.option(hostileText, { freq: 2 }),
).map(([method, path, body]) => ({
  method,
  path,
  headers: (body === null ? {} : { "content-type": "application/json" }) as Record<string, string>,
  ...(body === null || method === "GET" || method === "HEAD" ? {} : { body }),
}));

// ------------------------------------------------------------------ credentials (auth worlds)

type Credential =
  | "none" | "bad-token" | "admin" | "acme" | "acme-reader" | "globex" | "lowercase-bearer" | "basic"
  | "webhook" | "webhook-other-secret" | "webhook-tampered" | "webhook-stale" | "webhook-future" | "webhook-replay" | "webhook-no-id" | "webhook-garbage"
  | "qstash" | "qstash-next" | "qstash-wrong-key" | "qstash-tampered" | "qstash-stale" | "qstash-no-body-hash" | "qstash-alg-none" | "qstash-garbage" | "qstash-other-url"
  | "session" | "session-forged" | "session-and-token";

const TOKEN_CREDENTIALS: Credential[] = ["none", "bad-token", "admin", "acme", "acme-reader", "globex", "lowercase-bearer", "basic"];
const SIGNED_CREDENTIALS: Credential[] = [
  "webhook", "webhook-other-secret", "webhook-tampered", "webhook-stale", "webhook-future", "webhook-replay", "webhook-no-id", "webhook-garbage",
  "qstash", "qstash-next", "qstash-wrong-key", "qstash-tampered", "qstash-stale", "qstash-no-body-hash", "qstash-alg-none", "qstash-garbage", "qstash-other-url",
];
const SESSION_CREDENTIALS: Credential[] = ["session", "session-forged", "session-and-token"];

const enc = new TextEncoder();
const b64url = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const bodyText = (b: Req["body"]) => (b === undefined ? "" : typeof b === "string" ? b : new TextDecoder().decode(b));
let messageSeq = 0;

/** A QStash `Upstash-Signature` (HS256 JWT over iss/sub/exp/nbf/iat/jti/body) with optional changes. */
async function qstashJwt(key: string, body: string, nowSec: number, over: Record<string, unknown> = {}, alg = "HS256", sub = "https://gh.test/"): Promise<string> {
  const header = b64url(enc.encode(JSON.stringify({ alg, typ: "JWT" })));
  const hash = b64url(new Uint8Array(await crypto.subtle.digest("SHA-256", enc.encode(body))));
  const claims = { iss: "Upstash", sub, exp: nowSec + 300, nbf: nowSec, iat: nowSec, jti: `jwt_${++messageSeq}`, body: hash, ...over };
  const payload = b64url(enc.encode(JSON.stringify(claims)));
  const k = await crypto.subtle.importKey("raw", enc.encode(key), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return `${header}.${payload}.${b64url(new Uint8Array(await crypto.subtle.sign("HMAC", k, enc.encode(`${header}.${payload}`))))}`;
}

/** The headers of a credential for this request, from the world's clock (signatures cover the request's own body bytes). */
async function credentialHeaders(w: World, r: Req): Promise<Record<string, string>> {
  const now = w.clock!.now();
  const sec = Math.floor(now / 1000);
  const body = bodyText(r.body);
  // A QStash token is for the URL it was sent to (its sub).
  const url = new URL(`http://gh.test${r.path}`).href;
  const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
  const webhook = (secret: string, id: string, at: number, signedBody = body) => ({
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(at / 1000)),
    "webhook-signature": new Webhook(secret).sign(id, new Date(at), signedBody),
  });
  switch (r.credential!) {
    case "none": return {};
    case "bad-token": return bearer("not-a-configured-token-000");
    case "admin": return bearer(ADMIN);
    case "acme": return bearer(ACME);
    case "acme-reader": return bearer(ACME_READER);
    case "globex": return bearer(GLOBEX);
    case "lowercase-bearer": return { authorization: `bearer ${ACME}` };
    case "basic": return { authorization: `Basic ${btoa(`user:${ADMIN}`)}` };
    case "webhook": return webhook(SECRET, `msg_${++messageSeq}`, now);
    case "webhook-other-secret": return webhook(OTHER_SECRET, `msg_${++messageSeq}`, now);
    case "webhook-tampered": return webhook(SECRET, `msg_${++messageSeq}`, now, body + " ");
    case "webhook-stale": return webhook(SECRET, `msg_${++messageSeq}`, now - 301_000);
    case "webhook-future": return webhook(SECRET, `msg_${++messageSeq}`, now + 301_000);
    // The same message id again: answered like the first delivery (409 while it runs, 409 delivery_replayed on another route), never run twice.
    case "webhook-replay": return webhook(SECRET, "msg_replayed", now);
    case "webhook-no-id": {
      const h = webhook(SECRET, `msg_${++messageSeq}`, now) as Record<string, string>;
      delete h["webhook-id"];
      return h;
    }
    case "webhook-garbage": return { "webhook-id": "x", "webhook-timestamp": String(sec), "webhook-signature": "v1,@@@ v2,xyz v1," };
    case "qstash": return { "upstash-signature": await qstashJwt(QSTASH.currentSigningKey, body, sec, {}, "HS256", url) };
    case "qstash-next": return { "upstash-signature": await qstashJwt(QSTASH.nextSigningKey, body, sec, {}, "HS256", url) };
    case "qstash-wrong-key": return { "upstash-signature": await qstashJwt("sig_wrong_key_0123456789ab", body, sec, {}, "HS256", url) };
    case "qstash-tampered": return { "upstash-signature": await qstashJwt(QSTASH.currentSigningKey, body + "x", sec, {}, "HS256", url) };
    case "qstash-stale": return { "upstash-signature": await qstashJwt(QSTASH.currentSigningKey, body, sec - 600, {}, "HS256", url) };
    case "qstash-no-body-hash": return { "upstash-signature": await qstashJwt(QSTASH.currentSigningKey, body, sec, { body: undefined }, "HS256", url) };
    case "qstash-alg-none": return { "upstash-signature": await qstashJwt(QSTASH.currentSigningKey, body, sec, {}, "none", url) };
    case "qstash-garbage": return { "upstash-signature": "a.b.c" };
    // A token captured on one agent's route, sent to this one.
    case "qstash-other-url": return { "upstash-signature": await qstashJwt(QSTASH.currentSigningKey, body, sec, {}, "HS256", "http://gh.test/v1/agents/acme-0/tasks") };
    case "session": return { cookie: w.session! };
    case "session-forged": return { cookie: `${w.session!.slice(0, -4)}AAAA` };
    case "session-and-token": return { cookie: w.session!, ...bearer(GLOBEX) };
  }
}

/** Agent ids of the auth world: both tenants, the seeded agent, and hostile ones. */
const tenantAgentId = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom("acme-1", "acme-2", "globex-1") },
  { weight: 1, arbitrary: agentId },
);

/** Signed (and mis-signed) requests on the write routes, and on routes that do not take signatures. */
function signedRequest(w: World): fc.Arbitrary<Req> {
  return fc.tuple(
    fc.constantFrom("tasks", "tool-results", "cancel", "reset", "fork") as fc.Arbitrary<Exclude<RouteName, "reads" | "routing" | "watchdog" | "what-if">>,
    tenantAgentId,
    // Half of the requests carry a valid signature (3 of the 16 kinds), so admitted requests pile up in the
    // signers' and agents' buckets often enough for the rate limits to answer too.
    fc.oneof(
      { weight: 1, arbitrary: fc.constantFrom<Credential>("webhook", "qstash", "qstash-next") },
      { weight: 1, arbitrary: fc.constantFrom(...SIGNED_CREDENTIALS) },
    ),
    fc.oneof({ weight: 6, arbitrary: fc.constant("application/json") }, { weight: 1, arbitrary: contentType }),
  ).chain(([route, id, credential, ct]) =>
    fc.oneof({ weight: 4, arbitrary: shapedBody(route, w) }, { weight: 1, arbitrary: hostileText }, { weight: 1, arbitrary: garbageBody })
      .map((body) => ({ method: "POST", path: `/v1/agents/${id}/${route}`, headers: headersWith(ct), body, credential }))
  );
}

/** Every route of the surface, each with every kind of credential. */
function authedRequest(w: World): fc.Arbitrary<Req> {
  const routes: Array<[string, string, RouteName | null]> = [
    ["POST", "/tasks", "tasks"], ["POST", "/tool-results", "tool-results"], ["POST", "/cancel", "cancel"], ["POST", "/reset", "reset"],
    ["POST", "/fork", "fork"], ["POST", "/what-if", "what-if"], ["POST", "/events/session", null], ["DELETE", "/tasks/turn_x", null],
    ["GET", "", null], ["GET", "/events", null], ["GET", "/events?format=sse", null], ["GET", "/verdicts", null], ["GET", "/tasks/turn_x", null],
    ["GET", "/history/1", null], ["GET", "/export", null],
  ];
  const global: Array<[string, string]> = [
    ["GET", "/v1/agents"], ["GET", "/v1/agents?limit=2"], ["GET", "/v1/machine"], ["GET", "/openapi.json"], ["GET", "/metrics"],
    ["GET", "/v1/verdicts/verdict_0123456789ab"], ["POST", "/v1/watchdog/tick"], ["GET", "/healthz"], ["GET", "/debug"],
    ["GET", "/debug/agents/acme-1"], ["GET", "/nowhere"], ["PUT", "/v1/agents/acme-1/tasks"],
  ];
  const credential = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...TOKEN_CREDENTIALS) },
    { weight: 2, arbitrary: fc.constantFrom(...SIGNED_CREDENTIALS) },
    { weight: 1, arbitrary: fc.constantFrom(...SESSION_CREDENTIALS) },
  );
  const agentRoute = fc.tuple(fc.constantFrom(...routes), tenantAgentId, credential).chain(([[method, sub, bodyRoute], id, cred]) =>
    (bodyRoute === null
      ? fc.constant<string | Uint8Array | undefined>(method === "POST" ? "" : undefined)
      : fc.oneof({ weight: 3, arbitrary: shapedBody(bodyRoute as Exclude<RouteName, "reads" | "routing">, w) }, { weight: 1, arbitrary: hostileText }))
      .map((body) => ({
        method,
        path: `/v1/agents/${id}${sub}`,
        headers: body === undefined ? {} : { "content-type": "application/json" } as Record<string, string>,
        ...(body === undefined ? {} : { body }),
        credential: cred,
      }))
  );
  const globalRoute = fc.tuple(fc.constantFrom(...global), credential).map(([[method, path], cred]) => ({
    method, path, headers: {} as Record<string, string>, credential: cred,
  }));
  return fc.oneof({ weight: 4, arbitrary: agentRoute }, { weight: 1, arbitrary: globalRoute });
}

// ------------------------------------------------------------------ the check

const CODES = new Set(Object.keys(PROBLEMS));

async function check(w: World, r: Req): Promise<number> {
  if (w.clock) w.clock.advance(10);
  const headers = r.credential ? { ...r.headers, ...(await credentialHeaders(w, r)) } : r.headers;
  const before = w.dump();
  const res = await w.gh.fetch(new Request(`http://gh.test${r.path}`, {
    method: r.method,
    headers,
    ...(r.body !== undefined ? { body: r.body as BodyInit } : {}),
  }));
  const isStream = (res.headers.get("content-type") ?? "").startsWith("text/event-stream");
  const text = isStream ? (await res.body?.cancel(), "") : await res.text();
  const where = `${r.method} ${r.path.slice(0, 120)} -> ${res.status} ${text.slice(0, 300)}`;
  expect(res.status, where).toBeLessThan(500);
  if (res.status >= 400) {
    expect(res.headers.get("content-type"), where).toBe("application/problem+json");
    if (r.method !== "HEAD") {
      const problem = JSON.parse(text) as { code: string; status: number };
      expect(CODES.has(problem.code), where).toBe(true);
      expect(problem.status, where).toBe(res.status);
    }
    expect(w.dump() === before, `${where}: a ${res.status} changed the store`).toBe(true);
  }
  return res.status;
}

interface GroupOptions {
  /** An auth world (tokens, signatures, sessions, rate limits). */
  auth?: boolean;
  /** Whether some request must be accepted (false where the seeded agent gives the route nothing to do). */
  accepts?: boolean;
  /** Statuses the run must have answered at least once. */
  statuses?: number[];
}

function fuzz(name: string, make: (w: World) => fc.Arbitrary<Req>, opts: GroupOptions = {}) {
  const { auth = false, accepts = true, statuses = [] } = opts;
  it(`${name}: ${RUNS} hostile requests, no 5xx, and no 4xx changes the store`, async () => {
    let w = await freshWorld(auth);
    const seen = { ok: 0, refused: 0 };
    const answered = new Set<number>();
    // The arbitrary reads the world's turn and call ids; they are the same shape in every fresh world.
    await fc.assert(
      fc.asyncProperty(fc.constant(null).chain(() => make(w)), async (r) => {
        if (++w.requests > FRESH_EVERY) {
          await w.gh.close();
          w = await freshWorld(auth);
          w.requests = 1;
        }
        const status = await check(w, r);
        answered.add(status);
        if (status < 300) seen.ok++;
        else if (status >= 400) seen.refused++;
      }),
      { numRuns: RUNS, seed: seedOf(name) },
    );
    await w.gh.close();
    // The generators reach both sides of the check: accepted requests and refused ones.
    if (accepts) expect(seen.ok).toBeGreaterThan(0);
    expect(seen.refused).toBeGreaterThan(RUNS / 10);
    for (const s of statuses) expect([...answered], `status ${s} was never answered`).toContain(s);
  }, 120_000);
}

describe("fuzz: hostile requests on every route", () => {
  fuzz("POST /v1/agents/:agentId/tasks", (w) => bodyRequest("tasks", w));
  fuzz("POST /v1/agents/:agentId/tool-results", (w) => bodyRequest("tool-results", w));
  fuzz("POST /v1/agents/:agentId/cancel", (w) => bodyRequest("cancel", w));
  fuzz("POST /v1/agents/:agentId/reset", (w) => bodyRequest("reset", w));
  fuzz("POST /v1/watchdog/tick", (w) => bodyRequest("watchdog", w));
  fuzz("GET /v1/agents/:agentId[/events|/verdicts|/tasks/:turnId]", () => readRequest);
  fuzz("any path, any method", () => routingRequest);
  fuzz("POST /v1/agents/:agentId/fork", (w) => bodyRequest("fork", w));
  fuzz("POST /v1/agents/:agentId/what-if", (w) => bodyRequest("what-if", w), { accepts: false });
  fuzz("auth: signed and mis-signed writes (Standard Webhooks, QStash)", (w) => signedRequest(w), { auth: true, statuses: [202, 401, 403, 429] });
  fuzz("auth: every route with every kind of credential", (w) => authedRequest(w), { auth: true, statuses: [200, 202, 401, 403, 404, 429] });
});
