/**
 * The tool specs an agent offers its model: its allowed tools plus the
 * built-in completion tool (`agent_output` when the agent declares `output`,
 * else `submit_result`). These are the only names the model may call: the
 * host answers any other call with the error outcome `tool_not_offered`.
 */
import { z } from "zod";
import type { AnyAgent } from "../../agents/define.ts";
import { AGENT_OUTPUT, type CompletionTool, SUBMIT_RESULT } from "../../machines/types.ts";
import { type ToolSpec, toJsonSchema, toolSpec } from "../../tools/specs.ts";

const SUBMIT_RESULT_SPEC: ToolSpec = {
  type: "function",
  function: {
    name: SUBMIT_RESULT,
    description: "Submit the final result of this task and end the turn. Call it at most once.",
    parameters: toJsonSchema(z.object({ result: z.unknown().describe("The deliverable of the task") })),
  },
};

const memo = new WeakMap<AnyAgent, ToolSpec[]>();

/** The completion tool an agent's turns offer and finish with. */
export function completionToolOf(agent: AnyAgent): CompletionTool {
  return agent.output ? AGENT_OUTPUT : SUBMIT_RESULT;
}

/** The names of the offered specs (agentToolSpecs). */
export function offeredToolNames(agent: AnyAgent): string[] {
  return agentToolSpecs(agent).map((s) => s.function.name);
}

export function agentToolSpecs(agent: AnyAgent): ToolSpec[] {
  let specs = memo.get(agent);
  if (specs) return specs;
  specs = agent.offeredTools.map(toolSpec);
  if (agent.output) {
    specs.push({
      type: "function",
      function: {
        name: AGENT_OUTPUT,
        description: "Propose the final output of this task. It is verified before the task completes.",
        parameters: toJsonSchema(agent.output.schema),
      },
    });
  } else {
    specs.push(SUBMIT_RESULT_SPEC);
  }
  memo.set(agent, specs);
  return specs;
}
