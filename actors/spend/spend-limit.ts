/**
 * Spend limits as a guard (common/spend-limit.ts): after every model step
 * and every delegated result, and before a turn's first step, the host
 * compares the turn's usage with the limit the turn runs under. Crossing one
 * ends the turn through the machine's existing `TURN_FAILED` event with
 * reason `budget_exhausted`, and the built-in spend-limit guardian (code
 * `budget`, SPEND_LIMIT_GUARDIAN) records a
 * `FAIL` verdict for the turn.
 *
 * Invariants:
 * - The limit is resolved per turn from the agent's `spendLimit` and the
 *   task's (stored as the task option `budget`, store/types.ts): per field
 *   the smaller, unless the task carries `budgetMayRaise` (its enqueuer had
 *   `admin`) or the agent sets `spendLimit.tasksMayRaise`, when the task's
 *   fields win (common/spend-limit.ts); a turn without either is never
 *   checked, so agents without a spend limit behave exactly as before.
 * - The usage checked is the machine's: the turn's tokens and cost and the
 *   agent's total cost, children's spend included (it arrives on
 *   TOOL_RESULT, actors/delegation/delegation.ts). A replay of the log reaches the
 *   same verdict.
 * - The verdict id is deterministic (verification/recorder.ts, review key
 *   (agent, turn, "budget", "budget")), so a claim that runs the check again
 *   after a crash finds the verdict of its first run instead of writing
 *   another. It is written before the commit that ends the turn (verdicts
 *   judge a running turn); a refused commit leaves a verdict the next claim
 *   adopts.
 */
import type { AnyAgent } from "../../agents/define.ts";
import { resolveSpendLimit, type SpendCrossing, spendCrossed, type SpendLimit, SPEND_LIMIT_GUARDIAN } from "../../common/spend-limit.ts";
import type { AgentContext } from "../../machines/types.ts";
import type { InboxTask } from "../../store/types.ts";
import type { VerdictRecorder } from "../../verification/recorder.ts";

export { SPEND_LIMIT_GUARDIAN };

/** The spend limit of a turn, or null when it has none. */
export function turnSpendLimit(agent: AnyAgent, task: InboxTask | null | undefined): SpendLimit | null {
  return resolveSpendLimit(agent.spendLimit, task?.options?.budget, task?.options?.budgetMayRaise === true);
}

/** The limit the context's usage crosses, or null. */
export function crossedLimit(limit: SpendLimit | null, context: AgentContext): SpendCrossing | null {
  return spendCrossed(limit, {
    turnTokens: context.turnUsage.inputTokens + context.turnUsage.outputTokens,
    turnCost: context.turnUsage.cost,
    totalCost: context.usage.cost,
  });
}

/** The message a turn fails with. */
export function spendLimitMessage(c: SpendCrossing): string {
  return `The turn crossed its spend limit ${c.limit} = ${c.max} (used ${roundForHumans(c.used)})`;
}

const roundForHumans = (n: number) => Math.round(n * 1e6) / 1e6;

/** Records the spend-limit guardian's FAIL verdict of a turn (once; see the header). */
export async function recordSpendLimitVerdict(
  recorder: VerdictRecorder,
  key: { agentId: string; agentName: string; turnId: string },
  crossing: SpendCrossing,
  limit: SpendLimit,
): Promise<string> {
  const r = await recorder.record(
    { ...key, toolCallId: SPEND_LIMIT_GUARDIAN, guardianCode: SPEND_LIMIT_GUARDIAN },
    {
      status: "FAIL",
      flags: [{ code: "budget_exhausted", limit: crossing.limit }],
      // `budget`: the evidence field verdicts have always carried the limit in.
      evidence: { limit: crossing.limit, max: crossing.max, used: crossing.used, budget: { ...limit } },
      recommendations: [`Raise spendLimit.${crossing.limit} or give the agent a smaller task`],
      metadata: {},
    },
  );
  return r.verdict.verdictId;
}
