/**
 * The benchmark agent: three model steps per turn, from `scriptedModel`.
 *
 *   step 1: work({ n: 1 })      in-process tool, returns at once
 *   step 2: work({ n: 2 })
 *   step 3: submit_result
 *
 * A "step" is one model step and the commits it causes (for a tool step: the
 * commit that records the call before dispatch and the one that applies its
 * result). `modelSteps` counts model calls, so a run can check that it
 * measured the steps it meant to.
 */
import { z } from "zod";
import { defineAgent, defineTool, scriptedModel } from "../mod.ts";
import type { AgentConfig, AnyAgent, Model } from "../mod.ts";

export const STEPS_PER_TURN = 3;

/**
 * `extra`: more of the definition (retention, memory) for the retention benchmark; `modelDelayMs`:
 * each model step waits that long first, as a model call over the network does (bench/concurrency.ts).
 */
export function benchAgent(extra: Partial<AgentConfig> = {}, modelDelayMs = 0): { agent: AnyAgent; modelSteps: () => number } {
  let steps = 0;
  const scripted = scriptedModel([
    { toolCalls: [{ name: "work", args: { n: 1 } }], usage: { inputTokens: 50, outputTokens: 10 } },
    { toolCalls: [{ name: "work", args: { n: 2 } }], usage: { inputTokens: 60, outputTokens: 10 } },
    { toolCalls: [{ name: "submit_result", args: { result: "ok" } }], usage: { inputTokens: 70, outputTokens: 5 } },
  ]);
  const model: Model = {
    name: scripted.name,
    async generate(req) {
      steps++;
      if (modelDelayMs > 0) await new Promise((r) => setTimeout(r, modelDelayMs));
      return scripted.generate(req);
    },
  };
  const work = defineTool({
    name: "work",
    description: "Returns its input.",
    parameters: z.object({ n: z.number() }),
    execute: ({ n }) => ({ n }),
  });
  const agent = defineAgent({ name: "bench", instructions: "Run the benchmark script.", model, tools: [work], ...extra });
  return { agent, modelSteps: () => steps };
}
