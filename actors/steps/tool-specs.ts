/**
 * The tool specs an agent offers its model: its allowed tools plus the
 * built-in completion tool (`agent_output` when the agent declares `output`,
 * else `submit_result`). These are the only names the model may call: the
 * host answers any other call with the error outcome `tool_not_offered`.
 *
 * Within a turn a handoff switched (actors/steps/handoff.ts), the tools are
 * those of the definition the turn runs under, and the completion tool is
 * that of the turn's gate (`gateDefinition`): a turn whose binding declares
 * `output` offers `agent_output` with the binding's schema under any target,
 * and never `submit_result` (docs/verification.md, "The only ways a turn
 * ends done").
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

const memo = new WeakMap<AnyAgent, WeakMap<AnyAgent, ToolSpec[]>>();

/**
 * The definition whose output contract (schema, verifier, guardians) gates a turn: the binding when it
 * declares `output`, whatever definition a handoff made the turn run under; otherwise the definition the
 * turn runs under (a target that declares `output` gates a turn its binding left ungated).
 */
export function gateDefinition(binding: AnyAgent, agent: AnyAgent): AnyAgent {
  return binding.output ? binding : agent;
}

/** The completion tool an agent's turns offer and finish with. */
export function completionToolOf(agent: AnyAgent): CompletionTool {
  return agent.output ? AGENT_OUTPUT : SUBMIT_RESULT;
}

/** The names of the offered specs (agentToolSpecs). */
export function offeredToolNames(agent: AnyAgent, gate: AnyAgent = agent): string[] {
  return agentToolSpecs(agent, gate).map((s) => s.function.name);
}

/** `agent`'s allowed tools and the completion tool of the turn's gate (`gateDefinition`; default `agent` itself). */
export function agentToolSpecs(agent: AnyAgent, gate: AnyAgent = agent): ToolSpec[] {
  let byGate = memo.get(agent);
  if (!byGate) memo.set(agent, byGate = new WeakMap());
  let specs = byGate.get(gate);
  if (specs) return specs;
  specs = agent.offeredTools.map(toolSpec);
  if (gate.output) {
    specs.push({
      type: "function",
      function: {
        name: AGENT_OUTPUT,
        description: "Propose the final output of this task. It is verified before the task completes.",
        parameters: toJsonSchema(gate.output.schema),
      },
    });
  } else {
    specs.push(SUBMIT_RESULT_SPEC);
  }
  byGate.set(gate, specs);
  return specs;
}
