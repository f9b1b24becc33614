/**
 * The ways around the gate that once existed, each shut (docs/verification.md,
 * "The only ways a turn ends done"):
 *
 * 1. `submit_result` on an agent that declares `output` (scripted and through
 *    `openaiCompatible` against a server in the documented format);
 * 2. `agent_output` on an agent without `output`, once recorded as passed;
 * 3. a tool result with `afterExecution: "terminate"` on a gated agent, from
 *    an in-process tool and from an external one over HTTP: its value is now
 *    the candidate the gate judges.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, openaiCompatible, scriptedModel, terminate, VerificationRejected } from "../../mod.ts";
import type { Gatehouse, Message, ModelResponse } from "../../mod.ts";
import { allEvents, contextOf, enqueue, gateTrail, get, seqIds } from "../fixtures/gate-kit.ts";
import { completion, type FakeOpenAI, startFakeOpenAI } from "../helpers/fake-openai.ts";
import { recordingModel } from "../helpers/host.ts";

const Payout = z.object({ amount: z.number().max(100) });
const alwaysRejects = () => {
  throw new VerificationRejected({ message: "payouts need a human", code: "needs_human" });
};
const capAt50 = (c: { amount: number }) => {
  if (c.amount > 50) throw new VerificationRejected({ message: "above 50", code: "too_much" });
};

const toolMessages = (msgs: Message[], id: string) => msgs.filter((m) => m.role === "tool" && m.toolCallId === id);
const errorType = (m: Message | undefined) => (m ? JSON.parse(m.content).error?.type : undefined);
const gateEvents = async (gh: Gatehouse, id = "a1") =>
  (await allEvents(gh, id)).filter((e) => e.type.startsWith("verification_") || e.type === "verdict_recorded");

async function deliver(gh: Gatehouse, body: Record<string, unknown>) {
  return gh.fetch(new Request("http://gatehouse/v1/agents/a1/tool-results", {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
  }));
}

describe("bypass 1: submit_result on an agent that declares output", () => {
  it("is answered tool_not_offered, counts as a step, and the turn never ends done without a PASS", async () => {
    const model = recordingModel(() => ({ toolCalls: [{ name: "submit_result", args: { result: { amount: 1_000_000 } } }] }));
    const agent = defineAgent({
      name: "payout", instructions: "", model, stepLimit: 3,
      output: { schema: Payout, verify: alwaysRejects },
    });
    const gh = createGatehouse({ agents: [agent], ids: seqIds() });
    await enqueue(gh, "a1", { agent: "payout", input: "pay" });
    await gh.drain();

    const { state, context } = await contextOf(gh, "a1");
    expect(state).toBe("failed");
    expect(context.error?.reason).toBe("step_budget_exhausted");
    expect(context.output).toBeNull();
    expect(context.turnUsage.steps).toBe(3);
    expect(model.requests[0].tools.map((t) => t.function.name)).toEqual(["agent_output"]);
    // Each refused call got its answer before the next step.
    for (let i = 1; i < model.requests.length; i++) {
      const calls = model.requests[i].messages.flatMap((m) => m.toolCalls ?? []);
      const last = calls[calls.length - 1];
      expect(errorType(toolMessages(model.requests[i].messages, last.id)[0])).toBe("tool_not_offered");
    }
    expect(await gateEvents(gh)).toEqual([]);
    expect(await gh.verdicts.list("a1")).toEqual([]);
    const records = await gh.store.getToolCalls("a1", context.turnId!);
    expect(records.every((r) => r.name === "submit_result" && r.outcome?.ok === false && r.source === "inline")).toBe(true);
  });

  it("the model can still finish through agent_output and the gate after the refusal", async () => {
    const agent = defineAgent({
      name: "payout", instructions: "",
      model: scriptedModel([
        { toolCalls: [{ name: "submit_result", args: { result: { amount: 1_000_000 } } }] },
        { toolCalls: [{ name: "agent_output", args: { amount: 20 } }] },
      ]),
      output: { schema: Payout, verify: capAt50 },
    });
    const gh = createGatehouse({ agents: [agent], ids: seqIds() });
    await enqueue(gh, "a1", { agent: "payout", input: "pay" });
    await gh.drain();
    const { state, context } = await contextOf(gh, "a1");
    expect([state, context.output]).toEqual(["done", { amount: 20 }]);
    expect((await gh.verdicts.list("a1")).map((v) => v.status)).toEqual(["PASS"]);
  });

  describe("through openaiCompatible against a server in the documented format", () => {
    let fake: FakeOpenAI;
    beforeEach(async () => {
      fake = await startFakeOpenAI();
    });
    afterEach(async () => {
      await fake.close();
    });

    it("submit_result is refused, a schema-breaking agent_output is rejected, only a verified candidate completes", async () => {
      fake.enqueue(
        { kind: "json", body: completion({ toolCalls: [{ id: "call_sr", name: "submit_result", arguments: '{"result":{"amount":1000000}}' }] }) },
        { kind: "json", body: completion({ toolCalls: [{ id: "call_big", name: "agent_output", arguments: '{"amount":1000000}' }] }) },
        { kind: "json", body: completion({ toolCalls: [{ id: "call_ok", name: "agent_output", arguments: '{"amount":30}' }] }) },
      );
      const agent = defineAgent({
        name: "payout", instructions: "Pay out.",
        model: openaiCompatible({ baseURL: fake.baseURL, apiKey: "sk-test", model: "test-model" }),
        output: { schema: Payout, verify: capAt50 },
      });
      const gh = createGatehouse({ agents: [agent], ids: seqIds() });
      await enqueue(gh, "a1", { agent: "payout", input: "pay" });
      await gh.drain();

      const { state, context } = await contextOf(gh, "a1");
      expect([state, context.output]).toEqual(["done", { amount: 30 }]);
      expect(fake.requests).toHaveLength(3);
      expect(fake.requests[0].body.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(["agent_output"]);
      const answer = fake.requests[1].body.messages.find((m: { role: string; tool_call_id?: string }) => m.role === "tool" && m.tool_call_id === "call_sr");
      expect(JSON.parse(answer.content).error.type).toBe("tool_not_offered");
      const feedback = fake.requests[2].body.messages.find((m: { role: string; tool_call_id?: string }) => m.role === "tool" && m.tool_call_id === "call_big");
      expect(feedback.content).toContain('code="schema_invalid"');
      expect((await gh.verdicts.list("a1")).map((v) => v.status)).toEqual(["NEEDS_CHANGES", "PASS"]);
    });
  });
});

describe("bypass 2: agent_output on an agent without output", () => {
  it("is answered tool_not_offered: no verifying, nothing recorded as passed; the turn ends as the agent's own rules say", async () => {
    const model = recordingModel((_r, i): ModelResponse =>
      i === 0 ? { toolCalls: [{ id: "o1", name: "agent_output", args: { amount: 1_000_000 } }] } : { text: "no payout" }
    );
    const agent = defineAgent({ name: "plain", instructions: "", model });
    const gh = createGatehouse({ agents: [agent], ids: seqIds() });
    await enqueue(gh, "a1", { agent: "plain", input: "go" });
    await gh.drain();

    const { state, context } = await contextOf(gh, "a1");
    expect([state, context.output]).toEqual(["done", "no payout"]);
    expect(context.verification).toMatchObject({ attemptsUsed: 0, lastOutcome: null, lastCandidateHash: null, candidate: null });
    expect(model.requests[0].tools.map((t) => t.function.name)).toEqual(["submit_result"]);
    expect(errorType(toolMessages(model.requests[1].messages, "o1")[0])).toBe("tool_not_offered");
    expect(await gateEvents(gh)).toEqual([]);
    expect((await allEvents(gh, "a1")).filter((e) => e.type === "transition").map((e) => e.data.to)).toEqual([
      "running", "waiting-tools", "running", "done",
    ]);
    expect((await get(gh, "/v1/agents/a1")).json.verification).toBeUndefined();
  });
});

describe("bypass 3: afterExecution terminate on a gated agent goes through the gate", () => {
  const settle = (value: unknown) =>
    defineTool({ name: "settle", description: "settles", parameters: z.object({}), execute: () => terminate(value) });

  it("in-process: a value the schema refuses is rejected as schema_invalid; the turn ends only with a verified candidate", async () => {
    const model = recordingModel((_r, i): ModelResponse =>
      i === 0 ? { toolCalls: [{ id: "s1", name: "settle", args: {} }] } : { toolCalls: [{ id: "o2", name: "agent_output", args: { amount: 20 } }] }
    );
    const agent = defineAgent({ name: "payout", instructions: "", model, tools: [settle({ amount: 1_000_000 })], output: { schema: Payout, verify: capAt50 } });
    const gh = createGatehouse({ agents: [agent], ids: seqIds() });
    await enqueue(gh, "a1", { agent: "payout", input: "pay" });
    await gh.drain();

    const { state, context } = await contextOf(gh, "a1");
    expect([state, context.output]).toEqual(["done", { amount: 20 }]);
    expect(await gateTrail(gh, "a1")).toEqual([
      "transition:idle->running", "transition:running->waiting-tools", "transition:waiting-tools->verifying",
      "verification_started", "verdict_recorded:NEEDS_CHANGES", "verification_rejected", "verification_attempt_counted",
      "transition:verifying->revising", "transition:revising->running", "transition:running->verifying",
      "verification_started", "verdict_recorded:PASS", "verification_passed", "verification_attempt_counted",
      "transition:verifying->done",
    ]);
    // The tool's own result answered its call once; the feedback came as a system message naming it.
    const seen = model.requests[1].messages;
    expect(toolMessages(seen, "s1").map((m) => m.content)).toEqual(['{"amount":1000000}']);
    const feedback = seen.filter((m) => m.role === "system" && m.content.includes("s1"));
    expect(feedback).toHaveLength(1);
    expect(feedback[0].content).toContain('code="schema_invalid"');
  });

  it("in-process: a valid value is verified and becomes the output with a PASS verdict; a rejected one never does", async () => {
    const passing = defineAgent({
      name: "payout", instructions: "", tools: [settle({ amount: 30 })], output: { schema: Payout, verify: capAt50 },
      model: scriptedModel([{ toolCalls: [{ name: "settle", args: {} }] }]),
    });
    const gh = createGatehouse({ agents: [passing], ids: seqIds() });
    await enqueue(gh, "a1", { agent: "payout", input: "pay" });
    await gh.drain();
    const ok = await contextOf(gh, "a1");
    expect([ok.state, ok.context.output]).toEqual(["done", { amount: 30 }]);
    const [verdict] = await gh.verdicts.list("a1");
    expect(verdict.status).toBe("PASS");
    expect(verdict.evidence.result).toEqual({ amount: 30 });

    const refusing = defineAgent({
      name: "payout", instructions: "", tools: [settle({ amount: 30 })],
      output: { schema: Payout, verify: () => { throw new VerificationRejected({ message: "no", code: "no", retryable: false }); } },
      model: scriptedModel([{ toolCalls: [{ name: "settle", args: {} }] }]),
    });
    const gh2 = createGatehouse({ agents: [refusing], ids: seqIds() });
    await enqueue(gh2, "a1", { agent: "payout", input: "pay" });
    await gh2.drain();
    const bad = await contextOf(gh2, "a1");
    expect([bad.state, bad.context.output, bad.context.error?.reason]).toEqual(["failed", null, "verification_rejected"]);
    expect((await gh2.verdicts.list("a1")).map((v) => v.status)).toEqual(["FAIL"]);
  });

  it("external over HTTP: the delivered value is judged like any candidate (refused, then verified)", async () => {
    const approve = defineTool({ name: "approve", description: "a human approves", parameters: z.object({}) });
    const model = recordingModel((): ModelResponse => ({ toolCalls: [{ name: "approve", args: {} }] }));
    const agent = defineAgent({ name: "payout", instructions: "", model, tools: [approve], output: { schema: Payout, verify: capAt50 } });
    const gh = createGatehouse({ agents: [agent], ids: seqIds() });
    const { json } = await enqueue(gh, "a1", { agent: "payout", input: "pay" });
    await gh.drain();

    const pendingCall = async () => (await gh.store.getToolCalls("a1", json.turnId)).filter((c) => c.status === "pending").at(-1)!;
    // Within the schema, above what the verifier allows: rejected, the model is asked again.
    let call = await pendingCall();
    let res = await deliver(gh, { turnId: json.turnId, toolCallId: call.toolCallId, outcome: { ok: true, value: { amount: 90 } }, afterExecution: "terminate" });
    expect(res.status).toBe(200);
    await gh.drain();
    let view = await contextOf(gh, "a1");
    expect(view.state).toBe("waiting-tools");
    expect(view.context.output).toBeNull();
    expect(view.context.verification).toMatchObject({ attemptsUsed: 1, lastOutcome: "rejected", lastRejection: { code: "too_much" } });

    call = await pendingCall();
    res = await deliver(gh, { turnId: json.turnId, toolCallId: call.toolCallId, outcome: { ok: true, value: { amount: 40 } }, afterExecution: "terminate" });
    expect(res.status).toBe(200);
    await gh.drain();
    view = await contextOf(gh, "a1");
    expect([view.state, view.context.output]).toEqual(["done", { amount: 40 }]);
    expect((await gh.verdicts.list("a1")).map((v) => v.status)).toEqual(["NEEDS_CHANGES", "PASS"]);
    const transitions = (await allEvents(gh, "a1")).filter((e) => e.type === "transition").map((e) => `${e.data.from}->${e.data.to}`);
    expect(transitions.filter((t) => t.endsWith("->done"))).toEqual(["verifying->done"]);
  });

  it("an agent without output still ends the turn with the terminating value, as before", async () => {
    const agent = defineAgent({
      name: "plain", instructions: "", tools: [settle({ stopped: true })],
      model: scriptedModel([{ toolCalls: [{ name: "settle", args: {} }] }]),
    });
    const gh = createGatehouse({ agents: [agent], ids: seqIds() });
    await enqueue(gh, "a1", { agent: "plain", input: "go" });
    await gh.drain();
    const { state, context } = await contextOf(gh, "a1");
    expect([state, context.output]).toEqual(["done", { stopped: true }]);
    expect(await gateEvents(gh)).toEqual([]);
  });
});

describe("a turn in flight under snapshot version 1", () => {
  /** Rewrites the agent's stored snapshot into the version 1 shape (no completion tool, no candidate source). */
  async function rewriteAsV1(gh: Gatehouse, agentId: string) {
    const now = Date.now();
    const c = await gh.store.claim({ agentId, workerId: "rewriter", leaseMs: 5_000, now });
    if (c.status !== "claimed") throw new Error(`expected a claim, got ${c.status}`);
    const snap = structuredClone(c.head.snapshot) as { context: Record<string, any> };
    snap.context.schemaVersion = 1;
    delete snap.context.config.completion;
    if (snap.context.verification.candidate) delete snap.context.verification.candidate.from;
    const r = await gh.store.commit({
      agentId, workerId: "rewriter", epoch: c.epoch, expectedVersion: c.head.version, turnId: c.head.activeTurnId,
      snapshot: snap, state: c.head.state, activeTurnId: c.head.activeTurnId, events: [], messages: [],
      recordToolCalls: [], resolveToolCalls: [], ackMailThrough: 0, release: { runnableAt: now }, leaseMs: 5_000, now,
    });
    expect(r.status).toBe("applied");
  }

  const approve = defineTool({ name: "approve", description: "a human approves", parameters: z.object({}) });
  const script = (): ModelResponse[] => [
    { toolCalls: [{ name: "approve", args: {} }] },
    { toolCalls: [{ id: "sr", name: "submit_result", args: { result: { amount: 1_000_000 } } }] },
    { toolCalls: [{ name: "agent_output", args: { amount: 20 } }] },
  ];

  async function resumeFromV1(gh: Gatehouse) {
    const { json } = await enqueue(gh, "a1", { agent: gh.agents.keys().next().value, input: "pay" });
    await gh.drain();
    const [call] = await gh.store.getToolCalls("a1", json.turnId);
    expect((await deliver(gh, { turnId: json.turnId, toolCallId: call.toolCallId, outcome: { ok: true, value: "approved" } })).status).toBe(200);
    await rewriteAsV1(gh, "a1");
    await gh.drain();
    return contextOf(gh, "a1");
  }

  it("of a gated agent is upgraded to finish through the gate only: submit_result stays refused", async () => {
    const model = recordingModel((_r, i) => script()[Math.min(i, 2)]);
    const agent = defineAgent({
      name: "payout", instructions: "", model, tools: [approve], mustEndWith: ["approve"], output: { schema: Payout, verify: capAt50 },
    });
    const gh = createGatehouse({ agents: [agent], ids: seqIds() });
    const { state, context } = await resumeFromV1(gh);
    expect([state, context.output, context.config.completion, context.schemaVersion]).toEqual(["done", { amount: 20 }, "agent_output", 2]);
    expect(errorType(toolMessages(model.requests[2].messages, "sr")[0])).toBe("tool_not_offered");
    expect((await gh.verdicts.list("a1")).map((v) => v.status)).toEqual(["PASS"]);
  });

  it("of an agent without output keeps finishing with submit_result", async () => {
    const agent = defineAgent({ name: "plain", instructions: "", tools: [approve], model: scriptedModel(script()) });
    const gh = createGatehouse({ agents: [agent], ids: seqIds() });
    const { state, context } = await resumeFromV1(gh);
    expect([state, context.output, context.config.completion]).toEqual(["done", { amount: 1_000_000 }, "submit_result"]);
  });
});
