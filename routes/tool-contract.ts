/**
 * The contract check of an external result posted to
 * `POST /v1/agents/:agentId/tool-results`, before it is delivered: the same
 * function as for in-process results (contracts/check.ts `checkOutcome`), on
 * the tool the call was recorded for (its name, the agent's definition).
 *
 * - The delivered outcome is the checked one: an ok value the deliverable
 *   refuses is stored, mailed and shown to the model as the error outcome
 *   `contract_violation` (or `invalid_input` for a required result that is
 *   empty), with `afterExecution: "continue"` (a refused result never ends
 *   the turn). The call's record and its `tool_result_received` event carry
 *   `contractValidation`.
 * - The check is deterministic, so the same delivery again is still a
 *   `duplicate` (first-wins compares the checked outcomes).
 * - Nothing is checked (`applied: false`) when the call is unknown (the
 *   store answers that), or when this process does not have the agent's
 *   definition or the tool: the check needs the definition, like a worker.
 */
import type { ContractValidation } from "../common/contract-validation.ts";
import { notApplied } from "../common/contract-validation.ts";
import type { AfterExecution, Outcome } from "../common/outcome.ts";
import { checkOutcome } from "../contracts/check.ts";
import type { RouteRuntime } from "./runtime.ts";

export interface CheckedDelivery {
  outcome: Outcome;
  afterExecution: AfterExecution;
  contractValidation: ContractValidation;
}

const contracted = (t: { deliverable?: unknown; resultRequired?: boolean }) => t.deliverable !== undefined || t.resultRequired === true;

export async function checkDeliveredResult(
  rt: RouteRuntime,
  call: { agentId: string; turnId: string; toolCallId: string },
  outcome: Outcome,
  afterExecution: AfterExecution,
): Promise<CheckedDelivery> {
  const unchecked = { outcome, afterExecution, contractValidation: notApplied() };
  if (!outcome.ok) return unchecked;
  // No definition of this process declares a contract: no reads.
  if (![...rt.agents.values()].some((a) => a.tools.some(contracted))) return unchecked;
  const head = await rt.store.getAgent(call.agentId);
  const tools = head ? rt.agents.get(head.agentName)?.tools : undefined;
  if (!tools || !tools.some(contracted)) return unchecked;
  const record = (await rt.store.getToolCalls(call.agentId, call.turnId)).find((c) => c.toolCallId === call.toolCallId);
  const tool = record ? tools.find((t) => t.name === record.name) : undefined;
  if (!tool) return unchecked;
  const checked = checkOutcome(tool, outcome);
  return { ...checked, afterExecution: checked.outcome.ok ? afterExecution : "continue" };
}
