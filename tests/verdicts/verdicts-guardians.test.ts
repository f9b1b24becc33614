/**
 * Guardians assigned to an agent review, in `verifying`, every candidate its
 * output verifier accepted. All must PASS for `done`; NEEDS_CHANGES is fed
 * back like a retryable rejection, FAIL fails the turn, a throw is a system
 * error. Every review is a verdict.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineGuardian, scriptedModel, VerificationRejected } from "../../mod.ts";
import type { AgentConfig, Gatehouse, GuardianReview, GuardianReviewContext } from "../../mod.ts";
import { allEvents, contextOf, enqueue, manualClock, seqIds } from "../fixtures/gate-kit.ts";

const Summary = z.object({ summary: z.string() });
type Cand = { summary: string };

function fixer(over: Partial<AgentConfig<typeof Summary>> = {}) {
  return defineAgent({
    name: "fixer",
    instructions: "",
    model: scriptedModel(({ step }) => ({ toolCalls: [{ name: "agent_output", args: { summary: step === 1 ? "key sk-abcdefgh1234" : `clean ${step}` } }] })),
    output: { schema: Summary, verify: (c: Cand) => ({ summary: c.summary, checked: true }) },
    ...over,
  });
}

const noSecrets = (calls: Array<{ candidate: Cand; ctx: GuardianReviewContext }> = []) =>
  defineGuardian<Cand>({
    code: "no_secrets",
    review: (candidate, ctx): GuardianReview => {
      calls.push({ candidate, ctx });
      return /sk-[a-z0-9]{8,}/i.test(candidate.summary)
        ? {
          status: "NEEDS_CHANGES",
          message: "The summary contains an API key",
          flags: [{ severity: "critical", code: "SECRET", message: "API key in summary" }],
          recommendations: ["Remove the key"],
        }
        : { status: "PASS", evidence: { scanned: 1 } };
    },
  });

async function run(gh: Gatehouse) {
  await enqueue(gh, "a1", { agent: "fixer", input: "go" });
  await gh.drain();
}
const trail = async (gh: Gatehouse) => (await gh.verdicts.list("a1")).map((v) => `${v.guardianCode}:${v.status}`);

describe("guardians in the gate", () => {
  it("NEEDS_CHANGES is fed back to the model; the revised candidate passes every review", async () => {
    const calls: Array<{ candidate: Cand; ctx: GuardianReviewContext }> = [];
    const gh = createGatehouse({ agents: [fixer({ guardians: [noSecrets(calls)] })], ids: seqIds() });
    await run(gh);
    const { state, context } = await contextOf(gh, "a1");
    expect(state).toBe("done");
    expect(context.output).toEqual({ summary: "clean 2", checked: true });
    expect(context.verification.attemptsUsed).toBe(2);
    expect(await trail(gh)).toEqual([
      "output_verifier:fixer:PASS",
      "no_secrets:NEEDS_CHANGES",
      "output_verifier:fixer:PASS",
      "no_secrets:PASS",
    ]);
    expect(calls[0].ctx.result).toEqual({ summary: "key sk-abcdefgh1234", checked: true });
    expect(calls[0].ctx.attempt).toBe(1);
    const feedback = (await gh.store.readMessages("a1")).find((m) => m.content.startsWith("<verification_rejected"));
    expect(feedback?.content).toBe(
      '<verification_rejected code="no_secrets" retryable="true">\n' +
        "no_secrets (NEEDS_CHANGES): The summary contains an API key\n- Remove the key\n" +
        'Details: {"guardians":[{"code":"no_secrets","status":"NEEDS_CHANGES"}]}\n</verification_rejected>',
    );
    const [, objection, , pass] = await gh.verdicts.list("a1");
    expect(objection.flags).toEqual([{ severity: "critical", code: "SECRET", message: "API key in summary" }]);
    expect(objection.recommendations).toEqual(["Remove the key"]);
    expect(objection.assignmentId).toBe("assignment:fixer:no_secrets");
    expect(pass.evidence).toEqual({ scanned: 1 });
  });

  it("FAIL fails the turn at once", async () => {
    const strict = defineGuardian({ code: "license", review: () => ({ status: "FAIL", message: "GPL code copied" }) });
    const gh = createGatehouse({ agents: [fixer({ guardians: [strict] })], ids: seqIds() });
    await run(gh);
    const { state, context } = await contextOf(gh, "a1");
    expect(state).toBe("failed");
    expect(context.error).toEqual({ reason: "verification_rejected", message: "license: license (FAIL): GPL code copied" });
    expect(await trail(gh)).toEqual(["output_verifier:fixer:PASS", "license:FAIL"]);
  });

  it("NEEDS_CHANGES on the last attempt is written FAIL and the turn fails as exhausted", async () => {
    const gh = createGatehouse({ agents: [fixer({ guardians: [noSecrets()], verifyAttempts: 1 })], ids: seqIds() });
    await run(gh);
    const { context } = await contextOf(gh, "a1");
    expect(context.error?.reason).toBe("verification_exhausted");
    const [, v] = await gh.verdicts.list("a1");
    expect(v.status).toBe("FAIL");
    expect(v.flags.map((f) => f.code)).toEqual(["SECRET", "verification_exhausted"]);
    expect(v.metadata.reviewStatus).toBe("NEEDS_CHANGES");
  });

  it("guardians assigned through createGatehouse review after the agent's own, in order, each with a verdict", async () => {
    const order: string[] = [];
    const style = defineGuardian({ code: "style", review: () => (order.push("style"), { status: "PASS" }) });
    const tone = defineGuardian({ code: "tone", review: () => (order.push("tone"), { status: "PASS" }) });
    const gh = createGatehouse({
      agents: [fixer({ guardians: [style], model: scriptedModel([{ toolCalls: [{ name: "agent_output", args: { summary: "ok" } }] }]) })],
      guardians: [tone],
      assignments: [{ agent: "fixer", guardian: "tone" }],
      ids: seqIds(),
    });
    await run(gh);
    expect(order).toEqual(["style", "tone"]);
    expect(await trail(gh)).toEqual(["output_verifier:fixer:PASS", "style:PASS", "tone:PASS"]);
    expect((await contextOf(gh, "a1")).state).toBe("done");
  });

  it("guardians do not review a candidate the output verifier rejected", async () => {
    let reviews = 0;
    const g = defineGuardian({ code: "g", review: () => (reviews++, { status: "PASS" }) });
    const agent = fixer({
      guardians: [g],
      output: {
        schema: Summary,
        verify: (c: Cand) => {
          if (c.summary.includes("sk-")) throw new VerificationRejected({ message: "secret" });
          return c;
        },
      },
    });
    const gh = createGatehouse({ agents: [agent], ids: seqIds() });
    await run(gh);
    expect(reviews).toBe(1);
    expect(await trail(gh)).toEqual(["output_verifier:fixer:NEEDS_CHANGES", "output_verifier:fixer:PASS", "g:PASS"]);
  });

  it("an agent with guardians but no verify is gated: the parsed candidate is the verifier's result", async () => {
    const gh = createGatehouse({
      agents: [fixer({ output: { schema: Summary }, guardians: [noSecrets()] })],
      ids: seqIds(),
    });
    await run(gh);
    const { context } = await contextOf(gh, "a1");
    expect(context.output).toEqual({ summary: "clean 2" });
    expect(await trail(gh)).toEqual([
      "output_verifier:fixer:PASS",
      "no_secrets:NEEDS_CHANGES",
      "output_verifier:fixer:PASS",
      "no_secrets:PASS",
    ]);
  });

  it("a guardian that throws is a system error: retried later without judging the output verifier's pass again", async () => {
    const clock = manualClock();
    let verifies = 0;
    let reviews = 0;
    const flaky = defineGuardian({
      code: "flaky",
      review: () => {
        if (++reviews === 1) throw new Error("scanner offline");
        return { status: "PASS" };
      },
    });
    const agent = fixer({
      guardians: [flaky],
      model: scriptedModel([{ toolCalls: [{ name: "agent_output", args: { summary: "ok" } }] }]),
      output: { schema: Summary, verify: (c: Cand) => (verifies++, c) },
    });
    const gh = createGatehouse({ agents: [agent], ids: seqIds(), clock, verifierBackoffMs: 100 });
    await run(gh);
    expect((await contextOf(gh, "a1")).state).toBe("verifying");
    const error = (await allEvents(gh, "a1")).find((e) => e.type === "verification_error");
    expect(error?.data.message).toBe('Guardian "flaky" failed: scanner offline');
    clock.advance(100);
    await gh.drain();
    const { state, context } = await contextOf(gh, "a1");
    expect([state, verifies, reviews, context.verification.attemptsUsed]).toEqual(["done", 1, 2, 1]);
    expect(await trail(gh)).toEqual(["output_verifier:fixer:PASS", "flaky:PASS"]);
  });

  it("a review that is not a review is a system error naming the problem", async () => {
    const odd = defineGuardian({ code: "odd", review: () => ({ status: "MAYBE" }) as never });
    const gh = createGatehouse({ agents: [fixer({ guardians: [odd], maxVerifierErrors: 1 })], ids: seqIds() });
    await run(gh);
    const { context } = await contextOf(gh, "a1");
    expect(context.error).toEqual({
      reason: "verifier_error",
      message: 'Guardian "odd" failed: Guardian "odd" returned status "MAYBE"; expected PASS, NEEDS_CHANGES or FAIL',
    });
    const verdicts = await gh.verdicts.list("a1");
    expect(verdicts.map((v) => `${v.guardianCode}:${v.status}:${v.flags[0]?.code ?? ""}`)).toEqual([
      "output_verifier:fixer:PASS:",
      "odd:FAIL:verifier_error",
    ]);
  });
});
