/**
 * One word, one meaning (common/renamed.ts): `spendLimit` (was `budget`),
 * `verifyAttempts` (was `verifyMaxAttempts`), `stepLimit` (was
 * `maxStepsPerTurn`), `driveBudget`/`scheduledDriveBudget` (were the Workers
 * `budget`/`scheduledBudget`). The new names drive the behaviour, an old
 * name is refused naming the new one (a DefinitionError keyed by the old
 * name; over HTTP 400 `validation_failed`), and a task stores its options
 * under the names stored tasks always had.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, createWorkersHandler, defineAgent, DefinitionError, memoryStore, scriptedModel } from "../../mod.ts";
import type { AgentConfig } from "../../mod.ts";
import { resolveVerifyAttempts } from "../../agents/define.ts";

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
  it("stepLimit: the model steps of a turn (default 32), a bad one keyed stepLimit", () => {
    expect(defineAgent({ ...base, stepLimit: 7 }).stepLimit).toBe(7);
    expect(defineAgent(base).stepLimit).toBe(32);
    const err = refused(() => defineAgent({ ...base, stepLimit: 0 }));
    expect(err.key).toBe("stepLimit");
    expect(err.message).toMatch(/stepLimit must be an integer/);
  });

  it("spendLimit: kept on the definition, errors keyed spendLimit", () => {
    const a = defineAgent({ ...base, spendLimit: { maxTokensPerTurn: 100 } });
    expect(a.spendLimit).toEqual({ maxTokensPerTurn: 100 });
    expect(refused(() => defineAgent({ ...base, spendLimit: { maxCostPerTrun: 1 } } as never)).key).toBe("spendLimit.maxCostPerTrun");
  });

  it("verifyAttempts and output.verifyAttempts are the verifier gate's attempts", () => {
    const agentLevel = defineAgent({ ...base, output: { schema }, verifyAttempts: 4 });
    expect(resolveVerifyAttempts(agentLevel)).toBe(4);
    expect(agentLevel.verifyAttempts).toBe(4);
    const outputLevel = defineAgent({ ...base, output: { schema, verifyAttempts: 2 } });
    expect(resolveVerifyAttempts(outputLevel)).toBe(2);
    expect(refused(() => defineAgent({ ...base, verifyAttempts: 2 })).key).toBe("verifyAttempts");
    expect(refused(() => defineAgent({ ...base, output: { schema, verifyAttempts: 0 } })).key).toBe("output.verifyAttempts");
  });

  it("an old name is refused naming the new one, alone or beside it, whatever the value", () => {
    const old: [Record<string, unknown>, string, string][] = [
      [{ maxStepsPerTurn: 5 }, "maxStepsPerTurn", "stepLimit"],
      [{ stepLimit: 5, maxStepsPerTurn: 5 }, "maxStepsPerTurn", "stepLimit"],
      [{ budget: { maxCostTotal: 2 } }, "budget", "spendLimit"],
      [{ output: { schema }, verifyMaxAttempts: 3 }, "verifyMaxAttempts", "verifyAttempts"],
      [{ output: { schema, verifyMaxAttempts: 2 } }, "output.verifyMaxAttempts", "output.verifyAttempts"],
    ];
    for (const [over, key, now] of old) {
      const err = refused(() => defineAgent({ ...base, ...over } as AgentConfig));
      expect(err.key).toBe(key);
      expect(err.message).toContain(`${key} was renamed ${now}`);
    }
  });

  it("a definition spread into a new one builds", () => {
    const a = defineAgent({ ...base, stepLimit: 6, spendLimit: { maxCostTotal: 1 } });
    const b = defineAgent({ ...a, name: "b" });
    expect(b.stepLimit).toBe(6);
    expect(b.spendLimit).toEqual({ maxCostTotal: 1 });
    expect(defineAgent({ ...a, stepLimit: 8 }).stepLimit).toBe(8);
  });

  it("stepLimit bounds a turn", async () => {
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


  it("refuses the old names: 400 validation_failed, nothing enqueued", async () => {
    for (const body of [{ budget: {} }, { spendLimit: {}, budget: {} }, { verifyMaxAttempts: 2 }]) {
      const r = await enqueue(body);
      expect(r.status).toBe(400);
      expect(r.json.code).toBe("validation_failed");
      expect(r.options).toBeUndefined();
    }
  });
});

describe("createWorkersHandler", () => {
  const agents = [defineAgent(base)];
  const store = () => memoryStore();

  it("takes driveBudget and scheduledDriveBudget; a bad one is named", () => {
    expect(() => createWorkersHandler({ agents, store, driveBudget: { steps: 3 }, scheduledDriveBudget: { ms: 1000 } })).not.toThrow();
    expect(refused(() => createWorkersHandler({ agents, store, driveBudget: { steps: 0 } })).message).toMatch(/^driveBudget\.steps/);
  });

  it("refuses the old names, naming the new one", () => {
    const opts = (o: Record<string, unknown>) => ({ agents, store, ...o }) as Parameters<typeof createWorkersHandler>[0];
    expect(refused(() => createWorkersHandler(opts({ budget: { steps: 3 } }))).key).toBe("budget");
    expect(refused(() => createWorkersHandler(opts({ scheduledBudget: {} }))).message).toContain("scheduledBudget was renamed scheduledDriveBudget");
  });
});
