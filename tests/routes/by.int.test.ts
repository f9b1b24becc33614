/**
 * Who did it (common/by.ts, routes/auth.ts `callerName`), end to end over
 * HTTP on the memory store and on Redis: a request made with a named token
 * records the token's name as `by` on an approval decision (the call's
 * record, the agent view's `decidedBy`, the `approval_decided` event), a
 * tool result (`deliveredBy`, `tool_result_received`), a cancel
 * (`cancel_requested`), a queued task's cancel (`task_cancelled`), a reset
 * (the reset's transition), a fork (`forked_from`, `forked_to`), a schedule
 * written (the schedule's `by`) and deleted (`schedule_deleted`); a token
 * without a name, and no auth at all, record `by: null`; a named webhook
 * secret's signed tool result records the secret's name. The watchdog's
 * timeout of an approval records no `by`.
 */
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, memoryStore, type Store } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { manualClock } from "../helpers/clock.ts";
import { startRedisServer, type RedisServer } from "../helpers/redis-server.ts";

let server: RedisServer;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server?.stop();
});

let n = 0;
const adapters: Array<[string, () => Store]> = [
  ["memory", () => memoryStore()],
  ["redis", () => redisStore({ url: server.url, prefix: `by${++n}-${Date.now()}:` })],
];

const ALICE = "alice-token-0123456789";
const NAMELESS = "nameless-token-0123456";
const BILLING_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

type Auth = "alice" | "nameless" | "off";

function setup(open: () => Store, auth: Auth) {
  const pay = defineTool({
    name: "pay",
    description: "Pay an amount",
    parameters: z.object({ amount: z.number() }),
    needsApproval: true,
    approvalTimeoutMs: 60_000,
    execute: ({ amount }: { amount: number }) => ({ paid: amount }),
  });
  const lookup = defineTool({ name: "lookup", description: "Answered from outside", parameters: z.object({ q: z.string() }) });
  const agent = defineAgent({
    name: "clerk",
    instructions: "Work.",
    model: {
      name: "test",
      async generate(req) {
        const turn = req.messages.slice(req.messages.findLastIndex((m) => m.role === "user"));
        if (turn.some((m) => m.role === "tool")) return { toolCalls: [{ name: "submit_result", args: { result: "finished" } }] };
        return turn[0].content === "pay"
          ? { toolCalls: [{ name: "pay", args: { amount: 5 } }] }
          : { toolCalls: [{ name: "lookup", args: { q: "x" } }] };
      },
    },
    tools: [pay, lookup],
  });
  const clock = manualClock();
  const gh = createGatehouse({
    agents: [agent], store: open(), clock,
    ...(auth === "off" ? {} : {
      auth: { tokens: [{ token: ALICE, name: "alice@ops" }, { token: NAMELESS }], webhookSecrets: [{ secret: BILLING_SECRET, name: "billing" }] },
    }),
  });
  const token = auth === "alice" ? ALICE : NAMELESS;
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await gh.fetch(new Request(`http://gh.test${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...(auth === "off" ? {} : { authorization: `Bearer ${token}` }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    }));
    return { status: res.status, body: await res.json() as Record<string, any> };
  };
  const start = async (agentId: string, input: string) => {
    const t = await call("POST", `/v1/agents/${agentId}/tasks`, { agent: "clerk", input });
    expect(t.status).toBe(202);
    await gh.drain();
    return t.body.turnId as string;
  };
  const view = async (agentId: string) => (await call("GET", `/v1/agents/${agentId}`)).body;
  const events = async (agentId: string) => (await call("GET", `/v1/agents/${agentId}/events?format=json&limit=500`)).body.events as Array<{ id: number; type: string; data: any }>;
  const signed = (path: string, body: string) => {
    const id = `msg_${crypto.randomUUID()}`;
    return gh.fetch(new Request(`http://gh.test${path}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "webhook-id": id,
        "webhook-timestamp": String(Math.floor(clock.now() / 1000)),
        "webhook-signature": new Webhook(BILLING_SECRET).sign(id, new Date(clock.now()), body),
      },
      body,
    }));
  };
  return { gh, clock, call, start, view, events, signed };
}

const cases: Array<[Auth, string | null]> = [["alice", "alice@ops"], ["nameless", null], ["off", null]];

for (const [name, open] of adapters) {
  for (const [auth, by] of cases) {
    describe(`by (${name}, ${auth === "off" ? "auth off" : `token ${auth}`})`, () => {
      it(`an approval decision records by = ${JSON.stringify(by)} on the record, the view and approval_decided`, async () => {
        const s = setup(open, auth);
        const turnId = await s.start("a1", "pay");
        const id = (await s.view("a1")).pendingToolCalls[0].toolCallId;
        expect((await s.view("a1")).pendingToolCalls[0]).not.toHaveProperty("decidedBy");
        const r = await s.call("POST", "/v1/agents/a1/approvals", { turnId, toolCallId: id, approved: true });
        expect(r.status).toBe(200);
        expect((await s.view("a1")).pendingToolCalls[0]).toMatchObject({ approval: "approved", decidedBy: by });
        const decided = (await s.events("a1")).find((e) => e.type === "approval_decided");
        expect(decided?.data).toEqual({ toolCallId: id, decision: "approved", reason: null, by, deadline: expect.any(Number) });
        await s.gh.drain();
        expect((await s.view("a1")).state).toBe("done");
        await s.gh.close();
      });

      it(`a tool result, a cancel and a queued task's cancel record by = ${JSON.stringify(by)}`, async () => {
        const s = setup(open, auth);
        const turnId = await s.start("a2", "look");
        const id = (await s.view("a2")).pendingToolCalls[0].toolCallId;
        const d = await s.call("POST", "/v1/agents/a2/tool-results", { turnId, toolCallId: id, outcome: { ok: true, value: 1 } });
        expect(d.status).toBe(200);
        expect((await s.view("a2")).pendingToolCalls[0]).toMatchObject({ delivered: true, deliveredBy: by });
        expect((await s.events("a2")).find((e) => e.type === "tool_result_received")?.data.by).toBe(by);
        await s.gh.drain();

        const active = await s.start("a2", "look");
        const queued = await s.call("POST", "/v1/agents/a2/tasks", { agent: "clerk", input: "later" });
        expect((await s.call("DELETE", `/v1/agents/a2/tasks/${queued.body.turnId}`)).status).toBe(200);
        expect((await s.call("POST", "/v1/agents/a2/cancel", { turnId: active })).status).toBe(202);
        const log = await s.events("a2");
        expect(log.find((e) => e.type === "task_cancelled")?.data).toMatchObject({ turnId: queued.body.turnId, by });
        expect(log.find((e) => e.type === "cancel_requested")?.data).toMatchObject({ turnId: active, by });
        await s.gh.close();
      });

      it(`a reset and a fork record by = ${JSON.stringify(by)}`, async () => {
        const s = setup(open, auth);
        const turnId = await s.start("a3", "look");
        const at = (await s.events("a3")).at(-1)!.id;
        const f = await s.call("POST", "/v1/agents/a3/fork", { atEventId: at, newAgentId: "a3-fork" });
        expect(f.status).toBe(201);
        expect((await s.events("a3-fork")).find((e) => e.type === "forked_from")?.data.by).toBe(by);
        expect((await s.events("a3")).find((e) => e.type === "forked_to")?.data).toMatchObject({ agentId: "a3-fork", by });
        expect((await s.call("POST", "/v1/agents/a3/reset", {})).status).toBe(200);
        const reset = (await s.events("a3")).find((e) => e.type === "transition" && e.data.event.type === "TURN_FAILED");
        expect(reset?.data).toMatchObject({ event: { turnId, reason: "reset" }, by });
        await s.gh.close();
      });

      it(`a schedule written and deleted records by = ${JSON.stringify(by)}`, async () => {
        const s = setup(open, auth);
        await s.start("a4", "look");
        const put = await s.call("PUT", "/v1/agents/a4/schedules/nightly", { agent: "clerk", input: "look", everyMs: 3_600_000 });
        expect(put.status).toBe(201);
        expect(put.body.by).toBe(by);
        expect((await s.call("GET", "/v1/agents/a4/schedules/nightly")).body.by).toBe(by);
        expect((await s.call("DELETE", "/v1/agents/a4/schedules/nightly")).status).toBe(200);
        expect((await s.events("a4")).filter((e) => e.type === "schedule_deleted").map((e) => e.data)).toEqual([{ scheduleId: "nightly", by }]);
        // A schedule of an agent that does not exist yet: written and deleted, with no log to write to.
        expect((await s.call("PUT", "/v1/agents/nobody/schedules/s", { agent: "clerk", input: "x", everyMs: 3_600_000 })).body.by).toBe(by);
        expect((await s.call("DELETE", "/v1/agents/nobody/schedules/s")).status).toBe(200);
        expect((await s.call("GET", "/v1/agents/nobody")).status).toBe(404);
        await s.gh.close();
      });
    });
  }

  describe(`by (${name}): signed requests and the runtime's own changes`, () => {
    it("a named webhook secret's signed tool result records the secret's name", async () => {
      const s = setup(open, "alice");
      const turnId = await s.start("w1", "look");
      const id = (await s.view("w1")).pendingToolCalls[0].toolCallId;
      const res = await s.signed("/v1/agents/w1/tool-results", JSON.stringify({ turnId, toolCallId: id, outcome: { ok: true, value: 2 } }));
      expect(res.status).toBe(200);
      expect((await s.events("w1")).find((e) => e.type === "tool_result_received")?.data).toMatchObject({ source: "http", by: "billing" });
      await s.gh.close();
    });

    it("the watchdog's timeout of an approval records no by", async () => {
      const s = setup(open, "alice");
      await s.start("w2", "pay");
      s.clock.advance(61_000);
      expect((await s.gh.tick()).timedOut).toBe(1);
      await s.gh.drain();
      const decided = (await s.events("w2")).find((e) => e.type === "approval_decided");
      expect(decided?.data.decision).toBe("timeout");
      expect(decided?.data).not.toHaveProperty("by");
      await s.gh.close();
    });
  });
}
