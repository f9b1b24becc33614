/**
 * Definition-time rules of the verifier gate: where a verifier is found, which
 * shapes it may have, the attempt budget and its precedence, guardians and
 * their assignments, and the arguments of VerificationRejected.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  createGatehouse,
  defineAgent,
  defineGuardian,
  DefinitionError,
  scriptedModel,
  VerificationRejected,
} from "../../mod.ts";
import { DEFAULT_VERIFY_ATTEMPTS, resolveVerifyAttempts } from "../../agents/define.ts";
import { contextOf, enqueue, seqIds } from "../fixtures/gate-kit.ts";

const model = scriptedModel([{ text: "unused" }]);
const schema = z.object({ summary: z.string() });
const agentWith = (output: unknown, extra: Record<string, unknown> = {}) =>
  defineAgent({ name: "a", instructions: "", model, output: output as never, ...extra });

function definitionError(f: () => unknown): DefinitionError {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(DefinitionError);
    return err as DefinitionError;
  }
  throw new Error("expected a DefinitionError");
}

describe("verifier discovery", () => {
  it("output.verify is the verifier; an agent whose output has none has no verifier", () => {
    const verify = () => "ok";
    expect(agentWith({ schema, verify }).output?.verify).toBe(verify);
    expect(agentWith({ schema }).output?.verify).toBeUndefined();
  });

  it("an unknown key on output is refused, with the key that was probably meant", () => {
    expect(definitionError(() => agentWith({ schema, verifier: () => 1 })).message).toMatch(
      /output has an unknown key "verifier" \(did you mean "verify"\?\)/,
    );
    expect(definitionError(() => agentWith({ schema, validate: () => 1 })).message).toMatch(/did you mean "verify"/);
    expect(definitionError(() => agentWith({ schema, maxAttempts: 3 })).message).toMatch(
      /unknown key "maxAttempts" \(did you mean "verifyAttempts"\?\)/,
    );
    expect(definitionError(() => agentWith({ schema, extra: 1 })).message).toMatch(/unknown key "extra"; it takes schema, verify, verifyAttempts/);
  });

  it("output needs a zod object schema", () => {
    expect(definitionError(() => agentWith({ verify: () => 1 })).message).toMatch(/output.schema must be a zod object schema/);
    expect(definitionError(() => agentWith({ schema: { type: "object" } })).message).toMatch(/output.schema must be a zod object schema/);
  });
});

describe("verifier signature rules", () => {
  it("accepts functions declaring no, one or two parameters, sync or async, arrow or method", () => {
    const shapes: unknown[] = [
      () => 1,
      (c: unknown) => c,
      (c: unknown, { attempt }: { attempt: number }) => [c, attempt],
      async (c: unknown) => c,
      function named(c: unknown) {
        return c;
      },
      { verify(c: unknown) { return c; } }.verify,
      (c: unknown, ctx: unknown = {}, more: unknown = 1) => [c, ctx, more], // defaults do not count as declared
    ];
    for (const verify of shapes) expect(() => agentWith({ schema, verify })).not.toThrow();
  });

  it("refuses a verify that is not a function, naming what it got", () => {
    expect(definitionError(() => agentWith({ schema, verify: "tests" })).message).toMatch(
      /Agent "a": output.verify must be a function \(candidate, \{ agent, execution, attempt, maxAttempts \}\) => result, got string/,
    );
    expect(definitionError(() => agentWith({ schema, verify: null })).message).toMatch(/got null/);
    expect(definitionError(() => agentWith({ schema, verify: { run() {} } })).message).toMatch(/got object/);
  });

  it("refuses generator and async generator functions: they would run no check", () => {
    function* gen() {
      yield 1;
    }
    async function* agen() {
      yield 1;
    }
    expect(definitionError(() => agentWith({ schema, verify: gen })).message).toMatch(/must not be a generator function/);
    expect(definitionError(() => agentWith({ schema, verify: agen })).message).toMatch(/must not be a generator function/);
  });

  it("refuses a class", () => {
    class Verify {}
    expect(definitionError(() => agentWith({ schema, verify: Verify })).message).toMatch(/must be a function, not a class/);
  });

  it("refuses more than two declared parameters and says to destructure the context", () => {
    const verify = (_c: unknown, _agent: unknown, _execution: unknown) => 1;
    expect(definitionError(() => agentWith({ schema, verify })).message).toMatch(
      /output.verify declares 3 parameters; it takes \(candidate, ctx\): destructure/,
    );
  });
});

describe("attempt budget", () => {
  it("refuses invalid budgets at definition, naming the field", () => {
    for (const bad of [0, -1, 1.5, 101, "3", Number.NaN]) {
      expect(definitionError(() => agentWith({ schema }, { verifyAttempts: bad })).message).toMatch(
        /: verifyAttempts must be an integer from 1 to 100/,
      );
      expect(definitionError(() => agentWith({ schema, verifyAttempts: bad })).message).toMatch(
        /: output.verifyAttempts must be an integer from 1 to 100/,
      );
    }
  });

  it("refuses verifyAttempts on an agent without output", () => {
    expect(definitionError(() => defineAgent({ name: "a", instructions: "", model, verifyAttempts: 3 })).message)
      .toMatch(/verifyAttempts needs output/);
  });

  it("precedence: task override > agent > output > 5", () => {
    const both = agentWith({ schema, verifyAttempts: 4 }, { verifyAttempts: 7 });
    const outputOnly = agentWith({ schema, verifyAttempts: 4 });
    const none = agentWith({ schema });
    expect(resolveVerifyAttempts(both, 2)).toBe(2);
    expect(resolveVerifyAttempts(both)).toBe(7);
    expect(resolveVerifyAttempts(outputOnly)).toBe(4);
    expect(resolveVerifyAttempts(none)).toBe(DEFAULT_VERIFY_ATTEMPTS);
    expect(DEFAULT_VERIFY_ATTEMPTS).toBe(5);
  });

  it("an invalid override that bypassed the route is ignored, so a turn always gets a valid budget", () => {
    const a = agentWith({ schema }, { verifyAttempts: 3 });
    for (const bad of [0, 1.5, "2", null, 1000]) expect(resolveVerifyAttempts(a, bad)).toBe(3);
  });

  it("the task route's verifyAttempts becomes the turn's budget; an invalid one is refused with 400", async () => {
    const a = defineAgent({
      name: "a", instructions: "", model: scriptedModel([{ toolCalls: [{ name: "agent_output", args: { summary: "x" } }] }]),
      output: { schema, verify: () => "ok", verifyAttempts: 4 }, verifyAttempts: 6,
    });
    const gh = createGatehouse({ agents: [a], ids: seqIds() });
    const bad = await enqueue(gh, "a1", { agent: "a", input: "go", verifyAttempts: 0 });
    expect(bad.status).toBe(400);
    expect(bad.json.code).toBe("validation_failed");
    expect(await gh.store.getAgent("a1")).toBeNull();
    expect((await enqueue(gh, "a1", { agent: "a", input: "go", verifyAttempts: 2 })).status).toBe(202);
    await gh.drain();
    expect((await contextOf(gh, "a1")).context.verification.maxAttempts).toBe(2);
    expect((await enqueue(gh, "a1", { agent: "a", input: "again" })).status).toBe(202);
    await gh.drain();
    expect((await contextOf(gh, "a1")).context.verification.maxAttempts).toBe(6);
    await gh.close();
  });
});

describe("guardian definitions and assignments", () => {
  const review = () => ({ status: "PASS" as const });

  it("defineGuardian checks the code, the reserved prefix, the review's shape and unknown keys", () => {
    expect(definitionError(() => defineGuardian({ code: "has space", review })).message).toMatch(/code must match/);
    expect(definitionError(() => defineGuardian({ code: "output_verifier:x", review })).message).toMatch(/reserved/);
    expect(definitionError(() => defineGuardian({ code: "g", review: "no" as never })).message).toMatch(
      /Guardian "g": review must be a function/,
    );
    expect(definitionError(() => defineGuardian({ code: "g", review: ((_a: unknown, _b: unknown, _c: unknown) => review()) as never }))
      .message).toMatch(/declares 3 parameters/);
    expect(definitionError(() => defineGuardian({ code: "g", review, reviewer: 1 } as never)).message).toMatch(/unknown key "reviewer"/);
  });

  it("defineAgent refuses guardians without output, non-guardians and duplicates", () => {
    const g = defineGuardian({ code: "g", review });
    expect(definitionError(() => defineAgent({ name: "a", instructions: "", model, guardians: [g] })).message).toMatch(/guardians need output/);
    expect(definitionError(() => agentWith({ schema }, { guardians: [{ code: "g" }] })).message).toMatch(/defineGuardian/);
    expect(definitionError(() => agentWith({ schema }, { guardians: [g, g] })).message).toMatch(/listed twice/);
  });

  it("createGatehouse refuses unknown agents or guardians, agents without output, duplicates and clashing codes", () => {
    const g = defineGuardian({ code: "g", review });
    const a = agentWith({ schema });
    const plain = defineAgent({ name: "plain", instructions: "", model });
    expect(definitionError(() => createGatehouse({ agents: [a], guardians: [g], assignments: [{ agent: "b", guardian: "g" }] })).message)
      .toMatch(/assignments\[0\] names unknown agent "b"/);
    expect(definitionError(() => createGatehouse({ agents: [a], assignments: [{ agent: "a", guardian: "g" }] })).message)
      .toMatch(/names unknown guardian "g"/);
    expect(definitionError(() => createGatehouse({ agents: [a, plain], guardians: [g], assignments: [{ agent: "plain", guardian: "g" }] })).message)
      .toMatch(/declares no output/);
    expect(definitionError(() =>
      createGatehouse({ agents: [a], guardians: [g], assignments: [{ agent: "a", guardian: "g" }, { agent: "a", guardian: "g" }] })
    ).message).toMatch(/assigned to agent "a" twice/);
    expect(definitionError(() => createGatehouse({ agents: [a], guardians: [g, defineGuardian({ code: "g", review })] })).message)
      .toMatch(/two different guardians have the code "g"/);
  });

  it("the registry holds each agent's output verifier and the assignments, with deterministic ids", () => {
    const g = defineGuardian({ code: "no_secrets", review });
    const h = defineGuardian({ code: "style", review });
    const a = agentWith({ schema, verify: () => 1 }, { guardians: [g] });
    const gh = createGatehouse({ agents: [a], guardians: [h], assignments: [{ agent: "a", guardian: "style" }] });
    expect(gh.guardians.get("output_verifier:a")?.kind).toBe("output_verifier");
    expect(gh.guardians.guardiansFor("a").map((x) => x.code)).toEqual(["no_secrets", "style"]);
    expect(gh.guardians.assignments().map((x) => x.assignmentId)).toEqual([
      "assignment:a:output_verifier:a",
      "assignment:a:no_secrets",
      "assignment:a:style",
      "assignment:a:budget",
    ]);
  });
});

describe("VerificationRejected", () => {
  it("defaults: code rejected, retryable true, no metadata", () => {
    const e = new VerificationRejected({ message: "no" });
    expect(e).toBeInstanceOf(Error);
    expect([e.message, e.code, e.retryable, e.metadata]).toEqual(["no", "rejected", true, undefined]);
  });

  it("refuses bad arguments with a TypeError (the gate then sees a system error)", () => {
    expect(() => new VerificationRejected({ message: 1 as never })).toThrow(/message must be a string/);
    expect(() => new VerificationRejected({ message: "m", code: "two words" })).toThrow(/code must match/);
    expect(() => new VerificationRejected({ message: "m", retryable: "no" as never })).toThrow(/retryable must be a boolean/);
    expect(() => new VerificationRejected({ message: "m", metadata: [] as never })).toThrow(/metadata must be a plain object/);
  });
});
