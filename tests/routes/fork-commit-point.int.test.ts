/**
 * A fork (and `GET .../history`) at any event of a commit takes the agent at
 * that commit's end (routes/history.ts `historyOrProblem`,
 * actors/replay/commit-point.ts). A model step's commit logs `tool_call` and
 * `approval_requested` before its `transition`: a fork at one of those rows
 * carries the call as pending, so a tool without `retrySafe` is not run again
 * under the same `toolCallId` (the call ends `forked_unresolved`), with or
 * without an approval given in the fork. Memory and Redis.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, memoryStore, scriptedModel } from "../../mod.ts";
import type { Store } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import type { Message } from "../../common/message.ts";
import type { StoredEvent } from "../../common/events.ts";
import { useRedisServer } from "../helpers/redis.ts";

function setup(store: Store, needsApproval: boolean) {
  const runs: Array<{ agentId: string; toolCallId: string }> = [];
  const charge = defineTool({
    name: "charge",
    description: "Charge a card (not retry-safe)",
    parameters: z.object({ cents: z.number() }),
    needsApproval,
    execute: (_args, { agentId, toolCallId }) => {
      runs.push({ agentId, toolCallId });
      return { charged: true };
    },
  });
  // Step 1 calls the tool; step 2 reports what the tool message said.
  const model = scriptedModel(({ step, messages }) => {
    if (step === 1) return { toolCalls: [{ name: "charge", args: { cents: 5 } }] };
    const tool = [...messages].reverse().find((m: Message) => m.role === "tool")!;
    return { text: String(tool.content) };
  });
  const agent = defineAgent({ name: "payer", instructions: "Pay.", model, tools: [charge] });
  const gh = createGatehouse({ agents: [agent], store, leaseMs: 10_000 });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await gh.fetch(new Request(`http://gh.test${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }));
    return { status: res.status, body: await res.json() as any };
  };
  return { gh, call, runs };
}

async function eventsOf(store: Store, agentId: string): Promise<StoredEvent[]> {
  return await store.readEvents(agentId, 0, 1000);
}

/** The fork's one tool result is `forked_unresolved` for the source's call, and the model saw it. */
async function expectForkedUnresolved(store: Store, call: ReturnType<typeof setup>["call"], fork: string, toolCallId: string) {
  const view = (await call("GET", `/v1/agents/${fork}`)).body;
  expect(view.state).toBe("done");
  const results = (await eventsOf(store, fork)).filter((e) => e.type === "tool_result");
  expect(results).toHaveLength(1);
  expect(results[0].data).toMatchObject({
    toolCallId,
    ok: false,
    outcome: { ok: false, error: { type: "forked_unresolved", retryable: false } },
  });
  expect(String(view.output)).toContain("forked_unresolved");
}

function suite(name: string, makeStore: () => Store) {
  describe(`fork at an event logged ahead of its commit's transition (${name})`, () => {
    it("fork at the tool_call event: the call is pending in the fork and the tool does not run again", { timeout: 60_000 }, async () => {
      const store = makeStore();
      const { gh, call, runs } = setup(store, false);
      expect((await call("POST", "/v1/agents/src/tasks", { agent: "payer", input: "pay" })).status).toBe(202);
      await gh.drain();
      expect(runs.map((r) => r.agentId)).toEqual(["src"]);
      const events = await eventsOf(store, "src");
      const toolCall = events.find((e) => e.type === "tool_call")!;
      const step = events.find((e) => e.type === "transition" && e.id > toolCall.id)!;
      expect(step.data).toMatchObject({ to: "waiting-tools" });
      const toolCallId = String(toolCall.data.toolCallId);

      // History at the tool_call row answers the commit's end: the call is recorded and pending.
      const h = await call("GET", `/v1/agents/src/history/${toolCall.id}`);
      expect(h.status).toBe(200);
      expect(h.body.eventId).toBe(toolCall.id);
      expect(h.body.event.id).toBe(toolCall.id);
      expect(h.body.throughEventId).toBeGreaterThanOrEqual(step.id);
      expect(h.body.state).toBe("waiting-tools");
      expect(Object.keys(h.body.context.pending)).toEqual([toolCallId]);
      // The same as history at the commit's last event.
      const end = await call("GET", `/v1/agents/src/history/${h.body.throughEventId}`);
      expect(end.body.throughEventId).toBe(h.body.throughEventId);
      expect(end.body.snapshot).toEqual(h.body.snapshot);
      expect(end.body.messages).toEqual(h.body.messages);

      for (const f of ["f1", "f2", "f3"]) {
        const r = await call("POST", "/v1/agents/src/fork", { atEventId: toolCall.id, newAgentId: f });
        expect(r.status).toBe(201);
        expect(r.body.forkedFrom).toMatchObject({ atEventId: toolCall.id, throughEventId: h.body.throughEventId });
        expect(r.body.state).toBe("waiting-tools");
        expect(r.body.pendingToolCalls.map((p: { toolCallId: string }) => p.toolCallId)).toEqual([toolCallId]);
      }
      await gh.drain();
      // Not one extra run of the tool without retrySafe, under its id or any other.
      expect(runs).toEqual([{ agentId: "src", toolCallId }]);
      for (const f of ["f1", "f2", "f3"]) await expectForkedUnresolved(store, call, f, toolCallId);
      const forkedFrom = (await eventsOf(store, "f1")).find((e) => e.type === "forked_from")!;
      expect(forkedFrom.data).toMatchObject({ atEventId: toolCall.id, throughEventId: h.body.throughEventId });
      await gh.close();
    });

    it("fork at the approval_requested event, approved in the fork: the tool does not run twice", { timeout: 60_000 }, async () => {
      const store = makeStore();
      const { gh, call, runs } = setup(store, true);
      expect((await call("POST", "/v1/agents/src/tasks", { agent: "payer", input: "pay" })).status).toBe(202);
      await gh.drain();
      const asked = (await eventsOf(store, "src")).find((e) => e.type === "approval_requested")!;
      expect(asked).toBeDefined();
      const toolCallId = String(asked.data.toolCallId);
      const turnId = asked.turnId!;
      expect((await call("POST", "/v1/agents/src/approvals", { turnId, toolCallId, approved: true })).status).toBe(200);
      await gh.drain();
      expect(runs).toEqual([{ agentId: "src", toolCallId }]);
      expect((await call("GET", "/v1/agents/src")).body.state).toBe("done");

      const r = await call("POST", "/v1/agents/src/fork", { atEventId: asked.id, newAgentId: "fa" });
      expect(r.status).toBe(201);
      expect(r.body.state).toBe("waiting-tools");
      expect(r.body.pendingToolCalls.map((p: { toolCallId: string }) => p.toolCallId)).toEqual([toolCallId]);
      await gh.drain();
      // The fork waits for its own approval, under the source's call id.
      const waiting = (await call("GET", "/v1/agents/fa")).body;
      expect(waiting.state).toBe("waiting-tools");
      expect(waiting.pendingToolCalls).toMatchObject([{ toolCallId, approval: "pending" }]);
      expect((await call("POST", "/v1/agents/fa/approvals", { turnId, toolCallId, approved: true })).status).toBe(200);
      await gh.drain();
      expect(runs).toEqual([{ agentId: "src", toolCallId }]);
      await expectForkedUnresolved(store, call, "fa", toolCallId);
      await gh.close();
    });
  });
}

suite("memory", () => memoryStore());

const server = useRedisServer({}, 60_000);
let n = 0;
suite("redis", () => redisStore({ url: server!.url, prefix: `forkcp${++n}_${Math.random().toString(36).slice(2, 8)}` }));
