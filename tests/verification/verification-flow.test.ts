/**
 * The verifier gate end to end: scripted models, createGatehouse, HTTP
 * enqueue, `drain()`. Pass, revision loops, budgets, final rejections,
 * verifier system errors with backoff in the store, a worker that dies
 * between the verifier and the commit, and the order of the events.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, memoryStore, scriptedModel, VerificationRejected } from "../../mod.ts";
import type { AgentConfig, Message, ModelResponse, Store, VerifyContext } from "../../mod.ts";
import { allEvents, contextOf, enqueue, gateTrail, manualClock, seqIds } from "../fixtures/gate-kit.ts";

const Summary = z.object({ summary: z.string() });
const propose = (summary: unknown): ModelResponse => ({ toolCalls: [{ name: "agent_output", args: { summary } }] });

/** A model that proposes `summaries[k]` at step k+1 (the last one repeats) and records what it saw. */
function proposer(summaries: unknown[], seen: Message[][] = []) {
  return scriptedModel(({ step, messages }) => {
    seen.push(messages);
    return propose(summaries[Math.min(step - 1, summaries.length - 1)]);
  });
}

function fixer(over: Partial<AgentConfig<typeof Summary>> & { verify?: (c: { summary: string }, ctx: VerifyContext) => unknown }) {
  const { verify, ...rest } = over;
  return defineAgent({
    name: "fixer",
    instructions: "fix",
    model: proposer(["v1", "v2", "v3", "v4", "v5", "v6"]),
    output: { schema: Summary, ...(verify ? { verify } : {}) },
    ...rest,
  });
}

const rejectUnless = (ok: (s: string) => boolean, code = "too_vague", retryable = true) => (c: { summary: string }) => {
  if (!ok(c.summary)) throw new VerificationRejected({ message: `"${c.summary}" is not it`, code, retryable });
  return { accepted: c.summary };
};

async function run(agent: ReturnType<typeof fixer>, opts: { body?: Record<string, unknown> } = {}) {
  const gh = createGatehouse({ agents: [agent], ids: seqIds(), clock: manualClock() });
  const r = await enqueue(gh, "a1", { agent: agent.name, input: "fix the parser", ...opts.body });
  expect(r.status).toBe(202);
  await gh.drain();
  return gh;
}

describe("completion through the gate", () => {
  it("completes on pass with the verifier's value as the output", async () => {
    const gh = await run(fixer({ verify: rejectUnless(() => true) }));
    const { state, context } = await contextOf(gh, "a1");
    expect(state).toBe("done");
    expect(context.output).toEqual({ accepted: "v1" });
    expect(context.verification).toMatchObject({ attemptsUsed: 1, lastOutcome: "passed" });
    const task = (await allEvents(gh, "a1")).find((e) => e.type === "task");
    expect(task?.data).toMatchObject({ status: "done", deliverable: { accepted: "v1" } });
  });

  it("rejects and continues until pass: each rejection is one feedback message the model sees", async () => {
    const seen: Message[][] = [];
    const agent = fixer({ verify: rejectUnless((s) => s === "v3"), model: proposer(["v1", "v2", "v3"], seen) });
    const gh = await run(agent);
    const { state, context } = await contextOf(gh, "a1");
    expect(state).toBe("done");
    expect(context.output).toEqual({ accepted: "v3" });
    expect(context.verification.attemptsUsed).toBe(3);
    const feedback = (await gh.store.readMessages("a1")).filter((m) => m.content.startsWith("<verification_rejected"));
    expect(feedback.map((m) => m.content)).toEqual([
      '<verification_rejected code="too_vague" retryable="true">\n"v1" is not it\n</verification_rejected>',
      '<verification_rejected code="too_vague" retryable="true">\n"v2" is not it\n</verification_rejected>',
    ]);
    // The model's second step saw the first rejection as the answer to its agent_output call.
    const last = seen[1][seen[1].length - 1];
    expect(last).toMatchObject({ role: "tool", content: feedback[0].content });
  });

  it("fails with verification_exhausted after verifyAttempts rejections", async () => {
    let calls = 0;
    const gh = await run(fixer({ verifyAttempts: 3, verify: (c) => (++calls, rejectUnless(() => false)(c)) }));
    const { state, context } = await contextOf(gh, "a1");
    expect(state).toBe("failed");
    expect(context.error?.reason).toBe("verification_exhausted");
    expect(context.verification.attemptsUsed).toBe(3);
    expect(calls).toBe(3);
    expect((await allEvents(gh, "a1")).filter((e) => e.type === "verification_exhausted")).toHaveLength(1);
  });

  it("a task's verifyAttempts overrides the agent's budget for that turn", async () => {
    const gh = await run(fixer({ verifyAttempts: 5, verify: rejectUnless(() => false) }), { body: { verifyAttempts: 1 } });
    const { context } = await contextOf(gh, "a1");
    expect(context.error?.reason).toBe("verification_exhausted");
    expect(context.verification).toMatchObject({ attemptsUsed: 1, maxAttempts: 1 });
  });

  it("retryable: false fails at once, with attempts left", async () => {
    const gh = await run(fixer({ verify: rejectUnless(() => false, "unsafe", false) }));
    const { state, context } = await contextOf(gh, "a1");
    expect(state).toBe("failed");
    expect(context.error).toEqual({ reason: "verification_rejected", message: 'unsafe: "v1" is not it' });
    expect(context.verification.attemptsUsed).toBe(1);
    const closing = (await gh.store.readMessages("a1")).at(-1);
    expect(closing?.content).toMatch(/^<verification_rejected code="unsafe" retryable="false">/);
  });

  it("a candidate failing the schema is rejected with the zod issues as feedback and counted", async () => {
    const agent = fixer({ verify: rejectUnless(() => true), model: proposer([42, "fine"]) });
    const gh = await run(agent);
    const { state, context } = await contextOf(gh, "a1");
    expect(state).toBe("done");
    expect(context.verification.attemptsUsed).toBe(2);
    const feedback = (await gh.store.readMessages("a1")).find((m) => m.content.startsWith("<verification_rejected"));
    expect(feedback?.content).toMatch(/^<verification_rejected code="schema_invalid" retryable="true">\nThe output does not match the schema:/);
    expect(feedback?.content).toMatch(/"path":\["summary"\]/);
  });

  it("the same candidate proposed in a later step counts as a new attempt", async () => {
    const agent = fixer({
      model: proposer(["same"]),
      verify: (c, { attempt }) => {
        if (attempt < 3) throw new VerificationRejected({ message: "not yet" });
        return c.summary;
      },
    });
    const gh = await run(agent);
    const { context } = await contextOf(gh, "a1");
    expect(context.output).toBe("same");
    expect(context.verification.attemptsUsed).toBe(3);
    const counted = (await allEvents(gh, "a1")).filter((e) => e.type === "verification_attempt_counted");
    expect(counted.map((e) => e.data.attempt)).toEqual([1, 2, 3]);
    expect(new Set(counted.map((e) => e.data.candidateHash)).size).toBe(1);
    expect(new Set(counted.map((e) => e.data.toolCallId)).size).toBe(3);
  });
});

describe("the agent_output tool", () => {
  it("is the completion tool the model is offered, with the output schema as its parameters", async () => {
    const offered: string[][] = [];
    let parameters: unknown = null;
    const agent = defineAgent({
      name: "fixer",
      instructions: "",
      model: {
        name: "spy",
        async generate(req) {
          offered.push(req.tools.map((t) => t.function.name));
          parameters = req.tools.find((t) => t.function.name === "agent_output")?.function.parameters;
          return propose("done");
        },
      },
      output: { schema: z.object({ summary: z.string(), profile: z.string().default("fast") }), verify: () => "ok" },
    });
    const gh = createGatehouse({ agents: [agent], ids: seqIds() });
    await enqueue(gh, "a1", { agent: "fixer", input: "go" });
    await gh.drain();
    expect(offered).toEqual([["agent_output"]]);
    expect(parameters).toMatchObject({
      type: "object",
      properties: { summary: { type: "string" }, profile: { type: "string", default: "fast" } },
      required: ["summary"],
    });
  });
});

describe("events", () => {
  it("a rejection then a pass emit the gate events in order, with attempt numbers and the candidate hash", async () => {
    const gh = await run(fixer({ verify: rejectUnless((s) => s === "v2") }));
    expect(await gateTrail(gh, "a1")).toEqual([
      "transition:idle->running",
      "transition:running->verifying",
      "verification_started",
      "verdict_recorded:NEEDS_CHANGES",
      "verification_rejected",
      "verification_attempt_counted",
      "transition:verifying->revising",
      "transition:revising->running",
      "transition:running->verifying",
      "verification_started",
      "verdict_recorded:PASS",
      "verification_passed",
      "verification_attempt_counted",
      "transition:verifying->done",
    ]);
    const gate = (await allEvents(gh, "a1")).filter((e) => e.type.startsWith("verification_"));
    for (const e of gate) expect(e.data.candidateHash).toMatch(/^[0-9a-f]{64}$/);
    expect(gate.map((e) => e.data.attempt)).toEqual([1, 1, 1, 2, 2, 2]);
    expect(gate[1].data).toMatchObject({ code: "too_vague", retryable: true, replayed: false });
  });

  it("an exhausting rejection adds verification_exhausted before the transition to failed", async () => {
    const gh = await run(fixer({ verifyAttempts: 2, verify: rejectUnless(() => false) }));
    expect((await gateTrail(gh, "a1")).slice(-6)).toEqual([
      "verification_started",
      "verdict_recorded:FAIL",
      "verification_rejected",
      "verification_attempt_counted",
      "verification_exhausted",
      "transition:verifying->failed",
    ]);
  });
});

describe("verifier system errors", () => {
  it("are retried with backoff kept in the store, not counted, and fail the turn with verifier_error at the bound", async () => {
    const clock = manualClock();
    let calls = 0;
    const agent = fixer({
      verify: () => {
        calls++;
        throw new Error("test runner unreachable");
      },
    });
    const gh = createGatehouse({ agents: [agent], ids: seqIds(), clock, verifierBackoffMs: 1_000 });
    await enqueue(gh, "a1", { agent: "fixer", input: "go" });
    await gh.drain();
    let head = (await gh.store.getAgent("a1"))!;
    expect([head.state, calls, head.leaseOwner]).toEqual(["verifying", 1, null]);
    const t1 = clock.now() + 1_000;
    expect(head.runnableAt).toBe(t1);
    expect((await contextOf(gh, "a1")).context.verification).toMatchObject({ retryAt: t1, systemErrors: 1, attemptsUsed: 0 });

    expect(await gh.drain()).toBe(0); // not due yet: nothing runs
    expect(calls).toBe(1);
    clock.advance(1_000);
    await gh.drain();
    head = (await gh.store.getAgent("a1"))!;
    expect([head.state, calls, head.runnableAt]).toEqual(["verifying", 2, clock.now() + 2_000]);
    clock.advance(1_999);
    expect(await gh.drain()).toBe(0);
    clock.advance(1);
    await gh.drain();
    const { state, context } = await contextOf(gh, "a1");
    expect(state).toBe("failed");
    expect(calls).toBe(3);
    expect(context.error).toEqual({ reason: "verifier_error", message: "output.verify threw: test runner unreachable" });
    expect(context.verification.attemptsUsed).toBe(0);
    const errors = (await allEvents(gh, "a1")).filter((e) => e.type === "verification_error");
    expect(errors.map((e) => [e.data.systemErrors, e.data.final])).toEqual([[1, false], [2, false], [3, true]]);
    const verdicts = await gh.verdicts.list("a1");
    expect(verdicts.map((v) => [v.status, v.flags[0].code])).toEqual([["FAIL", "verifier_error"]]);
  });

  it("a cancel while the verifier waits for its retry fails the turn without calling the verifier again", async () => {
    const clock = manualClock();
    let calls = 0;
    const agent = fixer({
      verify: () => {
        calls++;
        throw new Error("runner down");
      },
    });
    const gh = createGatehouse({ agents: [agent], ids: seqIds(), clock, verifierBackoffMs: 60_000 });
    await enqueue(gh, "a1", { agent: "fixer", input: "go" });
    await gh.drain();
    const res = await gh.fetch(new Request("http://gatehouse/v1/agents/a1/cancel", { method: "POST" }));
    expect(res.status).toBe(202);
    await gh.drain();
    const { state, context } = await contextOf(gh, "a1");
    expect([state, context.error?.reason, calls]).toEqual(["failed", "cancelled", 1]);
    expect((await gh.store.getAgent("a1"))?.runnableAt).toBeNull();
  });

  it("a system error followed by a pass completes, counting only the pass", async () => {
    const clock = manualClock();
    let calls = 0;
    const agent = fixer({
      verify: (c) => {
        if (++calls === 1) throw new Error("flaky runner");
        return c.summary;
      },
    });
    const gh = createGatehouse({ agents: [agent], ids: seqIds(), clock, verifierBackoffMs: 50 });
    await enqueue(gh, "a1", { agent: "fixer", input: "go" });
    await gh.drain();
    clock.advance(50);
    await gh.drain();
    const { state, context } = await contextOf(gh, "a1");
    expect([state, context.output, context.verification.attemptsUsed]).toEqual(["done", "v1", 1]);
    expect((await gh.verdicts.list("a1")).map((v) => v.status)).toEqual(["PASS"]);
  });
});

describe("a worker that dies between the verifier and the commit", () => {
  /** A store whose commit carrying VERIFY_REJECTED throws once, as if the worker died right there. */
  function dyingOnRejection(base: Store): { store: Store; crashes: () => number } {
    let crashes = 0;
    const store: Store = {
      ...base,
      async commit(req) {
        const rejects = req.events.some((e) => e.type === "transition" && (e.data.event as { type: string }).type === "VERIFY_REJECTED");
        if (rejects && crashes === 0) {
          crashes++;
          throw new Error("worker died before its commit");
        }
        return base.commit(req);
      },
    };
    return { store, crashes: () => crashes };
  }

  it("the replay after the lease expires adopts the recorded verdict: counted once, one verdict", async () => {
    const clock = manualClock();
    const { store, crashes } = dyingOnRejection(memoryStore());
    const calls: string[] = [];
    const agent = fixer({
      verify: (c, { execution }) => {
        calls.push(execution.toolCallId);
        return rejectUnless((s) => s === "v2")(c);
      },
    });
    const first = createGatehouse({ agents: [agent], store, clock, ids: seqIds(), leaseMs: 5_000 });
    await enqueue(first, "a1", { agent: "fixer", input: "go" });
    await first.drain();
    expect(crashes()).toBe(1);
    let head = (await store.getAgent("a1"))!;
    expect(head.state).toBe("verifying"); // the rejection was never committed
    expect((await first.verdicts.list("a1")).map((v) => v.status)).toEqual(["NEEDS_CHANGES"]);
    expect(await first.drain()).toBe(0); // the dead worker's lease still holds the agent

    clock.advance(5_001);
    const second = createGatehouse({ agents: [agent], store, clock, ids: seqIds(), leaseMs: 5_000 });
    await second.drain();
    head = (await store.getAgent("a1"))!;
    const { context } = await contextOf(second, "a1");
    expect(head.state).toBe("done");
    expect(head.epoch).toBe(2);
    expect(context.verification.attemptsUsed).toBe(2); // 1 rejection + 1 pass, the replay not counted
    expect(calls).toHaveLength(2); // the replay adopted the verdict instead of judging again
    const verdicts = await second.verdicts.list("a1");
    expect(verdicts.map((v) => v.status)).toEqual(["NEEDS_CHANGES", "PASS"]);
    const events = await allEvents(second, "a1");
    expect(events.filter((e) => e.type === "verification_attempt_counted")).toHaveLength(2);
    expect(events.find((e) => e.type === "verdict_recorded" && e.data.how === "recalled")?.data.verdictId).toBe(verdicts[0].verdictId);
    const feedback = (await store.readMessages("a1")).filter((m) => m.content.startsWith("<verification_rejected"));
    expect(feedback).toHaveLength(1);
  });

  it("without a verdict store the verifier runs again on replay, and the attempt is still counted once", async () => {
    const clock = manualClock();
    const { store } = dyingOnRejection(memoryStore());
    const calls: string[] = [];
    const agent = fixer({
      verify: (c, { execution }) => {
        calls.push(execution.toolCallId);
        return rejectUnless((s) => s === "v2")(c);
      },
    });
    const opts = { agents: [agent], store, clock, leaseMs: 5_000, verification: { verdicts: null } };
    const first = createGatehouse({ ...opts, ids: seqIds() });
    await enqueue(first, "a1", { agent: "fixer", input: "go" });
    await first.drain();
    clock.advance(5_001);
    const second = createGatehouse({ ...opts, ids: seqIds() });
    await second.drain();
    const { state, context } = await contextOf(second, "a1");
    expect(state).toBe("done");
    expect(calls).toHaveLength(3);
    expect(calls[0]).toBe(calls[1]); // the same agent_output call, judged twice
    expect(context.verification.attemptsUsed).toBe(2);
    expect(await second.verdicts.list("a1")).toEqual([]);
  });

  it("a verdict write that fails is a system error: retried later, judged again, counted once", async () => {
    const clock = manualClock();
    const base = memoryStore();
    let failures = 0;
    const store: Store = {
      ...base,
      async putVerdict(req) {
        if (failures++ === 0) throw new Error("store unreachable");
        return base.putVerdict(req);
      },
    };
    let calls = 0;
    const agent = fixer({ verify: (c) => (++calls, rejectUnless((s) => s === "v2")(c)) });
    const gh = createGatehouse({ agents: [agent], store, clock, ids: seqIds(), verifierBackoffMs: 10 });
    await enqueue(gh, "a1", { agent: "fixer", input: "go" });
    await gh.drain();
    expect((await contextOf(gh, "a1")).context.verification).toMatchObject({ systemErrors: 1, attemptsUsed: 0 });
    clock.advance(10);
    await gh.drain();
    const { state, context } = await contextOf(gh, "a1");
    expect([state, calls, context.verification.attemptsUsed]).toEqual(["done", 3, 2]);
    expect((await gh.verdicts.list("a1")).map((v) => v.status)).toEqual(["NEEDS_CHANGES", "PASS"]);
  });
});
