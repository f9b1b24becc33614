/** The tool specs an agent offers its model: its allowed tools plus the built-in completion tool. */
import { z } from "zod";
import type { AnyAgent } from "../agents/define.ts";
import { type ToolSpec, toJsonSchema, toolSpec } from "../tools/specs.ts";

const SUBMIT_RESULT_SPEC: ToolSpec = {
  type: "function",
  function: {
    name: "submit_result",
    description: "Submit the final result of this task and end the turn. Call it at most once.",
    parameters: toJsonSchema(z.object({ result: z.unknown().describe("The deliverable of the task") })),
  },
};

const memo = new WeakMap<AnyAgent, ToolSpec[]>();

export function agentToolSpecs(agent: AnyAgent): ToolSpec[] {
  let specs = memo.get(agent);
  if (specs) return specs;
  specs = agent.offeredTools.map(toolSpec);
  if (agent.output) {
    specs.push({
      type: "function",
      function: {
        name: "agent_output",
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
