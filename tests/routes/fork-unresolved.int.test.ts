/**
 * A fork taken while an in-process call was pending never runs that call's
 * tool again under the same id (routes/fork.ts): the source may already
 * have run it (its result was not yet committed at the fork point). The
 * fork answers it with the error outcome `forked_unresolved`, which the
 * model sees, unless the tool is `retrySafe` or the fork asks for
 * `rerunPending: true`. Memory and Redis.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, memoryStore, scriptedModel } from "../../mod.ts";
import type { Store } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import type { Message } from "../../common/message.ts";
import { useRedisServer } from "../helpers/redis.ts";

function setup(store: Store) {
  const runs: Record<string, string[]> = { charge: [], peek: [] };
  const charge = defineTool({
    name: "charge",
    description: "Charge a card (not retry-safe)",
    parameters: z.object({ cents: z.number() }),
    execute: (_args, { agentId }) => {
      runs.charge.push(agentId);
      return { charged: true };
    },
  });
  const peek = defineTool({
    name: "peek",
    description: "Read a balance (retry-safe)",
    parameters: z.object({}),
    retrySafe: true,
    execute: (_args, { agentId }) => {
      runs.peek.push(agentId);
      return { balance: 3 };
    },
  });
  // Step 1 calls the tool the task names; step 2 reports what the tool message said.
  const model = scriptedModel(({ step, messages }) => {
    if (step === 1) {
      const first = messages.find((m: Message) => m.role === "user")!;
      return { toolCalls: [{ name: String(first.content) === "peek" ? "peek" : "charge", args: String(first.content) === "peek" ? {} : { cents: 5 } }] };
    }
    const tool = [...messages].reverse().find((m: Message) => m.role === "tool")!;
    return { text: String(tool.content) };
  });
  const agent = defineAgent({ name: "payer", instructions: "Pay.", model, tools: [charge, peek] });
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

/** The id of an event after which the source waits on its in-process call (recorded, not yet answered). */
async function pendingPoint(store: Store, agentId: string): Promise<number> {
  const events = await store.readEvents(agentId, 0, 1000);
  const e = events.find((x) => x.type === "transition" && x.data.to === "waiting-tools");
  expect(e).toBeDefined();
  return e!.id;
}

function suite(name: string, makeStore: () => Store) {
  describe(`fork at a pending in-process call (${name})`, () => {
    it("answers the call with forked_unresolved in each of 3 forks; the tool ran once, in the source", { timeout: 60_000 }, async () => {
      const store = makeStore();
      const { gh, call, runs } = setup(store);
      expect((await call("POST", "/v1/agents/src/tasks", { agent: "payer", input: "charge" })).status).toBe(202);
      await gh.drain();
      expect(runs.charge).toEqual(["src"]);
      const at = await pendingPoint(store, "src");
      for (const f of ["f1", "f2", "f3"]) {
        const r = await call("POST", "/v1/agents/src/fork", { atEventId: at, newAgentId: f });
        expect(r.status).toBe(201);
        expect(r.body.pendingToolCalls).toHaveLength(1);
      }
      await gh.drain();
      // Not one extra run of the non-retry-safe tool.
      expect(runs.charge).toEqual(["src"]);
      const srcCall = (await store.readEvents("src", 0, 1000)).find((e) => e.type === "tool_call")!;
      for (const f of ["f1", "f2", "f3"]) {
        const view = (await call("GET", `/v1/agents/${f}`)).body;
        expect(view.state).toBe("done");
        const result = (await store.readEvents(f, 0, 1000)).find((e) => e.type === "tool_result")!;
        expect(result.data).toMatchObject({
          toolCallId: srcCall.data.toolCallId,
          ok: false,
          outcome: { ok: false, error: { type: "forked_unresolved", retryable: false } },
        });
        // The model saw the typed error.
        expect(String(view.output)).toContain("forked_unresolved");
        expect(String(view.output)).toContain("pending when this agent was forked");
      }
      await gh.close();
    });

    it("runs the call again with rerunPending: true, and a retrySafe tool's call always", { timeout: 60_000 }, async () => {
      const store = makeStore();
      const { gh, call, runs } = setup(store);
      await call("POST", "/v1/agents/a/tasks", { agent: "payer", input: "charge" });
      await call("POST", "/v1/agents/b/tasks", { agent: "payer", input: "peek" });
      await gh.drain();
      expect(runs).toEqual({ charge: ["a"], peek: ["b"] });
      const r1 = await call("POST", "/v1/agents/a/fork", { atEventId: await pendingPoint(store, "a"), newAgentId: "a-again", rerunPending: true });
      const r2 = await call("POST", "/v1/agents/b/fork", { atEventId: await pendingPoint(store, "b"), newAgentId: "b-again" });
      expect([r1.status, r2.status]).toEqual([201, 201]);
      await gh.drain();
      expect(runs).toEqual({ charge: ["a", "a-again"], peek: ["b", "b-again"] });
      expect((await call("GET", "/v1/agents/a-again")).body.state).toBe("done");
      expect((await call("GET", "/v1/agents/b-again")).body.state).toBe("done");
      // A bad rerunPending is refused and creates nothing.
      const bad = await call("POST", "/v1/agents/a/fork", { atEventId: 1, newAgentId: "a-bad", rerunPending: "yes" });
      expect([bad.status, bad.body.code]).toEqual([400, "validation_failed"]);
      expect(await store.getAgent("a-bad")).toBeNull();
      await gh.close();
    });
  });
}

suite("memory", () => memoryStore());

const server = useRedisServer({}, 60_000);
let n = 0;
suite("redis", () => redisStore({ url: server!.url, prefix: `forku${++n}_${Math.random().toString(36).slice(2, 8)}` }));
