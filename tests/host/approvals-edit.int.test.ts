/**
 * Approvals that wait for days, and approvals that edit the call's arguments
 * (routes/approvals.ts `args`, store invariant `first-decision-wins`), end to
 * end over HTTP on the memory store and on Redis, with a manual clock:
 * - without `approvalTimeoutMs` a call still waits after a simulated day (the
 *   default is DEFAULT_APPROVAL_TIMEOUT_MS, 7 days), holds no lease meanwhile,
 *   shows its approval deadline as `deadlineMs`, times out only at that
 *   deadline, and gets the tool's own timeout from the approval on;
 * - edit, then approve: the tool runs with the edited arguments; the record
 *   and the events keep both; the view shows both; the model's tool message
 *   names the edit; an external call's worker reads the edited `args`;
 * - an edit the tool's schema refuses (or `args` with a rejection) is 400
 *   `validation_failed` with the issues and decides nothing; the same edit
 *   again is a duplicate, another edit a 409.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, memoryStore, type ModelRequest, type Store } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { DEFAULT_APPROVAL_TIMEOUT_MS } from "../../tools/define.ts";
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
  ["redis", () => redisStore({ url: server.url, prefix: `ae${++n}-${Date.now()}:` })],
];

const DAY = 24 * 60 * 60 * 1000;
const TOOL_TIMEOUT = 30_000;

function setup(open: () => Store, opts: { external?: boolean } = {}) {
  const runs: Array<Record<string, unknown>> = [];
  const requests: ModelRequest[] = [];
  const pay = defineTool({
    name: "pay",
    description: "Pay an amount to someone",
    parameters: z.object({ to: z.string(), amount: z.number().positive() }),
    needsApproval: true,
    timeoutMs: TOOL_TIMEOUT,
    ...(opts.external ? {} : { execute: (args: { to: string; amount: number }) => (runs.push(args), { paid: args.amount, to: args.to }) }),
  });
  const agent = defineAgent({
    name: "payer",
    instructions: "Pay.",
    model: {
      name: "test",
      async generate(req) {
        requests.push(req);
        const turn = req.messages.slice(req.messages.findLastIndex((m) => m.role === "user"));
        if (!turn.some((m) => m.role === "tool")) return { toolCalls: [{ name: "pay", args: { to: "bob", amount: Number(turn[0].content) } }] };
        return { toolCalls: [{ name: "submit_result", args: { result: "finished" } }] };
      },
    },
    tools: [pay],
  });
  const clock = manualClock();
  const store = open();
  const gh = createGatehouse({ agents: [agent], store, clock });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await gh.fetch(new Request(`http://gh.test${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }));
    return { status: res.status, body: await res.json() as Record<string, any> };
  };
  const start = async (agentId: string, amount = 500) => {
    const t = await call("POST", `/v1/agents/${agentId}/tasks`, { agent: "payer", input: String(amount) });
    expect(t.status).toBe(202);
    await gh.drain();
    return t.body.turnId as string;
  };
  const view = async (agentId: string) => (await call("GET", `/v1/agents/${agentId}`)).body;
  const events = async (agentId: string) => (await call("GET", `/v1/agents/${agentId}/events?format=json&limit=500`)).body.events as Array<{ type: string; data: any }>;
  const decide = (agentId: string, body: unknown) => call("POST", `/v1/agents/${agentId}/approvals`, body);
  const toolMessages = () => requests.at(-1)!.messages.filter((m) => m.role === "tool").map((m) => String(m.content));
  return { gh, clock, store, runs, call, start, view, events, decide, toolMessages };
}

for (const [name, open] of adapters) {
  describe(`approvals that wait for days (${name})`, () => {
    it("without approvalTimeoutMs a call still waits after a simulated day, holding no lease; the tool's timeout starts at the approval", async () => {
      const s = setup(open);
      const asked = s.clock.now();
      const turnId = await s.start("d1");
      const pending = (await s.view("d1")).pendingToolCalls[0];
      expect(pending).toMatchObject({ approval: "pending", deadlineMs: asked + DEFAULT_APPROVAL_TIMEOUT_MS });
      expect(DEFAULT_APPROVAL_TIMEOUT_MS).toBeGreaterThanOrEqual(DAY);

      s.clock.advance(DAY + 60_000);
      expect((await s.gh.tick()).timedOut).toBe(0);
      await s.gh.drain();
      const v = await s.view("d1");
      expect(v).toMatchObject({ state: "waiting-tools", lease: null });
      expect(v.pendingToolCalls[0]).toMatchObject({ toolCallId: pending.toolCallId, approval: "pending" });
      expect(s.runs).toEqual([]);

      const r = await s.decide("d1", { turnId, toolCallId: pending.toolCallId, approved: true });
      expect(r.status).toBe(200);
      // The tool's own window (its timeout and the watchdog's grace) starts now, not when the call was proposed a day ago.
      expect(r.body.deadline - s.clock.now()).toBeGreaterThanOrEqual(TOOL_TIMEOUT);
      expect(r.body.deadline - s.clock.now()).toBeLessThanOrEqual(TOOL_TIMEOUT + 60_000);
      // The view shows the approved call's own deadline from then on, not the approval's.
      expect((await s.view("d1")).pendingToolCalls[0]).toMatchObject({ approval: "approved", deadlineMs: r.body.deadline });
      await s.gh.drain();
      expect(s.runs).toEqual([{ to: "bob", amount: 500 }]);
      expect((await s.view("d1")).state).toBe("done");
      await s.gh.close();
    });

    it("an undecided call times out at the default deadline, not a moment before", async () => {
      const s = setup(open);
      await s.start("d2");
      s.clock.advance(DEFAULT_APPROVAL_TIMEOUT_MS - 1);
      expect((await s.gh.tick()).timedOut).toBe(0);
      s.clock.advance(1);
      expect((await s.gh.tick()).timedOut).toBe(1);
      await s.gh.drain();
      expect((await s.view("d2")).state).toBe("done");
      expect(s.toolMessages()[0]).toContain("approval_timeout");
      await s.gh.close();
    });
  });

  describe(`edit, then approve (${name})`, () => {
    it("the tool runs with the edited args; record, events and view keep both; the model's tool message names the edit", async () => {
      const s = setup(open);
      const turnId = await s.start("e1");
      const id = (await s.view("e1")).pendingToolCalls[0].toolCallId;
      const r = await s.decide("e1", { turnId, toolCallId: id, approved: true, args: { to: "bob", amount: 50 }, reason: "too much" });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ decided: true, duplicate: false, decision: "approved" });

      const [rec] = await s.store.getToolCalls("e1", turnId);
      expect(rec).toMatchObject({ args: { to: "bob", amount: 500 }, approval: { status: "approved", reason: "too much", args: { to: "bob", amount: 50 } } });
      const v = await s.view("e1");
      expect(v.pendingToolCalls[0]).toMatchObject({ args: { to: "bob", amount: 50 }, proposedArgs: { to: "bob", amount: 500 }, approval: "approved" });

      await s.gh.drain();
      expect(s.runs).toEqual([{ to: "bob", amount: 50 }]);
      const evs = await s.events("e1");
      expect(evs.find((e) => e.type === "approval_requested")?.data.args).toEqual({ to: "bob", amount: 500 });
      expect(evs.find((e) => e.type === "approval_decided")?.data).toMatchObject({ decision: "approved", args: { to: "bob", amount: 50 } });
      const msg = s.toolMessages()[0];
      expect(msg).toContain("A person edited the arguments of this call before approving it");
      expect(msg).toContain(`"amount":50`);
      expect(msg).toContain(`"paid":50`);
      expect((await s.view("e1")).state).toBe("done");
      await s.gh.close();
    });

    it("an edit the tool's schema refuses is 400 validation_failed with the issues, and decides nothing", async () => {
      const s = setup(open);
      const turnId = await s.start("e2");
      const id = (await s.view("e2")).pendingToolCalls[0].toolCallId;
      const bad = await s.decide("e2", { turnId, toolCallId: id, approved: true, args: { to: "bob", amount: -5 } });
      expect(bad.status).toBe(400);
      expect(bad.body.code).toBe("validation_failed");
      expect(bad.body.errors).toEqual([expect.objectContaining({ path: ["args", "amount"] })]);
      const missing = await s.decide("e2", { turnId, toolCallId: id, approved: true, args: { amount: 5 } });
      expect([missing.status, missing.body.code]).toEqual([400, "validation_failed"]);
      expect(missing.body.errors[0].path).toEqual(["args", "to"]);
      const withReject = await s.decide("e2", { turnId, toolCallId: id, approved: false, args: { to: "bob", amount: 5 } });
      expect([withReject.status, withReject.body.code]).toEqual([400, "validation_failed"]);
      const notObject = await s.decide("e2", { turnId, toolCallId: id, approved: true, args: [1] });
      expect([notObject.status, notObject.body.code]).toEqual([400, "validation_failed"]);

      // Nothing was decided: still pending, no decision logged, nothing ran; a valid decision still wins.
      expect((await s.view("e2")).pendingToolCalls[0]).toMatchObject({ approval: "pending", args: { to: "bob", amount: 500 } });
      expect((await s.events("e2")).some((e) => e.type === "approval_decided")).toBe(false);
      await s.gh.drain();
      expect(s.runs).toEqual([]);
      expect((await s.decide("e2", { turnId, toolCallId: id, approved: true, args: { to: "carol", amount: 5 } })).status).toBe(200);
      await s.gh.drain();
      expect(s.runs).toEqual([{ to: "carol", amount: 5 }]);
      await s.gh.close();
    });

    it("the same edit again is a duplicate; another edit, or a plain approval, is 409 approval_conflict", async () => {
      const s = setup(open);
      const turnId = await s.start("e3");
      const id = (await s.view("e3")).pendingToolCalls[0].toolCallId;
      const body = { turnId, toolCallId: id, approved: true, args: { to: "bob", amount: 50 } };
      expect((await s.decide("e3", body)).body.duplicate).toBe(false);
      const again = await s.decide("e3", { ...body, args: { amount: 50, to: "bob" } });
      expect([again.status, again.body.duplicate]).toEqual([200, true]);
      for (const other of [{ ...body, args: { to: "bob", amount: 60 } }, { turnId, toolCallId: id, approved: true }]) {
        const r = await s.decide("e3", other);
        expect([r.status, r.body.code, r.body.decision]).toEqual([409, "approval_conflict", "approved"]);
      }
      await s.gh.drain();
      expect(s.runs).toEqual([{ to: "bob", amount: 50 }]);
      await s.gh.close();
    });

    it("an external call approved with an edit: its worker reads the edited args, and the model's message names them", async () => {
      const s = setup(open, { external: true });
      const turnId = await s.start("e4");
      const id = (await s.view("e4")).pendingToolCalls[0].toolCallId;
      expect((await s.decide("e4", { turnId, toolCallId: id, approved: true, args: { to: "dave", amount: 7 } })).status).toBe(200);
      await s.gh.drain();
      const pending = (await s.view("e4")).pendingToolCalls[0];
      expect(pending).toMatchObject({ args: { to: "dave", amount: 7 }, proposedArgs: { to: "bob", amount: 500 }, approval: "approved" });
      const delivered = await s.call("POST", "/v1/agents/e4/tool-results", { turnId, toolCallId: id, outcome: { ok: true, value: { paid: pending.args.amount } } });
      expect(delivered.status).toBe(200);
      await s.gh.drain();
      expect((await s.view("e4")).state).toBe("done");
      const msg = s.toolMessages()[0];
      expect(msg).toContain("A person edited the arguments");
      expect(msg).toContain(`"to":"dave"`);
      await s.gh.close();
    });
  });
}
