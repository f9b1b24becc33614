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
 * FUZZ_RUNS (default 1 500 per group, 7 groups: 10 500 requests) sets the
 * size; a failure prints fast-check's seed and path to replay it.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, scriptedModel } from "../mod.ts";
import type { Gatehouse } from "../mod.ts";
import { memoryStore, memoryStoreState } from "../store/memory.ts";
import { PROBLEMS } from "../routes/problem.ts";

const RUNS = Number((globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env.FUZZ_RUNS ?? 1_500);
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
}

async function freshWorld(): Promise<World> {
  const store = memoryStore();
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
  });
  const res = await gh.fetch(new Request("http://gh.test/v1/agents/a1/tasks", {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ agent: "helper", input: "hi", idempotencyKey: "k1" }),
  }));
  const { turnId } = await res.json() as { turnId: string };
  await gh.drain();
  const call = (await gh.store.readEvents("a1", 0, 100)).find((e) => e.type === "tool_call" && e.data.external)!;
  return { gh, dump: () => JSON.stringify(memoryStoreState(store)), turnId, toolCallId: call.data.toolCallId as string, requests: 0 };
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
    tasks: { agent: "\"helper\"", input: "\"hi\"", idempotencyKey: "\"k2\"", verifyMaxAttempts: "3" },
    "tool-results": { turnId: JSON.stringify(w.turnId), toolCallId: JSON.stringify(w.toolCallId), outcome: "{\"ok\":true,\"value\":1}" },
    cancel: { reason: "\"stop\"" },
    reset: { reason: "\"stuck\"" },
    watchdog: {},
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

type RouteName = "tasks" | "tool-results" | "cancel" | "reset" | "watchdog" | "reads" | "routing";

interface Req {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
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
  fc.constantFrom("", "/events", "/verdicts", "/tasks/turn_x", "/tasks/%00", "/tasks/" + "t".repeat(300)),
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

// ------------------------------------------------------------------ the check

const CODES = new Set(Object.keys(PROBLEMS));

async function check(w: World, r: Req): Promise<number> {
  const before = w.dump();
  const res = await w.gh.fetch(new Request(`http://gh.test${r.path}`, {
    method: r.method,
    headers: r.headers,
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

function fuzz(name: string, make: (w: World) => fc.Arbitrary<Req>) {
  it(`${name}: ${RUNS} hostile requests, no 5xx, and no 4xx changes the store`, async () => {
    let w = await freshWorld();
    const seen = { ok: 0, refused: 0 };
    // The arbitrary reads the world's turn and call ids; they are the same shape in every fresh world.
    await fc.assert(
      fc.asyncProperty(fc.constant(null).chain(() => make(w)), async (r) => {
        if (++w.requests > FRESH_EVERY) {
          await w.gh.close();
          w = await freshWorld();
          w.requests = 1;
        }
        const status = await check(w, r);
        if (status < 300) seen.ok++;
        else if (status >= 400) seen.refused++;
      }),
      { numRuns: RUNS },
    );
    await w.gh.close();
    // The generators reach both sides of the check: accepted requests and refused ones.
    expect(seen.ok).toBeGreaterThan(0);
    expect(seen.refused).toBeGreaterThan(RUNS / 10);
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
});
