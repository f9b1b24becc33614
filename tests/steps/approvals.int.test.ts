/**
 * Tools that need a person's approval (tools/define.ts `needsApproval`,
 * routes/approvals.ts, store invariants `first-decision-wins` and
 * `approval-before-result`), end to end over HTTP on the memory store and on
 * Redis: the call waits in `waiting-tools` with `approval: "pending"`, an
 * approval runs it exactly once, a rejection never runs it and the model sees
 * `approval_rejected` with the reason, a second decision is a duplicate or a
 * 409, an undecided call times out as `approval_timeout` through the
 * watchdog (a manual clock moves past the approval's deadline: nothing waits
 * on wall-clock time), a predicate decides per call, bad input is 400, and a
 * token without the `approve` verb is 403.
 */
import { readFileSync } from "node:fs";
import { hc } from "hono/client";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, type GatehouseApp, memoryStore, type ModelRequest, scriptedModel, type Store } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { manualClock } from "../helpers/clock.ts";
import { useRedisServer } from "../helpers/redis.ts";

const server = useRedisServer();

let n = 0;
const adapters: Array<[string, () => Store]> = [
  ["memory", () => memoryStore()],
  ["redis", () => redisStore({ url: server.url, prefix: `ap${++n}-${Date.now()}:` })],
];

const ADMIN = "admin-token-0123456789";
const READER = "deliver-only-token-0123";

interface Options {
  needsApproval?: boolean | ((args: Record<string, unknown>) => boolean);
  approvalTimeoutMs?: number;
  external?: boolean;
  auth?: boolean;
}

function setup(open: () => Store, opts: Options = {}) {
  const runs: unknown[] = [];
  const requests: ModelRequest[] = [];
  const pay = defineTool({
    name: "pay",
    description: "Pay an amount",
    parameters: z.object({ amount: z.number() }),
    needsApproval: opts.needsApproval ?? true,
    ...(opts.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: opts.approvalTimeoutMs } : {}),
    ...(opts.external ? {} : { execute: ({ amount }: { amount: number }) => (runs.push(amount), { paid: amount }) }),
  });
  const agent = defineAgent({
    name: "payer",
    instructions: "Pay.",
    model: {
      name: "test",
      async generate(req) {
        requests.push(req);
        const turn = req.messages.slice(req.messages.findLastIndex((m) => m.role === "user"));
        if (!turn.some((m) => m.role === "tool")) return { toolCalls: [{ name: "pay", args: { amount: Number(turn[0].content) } }] };
        return { toolCalls: [{ name: "submit_result", args: { result: "finished" } }] };
      },
    },
    tools: [pay],
  });
  const clock = manualClock();
  const store = open();
  const gh = createGatehouse({
    agents: [agent], store, clock,
    ...(opts.auth ? { auth: { tokens: [ADMIN, { token: READER, verbs: ["read", "enqueue", "deliver", "cancel"] as const }] } } : {}),
  });
  const call = async (method: string, path: string, body?: unknown, token = ADMIN) => {
    const res = await gh.fetch(new Request(`http://gh.test${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...(opts.auth ? { authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    }));
    return { status: res.status, body: await res.json() as Record<string, any> };
  };
  /** Enqueues a task for `agentId` and runs it until it waits. */
  const start = async (agentId: string, amount = 5) => {
    const t = await call("POST", `/v1/agents/${agentId}/tasks`, { agent: "payer", input: String(amount) });
    expect(t.status).toBe(202);
    await gh.drain();
    return t.body.turnId as string;
  };
  const view = async (agentId: string) => (await call("GET", `/v1/agents/${agentId}`)).body;
  const events = async (agentId: string) => (await call("GET", `/v1/agents/${agentId}/events?format=json&limit=500`)).body.events as Array<{ type: string; data: any }>;
  const decide = (agentId: string, body: unknown, token?: string) => call("POST", `/v1/agents/${agentId}/approvals`, body, token);
  return { gh, clock, store, runs, requests, call, start, view, events, decide };
}

/** The tool messages of the last model request. */
const toolMessages = (requests: ModelRequest[]) => requests.at(-1)!.messages.filter((m) => m.role === "tool").map((m) => JSON.stringify(m));

describe("defineTool: needsApproval and approvalTimeoutMs", () => {
  const base = { name: "t", description: "d", parameters: z.object({}) };
  it("refuses what is not true/false/a function, and a timeout that is not a positive integer, naming the key", () => {
    for (const [over, key] of [[{ needsApproval: "yes" }, "needsApproval"], [{ approvalTimeoutMs: 0 }, "approvalTimeoutMs"], [{ approvalTimeoutMs: 1.5 }, "approvalTimeoutMs"]] as const) {
      expect(() => defineTool({ ...base, ...over } as never)).toThrow(expect.objectContaining({ key }));
    }
    expect(defineTool({ ...base, needsApproval: () => false, approvalTimeoutMs: 5 }).approvalTimeoutMs).toBe(5);
  });
});

describe("docs/http.md, approvals", () => {
  it("says an approved in-process call follows the crash rule of \"What re-runs\" and shows the ctx.toolCallId idempotency key", () => {
    const docs = readFileSync(new URL("../../docs/http.md", import.meta.url), "utf8");
    const section = docs.slice(docs.indexOf("### `POST /v1/agents/:agentId/approvals`"), docs.indexOf("### `GET /v1/agents/:agentId`"));
    expect(section).not.toMatch(/the call runs once,/);
    expect(section).toContain("\"What re-runs\"");
    expect(section).toMatch(/SIGKILL/);
    expect(section).toMatch(/idempotencyKey: ctx\.toolCallId/);
  });
});

for (const [name, open] of adapters) {
  describe(`approvals (${name})`, () => {
    it("a call that needs approval waits in waiting-tools, listed as pending; approved, it runs once and the turn finishes", async () => {
      const s = setup(open);
      const turnId = await s.start("a1");
      const v = await s.view("a1");
      expect(v.state).toBe("waiting-tools");
      expect(v.pendingToolCalls).toHaveLength(1);
      const pending = v.pendingToolCalls[0];
      expect(pending).toMatchObject({ name: "pay", args: { amount: 5 }, external: false, approval: "pending" });
      expect(s.runs).toEqual([]);
      expect((await s.events("a1")).some((e) => e.type === "approval_requested" && e.data.toolCallId === pending.toolCallId)).toBe(true);
      // Draining again runs nothing: the call waits for a person.
      await s.gh.drain();
      expect(s.runs).toEqual([]);

      const r = await s.decide("a1", { turnId, toolCallId: pending.toolCallId, approved: true, reason: "ok" });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ decided: true, duplicate: false, decision: "approved" });
      await s.gh.drain();
      expect(s.runs).toEqual([5]);
      const done = await s.view("a1");
      expect(done.state).toBe("done");
      expect(done.output).toBe("finished");
      const types = (await s.events("a1")).map((e) => e.type);
      expect(types.indexOf("approval_decided")).toBeGreaterThan(types.indexOf("approval_requested"));
      expect(types).toContain("tool_result");
      await s.gh.drain();
      expect(s.runs).toEqual([5]);
      await s.gh.close();
    });

    it("an SSE reader of the event stream sees approval_requested and approval_decided", async () => {
      const s = setup(open);
      const turnId = await s.start("a1");
      const id = (await s.view("a1")).pendingToolCalls[0].toolCallId;
      const ac = new AbortController();
      const res = await s.gh.fetch(new Request("http://gh.test/v1/agents/a1/events", { headers: { accept: "text/event-stream" }, signal: ac.signal }));
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let text = "";
      const readUntil = async (needle: string) => {
        // Bounded by the test's timeout, not by a wall-clock guess: the frames come as the log grows.
        while (!text.includes(needle)) {
          const { value, done } = await reader.read();
          if (done) break;
          text += decoder.decode(value, { stream: true });
        }
        return text.includes(needle);
      };
      expect(await readUntil("event: approval_requested")).toBe(true);
      expect((await s.decide("a1", { turnId, toolCallId: id, approved: true })).status).toBe(200);
      expect(await readUntil("event: approval_decided")).toBe(true);
      ac.abort();
      await reader.cancel().catch(() => {});
      await s.gh.close();
    });

    it("rejected: the tool never runs and the model sees approval_rejected with the reason", async () => {
      const s = setup(open);
      const turnId = await s.start("a1");
      const id = (await s.view("a1")).pendingToolCalls[0].toolCallId;
      const r = await s.decide("a1", { turnId, toolCallId: id, approved: false, reason: "over the monthly limit" });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ decided: true, duplicate: false, decision: "rejected", deadline: null });
      await s.gh.drain();
      expect(s.runs).toEqual([]);
      expect((await s.view("a1")).state).toBe("done");
      const seen = toolMessages(s.requests);
      expect(seen).toHaveLength(1);
      expect(seen[0]).toContain("approval_rejected");
      expect(seen[0]).toContain("over the monthly limit");
      const decided = (await s.events("a1")).find((e) => e.type === "approval_decided");
      expect(decided?.data).toMatchObject({ toolCallId: id, decision: "rejected", reason: "over the monthly limit" });
      await s.gh.close();
    });

    it("the same decision again is a duplicate; the contrary one is 409 approval_conflict; neither changes anything", async () => {
      const s = setup(open);
      const turnId = await s.start("a1");
      const id = (await s.view("a1")).pendingToolCalls[0].toolCallId;
      expect((await s.decide("a1", { turnId, toolCallId: id, approved: true })).body.duplicate).toBe(false);
      const again = await s.decide("a1", { turnId, toolCallId: id, approved: true });
      expect(again.status).toBe(200);
      expect(again.body.duplicate).toBe(true);
      const contrary = await s.decide("a1", { turnId, toolCallId: id, approved: false, reason: "changed my mind" });
      expect(contrary.status).toBe(409);
      expect(contrary.body).toMatchObject({ code: "approval_conflict", decision: "approved" });
      await s.gh.drain();
      expect(s.runs).toEqual([5]);
      expect((await s.events("a1")).filter((e) => e.type === "approval_decided")).toHaveLength(1);
      // The turn is over: a decision on it now is still answered from the record.
      expect((await s.decide("a1", { turnId, toolCallId: id, approved: true })).body.duplicate).toBe(true);
      await s.gh.close();
    });

    it("nobody decides: the watchdog ends the wait at the approval's deadline as approval_timeout", async () => {
      const s = setup(open, { approvalTimeoutMs: 2_000 });
      const turnId = await s.start("a1");
      const pending = (await s.view("a1")).pendingToolCalls[0];
      expect(pending.deadlineMs).toBe(s.clock.now() + 2_000);
      s.clock.advance(1_999);
      expect((await s.gh.tick()).timedOut).toBe(0);
      s.clock.advance(1);
      expect((await s.gh.tick()).timedOut).toBe(1);
      await s.gh.drain();
      expect(s.runs).toEqual([]);
      expect((await s.view("a1")).state).toBe("done");
      expect(toolMessages(s.requests)[0]).toContain("approval_timeout");
      expect((await s.events("a1")).find((e) => e.type === "approval_decided")?.data).toMatchObject({ decision: "timeout" });
      const late = await s.decide("a1", { turnId, toolCallId: pending.toolCallId, approved: true });
      expect(late.status).toBe(409);
      expect(late.body).toMatchObject({ code: "approval_conflict", decision: "timeout" });
      await s.gh.close();
    });

    it("a result posted for an in-process call that needs approval is 409 not_external before and after the decision (docs/http.md says so)", async () => {
      const s = setup(open);
      const turnId = await s.start("a1");
      const id = (await s.view("a1")).pendingToolCalls[0].toolCallId;
      const post = () => s.call("POST", "/v1/agents/a1/tool-results", { turnId, toolCallId: id, outcome: { ok: true, value: 1 } });
      const before = await post();
      expect([before.status, before.body.code]).toEqual([409, "not_external"]);
      expect((await s.decide("a1", { turnId, toolCallId: id, approved: true })).status).toBe(200);
      const after = await post();
      expect([after.status, after.body.code]).toEqual([409, "not_external"]);
      await s.gh.drain();
      expect(s.runs).toEqual([5]);
      // The docs name the code this route answers for such a call.
      const docs = readFileSync(new URL("../../docs/http.md", import.meta.url), "utf8");
      const section = docs.slice(docs.indexOf("### `POST /v1/agents/:agentId/tool-results`"), docs.indexOf("### `POST /v1/agents/:agentId/approvals`"));
      expect(section).toMatch(/in-process call that needs (a person's )?approval[^.]*`409 not_external`/);
      await s.gh.close();
    });

    it("an approved call gets its own deadline again from the approval on", async () => {
      const s = setup(open, { approvalTimeoutMs: 1_000, external: true });
      const turnId = await s.start("a1");
      const id = (await s.view("a1")).pendingToolCalls[0].toolCallId;
      // A result before the decision is refused and changes nothing.
      const early = await s.call("POST", "/v1/agents/a1/tool-results", { turnId, toolCallId: id, outcome: { ok: true, value: 1 } });
      expect(early.status).toBe(409);
      expect(early.body.code).toBe("approval_pending");
      s.clock.advance(500);
      const r = await s.decide("a1", { turnId, toolCallId: id, approved: true });
      expect(r.body.deadline).toBeGreaterThan(s.clock.now() + 1_000);
      await s.gh.drain();
      s.clock.advance(1_000); // past the approval's deadline: the approved call no longer times out there
      expect((await s.gh.tick()).timedOut).toBe(0);
      const v = await s.view("a1");
      expect(v.pendingToolCalls[0]).toMatchObject({ toolCallId: id, approval: "approved" });
      const delivered = await s.call("POST", "/v1/agents/a1/tool-results", { turnId, toolCallId: id, outcome: { ok: true, value: "paid" } });
      expect(delivered.status).toBe(200);
      await s.gh.drain();
      expect((await s.view("a1")).state).toBe("done");
      await s.gh.close();
    });

    it("an approval whose mail was acknowledged before the call ran is read from the store by the next claim", async () => {
      const s = setup(open);
      const turnId = await s.start("a1");
      const id = (await s.view("a1")).pendingToolCalls[0].toolCallId;
      expect((await s.store.decideApproval({ agentId: "a1", turnId, toolCallId: id, decision: "approved", now: s.clock.now() })).status).toBe("decided");
      // A claim takes the approval mail and commits its acknowledgement, then stops before the call runs.
      const c = await s.store.claim({ agentId: "a1", workerId: "gone", leaseMs: 10_000, now: s.clock.now() });
      if (c.status !== "claimed") throw new Error(c.status);
      expect(c.mail.map((m) => m.kind)).toEqual(["approval"]);
      const r = await s.store.commit({
        agentId: "a1", workerId: "gone", epoch: c.epoch, expectedVersion: c.head.version, turnId, snapshot: c.head.snapshot,
        state: c.head.state, activeTurnId: turnId, events: [], messages: [], recordToolCalls: [], resolveToolCalls: [],
        ackMailThrough: c.mail.at(-1)!.seq, release: { runnableAt: s.clock.now() }, leaseMs: 10_000, now: s.clock.now(),
      });
      expect(r.status).toBe("applied");
      await s.gh.drain();
      expect(s.runs).toEqual([5]);
      expect((await s.view("a1")).state).toBe("done");
      await s.gh.close();
    });

    it("in one step, a call without approval runs at once; the turn waits only for the one that needs it", async () => {
      const runs: string[] = [];
      const tool = (name: string, needsApproval: boolean) => defineTool({
        name, description: name, parameters: z.object({}), needsApproval, execute: () => (runs.push(name), name),
      });
      const agent = defineAgent({
        name: "mixed", instructions: "",
        model: scriptedModel([{ toolCalls: [{ name: "look", args: {} }, { name: "pay", args: {} }] }, { toolCalls: [{ name: "submit_result", args: { result: "ok" } }] }]),
        tools: [tool("look", false), tool("pay", true)],
      });
      const gh = createGatehouse({ agents: [agent], store: open() });
      const post = async (path: string, body: unknown) => (await gh.fetch(new Request(`http://gh.test${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }))).json() as Promise<any>;
      const turnId = (await post("/v1/agents/m1/tasks", { agent: "mixed", input: "go" })).turnId;
      await gh.drain();
      expect(runs).toEqual(["look"]);
      const v = await (await gh.fetch(new Request("http://gh.test/v1/agents/m1"))).json() as any;
      expect(v.state).toBe("waiting-tools");
      expect(v.pendingToolCalls.map((c: any) => [c.name, c.approval])).toEqual([["pay", "pending"]]);
      expect((await post("/v1/agents/m1/approvals", { turnId, toolCallId: v.pendingToolCalls[0].toolCallId, approved: true })).decided).toBe(true);
      await gh.drain();
      expect(runs).toEqual(["look", "pay"]);
      expect((await (await gh.fetch(new Request("http://gh.test/v1/agents/m1"))).json() as any).state).toBe("done");
      await gh.close();
    });

    it("the typed client (hc<GatehouseApp>) reads the pending approval and posts the decision", async () => {
      const s = setup(open);
      const turnId = await s.start("a1");
      const agent = hc<GatehouseApp>("http://gh.test", { fetch: (input: RequestInfo | URL, init?: RequestInit) => s.gh.fetch(new Request(input, init)) })
        .v1.agents[":agentId"];
      const param = { agentId: "a1" };
      const view = await (await agent.$get({ param })).json();
      const call = view.pendingToolCalls[0];
      expect(call.approval).toBe("pending");
      const res = await agent.approvals.$post({ param, json: { turnId, toolCallId: call.toolCallId, approved: false, reason: "typed no" } });
      expect(res.status).toBe(200);
      if (res.status === 200) {
        const body = await res.json();
        expect([body.decided, body.duplicate, body.decision, body.deadline]).toEqual([true, false, "rejected", null]);
      }
      await s.gh.drain();
      expect(s.runs).toEqual([]);
      await s.gh.close();
    });

    it("a predicate decides per call: false runs without asking, true asks", async () => {
      const s = setup(open, { needsApproval: (args) => (args.amount as number) > 100 });
      await s.start("small", 5);
      expect(s.runs).toEqual([5]);
      expect((await s.view("small")).state).toBe("done");
      expect((await s.events("small")).some((e) => e.type === "approval_requested")).toBe(false);
      await s.start("big", 500);
      expect(s.runs).toEqual([5]);
      expect((await s.view("big")).pendingToolCalls[0]).toMatchObject({ approval: "pending", args: { amount: 500 } });
      await s.gh.close();
    });

    it("a fork taken while a call waits for approval waits for its own approval", async () => {
      const s = setup(open, { external: true });
      await s.start("a1");
      const asked = (await s.events("a1")).find((e) => e.type === "approval_requested")! as { id?: number; data: any };
      const all = await s.call("GET", "/v1/agents/a1/events?format=json&limit=500");
      const at = (all.body.events as Array<{ id: number; type: string }>).filter((e) => e.type === "transition").at(-1)!.id;
      const fork = await s.call("POST", "/v1/agents/a1/fork", { atEventId: at, newAgentId: "a1-fork" });
      expect(fork.status).toBe(201);
      const call = (await s.view("a1-fork")).pendingToolCalls[0];
      expect(call).toMatchObject({ toolCallId: asked.data.toolCallId, approval: "pending" });
      const turnId = (await s.view("a1-fork")).activeTurnId;
      expect((await s.call("POST", "/v1/agents/a1-fork/tool-results", { turnId, toolCallId: call.toolCallId, outcome: { ok: true, value: 1 } })).body.code).toBe("approval_pending");
      expect((await s.decide("a1-fork", { turnId, toolCallId: call.toolCallId, approved: false, reason: "not in the fork" })).status).toBe(200);
      await s.gh.drain();
      expect((await s.view("a1-fork")).state).toBe("done");
      // The source still waits for its own decision.
      expect((await s.view("a1")).pendingToolCalls[0].approval).toBe("pending");
      await s.gh.close();
    });

    it("refuses bad input (400 validation_failed) and what it cannot decide, with stable codes", async () => {
      const s = setup(open);
      const turnId = await s.start("a1");
      const id = (await s.view("a1")).pendingToolCalls[0].toolCallId;
      for (const body of [{ turnId, toolCallId: id }, { turnId, toolCallId: id, approved: "yes" }, { turnId, toolCallId: id, approved: true, extra: 1 }]) {
        const r = await s.decide("a1", body);
        expect(r.status).toBe(400);
        expect(r.body.code).toBe("validation_failed");
      }
      expect((await s.decide("a1", { turnId, toolCallId: "call_nope", approved: true })).body.code).toBe("unknown_tool_call");
      expect((await s.decide("nobody", { turnId, toolCallId: id, approved: true })).body.code).toBe("agent_not_found");
      expect(s.runs).toEqual([]);
      await s.gh.close();
    });

    it("a token without the approve verb gets 403; one with it decides", async () => {
      const s = setup(open, { auth: true });
      const turnId = await s.start("a1");
      const id = (await s.view("a1")).pendingToolCalls[0].toolCallId;
      const refused = await s.decide("a1", { turnId, toolCallId: id, approved: true }, READER);
      expect(refused.status).toBe(403);
      expect(refused.body.code).toBe("forbidden");
      expect((await s.view("a1")).pendingToolCalls[0].approval).toBe("pending");
      expect((await s.decide("a1", { turnId, toolCallId: id, approved: true }, ADMIN)).status).toBe(200);
      await s.gh.drain();
      expect(s.runs).toEqual([5]);
      await s.gh.close();
    });
  });
}
