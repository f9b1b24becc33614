/**
 * One word, one meaning (common/renamed.ts): `spendLimit` (was `budget`),
 * `verifyAttempts` (was `verifyMaxAttempts`), `stepLimit` (was
 * `maxStepsPerTurn`), `driveBudget`/`scheduledDriveBudget` (were the Workers
 * `budget`/`scheduledBudget`). The new names drive the same behaviour as the
 * old ones, the old ones keep working, both at once are refused (a
 * DefinitionError naming the new one; over HTTP 400 `validation_failed`),
 * and a task stores its options under the names stored tasks always had.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, createWorkersHandler, defineAgent, DefinitionError, memoryStore, scriptedModel } from "../mod.ts";
import type { AgentConfig } from "../mod.ts";
import { resolveVerifyMaxAttempts } from "../agents/define.ts";

const model = scriptedModel([{ text: "unused" }]);
const base = { name: "a", instructions: "Help.", model };
const schema = z.object({ answer: z.string() });

function refused(f: () => unknown): DefinitionError {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(DefinitionError);
    return err as DefinitionError;
  }
  throw new Error("expected a DefinitionError");
}

describe("defineAgent", () => {
  it("stepLimit is maxStepsPerTurn; the old name still works and reads as the new one", () => {
    const a = defineAgent({ ...base, stepLimit: 7 });
    expect(a.maxStepsPerTurn).toBe(7);
    expect(a.stepLimit).toBe(7);
    const old = defineAgent({ ...base, maxStepsPerTurn: 9 });
    expect(old.maxStepsPerTurn).toBe(9);
    expect(old.stepLimit).toBe(9);
    expect(defineAgent(base).stepLimit).toBe(32);
    const err = refused(() => defineAgent({ ...base, stepLimit: 0 }));
    expect(err.key).toBe("stepLimit");
    expect(err.message).toMatch(/stepLimit must be an integer/);
  });

  it("spendLimit is budget, errors keyed by the name given", () => {
    const a = defineAgent({ ...base, spendLimit: { maxTokensPerTurn: 100 } });
    expect(a.budget).toEqual({ maxTokensPerTurn: 100 });
    expect(a.spendLimit).toEqual({ maxTokensPerTurn: 100 });
    expect(refused(() => defineAgent({ ...base, spendLimit: { maxCostPerTrun: 1 } } as never)).key).toBe("spendLimit.maxCostPerTrun");
    expect(refused(() => defineAgent({ ...base, budget: { maxCostPerTrun: 1 } } as never)).key).toBe("budget.maxCostPerTrun");
  });

  it("verifyAttempts and output.verifyAttempts are the verifier gate's attempts", () => {
    const agentLevel = defineAgent({ ...base, output: { schema }, verifyAttempts: 4 });
    expect(resolveVerifyMaxAttempts(agentLevel)).toBe(4);
    expect(agentLevel.verifyAttempts).toBe(4);
    const outputLevel = defineAgent({ ...base, output: { schema, verifyAttempts: 2 } });
    expect(resolveVerifyMaxAttempts(outputLevel)).toBe(2);
    expect(resolveVerifyMaxAttempts(defineAgent({ ...base, output: { schema, verifyMaxAttempts: 3 } }))).toBe(3);
    expect(refused(() => defineAgent({ ...base, verifyAttempts: 2 })).key).toBe("verifyAttempts");
    expect(refused(() => defineAgent({ ...base, output: { schema, verifyAttempts: 0 } })).key).toBe("output.verifyAttempts");
  });

  it("both names at once are a DefinitionError naming the new one, whatever the values", () => {
    const both: [Partial<AgentConfig>, string][] = [
      [{ stepLimit: 5, maxStepsPerTurn: 5 }, "stepLimit"],
      [{ spendLimit: { maxCostTotal: 1 }, budget: { maxCostTotal: 2 } }, "spendLimit"],
      [{ output: { schema }, verifyAttempts: 2, verifyMaxAttempts: 3 }, "verifyAttempts"],
      [{ output: { schema, verifyAttempts: 2, verifyMaxAttempts: 2 } }, "output.verifyAttempts"],
    ];
    for (const [over, key] of both) {
      const err = refused(() => defineAgent({ ...base, ...over }));
      expect(err.key).toBe(key);
      expect(err.message).toMatch(/are the same option/);
    }
  });

  it("a definition spread into a new one builds; changing one name of a pair in the spread is refused", () => {
    const a = defineAgent({ ...base, stepLimit: 6, spendLimit: { maxCostTotal: 1 } });
    const b = defineAgent({ ...a, name: "b" });
    expect(b.stepLimit).toBe(6);
    expect(b.budget).toEqual({ maxCostTotal: 1 });
    expect(defineAgent({ ...a, stepLimit: 8, maxStepsPerTurn: undefined }).maxStepsPerTurn).toBe(8);
    expect(refused(() => defineAgent({ ...a, maxStepsPerTurn: 8 })).key).toBe("stepLimit");
  });

  it("stepLimit bounds a turn as maxStepsPerTurn did", async () => {
    let calls = 0;
    const model = scriptedModel(() => (calls++, { text: "more" }));
    const talker = defineAgent({ name: "talker", instructions: "x", model, mustEndWith: ["submit_result"], stepLimit: 2 });
    const gh = createGatehouse({ agents: [talker] });
    try {
      const res = await gh.fetch(new Request("http://gh.test/v1/agents/t1/tasks", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ agent: "talker", input: "go" }),
      }));
      expect(res.status).toBe(202);
      await gh.drain();
      const events = await gh.store.readEvents("t1", 0, 1000);
      expect(calls).toBe(2);
      expect((await gh.store.getAgent("t1"))!.state).toBe("failed");
      expect(JSON.stringify(events)).toContain("step_budget_exhausted");
    } finally {
      await gh.close();
    }
  }, 60_000);
});

describe("the tasks route", () => {
  async function enqueue(body: Record<string, unknown>) {
    const agent = defineAgent({ ...base, name: "w", output: { schema } });
    const gh = createGatehouse({ agents: [agent], store: memoryStore() });
    try {
      const res = await gh.fetch(new Request("http://gh.test/v1/agents/w1/tasks", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ agent: "w", input: "go", ...body }),
      }));
      const json = await res.json() as Record<string, unknown>;
      const events = res.status === 202 ? await gh.store.readEvents("w1", 0, 10) : [];
      return { status: res.status, json, options: events.find((e) => e.type === "task_enqueued")?.data.options };
    } finally {
      await gh.close();
    }
  }

  it("takes spendLimit and verifyAttempts and stores them under the stored names", async () => {
    const r = await enqueue({ spendLimit: { maxTokensPerTurn: 50 }, verifyAttempts: 2 });
    expect(r.status).toBe(202);
    expect(r.options).toEqual({ verifyMaxAttempts: 2, budget: { maxTokensPerTurn: 50 }, budgetMayRaise: true });
  });

  it("still takes budget and verifyMaxAttempts", async () => {
    const r = await enqueue({ budget: { maxTokensPerTurn: 50 }, verifyMaxAttempts: 2 });
    expect(r.status).toBe(202);
    expect(r.options).toEqual({ verifyMaxAttempts: 2, budget: { maxTokensPerTurn: 50 }, budgetMayRaise: true });
  });

  it("refuses both names of one field: 400 validation_failed, nothing enqueued", async () => {
    for (const body of [{ spendLimit: {}, budget: {} }, { verifyAttempts: 2, verifyMaxAttempts: 2 }]) {
      const r = await enqueue(body);
      expect(r.status).toBe(400);
      expect(r.json.code).toBe("validation_failed");
      expect(JSON.stringify(r.json.errors)).toMatch(/are the same field/);
    }
  });
});

describe("createWorkersHandler", () => {
  const agents = [defineAgent(base)];
  const store = () => memoryStore();

  it("takes driveBudget and scheduledDriveBudget, and still the old names; a bad one is named as given", () => {
    expect(() => createWorkersHandler({ agents, store, driveBudget: { steps: 3 }, scheduledDriveBudget: { ms: 1000 } })).not.toThrow();
    expect(() => createWorkersHandler({ agents, store, budget: { steps: 3 }, scheduledBudget: { ms: 1000 } })).not.toThrow();
    expect(refused(() => createWorkersHandler({ agents, store, driveBudget: { steps: 0 } })).message).toMatch(/^driveBudget\.steps/);
    expect(refused(() => createWorkersHandler({ agents, store, budget: { steps: 0 } })).message).toMatch(/^budget\.steps/);
  });

  it("refuses both names at once", () => {
    expect(refused(() => createWorkersHandler({ agents, store, driveBudget: { steps: 3 }, budget: { steps: 3 } })).key).toBe("driveBudget");
    expect(refused(() => createWorkersHandler({ agents, store, scheduledDriveBudget: {}, scheduledBudget: {} })).key).toBe("scheduledDriveBudget");
  });
});
