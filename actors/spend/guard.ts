/**
 * The spend-limit guard at its two points of a claim (actors/host/effects.ts):
 * before each effect of a turn and right after each model step. Crossing the
 * turn's limit (actors/spend/spend-limit.ts) ends the turn with `TURN_FAILED`
 * (`budget_exhausted`), even a turn the step just finished; the calls the
 * crossing step asked for are withdrawn from the commit, so they are never
 * recorded, dispatched or announced as delegations.
 */
import type { ClaimContext } from "../claim/context.ts";
import { IN_TURN, snap } from "../claim/context.ts";
import { applyEvent } from "../steps/apply-event.ts";
import { crossedLimit, recordSpendLimitVerdict, spendLimitMessage } from "./spend-limit.ts";

/**
 * Ends the turn with `budget_exhausted` when its usage crossed its spend limit; true when it did (or the
 * attempt stopped meanwhile). `afterStep`: right after a model step, which may already have finished the turn.
 */
export async function enforceSpendLimit(ctx: ClaimContext, afterStep: boolean): Promise<boolean> {
  // The spend limit is the binding's (actors/host/run-claim.ts), through a handoff too: so is its guardian's assignment.
  const { spendLimit, binding: agent, agentId, commit } = ctx;
  const { clock, logger } = ctx.deps;
  if (!spendLimit) return false;
  const { value, context } = snap(ctx);
  const finishedByStep = afterStep && value === "done" && context.turnId !== null && commit.endsTurn(context.turnId);
  if (!context.turnId || !(IN_TURN.has(value) || finishedByStep)) return false;
  const crossing = crossedLimit(spendLimit, context);
  if (!crossing) return false;
  let verdictId: string | null = null;
  const recorder = ctx.deps.verification?.verdicts;
  if (recorder) {
    try {
      verdictId = await recordSpendLimitVerdict(recorder, { agentId, agentName: agent.name, turnId: context.turnId }, crossing, spendLimit);
    } catch (err) {
      logger.warn("spend limit verdict not recorded", { agentId, turnId: context.turnId, error: String(err) });
    }
  }
  if (ctx.abort.signal.aborted) return true;
  commit.emit("budget_exhausted", { turnId: context.turnId, ...crossing, budget: { ...spendLimit }, verdictId });
  // Calls the crossing step asked for are never recorded, so never dispatched (nor announced as delegations).
  commit.withdrawToolCalls();
  applyEvent(ctx, { type: "TURN_FAILED", at: clock.now(), turnId: context.turnId, reason: "budget_exhausted", message: spendLimitMessage(crossing) });
  return true;
}
