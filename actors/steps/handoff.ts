/**
 * Handoffs at run time (agents/handoff.ts defines the tool): the tool runner
 * answers a handoff call here, the result's TOOL_RESULT carries the switch
 * (`handoff: { from, to, config }`), and the claim follows the definition
 * the machine's context names.
 *
 * Invariants (docs/architecture.md, "Handoffs"):
 * - The current definition lives in the machine context (`definition`, set by
 *   the TOOL_RESULT that carries the switch, cleared by the next
 *   TASK_STARTED). So the switch is committed with the call's result, in one
 *   compare-and-set commit, and restore, replay, time travel, forks and
 *   replay bundles see it wherever they see the snapshot or the log.
 * - `currentDefinitionName`: inside a turn, the context's `definition`, else
 *   the agent's binding (the name its tasks are enqueued under). At rest the
 *   binding runs: the next turn starts under it.
 * - A call's answer depends only on the context and the runtime's
 *   definitions, never on time or chance: a claim that dies before the
 *   result's commit answers it the same way when it runs the call again.
 * - One handoff per step: the first handoff call of the step transfers;
 *   another in the same step, or one in a step that also waits on external
 *   calls (their results belong to the caller's tools), is refused with the
 *   error outcome `handoff_refused`. A target this runtime does not have (a
 *   fork served elsewhere) is the error outcome `handoff_target_unknown`.
 * - The turn keeps its step budget (`config.maxSteps`). Its gate
 *   (actors/steps/tool-specs.ts `gateDefinition`): when the binding declares
 *   `output`, the turn stays gated by the binding's output contract under
 *   every target: its completion tool stays `agent_output` (the target is
 *   offered it with the binding's schema, never `submit_result`), its
 *   verifier attempts and error bound stay the turn's, its verification
 *   count goes on (the switch carries `keepsGate`), and the target's
 *   `mustEndWith` applies with `submit_result` read as `agent_output`. So no
 *   handoff ends such a turn `done` past the binding's schema, verifier and
 *   guardians. Otherwise (the binding has no `output`) the target brings its
 *   completion tool, `mustEndWith`, verifier attempts (its own: a task's
 *   `verifyAttempts` override applies to the definition the turn started
 *   under) and verifier error bound, and its gate starts a fresh count.
 */
import { isHandoffTool } from "../../agents/handoff.ts";
import { resolveVerifyAttempts, type AnyAgent } from "../../agents/define.ts";
import type { Outcome } from "../../common/outcome.ts";
import { AGENT_OUTPUT, type AgentContext, type HandoffSwitch, SUBMIT_RESULT, type TurnConfig } from "../../machines/types.ts";
import type { AnyTool } from "../../tools/define.ts";
import { type ClaimContext, IN_TURN } from "../claim/context.ts";
import { type Happening, log } from "./happened.ts";
import { completionToolOf } from "./tool-specs.ts";

/** What a handoff's answer reads: the definition the turn runs under, the binding, the runtime's definitions. */
export type HandoffInput = Pick<ClaimContext, "agent" | "binding"> & { deps: Pick<ClaimContext["deps"], "agents"> };

/** The name of the definition that runs the agent in this state: a handoff's target inside a turn, else the binding. */
export function currentDefinitionName(binding: string, value: string, context: AgentContext): string {
  return IN_TURN.has(value) && typeof context.definition === "string" ? context.definition : binding;
}

/** The answer to a handoff call of the step in waiting-tools: transferred, or refused (see the header). */
export function handoffOutcome(ctx: HandoffInput, context: AgentContext, tool: AnyTool, toolCallId: string): Outcome {
  if (!isHandoffTool(tool)) throw new Error(`Tool "${tool.name}" is not a handoff`);
  const calls = Object.entries(context.pending);
  const first = calls.find(([, p]) => isHandoffTool(ctx.agent.offeredTools.find((t) => t.name === p.name)))?.[0];
  const refused = (message: string): Outcome => ({ ok: false, error: { type: "handoff_refused", message, retryable: false } });
  if (first !== toolCallId) return refused(`Only one handoff per step: this step already calls "${context.pending[first!]?.name}"`);
  if (calls.some(([, p]) => p.external)) return refused("A handoff cannot share a step with calls that wait for an external result");
  if (tool.handoffTo === ctx.agent.name) return refused(`The agent runs as "${tool.handoffTo}" already`);
  if (!ctx.deps.agents.has(tool.handoffTo)) {
    return {
      ok: false,
      error: { type: "handoff_target_unknown", message: `Agent "${tool.handoffTo}" is not registered in this runtime`, retryable: false },
    };
  }
  return { ok: true, value: { handedOffTo: tool.handoffTo } };
}

/**
 * The switch an applied result of call `toolCallId` carries, when it is a successful handoff, with the
 * `handoff` event to log before the transition it explains. Undefined for any other result.
 */
export function handoffSwitch(
  ctx: HandoffInput, context: AgentContext, toolCallId: string, name: string, outcome: Outcome,
): { handoff: HandoffSwitch; logged: Happening } | undefined {
  const tool = ctx.agent.offeredTools.find((t) => t.name === name);
  if (!outcome.ok || !isHandoffTool(tool)) return undefined;
  const target = ctx.deps.agents.get(tool.handoffTo);
  if (!target) return undefined;
  const logged = log("handoff", { step: context.step, toolCallId, tool: name, from: ctx.agent.name, to: target.name });
  if (ctx.binding.output) {
    // The binding's output contract gates the turn under every target (see the header).
    return { handoff: { from: ctx.agent.name, to: target.name, config: keptGateConfig(context.config, target), keepsGate: true }, logged };
  }
  const config = {
    maxSteps: context.config.maxSteps,
    completion: completionToolOf(target),
    mustEndWith: target.effectiveMustEndWith,
    verifyMaxAttempts: resolveVerifyAttempts(target),
    maxVerifierErrors: target.maxVerifierErrors ?? 3,
  };
  return { handoff: { from: ctx.agent.name, to: target.name, config }, logged };
}

/**
 * The turn config under a target when the binding's gate stays: the turn's own (completion `agent_output`,
 * step budget, verifier attempts and error bound), with the target's `mustEndWith` (`submit_result`, which
 * the turn does not offer, read as `agent_output`).
 */
function keptGateConfig(config: TurnConfig, target: AnyAgent): TurnConfig {
  const mustEndWith = [...new Set(target.effectiveMustEndWith.map((n) => n === SUBMIT_RESULT ? AGENT_OUTPUT : n))];
  return { ...config, completion: AGENT_OUTPUT, mustEndWith };
}
