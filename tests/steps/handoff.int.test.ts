/**
 * Handoffs (agents/handoff.ts, actors/steps/handoff.ts; docs/architecture.md,
 * "Handoffs"): a `transfer_to_<target>` call makes the same turn go on under
 * the target's instructions, tools, model and verifier. On the memory store,
 * Redis (TCP), Redis Cluster (the sharded layout, one cluster-mode node) and
 * Upstash (REST through tests/helpers/upstash-bridge.ts): the binding's
 * gate ends the turn (the target's own verifier is never called; the binding
 * declares `output`, tests/steps/handoff-gate.int.test.ts has more), the model after
 * the handoff is asked with the target's instructions and tools, the log holds
 * one `handoff` event and the view names the definition, a claim that dies
 * after the switch's commit is continued under the target, one that dies
 * before it re-runs the handoff with nothing visible twice, replay and time
 * travel reproduce every state. On memory: forks and replay bundles, A -> B ->
 * A bounded by the step budget, one handoff per step, the startup refusals.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type AnyAgent, defineAgent } from "../../agents/define.ts";
import { handoff } from "../../agents/handoff.ts";
import type { ClaimResult, Store } from "../../store/port.ts";
import { memoryStore } from "../../store/memory.ts";
import { upstashStore } from "../../store/upstash.ts";
import { redisStore } from "../../redis.ts";
import { createGatehouse, type Gatehouse } from "../../gatehouse.ts";
import { createReplayGatehouse, exportReplayBundle } from "../../replay.ts";
import { DefinitionError } from "../../errors/errors.ts";
import { VerificationRejected } from "../../verification/rejected.ts";
import { defineTool } from "../../tools/define.ts";
import { historyAt } from "../../actors/replay/time-travel.ts";
import { manualClock } from "../helpers/clock.ts";
import {
  ctxOf,
  deferred,
  enqueue,
  eventsOf,
  head,
  hostDeps,
  observedStore,
  recordingModel,
  replayLog,
  runClaim,
  toolMessages,
  transitionsOf,
} from "../helpers/host.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { type RedisCluster, startRedisCluster } from "../helpers/redis-cluster.ts";
import { Cluster } from "ioredis";
import { startUpstashBridge, type UpstashBridge } from "../helpers/upstash-bridge.ts";
import type { ModelRequest, ModelResponse } from "../../models/types.ts";
import { initialTransition, transition } from "xstate";
import { agentMachine } from "../../machines/agent.ts";
import type { AgentEvent } from "../../machines/types.ts";

const server = useRedisServer();
let bridge: UpstashBridge;
/** One cluster-mode node holding every slot: the sharded layout, with CROSSSLOT enforced as on three masters. */
let cluster: RedisCluster;
let clusterClient: Cluster;
beforeAll(async () => {
  bridge = await startUpstashBridge({ redisUrl: server.url });
  cluster = await startRedisCluster({ masters: 1 });
  clusterClient = new Cluster(cluster.nodes, { enableAutoPipelining: false });
});
afterAll(async () => {
  clusterClient?.disconnect();
  await cluster?.stop();
  await bridge?.close();
});

let n = 0;
const adapters: Array<[string, () => Store]> = [
  ["memory", () => memoryStore()],
  ["redis", () => redisStore({ url: server.url, prefix: `ho${++n}_${Math.random().toString(36).slice(2, 8)}` })],
  ["redis cluster", () => redisStore({ client: clusterClient, prefix: `hc${++n}_${Math.random().toString(36).slice(2, 8)}` })],
  ["upstash", () => upstashStore({ url: bridge.url, token: bridge.token, prefix: `hu${++n}_${Math.random().toString(36).slice(2, 8)}` })],
];

const LEASE = 30_000;
const Answer = z.object({ answer: z.string() });
const names = (req: ModelRequest) => (req.tools ?? []).map((t) => t.function.name);

/**
 * triage (the binding) hands off to billing. Each has its own model, tools and counting verifier: triage's
 * rejects "draft" once (retryable) and accepts "final", which needs triage's attempt budget (3); billing's
 * accepts anything in one attempt, and is never called in a turn bound to triage (the binding declares
 * `output`, so its gate ends the turn under billing too).
 */
function team(over: { billingModel?: (req: ModelRequest, i: number) => ModelResponse | Promise<ModelResponse> } = {}) {
  const calls = { triageVerify: 0, billingVerify: 0 };
  const lookup = defineTool({ name: "lookup", description: "Look up", parameters: z.object({}), execute: () => "found" });
  const refund = defineTool({ name: "refund", description: "Refund", parameters: z.object({}), execute: () => "refunded" });
  // Hands every task to billing, except a thank-you, which it answers itself.
  const triageModel = recordingModel((req) =>
    String(req.messages.findLast((m) => m.role === "user")?.content).includes("thanks")
      ? { toolCalls: [{ name: "agent_output", args: { answer: "triaged" } }] }
      : { toolCalls: [{ name: "transfer_to_billing", args: {} }] }
  );
  const billingModel = recordingModel(over.billingModel ?? ((_req, i) =>
    ({ toolCalls: [{ name: "agent_output", args: { answer: i === 0 ? "draft" : "final" } }] })));
  const billing = defineAgent({
    name: "billing",
    instructions: "You are billing.",
    model: billingModel,
    tools: [refund, handoff("triage")],
    output: { schema: Answer, verify: (c) => (calls.billingVerify++, { answer: c.answer, by: "billing" }) },
    verifyAttempts: 1,
  });
  const triage = defineAgent({
    name: "triage",
    instructions: "You are triage.",
    model: triageModel,
    tools: [lookup, handoff(billing)],
    output: {
      schema: Answer,
      verify: (c) => {
        calls.triageVerify++;
        if (c.answer === "draft") throw new VerificationRejected({ message: "not final", code: "draft", retryable: true });
        return { answer: c.answer, by: "triage" };
      },
    },
    verifyAttempts: 3,
  });
  return { triage, billing, triageModel, billingModel, calls, agents: [triage, billing] as AnyAgent[] };
}

type Claimed = Extract<ClaimResult, { status: "claimed" }>;
async function claim(store: Store, agentId: string, workerId: string, now: number): Promise<Claimed> {
  const c = await store.claim({ agentId, workerId, leaseMs: LEASE, now });
  if (c.status !== "claimed") throw new Error(`expected a claim, got ${c.status}`);
  return c;
}

for (const [adapter, open] of adapters) {
  describe(`handoff on ${adapter}`, () => {
    it("the turn ends through the binding's gate; the model after the handoff sees the target's instructions and tools", async () => {
      const t = team();
      const clock = manualClock();
      const gh = createGatehouse({ agents: t.agents, store: open(), clock, leaseMs: LEASE });
      try {
        const { store } = gh;
        const { turnId } = await enqueue(store, clock, "h1", t.triage, "my invoice is wrong");
        await gh.drain();

        expect((await head(store, "h1")).state).toBe("done");
        expect((await ctxOf(store, "h1")).output).toEqual({ answer: "final", by: "triage" });
        // triage's verifier (the binding's) rejected once and then passed (a revision under billing); billing's was never called.
        expect(t.calls).toEqual({ triageVerify: 2, billingVerify: 0 });
        expect(t.triageModel.requests).toHaveLength(1);
        expect(t.billingModel.requests).toHaveLength(2);
        expect(t.triageModel.requests[0].messages[0]).toEqual({ role: "system", content: "You are triage." });
        expect(names(t.triageModel.requests[0])).toEqual(["lookup", "transfer_to_billing", "agent_output"]);
        for (const req of t.billingModel.requests) {
          expect(req.messages[0]).toEqual({ role: "system", content: "You are billing." });
          expect(names(req)).toEqual(["refund", "transfer_to_triage", "agent_output"]);
        }
        const [call] = await store.getToolCalls("h1", turnId);
        expect(call).toMatchObject({ name: "transfer_to_billing", status: "resolved", outcome: { ok: true, value: { handedOffTo: "billing" } } });
        // The target's model sees the conversation so far, the handoff's answer included.
        expect(toolMessages(t.billingModel.requests[0].messages, call.toolCallId)).toHaveLength(1);
        expect(t.billingModel.requests[0].messages.find((m) => m.role === "user")?.content).toContain("my invoice is wrong");

        const handoffs = await eventsOf(store, "h1", "handoff");
        expect(handoffs.map((e) => e.data)).toEqual([{ step: 1, toolCallId: call.toolCallId, tool: "transfer_to_billing", from: "triage", to: "billing" }]);
        expect((await transitionsOf(store, "h1")).map((x) => `${x.from}->${x.to}`)).toEqual([
          "idle->running", "running->waiting-tools", "waiting-tools->running", "running->verifying", "verifying->revising",
          "revising->running", "running->verifying", "verifying->done",
        ]);
        expect((await eventsOf(store, "h1", "verification_rejected")).map((e) => (e.data as { code: string }).code)).toEqual(["draft"]);
        const view = await (await gh.fetch(new Request("http://gh.test/v1/agents/h1"))).json() as Record<string, unknown>;
        expect(view).toMatchObject({ agent: "triage", definition: "billing", state: "done", verification: { maxAttempts: 3, attemptsUsed: 2 } });

        // Replay and time travel reproduce every state: the head's snapshot, and the definition at each point.
        const h = await head(store, "h1");
        expect(await replayLog(store, "h1")).toEqual(h.snapshot);
        const events = await eventsOf(store, "h1");
        const switchAt = events.find((e) => e.type === "transition" && (e.data as { event: { handoff?: unknown } }).event.handoff)!;
        expect((await historyAt(store, "h1", switchAt.id - 1))!.context.definition).toBeUndefined();
        const after = (await historyAt(store, "h1", switchAt.id))!;
        expect([after.state, after.context.definition, after.context.config.verifyMaxAttempts]).toEqual(["running", "billing", 3]);
        expect((await historyAt(store, "h1", h.lastEventId))!.snapshot).toEqual(h.snapshot);

        // The next task starts under the binding: triage's model and gate, and the view says so.
        await enqueue(store, clock, "h1", t.triage, "thanks");
        t.triageModel.requests.length = 0;
        await gh.drain();
        expect((await ctxOf(store, "h1")).output).toEqual({ answer: "triaged", by: "triage" });
        expect(t.calls).toEqual({ triageVerify: 3, billingVerify: 0 });
        expect(t.billingModel.requests).toHaveLength(2);
        expect(t.triageModel.requests[0].messages[0]).toEqual({ role: "system", content: "You are triage." });
        const again = await (await gh.fetch(new Request("http://gh.test/v1/agents/h1"))).json() as Record<string, unknown>;
        expect(again).toMatchObject({ agent: "triage", definition: "triage" });
        expect(await replayLog(store, "h1")).toEqual((await head(store, "h1")).snapshot);
      } finally {
        await gh.close();
      }
    });

    it("a claim that dies after the handoff's commit: the next claim continues under the target", async () => {
      const blocked = deferred<ModelResponse>();
      const t = team({
        billingModel: (_req, i) => i === 0 ? blocked.promise : { toolCalls: [{ name: "agent_output", args: { answer: "final" } }] },
      });
      const clock = manualClock();
      const store = observedStore(open());
      try {
        await enqueue(store, clock, "h2", t.triage, "go");
        // Worker A commits the handoff's result, then hangs in billing's first model call (it dies there).
        const claimA = await claim(store, "h2", "A", clock.now());
        const runA = runClaim(hostDeps(store, t.agents, clock), claimA, "A");
        while (t.billingModel.requests.length === 0) await new Promise((r) => setTimeout(r, 2));
        const stored = await ctxOf(store, "h2");
        expect([(await head(store, "h2")).state, stored.definition]).toEqual(["running", "billing"]);

        // Its lease runs out; worker B (another process: no cache) restores the snapshot under billing.
        clock.advance(LEASE + 1);
        const claimB = await claim(store, "h2", "B", clock.now());
        expect(await runClaim(hostDeps(store, t.agents, clock), claimB, "B")).toMatchObject({ status: "released", state: "done" });
        expect(t.triageModel.requests).toHaveLength(1);
        expect(t.billingModel.requests).toHaveLength(2);
        expect(t.billingModel.requests[1].messages[0]).toEqual({ role: "system", content: "You are billing." });
        expect(names(t.billingModel.requests[1])).toEqual(["refund", "transfer_to_triage", "agent_output"]);
        expect((await ctxOf(store, "h2")).output).toEqual({ answer: "final", by: "triage" });
        expect(t.calls).toEqual({ triageVerify: 1, billingVerify: 0 });
        expect(await eventsOf(store, "h2", "handoff")).toHaveLength(1);

        // A wakes up: its commit is refused.
        blocked.resolve({ toolCalls: [{ name: "agent_output", args: { answer: "late" } }] });
        expect(await runA).toMatchObject({ status: "fenced" });
        // The first step (with the turn's start), the handoff's result, then the refused one.
        expect(store.commits.filter((c) => c.workerId === "A").map((c) => c.status)).toEqual(["applied", "applied", "conflict"]);
        expect(await replayLog(store, "h2")).toEqual((await head(store, "h2")).snapshot);
      } finally {
        await store.close();
      }
    });

    it("a claim that dies before the handoff's commit: the next claim hands off again, nothing visible twice", async () => {
      const t = team();
      const clock = manualClock();
      const store = observedStore(open());
      try {
        const { turnId } = await enqueue(store, clock, "h3", t.triage, "go");
        // Worker A's second commit (the handoff's result, after the step that carried the turn's start) never lands.
        const held = store.hold("A", 1);
        const claimA = await claim(store, "h3", "A", clock.now());
        const runA = runClaim(hostDeps(store, t.agents, clock), claimA, "A");
        await held.started;
        expect(await ctxOf(store, "h3")).toMatchObject({ step: 1 });
        expect((await ctxOf(store, "h3")).definition).toBeUndefined();
        expect(await eventsOf(store, "h3", "handoff")).toHaveLength(0);

        clock.advance(LEASE + 1);
        const claimB = await claim(store, "h3", "B", clock.now());
        expect(await runClaim(hostDeps(store, t.agents, clock), claimB, "B")).toMatchObject({ status: "released", state: "done" });
        held.release.resolve(null);
        expect(await runA).toMatchObject({ status: "fenced" });

        expect((await ctxOf(store, "h3")).output).toEqual({ answer: "final", by: "triage" });
        expect(t.triageModel.requests).toHaveLength(1);
        expect(await eventsOf(store, "h3", "handoff")).toHaveLength(1);
        const results = (await transitionsOf(store, "h3")).filter((x) => x.event.type === "TOOL_RESULT");
        expect(results).toHaveLength(1);
        expect(results[0].event.handoff).toMatchObject({ from: "triage", to: "billing" });
        const calls = await store.getToolCalls("h3", turnId);
        expect(calls.map((c) => [c.name, c.status])).toEqual([["transfer_to_billing", "resolved"]]);
        expect(toolMessages(await store.readMessages("h3"), calls[0].toolCallId)).toHaveLength(1);
        expect(await replayLog(store, "h3")).toEqual((await head(store, "h3")).snapshot);
      } finally {
        await store.close();
      }
    });
  });
}

describe("handoff on the statechart", () => {
  it("a TOOL_RESULT carrying handoff sets the definition and the turn config; the next TASK_STARTED clears them", () => {
    const base = { maxSteps: 8, completion: "submit_result" as const, mustEndWith: [], verifyMaxAttempts: 1, maxVerifierErrors: 3 };
    const target = { ...base, completion: "agent_output" as const, mustEndWith: ["agent_output"], verifyMaxAttempts: 4 };
    const call = (id: string, name: string) => ({ id, name, args: {}, external: false, deadline: 10 });
    let [s] = initialTransition(agentMachine);
    const send = (ev: AgentEvent) => ([s] = transition(agentMachine, s, ev));
    send({ type: "TASK_STARTED", at: 1, turnId: "t1", input: "go", config: base });
    send({ type: "MODEL_STEP", at: 2, text: null, toolCalls: [call("c1", "transfer_to_b"), call("c2", "lookup")], usage: { inputTokens: 0, outputTokens: 0 }, cost: 0 });
    send({ type: "TOOL_RESULT", at: 3, toolCallId: "c1", outcome: { ok: true, value: null }, afterExecution: "continue", handoff: { from: "a", to: "b", config: target } });
    // Not the last outstanding result: the switch is taken while the turn still waits.
    expect([s.value, s.context.definition, s.context.config, s.context.verification.maxAttempts]).toEqual(["waiting-tools", "b", target, 4]);
    send({ type: "TOOL_RESULT", at: 4, toolCallId: "c2", outcome: { ok: true, value: 1 }, afterExecution: "continue" });
    expect([s.value, s.context.definition]).toEqual(["running", "b"]);
    // The target's completion tool finishes the turn now: submit_result is an ordinary call, agent_output goes to the gate.
    send({ type: "MODEL_STEP", at: 5, text: null, toolCalls: [call("c3", "agent_output")], usage: { inputTokens: 0, outputTokens: 0 }, cost: 0 });
    expect(s.value).toBe("verifying");
    send({ type: "VERIFY_PASSED", at: 6, hash: "h", result: "ok" });
    expect([s.value, s.context.definition]).toEqual(["done", "b"]);
    send({ type: "TASK_STARTED", at: 7, turnId: "t2", input: "again", config: base });
    expect([s.value, s.context.definition, s.context.config]).toEqual(["running", undefined, base]);
    expect("definition" in JSON.parse(JSON.stringify(agentMachine.getPersistedSnapshot(s))).context).toBe(false);
  });
});

describe("handoff rules (memory)", () => {
  it("A -> B -> A in one turn is allowed and bounded by the step budget", async () => {
    const ping = recordingModel(() => ({ toolCalls: [{ name: "transfer_to_pong", args: {} }] }));
    const pongModel = recordingModel(() => ({ toolCalls: [{ name: "transfer_to_ping", args: {} }] }));
    const pong = defineAgent({ name: "pong", instructions: "pong", model: pongModel, tools: [handoff("ping")] });
    const pingAgent = defineAgent({ name: "ping", instructions: "ping", model: ping, tools: [handoff(pong)], stepLimit: 4 });
    const clock = manualClock();
    const gh = createGatehouse({ agents: [pingAgent, pong], clock, leaseMs: LEASE });
    try {
      await enqueue(gh.store, clock, "p1", pingAgent, "go");
      await gh.drain();
      expect((await ctxOf(gh.store, "p1")).error?.reason).toBe("step_budget_exhausted");
      expect([ping.requests.length, pongModel.requests.length]).toEqual([2, 2]);
      const moves = (await eventsOf(gh.store, "p1", "handoff")).map((e) => `${(e.data as { from: string }).from}->${(e.data as { to: string }).to}`);
      expect(moves).toEqual(["ping->pong", "pong->ping", "ping->pong", "pong->ping"]);
      expect(await replayLog(gh.store, "p1")).toEqual((await head(gh.store, "p1")).snapshot);
    } finally {
      await gh.close();
    }
  });

  it("only the first handoff of a step transfers; another in the same step is refused", async () => {
    const c = defineAgent({ name: "c", instructions: "c", model: recordingModel(() => ({ text: "c here" })) });
    const b = defineAgent({ name: "b", instructions: "b", model: recordingModel(() => ({ text: "b here" })) });
    const a = defineAgent({
      name: "a", instructions: "a", tools: [handoff(b), handoff(c)],
      model: recordingModel(() => ({ toolCalls: [{ name: "transfer_to_b", args: {} }, { name: "transfer_to_c", args: {} }] })),
    });
    const clock = manualClock();
    const gh = createGatehouse({ agents: [a, b, c], clock, leaseMs: LEASE });
    try {
      const { turnId } = await enqueue(gh.store, clock, "m1", a, "go");
      await gh.drain();
      expect((await ctxOf(gh.store, "m1")).output).toBe("b here");
      const calls = await gh.store.getToolCalls("m1", turnId);
      expect(calls.map((x) => [x.name, x.outcome?.ok, x.outcome?.ok === false ? x.outcome.error.type : null])).toEqual([
        ["transfer_to_b", true, null], ["transfer_to_c", false, "handoff_refused"],
      ]);
    } finally {
      await gh.close();
    }
  });

  it("a fork and a replay bundle of a point after the handoff go on under, and show, the target", async () => {
    const t = team();
    const clock = manualClock();
    const gh = createGatehouse({ agents: t.agents, clock, leaseMs: LEASE });
    try {
      await enqueue(gh.store, clock, "f1", t.triage, "go");
      await gh.drain();
      const switchAt = (await eventsOf(gh.store, "f1")).find((e) => e.type === "transition" && (e.data as { event: { handoff?: unknown } }).event.handoff)!;
      const post = await gh.fetch(new Request("http://gh.test/v1/agents/f1/fork", {
        method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ atEventId: switchAt.id, newAgentId: "f1-fork" }),
      }));
      expect(post.status).toBe(201);
      const before = t.billingModel.requests.length;
      await gh.drain();
      expect(t.billingModel.requests.length).toBeGreaterThan(before);
      expect(t.billingModel.requests.at(-1)!.messages[0]).toEqual({ role: "system", content: "You are billing." });
      expect(t.triageModel.requests).toHaveLength(1);
      const fork = await (await gh.fetch(new Request("http://gh.test/v1/agents/f1-fork"))).json() as Record<string, unknown>;
      expect(fork).toMatchObject({ agent: "triage", definition: "billing", state: "done" });

      const bundle = await exportReplayBundle(gh.store, "f1", clock.now());
      const replay = await createReplayGatehouse(bundle);
      try {
        const view = await (await replay.fetch(new Request(`http://gh.test/v1/agents/${replay.agentId}`))).json() as Record<string, unknown>;
        expect(view).toMatchObject({ agent: "triage", definition: "billing" });
      } finally {
        await replay.close();
      }
    } finally {
      await gh.close();
    }
  });

  it("a handoff to a definition the runtime does not register is a DefinitionError at startup", () => {
    const t = team();
    expect(() => createGatehouse({ agents: [t.triage] })).toThrow(DefinitionError);
    expect(() => createGatehouse({ agents: [t.triage] })).toThrow(/hands off to agent "billing", which is not registered/);
    // By name too, and a different definition under the target's name.
    const lone = defineAgent({ name: "lone", instructions: "", model: t.triageModel, tools: [handoff("nobody")] });
    expect(() => createGatehouse({ agents: [lone] })).toThrow(/"nobody", which is not registered/);
    const other = defineAgent({ ...t.billing, instructions: "another billing" });
    expect(() => createGatehouse({ agents: [t.triage, other] })).toThrow(/not the one registered/);
  });

  it("a handoff to the agent itself is refused by defineAgent", () => {
    const model = recordingModel(() => ({ text: "x" }));
    expect(() => defineAgent({ name: "solo", instructions: "", model, tools: [handoff("solo")] })).toThrow(DefinitionError);
    expect(() => defineAgent({ name: "solo", instructions: "", model, tools: [handoff("solo")] })).toThrow(/hands off to the agent itself/);
  });

  it("handoff() names its tool transfer_to_<target> and mentions the target, unless told otherwise", () => {
    const model = recordingModel(() => ({ text: "x" }));
    const target = defineAgent({ name: "help.desk", instructions: "", model });
    const h = handoff(target);
    expect([h.name, h.description.includes('"help.desk"'), h.external, h.handoffTo]).toEqual(["transfer_to_help_desk", true, false, "help.desk"]);
    expect(handoff(target, { name: "escalate", description: "Escalate" })).toMatchObject({ name: "escalate", description: "Escalate" });
    expect(() => handoff(target, { nme: "x" } as never)).toThrow(DefinitionError);
  });
});
