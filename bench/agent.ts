/**
 * The benchmark agent: three model steps per turn, from `scriptedModel`.
 *
 *   step 1: work({ n: 1 })      in-process tool, returns at once
 *   step 2: work({ n: 2 })
 *   step 3: submit_result
 *
 * `work` only returns its input, so it is declared `retrySafe` (running it
 * again for the same call is harmless): its result rides with the commit of
 * the next model step instead of a commit of its own. `{ retrySafe: false }`
 * (or BENCH_RETRY_SAFE=0 for every benchmark that uses this agent) gives the
 * same workload with a tool that cannot say so (its result is committed
 * before the next model step).
 *
 * A "step" is one model step and the commits it causes. `modelSteps` counts
 * model calls, so a run can check that it measured the steps it meant to.
 */
import { z } from "zod";
import { defineAgent, defineTool, scriptedModel } from "../mod.ts";
import type { AgentConfig, AnyAgent, Model } from "../mod.ts";

export const STEPS_PER_TURN = 3;

/**
 * The model's script for a turn of `steps` model steps: `work({ n: 1 })` … `work({ n: steps - 1 })`, then
 * `submit_result` (3 steps and 2 tool calls by default; bench/user-path.ts also runs 5 and 4).
 */
export function benchScript(steps = STEPS_PER_TURN) {
  return [
    ...Array.from({ length: steps - 1 }, (_, i) => ({
      toolCalls: [{ name: "work", args: { n: i + 1 } }],
      usage: { inputTokens: 50 + 10 * i, outputTokens: 10 },
    })),
    { toolCalls: [{ name: "submit_result", args: { result: "ok" } }], usage: { inputTokens: 50 + 10 * (steps - 1), outputTokens: 5 } },
  ];
}

/**
 * `extra`: more of the definition (retention, memory) for the retention benchmark; `retrySafe`: see
 * above; `modelDelayMs`: each model step waits that long first, as a model call over the network does
 * (bench/concurrency.ts); `steps`: model steps per turn (benchScript).
 */
export function benchAgent(
  extra: Partial<AgentConfig> = {},
  opts: { retrySafe?: boolean; modelDelayMs?: number; steps?: number } = {},
): { agent: AnyAgent; modelSteps: () => number } {
  const modelDelayMs = opts.modelDelayMs ?? 0;
  let steps = 0;
  const scripted = scriptedModel(benchScript(opts.steps));
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
    // Returns its input: running it again is harmless, so its result rides with the next model step's
    // commit (tools/define.ts). `opts.retrySafe` or BENCH_RETRY_SAFE=0 measure the commit-per-result path instead.
    retrySafe: opts.retrySafe ?? (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env.BENCH_RETRY_SAFE !== "0",
  });
  const agent = defineAgent({ name: "bench", instructions: "Run the benchmark script.", model, tools: [work], ...extra });
  return { agent, modelSteps: () => steps };
}
