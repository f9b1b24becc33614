/**
 * Named events (tools/define.ts `waitFor`, routes/named-events.ts, store
 * invariant `named-event-waits`), over HTTP on the memory store, Redis
 * and Upstash (through the bridge): two agents waiting on one name resume once each with the event's
 * data; an event of another name resumes none; a retry with the same id
 * resolves nothing twice (and reaches no wait begun after the first arrival); no event before the
 * deadline ends the call `event_timeout` (manual clock, watchdog tick); bad
 * input is 400 problem+json; a token without `deliver` is 403 and a token
 * limited to a tenant reaches only that tenant's waits.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, memoryStore, type ModelRequest, type Store } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { manualClock } from "../helpers/clock.ts";
import { startRedisServer, type RedisServer } from "../helpers/redis-server.ts";
import { upstashStore } from "../../store/upstash.ts";
import { startUpstashBridge, type UpstashBridge } from "../helpers/upstash-bridge.ts";

let server: RedisServer;
let bridge: UpstashBridge;
beforeAll(async () => {
  server = await startRedisServer();
  bridge = await startUpstashBridge({ redisUrl: server.url });
});
afterAll(async () => {
  await bridge?.close();
  await server?.stop();
});

let n = 0;
const adapters: Array<[string, () => Store]> = [
  ["memory", () => memoryStore()],
  ["redis", () => redisStore({ url: server.url, prefix: `ne${++n}-${Date.now()}:` })],
  ["upstash", () => upstashStore({ url: bridge.url, token: bridge.token, prefix: `neu${++n}-${Date.now()}:` })],
];

const ADMIN = "admin-token-0123456789";
const READER = "reader-only-token-0123";
const TENANT = "tenant-a-token-0123456";

function setup(open: () => Store, auth = false, storeGiven?: Store) {
  const requests: ModelRequest[] = [];
  const settle = defineTool({
    name: "await_payment",
    description: "Wait until a payment settles",
    parameters: z.object({ order: z.string() }),
    waitFor: (args) => ({ event: `payment.settled:${String(args.order)}`, timeoutMs: 5_000 }),
  });
  const agent = defineAgent({
    name: "waiter",
    instructions: "Wait.",
    model: {
      name: "test",
      async generate(req) {
        requests.push(req);
        const turn = req.messages.slice(req.messages.findLastIndex((m) => m.role === "user"));
        if (!turn.some((m) => m.role === "tool")) return { toolCalls: [{ name: "await_payment", args: { order: String(turn[0].content) } }] };
        const tool = turn.find((m) => m.role === "tool")!;
        return { toolCalls: [{ name: "submit_result", args: { result: typeof tool.content === "string" ? tool.content : JSON.stringify(tool.content) } }] };
      },
    },
    tools: [settle],
  });
  const clock = manualClock();
  const gh = createGatehouse({
    agents: [agent], store: storeGiven ?? open(), clock,
    ...(auth
      ? { auth: { tokens: [ADMIN, { token: READER, verbs: ["read"] as const }, { token: TENANT, tenants: ["a-"], verbs: ["read", "enqueue", "deliver"] as const }] } }
      : {}),
  });
  const call = async (method: string, path: string, body?: unknown, token = ADMIN, headers: Record<string, string> = {}) => {
    const res = await gh.fetch(new Request(`http://gh.test${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...(auth ? { authorization: `Bearer ${token}` } : {}), ...headers },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    }));
    return { status: res.status, type: res.headers.get("content-type"), body: await res.json() as Record<string, any> };
  };
  const start = async (agentId: string, order: string) => {
    const t = await call("POST", `/v1/agents/${agentId}/tasks`, { agent: "waiter", input: order });
    expect(t.status).toBe(202);
    await gh.drain();
  };
  const view = async (agentId: string) => (await call("GET", `/v1/agents/${agentId}`)).body;
  const events = async (agentId: string) =>
    (await call("GET", `/v1/agents/${agentId}/events?format=json&limit=500`)).body.events as Array<{ type: string; data: any }>;
  const send = (body: unknown, token?: string, headers?: Record<string, string>) => call("POST", "/v1/events", body, token, headers);
  return { gh, clock, requests, call, start, view, events, send };
}

describe("defineTool: waitFor", () => {
  const base = { name: "t", description: "d", parameters: z.object({}) };
  it("refuses a waitFor that is not a function, and waitFor beside execute, naming the key", () => {
    expect(() => defineTool({ ...base, waitFor: "x" } as never)).toThrow(expect.objectContaining({ key: "waitFor" }));
    expect(() => defineTool({ ...base, waitFor: () => ({ event: "e" }), execute: () => 1 })).toThrow(expect.objectContaining({ key: "waitFor" }));
    expect(defineTool({ ...base, waitFor: () => ({ event: "e" }) }).external).toBe(true);
  });
});

for (const [name, open] of adapters) {
  describe(`named events (${name})`, () => {
    it("two agents waiting on one name resume once each with the data; another name resumes none; a retry resolves nothing twice", async () => {
      const s = setup(open);
      await s.start("w1", "o1");
      await s.start("w2", "o1");
      await s.start("w3", "o2");
      for (const id of ["w1", "w2", "w3"]) {
        const v = await s.view(id);
        expect(v.state).toBe("waiting-tools");
        expect(v.pendingToolCalls[0]).toMatchObject({ name: "await_payment", external: true, event: `payment.settled:${id === "w3" ? "o2" : "o1"}` });
      }
      const other = await s.send({ name: "payment.settled:o9", data: { amount: 1 } });
      expect(other).toMatchObject({ status: 200, body: { delivered: 0 } });
      const first = await s.send({ name: "payment.settled:o1", data: { amount: 42 }, id: "evt-1" });
      expect(first).toMatchObject({ status: 200, body: { delivered: 2, eventId: "evt-1" } });
      // The retry finds the two calls resolved (they left the index): it resolves nothing.
      const again = await s.send({ name: "payment.settled:o1", data: { amount: 42 }, id: "evt-1" });
      expect(again).toMatchObject({ status: 200, body: { delivered: 0 } });
      await s.gh.drain();
      for (const id of ["w1", "w2"]) {
        const v = await s.view(id);
        expect(v.state).toBe("done");
        expect(v.output).toContain("42");
        const got = (await s.events(id)).filter((e) => e.type === "tool_result_received");
        expect(got).toHaveLength(1);
        expect(got[0].data).toMatchObject({ ok: true, event: "payment.settled:o1", by: null });
      }
      expect((await s.view("w3")).state).toBe("waiting-tools");
      // Each of the two resumed once: one model step before the event, one after.
      expect(s.requests).toHaveLength(3 + 2);
      // A wait that begins after the event's first arrival is not reached by its retry.
      s.clock.advance(10);
      await s.start("w4", "o1");
      expect((await s.send({ name: "payment.settled:o1", data: { amount: 42 }, id: "evt-1" })).body.delivered).toBe(0);
      expect((await s.view("w4")).state).toBe("waiting-tools");
      expect((await s.send({ name: "payment.settled:o1", data: { amount: 7 }, id: "evt-2" })).body.delivered).toBe(1);
      await s.gh.close();
    });

    it("no event before the deadline ends the call event_timeout", async () => {
      const s = setup(open);
      await s.start("t1", "o1");
      s.clock.advance(4_999);
      expect((await s.gh.tick()).timedOut).toBe(0);
      s.clock.advance(1);
      expect((await s.gh.tick()).timedOut).toBe(1);
      await s.gh.drain();
      expect((await s.view("t1")).state).toBe("done");
      const tool = s.requests.at(-1)!.messages.filter((m) => m.role === "tool").map((m) => JSON.stringify(m));
      expect(tool[0]).toContain("event_timeout");
      // The timed-out wait left the index: a late event reaches nothing.
      expect((await s.send({ name: "payment.settled:o1", data: 1 })).body.delivered).toBe(0);
      await s.gh.close();
    });

    it("bad input is 400 problem+json and changes nothing", async () => {
      const s = setup(open);
      await s.start("b1", "o1");
      for (const body of [{ data: 1 }, { name: "has space", data: 1 }, { name: "", data: 1 }, { name: "x", data: 1, extra: true }, "not json"]) {
        const r = await s.send(body);
        expect(r.status).toBe(400);
        expect(r.type).toContain("application/problem+json");
      }
      expect((await s.view("b1")).state).toBe("waiting-tools");
      await s.gh.close();
    });
  });
}

describe("named events: restart (Redis)", () => {
  it("a wait survives its gatehouse: the event delivered to a new one on the same store resumes the call", async () => {
    const prefix = `ne-restart-${Date.now()}:`;
    const a = setup(() => redisStore({ url: server.url, prefix }));
    await a.start("r1", "o5");
    await a.gh.close();
    const b = setup(() => redisStore({ url: server.url, prefix }));
    expect((await b.view("r1")).pendingToolCalls[0]).toMatchObject({ event: "payment.settled:o5" });
    expect((await b.send({ name: "payment.settled:o5", data: { amount: 5 } })).body.delivered).toBe(1);
    await b.gh.drain();
    expect((await b.view("r1")).state).toBe("done");
    await b.gh.close();
  });
});

describe("named events: auth", () => {
  it("a token without deliver is 403; a tenant's token reaches only its tenant's waits", async () => {
    const s = setup(() => memoryStore(), true);
    await s.start("a-1", "o1");
    await s.start("b-1", "o1");
    expect((await s.send({ name: "payment.settled:o1", data: 1 }, READER)).status).toBe(403);
    const r = await s.send({ name: "payment.settled:o1", data: 1 }, TENANT);
    expect(r).toMatchObject({ status: 200, body: { delivered: 1 } });
    await s.gh.drain();
    expect((await s.view("a-1")).state).toBe("done");
    expect((await s.view("b-1")).state).toBe("waiting-tools");
    expect((await s.send({ name: "payment.settled:o1", data: 1 })).body.delivered).toBe(1);
    await s.gh.close();
  });
});
