/**
 * The spend-limit guard at its two points of a claim (actors/host/effects.ts):
 * before each effect of a turn and right after each model step. Crossing the
 * turn's limit (actors/spend/spend-limit.ts) ends the turn with `TURN_FAILED`
 * (`budget_exhausted`), even a turn the step just finished; the calls the
 * crossing step asked for are withdrawn from the commit, so they are never
 * recorded, dispatched or announced as delegations. The guard returns what
 * happened (actors/steps/happened.ts); the host applies it.
 */
import type { AgentContext } from "../../machines/types.ts";
import type { ClaimContext, CommitSink, HostDeps } from "../claim/context.ts";
import { IN_TURN } from "../claim/context.ts";
import type { Happening } from "../steps/happened.ts";
import { spendLimitMessage, crossedLimit, recordSpendLimitVerdict } from "./spend-limit.ts";

/** What the guard reads: the turn's limit, the binding, the state, whether the buffered commit ends the turn. */
export type SpendGuardInput = Pick<ClaimContext, "spendLimit" | "binding" | "agentId" | "abort"> & {
  deps: Pick<HostDeps, "clock" | "logger" | "verification">;
  commit: Pick<CommitSink, "endsTurn">;
};

/**
 * What crossing the turn's spend limit makes happen: the `budget_exhausted` event, the crossing step's
 * calls withdrawn, and `TURN_FAILED` (`budget_exhausted`). Null when the usage in `context` crossed no
 * limit; empty when it did but the attempt stopped meanwhile. `afterStep`: right after a model step,
 * which may already have finished the turn.
 */
export async function spendLimitCrossed(
  ctx: SpendGuardInput, value: string, context: AgentContext, afterStep: boolean,
): Promise<Happening[] | null> {
  // The spend limit is the binding's (actors/host/run-claim.ts), through a handoff too: so is its guardian's assignment.
  const { spendLimit, binding: agent, agentId, commit } = ctx;
  const { clock, logger } = ctx.deps;
  if (!spendLimit) return null;
  const finishedByStep = afterStep && value === "done" && context.turnId !== null && commit.endsTurn(context.turnId);
  if (!context.turnId || !(IN_TURN.has(value) || finishedByStep)) return null;
  const crossing = crossedLimit(spendLimit, context);
  if (!crossing) return null;
  let verdictId: string | null = null;
  const recorder = ctx.deps.verification?.verdicts;
  if (recorder) {
    try {
      verdictId = await recordSpendLimitVerdict(recorder, { agentId, agentName: agent.name, turnId: context.turnId }, crossing, spendLimit);
    } catch (err) {
      logger.warn("spend limit verdict not recorded", { agentId, turnId: context.turnId, error: String(err) });
    }
  }
  if (ctx.abort.signal.aborted) return [];
  return [
    { kind: "log", type: "budget_exhausted", data: { turnId: context.turnId, ...crossing, budget: { ...spendLimit }, verdictId } },
    // Calls the crossing step asked for are never recorded, so never dispatched (nor announced as delegations).
    { kind: "withdraw-calls" },
    {
      kind: "event",
      event: { type: "TURN_FAILED", at: clock.now(), turnId: context.turnId, reason: "budget_exhausted", message: spendLimitMessage(crossing) },
    },
  ];
}
