/**
 * Costs read as people write them: the model's cost of one step and the
 * machine's totals carry no floating-point noise (common/cost.ts).
 */
import { describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { roundCost } from "../../common/cost.ts";
import { openaiCompatible } from "../../mod.ts";
import { agentMachine } from "../../machines/agent.ts";

describe("costs without float noise", () => {
  it("roundCost keeps 12 significant digits and leaves 0 and non-finite values alone", () => {
    expect(0.000123 + 0.000164).toBe(0.00028700000000000004); // the noise this removes
    expect(roundCost(0.000123 + 0.000164)).toBe(0.000287);
    expect(roundCost(0.1 + 0.2)).toBe(0.3);
    expect(roundCost(1234.5678)).toBe(1234.5678);
    expect(roundCost(1.5e-7)).toBe(1.5e-7);
    expect(roundCost(0)).toBe(0);
    expect(roundCost(Number.POSITIVE_INFINITY)).toBe(Number.POSITIVE_INFINITY);
  });

  it("an OpenAI-compatible response's cost is rounded", async () => {
    const model = openaiCompatible({
      baseURL: "http://model.test/v1",
      stream: false,
      model: "m",
      pricing: { inputPerMTok: 0.1, outputPerMTok: 0.2 },
      fetch: async () =>
        Response.json({ choices: [{ message: { role: "assistant", content: "hi" }, finish_reason: "stop" }], usage: { prompt_tokens: 3, completion_tokens: 7 } }),
    });
    const r = await model.generate({ agentId: "a", turnId: "t", step: 1, messages: [{ role: "user", content: "x" }], tools: [], signal: new AbortController().signal });
    expect((3 * 0.1 + 7 * 0.2) / 1_000_000).toBe(0.0000017000000000000002); // the noise without rounding
    expect(r.cost).toBe(0.0000017);
  });

  it("the machine's turn and agent totals add steps' costs without noise", () => {
    const a = createActor(agentMachine).start();
    a.send({ type: "TASK_STARTED", turnId: "t1", input: "x", config: {} } as never);
    for (const cost of [0.1, 0.2]) {
      a.send({ type: "MODEL_STEP", text: "", toolCalls: [], usage: { inputTokens: 1, outputTokens: 1 }, cost } as never);
    }
    const ctx = a.getSnapshot().context;
    expect(ctx.usage.cost).toBe(0.3);
  });
});
