/**
 * Approvals of delegations and handoffs, and handoff input filters
 * (agents/agent-tool.ts and agents/handoff.ts `needsApproval`,
 * `inputFilter`; actors/steps/approvals.ts, actors/steps/handoff-view.ts),
 * end to end over HTTP and the worker pool with a clock the test moves, on
 * one store adapter (memory: approvals-anywhere.test.ts; Redis:
 * approvals-anywhere.int.test.ts).
 *
 * - An agentTool call that needs approval is listed pending and creates no
 *   child until approved; approved, the child runs once and its result is
 *   the call's; rejected, no child is ever created and the model sees
 *   `approval_rejected`. A predicate that answers false dispatches at once.
 * - A handoff that needs approval transfers only once approved; rejected,
 *   the target's model is never called.
 * - An input filter decides what the target's model sees of the
 *   conversation before the handoff; the target's own steps follow whole.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  agentTool, createGatehouse, defineAgent, defineTool, handoff, type HandoffInputFilter, lastUserMessage, type ModelRequest, type Store,
} from "../../mod.ts";
import { manualClock } from "../helpers/clock.ts";

type Msg = ModelRequest["messages"][number];

/** The messages of the current turn (from its user message on). */
const turnOf = (req: ModelRequest) => req.messages.slice(req.messages.findLastIndex((m) => m.role === "user"));

function setup(open: () => Store, filter?: HandoffInputFilter) {
  const seen: Record<string, ModelRequest[]> = { researcher: [], billing: [], lead: [], triage: [] };
  const researcher = defineAgent({
    name: "researcher", instructions: "Find facts.",
    model: { name: "r", async generate(req) {
      seen.researcher.push(req);
      return { toolCalls: [{ name: "submit_result", args: { result: `facts about ${turnOf(req)[0].content}` } }] };
    } },
  });
  const billing = defineAgent({
    name: "billing", instructions: "Bill.",
    model: { name: "b", async generate(req) {
      seen.billing.push(req);
      // Two steps: a call of its own, then the result, so its own later step is seen whole.
      const own = req.messages.some((m) => m.role === "assistant" && m.toolCalls?.some((c) => c.name === "note"));
      return own ? { toolCalls: [{ name: "submit_result", args: { result: "billed" } }] } : { toolCalls: [{ name: "note", args: {} }] };
    } },
    tools: [noteTool],
  });
  const lead = defineAgent({
    name: "lead", instructions: "Delegate.",
    model: { name: "l", async generate(req) {
      seen.lead.push(req);
      const turn = turnOf(req);
      const answer = turn.find((m) => m.role === "tool");
      if (!answer) return { toolCalls: [{ name: "researcher", args: { input: turn[0].content } }] };
      return { toolCalls: [{ name: "submit_result", args: { result: answer.content } }] };
    } },
    tools: [agentTool(researcher, { needsApproval: (args) => (args as { input: unknown }).input !== "free" })],
  });
  const triage = defineAgent({
    name: "triage", instructions: "Route.",
    model: { name: "t", async generate(req) {
      seen.triage.push(req);
      const turn = turnOf(req);
      const answer = turn.find((m) => m.role === "tool" && m.content.includes("approval_rejected"));
      if (answer) return { toolCalls: [{ name: "submit_result", args: { result: "kept" } }] };
      return { text: "Let me look first.", toolCalls: [{ name: "transfer_to_billing", args: {} }] };
    } },
    tools: [handoff(billing, { needsApproval: true, ...(filter ? { inputFilter: filter } : {}) })],
  });
  const clock = manualClock();
  const store = open();
  const gh = createGatehouse({ agents: [lead, triage, billing], store, clock, delegation: { pollMs: 5_000 } });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await gh.fetch(new Request(`http://gh.test${path}`, {
      method, headers: body === undefined ? {} : { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body),
    }));
    return { status: res.status, body: await res.json() as Record<string, any> };
  };
  const start = async (agentId: string, agent: string, input: string) => {
    const t = await call("POST", `/v1/agents/${agentId}/tasks`, { agent, input });
    expect(t.status).toBe(202);
    await gh.drain();
    return t.body.turnId as string;
  };
  const view = async (agentId: string) => (await call("GET", `/v1/agents/${agentId}`)).body;
  const events = async (agentId: string) => (await call("GET", `/v1/agents/${agentId}/events?format=json&limit=500`)).body.events as Array<{ type: string; data: any }>;
  const decide = async (agentId: string, turnId: string, toolCallId: string, approved: boolean) => {
    const r = await call("POST", `/v1/agents/${agentId}/approvals`, { turnId, toolCallId, approved, ...(approved ? {} : { reason: "not now" }) });
    expect(r.status).toBe(200);
    // The approval rings the parent; a delegation's child runs and delivers; the pull is due after pollMs.
    for (let i = 0; i < 3; i++) {
      await gh.drain();
      clock.advance(5_000);
    }
    await gh.drain();
  };
  return { gh, store, clock, seen, start, view, events, decide };
}

const noteTool = defineTool({ name: "note", description: "Take a note", parameters: z.object({}), execute: () => "noted" });

export function approvalsAnywhereSuite(name: string, open: () => Store): void {
  describe(`approvals of agentTool calls and handoffs, handoff input filters (${name})`, () => {
    it("an agentTool call that needs approval creates no child until approved; approved, the child runs once and answers the call", async () => {
      const s = setup(open);
      const turnId = await s.start("p1", "lead", "tides");
      const v = await s.view("p1");
      expect(v.state).toBe("waiting-tools");
      expect(v.pendingToolCalls).toHaveLength(1);
      expect(v.pendingToolCalls[0]).toMatchObject({ name: "researcher", external: true, approval: "pending" });
      const started = (await s.events("p1")).find((e) => e.type === "delegation_started")!;
      const childId = started.data.childAgentId as string;
      await s.gh.drain();
      s.clock.advance(60_000);
      await s.gh.drain();
      expect(await s.store.getAgent(childId)).toBeNull();
      expect(s.seen.researcher).toHaveLength(0);

      await s.decide("p1", turnId, v.pendingToolCalls[0].toolCallId, true);
      expect(s.seen.researcher).toHaveLength(1);
      const done = await s.view("p1");
      expect(done.state).toBe("done");
      expect(done.output).toContain("facts about tides");
      expect((await s.events("p1")).filter((e) => e.type === "approval_decided").map((e) => e.data.decision)).toEqual(["approved"]);
    });

    it("a rejected agentTool call never creates the child; the model sees approval_rejected", async () => {
      const s = setup(open);
      const turnId = await s.start("p2", "lead", "secrets");
      const v = await s.view("p2");
      const childId = (await s.events("p2")).find((e) => e.type === "delegation_started")!.data.childAgentId as string;
      await s.decide("p2", turnId, v.pendingToolCalls[0].toolCallId, false);
      const done = await s.view("p2");
      expect(done.state).toBe("done");
      expect(done.output).toContain("approval_rejected");
      expect(await s.store.getAgent(childId)).toBeNull();
      expect(s.seen.researcher).toHaveLength(0);
    });

    it("an agentTool call whose predicate answers false is dispatched without asking", async () => {
      const s = setup(open);
      await s.start("p3", "lead", "free");
      await s.gh.drain();
      s.clock.advance(5_000);
      await s.gh.drain();
      const done = await s.view("p3");
      expect(done.state).toBe("done");
      expect(done.output).toContain("facts about free");
      expect((await s.events("p3")).some((e) => e.type === "approval_requested")).toBe(false);
    });

    it("a handoff that needs approval transfers only once approved; rejected, the target's model is never called", async () => {
      const s = setup(open);
      const t1 = await s.start("h1", "triage", "invoice 42");
      const v = await s.view("h1");
      expect(v.pendingToolCalls[0]).toMatchObject({ name: "transfer_to_billing", external: false, approval: "pending" });
      await s.gh.drain();
      expect(s.seen.billing).toHaveLength(0);
      await s.decide("h1", t1, v.pendingToolCalls[0].toolCallId, true);
      expect((await s.events("h1")).some((e) => e.type === "handoff" && e.data.to === "billing")).toBe(true);
      expect((await s.view("h1")).output).toBe("billed");

      const t2 = await s.start("h2", "triage", "invoice 43");
      const w = await s.view("h2");
      await s.decide("h2", t2, w.pendingToolCalls[0].toolCallId, false);
      const kept = await s.view("h2");
      expect(kept.state).toBe("done");
      expect(kept.output).toBe("kept");
      expect((await s.events("h2")).some((e) => e.type === "handoff")).toBe(false);
      expect(s.seen.billing).toHaveLength(2); // the two steps of h1's billing, none for h2
    });

    it.each([
      ["no filter: the whole conversation", undefined, (turn: Msg[]) => {
        expect(turn.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
        expect(turn[1].content).toBe("Let me look first.");
      }],
      ["lastUserMessage: only the task", lastUserMessage, (turn: Msg[]) => {
        expect(turn).toEqual([{ role: "user", content: "invoice 44" }]);
      }],
      ["a function over the messages", ((ms: Msg[]) => ms.filter((m) => m.role === "user").map((m) => ({ ...m, content: `[from triage] ${m.content}` }))) as HandoffInputFilter,
        (turn: Msg[]) => expect(turn).toEqual([{ role: "user", content: "[from triage] invoice 44" }])],
    ])("input filter, %s; the target's own later steps follow whole", async (_name, filter, check) => {
      const s = setup(open, filter);
      const t = await s.start("f1", "triage", "invoice 44");
      await s.decide("f1", t, (await s.view("f1")).pendingToolCalls[0].toolCallId, true);
      expect((await s.view("f1")).output).toBe("billed");
      const [first, second] = s.seen.billing;
      expect(first.messages[0]).toMatchObject({ role: "system" });
      expect(first.messages[0].content).toContain("Bill.");
      check(first.messages.slice(1));
      // The second step shows the same filtered start, then billing's own call and its result.
      expect(second.messages.slice(0, first.messages.length)).toEqual(first.messages);
      expect(second.messages.slice(first.messages.length).map((m) => m.role)).toEqual(["assistant", "tool"]);
      // The stored conversation is whole.
      const stored = await s.store.readMessages("f1", 0);
      expect(JSON.stringify(stored)).toContain("Let me look first.");
    });
  });
}
