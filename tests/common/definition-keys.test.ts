/**
 * Unknown keys of definition objects are refused (common/known-keys.ts): a
 * misspelt option would otherwise be dropped and the definition would run
 * without it (a tool with `retrySafee` runs without the flag, an agent with
 * `stepLimt` runs 32 steps). Each refusal is a DefinitionError whose
 * `key` is the path of the unknown key and whose message names it and the
 * key probably meant. Definitions spread into new ones still build.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { agentTool, createGatehouse, defineAgent, DefinitionError, defineTool, scriptedModel } from "../../mod.ts";

function refused(f: () => unknown): DefinitionError {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(DefinitionError);
    return err as DefinitionError;
  }
  throw new Error("expected a DefinitionError");
}

/** Refused, `key` the path, the message naming the unknown key and (when given) the suggestion. */
function expectUnknown(f: () => unknown, key: string, suggestion?: string) {
  const err = refused(f);
  expect(err.key).toBe(key);
  const last = key.split(".").pop()!;
  expect(err.message).toContain(`unknown key "${last}"`);
  if (suggestion) expect(err.message).toContain(`(did you mean "${suggestion}"?)`);
  else expect(err.message).not.toMatch(/did you mean/);
}

const model = scriptedModel([{ text: "unused" }]);
const base = { name: "a", instructions: "Help.", model };
const agent = (over: Record<string, unknown>) => defineAgent({ ...base, ...over } as never);
const params = z.object({ q: z.string() });
const tool = (over: Record<string, unknown>) =>
  defineTool({ name: "t", description: "T", parameters: params, execute: () => "ok", ...over } as never);

describe("defineAgent refuses unknown keys", () => {
  it("names the key and the one probably meant", () => {
    expectUnknown(() => agent({ spendLimits: { maxCostTotal: 1 } }), "spendLimits", "spendLimit");
    expectUnknown(() => agent({ stepLimt: 3 }), "stepLimt", "stepLimit");
    expectUnknown(() => agent({ Retention: { maxTurns: 3 } }), "Retention", "retention");
    expectUnknown(() => agent({ temperature: 0.2 }), "temperature");
    // A key present with the value undefined is still a key.
    expectUnknown(() => agent({ tool: undefined }), "tool", "tools");
  });

  it("refuses unknown keys of output, retention, memory and spendLimit, by path", () => {
    const schema = z.object({ answer: z.string() });
    expectUnknown(() => agent({ output: { schema, verfy: () => {} } }), "output.verfy", "verify");
    expectUnknown(() => agent({ retention: { maxEvent: 20 } }), "retention.maxEvent", "maxEvents");
    expectUnknown(() => agent({ memory: { keepTurn: 3 } }), "memory.keepTurn", "keepTurns");
    const err = refused(() => agent({ spendLimit: { maxCostPerTrun: 1 } }));
    expect(err.key).toBe("spendLimit.maxCostPerTrun");
    expect(err.message).toMatch(/unknown field "maxCostPerTrun" \(did you mean "maxCostPerTurn"\?\)/);
  });

  it("refuses unknown retention and memory keys on createGatehouse too", () => {
    const a = agent({});
    expectUnknown(() => createGatehouse({ agents: [a], retention: { maxTurn: 3 } } as never), "retention.maxTurn", "maxTurns");
    expectUnknown(() => createGatehouse({ agents: [a], memory: { keepturns: 3 } } as never), "memory.keepturns", "keepTurns");
  });

  it("lists every key it takes in the refusal, concurrencyKey last", () => {
    expect(refused(() => agent({ temperature: 0.2 })).message).toMatch(
      /it takes name, version, upgradeFrom, instructions, model, tools, allowedTools, output, verifyAttempts, guardians, mustEndWith, stepLimit, workerTarget, maxVerifierErrors, modelAttempts, knownTools, spendLimit, retention, memory, concurrencyKey$/,
    );
    expectUnknown(() => agent({ concurencyKey: () => "k" }), "concurencyKey", "concurrencyKey");
  });

  it("refuses a concurrencyKey that is not a function, naming the key", () => {
    const err = refused(() => agent({ concurrencyKey: "user:42" }));
    expect(err.key).toBe("concurrencyKey");
    expect(err.message).toMatch(/concurrencyKey must be a function/);
    expect(agent({ concurrencyKey: () => null }).concurrencyKey).toBeTypeOf("function");
  });

  it("still builds a definition spread into a new one", () => {
    const a = agent({ stepLimit: 4 });
    const b = defineAgent({ ...a, name: "b" });
    expect(b.name).toBe("b");
    expect(b.stepLimit).toBe(4);
  });
});

describe("defineTool and agentTool refuse unknown keys", () => {
  it("defineTool names the key and the one probably meant", () => {
    expectUnknown(() => tool({ retrySafee: true }), "retrySafee", "retrySafe");
    expectUnknown(() => tool({ timeout: 5 }), "timeout", "timeoutMs");
    expectUnknown(() => tool({ retries: 2 }), "retries");
    expect(refused(() => tool({ retries: 2 })).message).toMatch(/it takes name, description, .*retrySafe, needsApproval, approvalTimeoutMs, waitFor$/);
    expectUnknown(() => tool({ needsAproval: true }), "needsAproval", "needsApproval");
    expectUnknown(() => tool({ Deliverable: { type: "object", required: ["x"] } }), "Deliverable", "deliverable");
    const t = tool({ retrySafe: true });
    expect(defineTool({ ...t, name: "t2" }).retrySafe).toBe(true);
  });

  it("agentTool names the key of its options", () => {
    const child = agent({ name: "child" });
    expectUnknown(() => agentTool(child, { timeoutMS: 10 } as never), "options.timeoutMS", "timeoutMs");
    expectUnknown(() => agentTool(child, { descripton: "x" } as never), "options.descripton", "description");
    expect(agentTool(child, { timeoutMs: 10 }).timeoutMs).toBe(10);
  });
});
