/**
 * The gate as a unit: runVerification on a statechart snapshot in
 * `verifying`, then the machine's transition on the event it returns. Covers
 * the pass / reject / system-error branching, what a verifier is given, and
 * attempt counting (a new hash counts, a replay of the counted candidate does
 * not, the same candidate from a later call does).
 */
import { initialTransition, type SnapshotFrom, transition } from "xstate";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineAgent, scriptedModel, VerificationRejected } from "../../mod.ts";
import type { AnyAgent, VerifyContext } from "../../mod.ts";
import type { AgentEvent } from "../../inspect.ts";
import { agentMachine, DEFAULT_TURN_CONFIG, isReplayedRejection } from "../../machines/agent.ts";
import type { TurnConfig, VerificationState } from "../../machines/types.ts";
import { type GateArgs, runVerification, type VerificationHooks } from "../../verification/gate.ts";
import { candidateHash } from "../../verification/hash.ts";

type Snap = SnapshotFrom<typeof agentMachine>;
const NOW = 10_000;
const model = scriptedModel([{ text: "unused" }]);
const Schema = z.object({ summary: z.string(), profile: z.string().default("fast") });

const taskEv = (over: Partial<TurnConfig> = {}): AgentEvent => ({
  type: "TASK_STARTED", at: 1, turnId: "t1", input: "fix it", config: { ...DEFAULT_TURN_CONFIG, completion: "agent_output", ...over },
});
const outputStep = (id: string, args: unknown): AgentEvent => ({
  type: "MODEL_STEP", at: 2, text: null, cost: 0, usage: { inputTokens: 0, outputTokens: 0 },
  toolCalls: [{ id, name: "agent_output", args, external: false, deadline: 0 }],
});
const drive = (events: AgentEvent[], from?: Snap) =>
  events.reduce((s, e) => transition(agentMachine, s, e)[0], from ?? initialTransition(agentMachine)[0]);
const verifying = (args: unknown = { summary: "done" }, over: Partial<TurnConfig> = {}) => drive([taskEv(over), outputStep("o1", args)]);

const agentOf = (verify: ((c: any, ctx: VerifyContext) => unknown) | undefined, extra: Record<string, unknown> = {}): AnyAgent =>
  defineAgent({ name: "fixer", instructions: "", model, output: { schema: Schema, ...(verify ? { verify } : {}) }, ...extra });

function args(agent: AnyAgent, snap: Snap, hooks?: VerificationHooks): GateArgs {
  return {
    agent, agentId: "a1", turnId: "t1", context: snap.context, input: "fix it", workerId: "w1", epoch: 3,
    now: () => NOW, backoffMs: 100, signal: new AbortController().signal, ...(hooks ? { hooks } : {}),
  };
}
const types = (r: { before: Array<{ type: string }> }) => r.before.map((e) => e.type);

describe("pass / reject / system-error branching", () => {
  it("a returned value passes: VERIFY_PASSED carries it, the turn is done with it as output", async () => {
    const snap = verifying();
    const r = await runVerification(args(agentOf(() => ({ accepted: true, testsRun: 3 })), snap));
    expect(r.event).toMatchObject({ type: "VERIFY_PASSED", result: { accepted: true, testsRun: 3 } });
    expect(types(r)).toEqual(["verification_started", "verification_passed", "verification_attempt_counted"]);
    const after = transition(agentMachine, snap, r.event)[0];
    expect(after.value).toBe("done");
    expect(after.context.output).toEqual({ accepted: true, testsRun: 3 });
    expect(after.context.verification).toMatchObject({ attemptsUsed: 1, lastOutcome: "passed", lastAttemptAt: NOW });
  });

  it("undefined keeps the parsed candidate (schema defaults applied) as the result", async () => {
    const r = await runVerification(args(agentOf(() => undefined), verifying({ summary: "s" })));
    expect(r.event).toMatchObject({ type: "VERIFY_PASSED", result: { summary: "s", profile: "fast" } });
  });

  it("VerificationRejected rejects with its code, message, retryable and metadata; attempts left -> revising", async () => {
    const snap = verifying();
    const verify = () => {
      throw new VerificationRejected({ message: "2 tests failed", code: "tests_failed", metadata: { failed: ["t_a", "t_b"] } });
    };
    const r = await runVerification(args(agentOf(verify), snap));
    expect(r.event).toMatchObject({
      type: "VERIFY_REJECTED", code: "tests_failed", message: "2 tests failed", retryable: true, metadata: { failed: ["t_a", "t_b"] },
    });
    expect(types(r)).toEqual(["verification_started", "verification_rejected", "verification_attempt_counted"]);
    const after = transition(agentMachine, snap, r.event)[0];
    expect(after.value).toBe("revising");
    expect(after.context.verification).toMatchObject({ attemptsUsed: 1, lastOutcome: "rejected" });
  });

  it("a retryable rejection on the last attempt is exhausted -> failed with verification_exhausted", async () => {
    const snap = verifying({ summary: "x" }, { verifyMaxAttempts: 1 });
    const r = await runVerification(args(agentOf(() => {
      throw new VerificationRejected({ message: "no" });
    }), snap));
    expect(types(r)).toEqual(["verification_started", "verification_rejected", "verification_attempt_counted", "verification_exhausted"]);
    const after = transition(agentMachine, snap, r.event)[0];
    expect(after.value).toBe("failed");
    expect(after.context.error?.reason).toBe("verification_exhausted");
  });

  it("retryable: false fails at once, with attempts left, and is not reported as exhausted", async () => {
    const snap = verifying();
    const r = await runVerification(args(agentOf(() => {
      throw new VerificationRejected({ message: "unsafe change", code: "unsafe", retryable: false });
    }), snap));
    expect(types(r)).not.toContain("verification_exhausted");
    const after = transition(agentMachine, snap, r.event)[0];
    expect(after.value).toBe("failed");
    expect(after.context.error).toEqual({ reason: "verification_rejected", message: "unsafe: unsafe change" });
    expect(after.context.verification.attemptsUsed).toBe(1);
  });

  it("any other exception is a system error: stays in verifying, not counted, retry time doubles per error", async () => {
    const agent = agentOf(() => {
      throw new Error("test runner unreachable");
    });
    let snap = verifying();
    const first = await runVerification(args(agent, snap));
    expect(first.event).toEqual({ type: "VERIFY_ERROR", at: NOW, message: "output.verify threw: test runner unreachable", retryAt: NOW + 100 });
    expect(types(first)).toEqual(["verification_started", "verification_error"]);
    snap = transition(agentMachine, snap, first.event)[0];
    expect(snap.value).toBe("verifying");
    expect(snap.context.verification).toMatchObject({ attemptsUsed: 0, systemErrors: 1, retryAt: NOW + 100, lastOutcome: "system_error" });
    const second = await runVerification(args(agent, snap));
    expect(second.event).toMatchObject({ type: "VERIFY_ERROR", retryAt: NOW + 200 });
  });

  it("a candidate that fails the schema is rejected as schema_invalid with the zod issues, without calling verify", async () => {
    let calls = 0;
    const snap = verifying({ summary: 42 });
    const r = await runVerification(args(agentOf(() => ++calls), snap));
    expect(calls).toBe(0);
    expect(r.event).toMatchObject({ type: "VERIFY_REJECTED", code: "schema_invalid", retryable: true });
    const e = r.event as Extract<AgentEvent, { type: "VERIFY_REJECTED" }>;
    expect(e.message).toMatch(/summary/);
    expect(e.metadata).toEqual({ issues: [{ path: ["summary"], code: "invalid_type", message: expect.any(String) }] });
    expect(transition(agentMachine, snap, r.event)[0].context.verification.attemptsUsed).toBe(1);
  });

  it("a result without a JSON form is a system error, not an output", async () => {
    const r = await runVerification(args(agentOf(() => ({ at: 1n })), verifying()));
    expect(r.event.type).toBe("VERIFY_ERROR");
    expect((r.event as { message: string }).message).toMatch(/without a JSON form: result.at is not JSON/);
  });

  it("a VerificationRejected from another copy of the module is still a rejection", async () => {
    const foreign = Object.assign(new Error("nope"), { name: "VerificationRejected", code: "c", retryable: true });
    const r = await runVerification(args(agentOf(() => {
      throw foreign;
    }), verifying()));
    expect(r.event).toMatchObject({ type: "VERIFY_REJECTED", code: "c" });
  });

  it("never throws: a failing verdict store becomes a system error", async () => {
    const hooks: VerificationHooks = {
      verdicts: {
        recall: () => Promise.reject(new Error("store down")),
        record: () => Promise.reject(new Error("store down")),
      },
    };
    const r = await runVerification(args(agentOf(() => "ok"), verifying(), hooks));
    expect(r.event).toMatchObject({ type: "VERIFY_ERROR", message: "Verification could not be recorded: store down" });
  });

  it("afterAttempt sees the outcome and adds events; a throwing hook is logged and changes nothing", async () => {
    const seen: unknown[] = [];
    const ok = await runVerification(args(agentOf(() => "fine"), verifying(), {
      afterAttempt: (info) => {
        seen.push(info.outcome);
        return { events: [{ type: "audit", data: { attempt: info.attempt } }] };
      },
    }));
    expect(seen).toEqual([{ kind: "passed", result: "fine" }]);
    expect(types(ok)).toContain("audit");
    const bad = await runVerification(args(agentOf(() => "fine"), verifying(), {
      afterAttempt: () => {
        throw new Error("hook bug");
      },
    }));
    expect(bad.event.type).toBe("VERIFY_PASSED");
    expect(types(bad)).toContain("verification_hook_failed");
  });

  it("a hook event of a type the runtime writes is refused: none of the hook's events is logged, the failure is", async () => {
    const r = await runVerification(args(agentOf(() => "fine"), verifying(), {
      afterAttempt: () => ({ events: [{ type: "audit", data: {} }, { type: "transition", data: { from: "idle", to: "done" } }] }),
    }));
    expect(r.event.type).toBe("VERIFY_PASSED");
    expect(types(r)).not.toContain("audit");
    expect(types(r).filter((t) => t === "transition")).toEqual([]);
    const failed = r.before.find((e) => e.type === "verification_hook_failed");
    expect(failed?.data.message).toBe('Cannot log hook event "transition": the runtime writes that type');
  });
});

describe("what a verifier is given", () => {
  it("the parsed candidate and { agent, execution, attempt, maxAttempts }, read-only", async () => {
    let got: { candidate: unknown; ctx: VerifyContext } | null = null;
    const snap = verifying({ summary: "s" }, { verifyMaxAttempts: 4 });
    await runVerification(args(agentOf((candidate, ctx) => {
      got = { candidate, ctx };
      return "ok";
    }), snap));
    const { candidate, ctx } = got!;
    expect(candidate).toEqual({ summary: "s", profile: "fast" });
    expect(ctx.attempt).toBe(1);
    expect(ctx.maxAttempts).toBe(4);
    expect(ctx.agent).toMatchObject({ agentId: "a1", name: "fixer", turnId: "t1", input: "fix it", step: 1 });
    expect(ctx.agent.verification).toEqual({ attemptsUsed: 0, lastCandidateHash: null, lastOutcome: null, lastAttemptAt: null });
    expect(ctx.execution).toMatchObject({ workerId: "w1", epoch: 3, toolCallId: "o1" });
    expect(ctx.execution.candidateHash).toBe(await candidateHash({ summary: "s", profile: "fast" }));
    expect(() => {
      (ctx.agent.verification as { attemptsUsed: number }).attemptsUsed = 9;
    }).toThrow(TypeError);
  });
});

describe("attempt counting", () => {
  const reject = () => {
    throw new VerificationRejected({ message: "again", code: "again" });
  };

  it("a rejection of a new candidate counts and records its hash and call", async () => {
    const snap = verifying({ summary: "a" });
    const r = await runVerification(args(agentOf(reject), snap));
    const after = transition(agentMachine, snap, r.event)[0];
    expect(after.context.verification).toMatchObject({
      attemptsUsed: 1,
      lastCandidateHash: await candidateHash({ summary: "a", profile: "fast" }),
      lastCandidateCallId: "o1",
    });
  });

  it("a replayed rejection (same hash, same agent_output call) is not counted again", async () => {
    const cand = { summary: "a" };
    const hash = await candidateHash({ summary: "a", profile: "fast" });
    const base = verifying(cand);
    const counted: VerificationState = {
      ...base.context.verification, attemptsUsed: 1, lastCandidateHash: hash, lastCandidateCallId: "o1", lastOutcome: "rejected",
    };
    const snap = agentMachine.resolveState({ value: "verifying", context: { ...base.context, verification: counted } });
    const r = await runVerification(args(agentOf(reject), snap));
    expect(r.before[0]).toMatchObject({ type: "verification_started", data: { attempt: 1, replayed: true } });
    expect(types(r)).toEqual(["verification_started", "verification_rejected"]);
    const after = transition(agentMachine, snap, r.event)[0];
    expect(after.context.verification.attemptsUsed).toBe(1);
  });

  it("the same candidate submitted again in a later step is a new attempt and counts", async () => {
    const cand = { summary: "same" };
    let snap = verifying(cand);
    const agent = agentOf(reject);
    snap = transition(agentMachine, snap, (await runVerification(args(agent, snap))).event)[0];
    snap = drive([{ type: "FEEDBACK_APPENDED", at: 3 }, outputStep("o2", cand)], snap);
    expect(snap.value).toBe("verifying");
    const r = await runVerification(args(agent, snap));
    expect(r.before[0]).toMatchObject({ data: { attempt: 2, replayed: false } });
    snap = transition(agentMachine, snap, r.event)[0];
    expect(snap.context.verification).toMatchObject({ attemptsUsed: 2, lastCandidateCallId: "o2" });
  });

  it("isReplayedRejection needs the same hash, the same call and a counted rejection", () => {
    const v: VerificationState = {
      maxAttempts: 5, attemptsUsed: 1, lastCandidateHash: "h", lastCandidateCallId: "o1", lastOutcome: "rejected",
      lastAttemptAt: 1, systemErrors: 0, retryAt: null, candidate: { toolCallId: "o1", args: {}, from: "agent_output" }, lastRejection: null,
    };
    expect(isReplayedRejection(v, "h")).toBe(true);
    expect(isReplayedRejection(v, "other")).toBe(false);
    expect(isReplayedRejection({ ...v, candidate: { toolCallId: "o2", args: {}, from: "agent_output" } }, "h")).toBe(false);
    expect(isReplayedRejection({ ...v, lastOutcome: "system_error" }, "h")).toBe(false);
    expect(isReplayedRejection({ ...v, candidate: null }, "h")).toBe(false);
  });
});
