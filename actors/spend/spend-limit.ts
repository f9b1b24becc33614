/**
 * Spend limits as a guard (common/spend-limit.ts): after every model step
 * and every delegated result, and before a turn's first step, the host
 * compares the turn's usage with the limit the turn runs under. Crossing one
 * ends the turn through the machine's existing `TURN_FAILED` event with
 * reason `budget_exhausted`, and the built-in `budget` guardian records a
 * `FAIL` verdict for the turn.
 *
 * Invariants:
 * - The limit is resolved per turn from the agent's `budget` and the task's
 *   `budget` option: per field the smaller, unless the task carries
 *   `budgetMayRaise` (its enqueuer had `admin`) or the agent sets
 *   `budget.tasksMayRaise`, when the task's fields win
 *   (common/spend-limit.ts); a turn without either is never checked, so
 *   agents without a budget behave exactly as before.
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
import { BUDGET_GUARDIAN, resolveSpendLimit, type SpendCrossing, spendCrossed, type SpendLimit } from "../../common/spend-limit.ts";
import type { AgentContext } from "../../machines/types.ts";
import type { InboxTask } from "../../store/types.ts";
import type { VerdictRecorder } from "../../verification/recorder.ts";

export { BUDGET_GUARDIAN };

/** The spend limit of a turn, or null when it has none. */
export function turnSpendLimit(agent: AnyAgent, task: InboxTask | null | undefined): SpendLimit | null {
  return resolveSpendLimit(agent.budget, task?.options?.budget, task?.options?.budgetMayRaise === true);
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
export function budgetMessage(c: SpendCrossing): string {
  return `The turn crossed its spend limit ${c.limit} = ${c.max} (used ${roundForHumans(c.used)})`;
}

const roundForHumans = (n: number) => Math.round(n * 1e6) / 1e6;

/** Records the `budget` guardian's FAIL verdict of a turn (once; see the header). */
export async function recordBudgetVerdict(
  recorder: VerdictRecorder,
  key: { agentId: string; agentName: string; turnId: string },
  crossing: SpendCrossing,
  limit: SpendLimit,
): Promise<string> {
  const r = await recorder.record(
    { ...key, toolCallId: BUDGET_GUARDIAN, guardianCode: BUDGET_GUARDIAN },
    {
      status: "FAIL",
      flags: [{ code: "budget_exhausted", limit: crossing.limit }],
      evidence: { limit: crossing.limit, max: crossing.max, used: crossing.used, budget: { ...limit } },
      recommendations: [`Raise budget.${crossing.limit} or give the agent a smaller task`],
      metadata: {},
    },
  );
  return r.verdict.verdictId;
}
