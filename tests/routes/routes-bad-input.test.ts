/**
 * Bad input on every route gets its documented status and a problem+json body
 * with its documented code (docs/http.md), and changes nothing: the agent's
 * whole stored state (every record and its entries in the ready, deadline and
 * verdict indexes, tests/helpers/store-state.ts) is the same afterwards, and
 * no agent is created.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, scriptedModel } from "../../mod.ts";
import type { Gatehouse } from "../../mod.ts";
import { memoryStateReader, statesOf } from "../helpers/store-state.ts";

const MAX_BODY = 1024;
const BASE = "http://gh.test";

interface Ctx {
  gh: Gatehouse;
  turnId: string;
  toolCallId: string;
}

type Body = string | Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array> | null;

interface Case {
  name: string;
  request: (ctx: Ctx) => Request;
  status: number;
  code: string;
}

function req(method: string, path: string, body: Body, headers: Record<string, string> = {}): Request {
  const init: RequestInit & { duplex?: "half" } = { method, headers, body };
  if (body instanceof ReadableStream) init.duplex = "half";
  return new Request(BASE + path, init);
}

const jsonReq = (method: string, path: string, value: unknown) =>
  req(method, path, JSON.stringify(value), { "content-type": "application/json" });

/** A body stream of `total` bytes in 256-byte chunks, without Content-Length. */
function bytesStream(total: number, fill = "x"): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream({
    pull(c) {
      if (sent >= total) return c.close();
      const n = Math.min(256, total - sent);
      c.enqueue(new TextEncoder().encode(fill.repeat(n)));
      sent += n;
    },
  });
}

/** A body stream that never ends. */
function endlessStream(): ReadableStream<Uint8Array> {
  return new ReadableStream({ pull: (c) => c.enqueue(new Uint8Array(4096).fill(32)) });
}

// ------------------------------------------------------------------ the cases

interface BodyRoute {
  name: string;
  path: string;
  /** A body the route accepts (structurally; the store may still refuse it). */
  valid: (ctx: Ctx) => Record<string, unknown>;
  required: boolean;
  /** Bodies of the right JSON syntax that break the schema. */
  invalid: Array<[string, (ctx: Ctx) => unknown]>;
}

const BODY_ROUTES: BodyRoute[] = [
  {
    name: "POST /v1/agents/:agentId/tasks",
    path: "/v1/agents/a1/tasks",
    valid: () => ({ agent: "helper", input: "hi" }),
    required: true,
    invalid: [
      ["agent is a number", () => ({ agent: 1, input: "hi" })],
      ["agent is missing", () => ({ input: "hi" })],
      ["input is missing", () => ({ agent: "helper" })],
      ["input is a number", () => ({ agent: "helper", input: 5 })],
      ["input is an array", () => ({ agent: "helper", input: [1] })],
      ["input is null", () => ({ agent: "helper", input: null })],
      ["idempotencyKey is empty", () => ({ agent: "helper", input: "hi", idempotencyKey: "" })],
      ["idempotencyKey is a number", () => ({ agent: "helper", input: "hi", idempotencyKey: 5 })],
      ["verifyAttempts is 0", () => ({ agent: "helper", input: "hi", verifyAttempts: 0 })],
      ["verifyAttempts is 101", () => ({ agent: "helper", input: "hi", verifyAttempts: 101 })],
      ["verifyAttempts is 2.5", () => ({ agent: "helper", input: "hi", verifyAttempts: 2.5 })],
      ["verifyAttempts is a string", () => ({ agent: "helper", input: "hi", verifyAttempts: "3" })],
      ["an unknown field is present", () => ({ agent: "helper", input: "hi", urgency: 1 })],
      ["the body is an array", () => [{ agent: "helper", input: "hi" }]],
      ["the body is null", () => null],
    ],
  },
  {
    name: "POST /v1/agents/:agentId/tool-results",
    path: "/v1/agents/a1/tool-results",
    valid: (c) => ({ turnId: c.turnId, toolCallId: c.toolCallId, outcome: { ok: true, value: 1 } }),
    required: true,
    invalid: [
      ["turnId is a number", (c) => ({ turnId: 1, toolCallId: c.toolCallId, outcome: { ok: true, value: 1 } })],
      ["toolCallId is missing", (c) => ({ turnId: c.turnId, outcome: { ok: true, value: 1 } })],
      ["outcome is missing", (c) => ({ turnId: c.turnId, toolCallId: c.toolCallId })],
      ["outcome.value is missing", (c) => ({ turnId: c.turnId, toolCallId: c.toolCallId, outcome: { ok: true } })],
      ["outcome.ok is a string", (c) => ({ turnId: c.turnId, toolCallId: c.toolCallId, outcome: { ok: "yes", value: 1 } })],
      [
        "outcome.error has no message",
        (c) => ({ turnId: c.turnId, toolCallId: c.toolCallId, outcome: { ok: false, error: { type: "x" } } }),
      ],
      [
        "outcome.error.retryable is a string",
        (c) => ({
          turnId: c.turnId,
          toolCallId: c.toolCallId,
          outcome: { ok: false, error: { type: "x", message: "m", retryable: "no" } },
        }),
      ],
      [
        "outcome.error.retriable is a string",
        (c) => ({
          turnId: c.turnId,
          toolCallId: c.toolCallId,
          outcome: { ok: false, error: { type: "x", message: "m", retriable: "no" } },
        }),
      ],
      [
        "outcome carries an unknown field",
        (c) => ({ turnId: c.turnId, toolCallId: c.toolCallId, outcome: { ok: true, value: 1, error: {} } }),
      ],
      [
        "afterExecution is not continue/terminate",
        (c) => ({ turnId: c.turnId, toolCallId: c.toolCallId, outcome: { ok: true, value: 1 }, afterExecution: "stop" }),
      ],
      [
        "an unknown field is present",
        (c) => ({ turnId: c.turnId, toolCallId: c.toolCallId, outcome: { ok: true, value: 1 }, source: "watchdog" }),
      ],
      ["the body is a string", () => "result"],
    ],
  },
  {
    name: "POST /v1/agents/:agentId/cancel",
    path: "/v1/agents/a1/cancel",
    valid: () => ({ reason: "stop" }),
    required: false,
    invalid: [
      ["reason is a number", () => ({ reason: 5 })],
      ["reason is empty", () => ({ reason: "" })],
      ["an unknown field is present", () => ({ why: "x" })],
      ["the body is an array", () => []],
    ],
  },
  {
    name: "POST /v1/watchdog/tick",
    path: "/v1/watchdog/tick",
    valid: () => ({}),
    required: false,
    invalid: [
      ["an unknown field is present", () => ({ limit: 5 })],
      ["the body is a number", () => 1],
    ],
  },
];

function bodyCases(r: BodyRoute): Case[] {
  const cases: Case[] = [
    {
      name: "malformed JSON",
      request: () => req("POST", r.path, '{"agent": "helper",', { "content-type": "application/json" }),
      status: 400,
      code: "malformed_json",
    },
    {
      name: "JSON followed by garbage",
      request: (c) => req("POST", r.path, JSON.stringify(r.valid(c)) + " x", { "content-type": "application/json" }),
      status: 400,
      code: "malformed_json",
    },
    {
      name: "a body that is not UTF-8",
      request: () => req("POST", r.path, new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]), { "content-type": "application/json" }),
      status: 400,
      code: "malformed_json",
    },
    {
      name: "a text/plain content type",
      request: (c) => req("POST", r.path, JSON.stringify(r.valid(c)), { "content-type": "text/plain" }),
      status: 415,
      code: "unsupported_media_type",
    },
    {
      name: "a look-alike content type (application/jsonp)",
      request: (c) => req("POST", r.path, JSON.stringify(r.valid(c)), { "content-type": "application/jsonp" }),
      status: 415,
      code: "unsupported_media_type",
    },
    {
      name: "no content type",
      request: (c) => req("POST", r.path, new TextEncoder().encode(JSON.stringify(r.valid(c)))),
      status: 415,
      code: "unsupported_media_type",
    },
    {
      name: "an oversized body with its Content-Length",
      request: () =>
        req("POST", r.path, "x".repeat(MAX_BODY + 1), {
          "content-type": "application/json",
          "content-length": String(MAX_BODY + 1),
        }),
      status: 413,
      code: "payload_too_large",
    },
    {
      name: "a Content-Length above the limit",
      request: () => req("POST", r.path, "{}", { "content-type": "application/json", "content-length": "999999999" }),
      status: 413,
      code: "payload_too_large",
    },
    {
      name: "an oversized body without Content-Length",
      request: () => req("POST", r.path, bytesStream(MAX_BODY + 1, " "), { "content-type": "application/json" }),
      status: 413,
      code: "payload_too_large",
    },
    {
      name: "an oversized body under a lying Content-Length",
      request: () =>
        req("POST", r.path, bytesStream(4 * MAX_BODY, " "), { "content-type": "application/json", "content-length": "2" }),
      status: 413,
      code: "payload_too_large",
    },
    {
      name: "an oversized but valid JSON body without Content-Length",
      request: (c) => {
        const text = JSON.stringify({ ...r.valid(c) }).replace(/^\{/, "{" + " ".repeat(MAX_BODY));
        return req("POST", r.path, new Blob([text]).stream(), { "content-type": "application/json" });
      },
      status: 413,
      code: "payload_too_large",
    },
    {
      name: "an endless body",
      request: () => req("POST", r.path, endlessStream(), { "content-type": "application/json" }),
      status: 413,
      code: "payload_too_large",
    },
  ];
  if (r.required) {
    cases.push({
      name: "an empty body",
      request: () => req("POST", r.path, "", { "content-type": "application/json" }),
      status: 400,
      code: "malformed_json",
    }, {
      name: "no body at all",
      request: () => req("POST", r.path, null, { "content-type": "application/json" }),
      status: 400,
      code: "malformed_json",
    });
  } else {
    cases.push({
      name: "a non-empty body without a JSON content type",
      request: () => req("POST", r.path, "{}", { "content-type": "text/plain" }),
      status: 415,
      code: "unsupported_media_type",
    });
  }
  for (const [what, make] of r.invalid) {
    cases.push({
      name: `a body whose ${what}`.replace("whose the body", "that"),
      request: (c) => jsonReq("POST", r.path, make(c)),
      status: 400,
      code: "validation_failed",
    });
  }
  return cases;
}

const BAD_IDS: Array<[string, string]> = [
  ["contains {", "a%7Bb"],
  ["contains }", "a%7D"],
  ["is a hash tag", "%7Ba1%7D"],
  ["contains a NUL", "a%00b"],
  ["contains a newline", "a%0Ab"],
  ["contains a space", "a%20b"],
  ["contains an encoded slash", "a%2Fb"],
  ["is not ASCII", "caf%C3%A9"],
  ["is 129 characters long", "x".repeat(129)],
  ["is malformed percent-encoding", "%ZZ"],
];

function agentIdCases(): Array<[string, Case]> {
  const routes: Array<[string, (id: string, c: Ctx) => Request]> = [
    ["POST /v1/agents/:agentId/tasks", (id) => jsonReq("POST", `/v1/agents/${id}/tasks`, { agent: "helper", input: "hi" })],
    [
      "POST /v1/agents/:agentId/tool-results",
      (id, c) =>
        jsonReq("POST", `/v1/agents/${id}/tool-results`, {
          turnId: c.turnId,
          toolCallId: c.toolCallId,
          outcome: { ok: true, value: 1 },
        }),
    ],
    ["POST /v1/agents/:agentId/cancel", (id) => req("POST", `/v1/agents/${id}/cancel`, null)],
    ["GET /v1/agents/:agentId", (id) => req("GET", `/v1/agents/${id}`, null)],
    ["GET /v1/agents/:agentId/events", (id) => req("GET", `/v1/agents/${id}/events`, null)],
    ["GET /v1/agents/:agentId/events (SSE)", (id) => req("GET", `/v1/agents/${id}/events`, null, { accept: "text/event-stream" })],
  ];
  return routes.flatMap(([route, make]) =>
    BAD_IDS.map(([what, id]): [string, Case] => [
      route,
      { name: `an agent id that ${what}`, request: (c) => make(id, c), status: 400, code: "invalid_agent_id" },
    ])
  );
}

const EVENTS = "/v1/agents/a1/events";
const EVENT_QUERY_CASES: Case[] = [
  ["after=-1", "after is negative"],
  ["after=abc", "after is not a number"],
  ["after=1.5", "after is not an integer"],
  ["after=", "after is empty"],
  ["after=1&after=2", "after is repeated"],
  ["limit=0", "limit is 0"],
  ["limit=501", "limit is above maxEventPage"],
  ["limit=ten", "limit is not a number"],
  ["format=xml", "format is unknown"],
  ["cursor=3", "an unknown parameter is present"],
].flatMap(([qs, what]) => [
  { name: `${what} (JSON)`, request: () => req("GET", `${EVENTS}?${qs}`, null), status: 400, code: "validation_failed" },
  {
    name: `${what} (SSE)`,
    request: () => req("GET", `${EVENTS}?${qs}`, null, { accept: "text/event-stream" }),
    status: 400,
    code: "validation_failed",
  },
]);
for (const v of ["abc", "-3", "1e3"]) {
  EVENT_QUERY_CASES.push({
    name: `Last-Event-ID is ${JSON.stringify(v)}`,
    request: () => req("GET", EVENTS, null, { accept: "text/event-stream", "last-event-id": v }),
    status: 400,
    code: "validation_failed",
  });
}

const ROUTING_CASES: Case[] = [
  { name: "an unknown path", request: () => req("GET", "/v1/nope", null), status: 404, code: "not_found" },
  { name: "an unknown agent sub-path", request: () => req("GET", "/v1/agents/a1/nope", null), status: 404, code: "not_found" },
  { name: "a trailing slash", request: () => req("GET", "/v1/agents/a1/", null), status: 404, code: "not_found" },
  { name: "GET on the tasks route", request: () => req("GET", "/v1/agents/a1/tasks", null), status: 405, code: "method_not_allowed" },
  { name: "PUT on an agent", request: () => req("PUT", "/v1/agents/a1", null), status: 405, code: "method_not_allowed" },
  { name: "POST on /healthz", request: () => jsonReq("POST", "/healthz", {}), status: 405, code: "method_not_allowed" },
  { name: "PUT on /openapi.json", request: () => jsonReq("PUT", "/openapi.json", {}), status: 405, code: "method_not_allowed" },
  { name: "GET on the watchdog tick", request: () => req("GET", "/v1/watchdog/tick", null), status: 405, code: "method_not_allowed" },
  { name: "POST on /v1/machine", request: () => jsonReq("POST", "/v1/machine", {}), status: 405, code: "method_not_allowed" },
];

const STORE_CASES: Case[] = [
  {
    name: "a task naming an unknown definition",
    request: () => jsonReq("POST", "/v1/agents/fresh/tasks", { agent: "nobody", input: "hi" }),
    status: 422,
    code: "unknown_agent_definition",
  },
];

// ------------------------------------------------------------------ the runs

const ctx = {} as Ctx;

/** Everything the store holds about a1, plus proof that no other agent exists. */
/** The whole stored state of a1 and of every other id the cases name (which must stay empty). */
async function observable(c: Ctx) {
  return statesOf(memoryStateReader(c.gh.store), ["a1", "fresh", "b2", "a{b", "a}", "{a1}", "ghost"]);
}

async function expectProblem(res: Response, status: number, code: string) {
  const text = await res.text();
  expect({ status: res.status, contentType: res.headers.get("content-type") }).toEqual({
    status,
    contentType: "application/problem+json",
  });
  const p = JSON.parse(text);
  expect(p).toMatchObject({ status, code });
  for (const k of ["type", "title", "detail"]) expect(typeof p[k]).toBe("string");
  if (code === "validation_failed") {
    expect(Array.isArray(p.errors) && p.errors.length > 0).toBe(true);
    for (const e of p.errors) expect(Object.keys(e).sort()).toEqual(["code", "message", "path"]);
  }
  if (code === "method_not_allowed") expect(res.headers.get("allow")).toBeTruthy();
  expect(text).not.toMatch(/\n\s+at /);
  return p;
}

let before: Awaited<ReturnType<typeof observable>>;

beforeAll(async () => {
  const ask = defineTool({ name: "ask_human", description: "Ask a human", parameters: z.object({ q: z.string() }) });
  const helper = defineAgent({
    name: "helper",
    instructions: "Ask, then submit.",
    model: scriptedModel([
      { toolCalls: [{ name: "ask_human", args: { q: "ok?" } }] },
      { toolCalls: [{ name: "submit_result", args: { result: "yes" } }] },
    ]),
    tools: [ask],
  });
  ctx.gh = createGatehouse({ agents: [helper], maxBodyBytes: MAX_BODY });
  const res = await ctx.gh.fetch(jsonReq("POST", "/v1/agents/a1/tasks", { agent: "helper", input: "hi" }));
  ctx.turnId = (await res.json()).turnId;
  await ctx.gh.drain();
  const events = await ctx.gh.store.readEvents("a1", 0, 1000);
  ctx.toolCallId = events.find((e) => e.type === "tool_call" && e.data.external === true)!.data.toolCallId as string;
  before = await observable(ctx);
  expect((await ctx.gh.store.getAgent("a1"))!.state).toBe("waiting-tools");
  expect(Object.keys(before.a1.deadlines)).toHaveLength(1);
  for (const id of ["fresh", "b2", "ghost"]) expect(before[id].records).toEqual({});
});

afterAll(async () => {
  await ctx.gh.close();
});

function run(cases: Case[]) {
  for (const c of cases) {
    it(`${c.name} -> ${c.status} ${c.code}`, async () => {
      await expectProblem(await ctx.gh.fetch(c.request(ctx)), c.status, c.code);
    });
  }
}

describe("bad input on body routes", () => {
  for (const r of BODY_ROUTES) describe(r.name, () => run(bodyCases(r)));
});

describe("invalid agent ids on every :agentId route", () => {
  const byRoute = new Map<string, Case[]>();
  for (const [route, c] of agentIdCases()) byRoute.set(route, [...(byRoute.get(route) ?? []), c]);
  for (const [route, cases] of byRoute) describe(route, () => run(cases));
});

describe("bad query parameters and headers on GET /v1/agents/:agentId/events", () => run(EVENT_QUERY_CASES));

describe("unknown routes and methods", () => run(ROUTING_CASES));

describe("semantically bad tasks", () => run(STORE_CASES));

describe("validation details", () => {
  it("names the offending field and the unknown key in `errors`", async () => {
    const res = await ctx.gh.fetch(jsonReq("POST", "/v1/agents/a1/tasks", { agent: 1, input: "hi", extra: true }));
    const p = await expectProblem(res, 400, "validation_failed");
    expect(p.errors).toEqual(expect.arrayContaining([
      expect.objectContaining({ path: ["agent"], code: "invalid_type" }),
      expect.objectContaining({ path: [], code: "unrecognized_keys" }),
    ]));
  });

  it("reports verifyAttempts out of range with the attempt budget's message", async () => {
    const res = await ctx.gh.fetch(jsonReq("POST", "/v1/agents/a1/tasks", { agent: "helper", input: "x", verifyAttempts: 0 }));
    const p = await expectProblem(res, 400, "validation_failed");
    expect(p.errors[0].path).toEqual(["verifyAttempts"]);
    expect(p.errors[0].message).toMatch(/integer from 1 to 100/);
  });

  it("allows a 405 answer to list the methods of the path", async () => {
    const res = await ctx.gh.fetch(req("GET", "/v1/agents/a1/tasks", null));
    await expectProblem(res, 405, "method_not_allowed");
    expect(res.headers.get("allow")).toBe("POST");
  });
});

describe("bad input changes nothing", () => {
  it("leaves the agent's whole stored state unchanged and creates no agent", async () => {
    const all: Case[] = [
      ...BODY_ROUTES.flatMap(bodyCases),
      ...agentIdCases().map(([, c]) => c),
      ...EVENT_QUERY_CASES,
      ...ROUTING_CASES,
      ...STORE_CASES,
    ];
    for (const c of all) {
      const res = await ctx.gh.fetch(c.request(ctx));
      expect(res.status, c.name).toBe(c.status);
      await res.body?.cancel();
    }
    // Anything enqueued by mistake would run here and change the records.
    await ctx.gh.drain();
    expect(await observable(ctx)).toEqual(before);
  });
});
