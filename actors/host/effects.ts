/**
 * The effect loop of a claim: run the effect the state calls for (model step
 * in `running`, in-process tools in `waiting-tools`, verification in
 * `verifying`, feedback in `revising`; actors/steps/), apply what it
 * returned (actors/host/apply.ts) and commit, until the agent needs nothing more from this
 * worker or the attempt stops. Where the spend guard (actors/spend/guard.ts)
 * and the drive budget (actors/claim/drive-budget.ts) apply is named here.
 *
 * Invariants:
 * - Every effect's result is committed before the next effect starts, except
 *   results of `retrySafe` tools, which ride with the commit of the model
 *   step that follows them; a lost compare-and-set stops the attempt (the
 *   abort fires) and no further commit, dispatch or model call happens.
 * - Spend limits are checked before each effect of a turn and right after
 *   each model step.
 * - Mail that arrives while the claim runs, or a spent drive budget, hands the
 *   agent back at the next step boundary, in the commit that ends the step
 *   (`runnableAt = now`; a spent drive budget logs `claim_yielded`).
 * - Turn chaining (store invariant `turn-chaining`): the commit that ends a turn and
 *   releases may claim the next task, only when the caller allows it
 *   (`mayChain`) and the drive budget is not spent.
 * - A claim that starts a new turn commits nothing of its own for the start:
 *   the claim already stored the turn's state as `running` (store/port.ts
 *   invariant `turn-start`), and `TASK_STARTED`, with the mail the claim
 *   applied, rides with the commit of the turn's first effect. A turn of n
 *   steps costs n commits.
 */
import type { ClaimContext, HostOutcome } from "../claim/context.ts";
import { snap } from "../claim/context.ts";
import type { CommitBuffer } from "../claim/commit-buffer.ts";
import { driveBudgetSpent, type RunningDriveBudget } from "../claim/drive-budget.ts";
import { delegationPollAt } from "../delegation/claim-hooks.ts";
import { DeltaBatcher } from "../../store/live.ts";
import { spendLimitCrossed } from "../spend/guard.ts";
import { awaitsApproval } from "../steps/approvals.ts";
import { modelStep } from "../steps/model-step.ts";
import { runInProcessTools } from "../steps/tool-runner.ts";
import { verifyStep } from "../steps/verify-step.ts";
import { apply } from "./apply.ts";

/** How the effect loop ended: the outcome, and whether the actor may stay resident (its last commit applied). */
export interface EffectsEnd {
  outcome: HostOutcome;
  resident: boolean;
}

/** Runs effects until the agent is released or the claim is lost. */
export async function runEffects(
  ctx: ClaimContext, buffer: CommitBuffer, driveBudget: RunningDriveBudget | undefined, mayChain: boolean,
): Promise<EffectsEnd> {
  const { clock } = ctx.deps;
  const fenced = (): EffectsEnd => ({ resident: false, outcome: { status: "fenced", reason: buffer.fenceReason || "lease_lost", commits: buffer.commits } });
  const refused = (): EffectsEnd => ({ resident: false, outcome: { status: "fenced", reason: buffer.fenceReason, commits: buffer.commits } });
  const released = (yielded: boolean): EffectsEnd => ({
    resident: true,
    outcome: { status: "released", state: snap(ctx).value, commits: buffer.commits, yielded, ...(buffer.chained ? { chained: buffer.chained } : {}) },
  });
  // Turn chaining: within the caller's bound (`mayChain`) and the drive budget.
  const chainAllowed = () => mayChain && !(driveBudget && driveBudgetSpent(driveBudget, clock));
  for (;;) {
    if (ctx.abort.signal.aborted) return fenced();
    if (await enforceSpendLimit(ctx, false)) continue;
    const need = needsMe(ctx);
    if (!need.yes) {
      if (!(await buffer.flush({ runnableAt: need.runnableAt }, { chain: chainAllowed() }))) return refused();
      return released(false);
    }
    const step = await stepOnce(ctx);
    if (step === "no-effect") continue;
    if (ctx.abort.signal.aborted) return fenced();
    const next = needsMe(ctx);
    if (driveBudget) driveBudget.stepsLeft--;
    const { handBack, yielded } = await stepBoundary(ctx, next, driveBudget);
    // Results of retry-safe tools ride with the commit of the model step that follows them: a crash
    // before that commit runs the tools again under the same ids (tools/define.ts `retrySafe`).
    if (step === "ride" && handBack === null && snap(ctx).value === "running") continue;
    if (!(await buffer.flush(handBack, { chain: chainAllowed() }))) return refused();
    if (handBack) return released(yielded);
  }
}

/**
 * Runs the one effect the state calls for and applies what it returned. "no-effect": it only applied an
 * event (feedback, the step bound), and the loop goes on without a step boundary; "ride": the step's
 * results may ride with the next commit (retry-safe tools; actors/steps/tool-runner.ts); "step": any other step.
 */
async function stepOnce(ctx: ClaimContext): Promise<"no-effect" | "step" | "ride"> {
  const { clock } = ctx.deps;
  const { value, context } = snap(ctx);
  if (value === "revising") {
    await apply(ctx, [{ kind: "event", event: { type: "FEEDBACK_APPENDED", at: clock.now() } }]);
    return "no-effect";
  }
  if (value === "running") {
    if (context.step >= context.config.maxSteps) {
      await apply(ctx, [{ kind: "event", event: { type: "STEP_BUDGET_EXHAUSTED", at: clock.now() } }]);
      return "no-effect";
    }
    const live = ctx.deps.live;
    await apply(ctx, await modelStep(ctx, context, live ? new DeltaBatcher(live, ctx.agentId, context.turnId!, context.step + 1) : null));
    await enforceSpendLimit(ctx, true);
  } else if (value === "waiting-tools") {
    const ran = await runInProcessTools(ctx, context);
    await apply(ctx, ran.happened);
    if (ran.ride) return "ride";
  } else if (value === "verifying") {
    const verified = await verifyStep(ctx, context);
    await apply(ctx, verified.happened);
    const after = snap(ctx);
    ctx.deps.logger.info("verification", {
      agentId: ctx.agentId, turnId: context.turnId, outcome: verified.outcome, attempt: after.context.verification.attemptsUsed,
      state: after.value, durationMs: clock.now() - verified.startedAt,
    });
  }
  return "step";
}

/**
 * The spend guard (actors/spend/guard.ts) at one of its points: applies what crossing the limit makes
 * happen. True when the limit was crossed (or the attempt stopped meanwhile).
 */
async function enforceSpendLimit(ctx: ClaimContext, afterStep: boolean): Promise<boolean> {
  if (!ctx.spendLimit) return false;
  const { value, context } = snap(ctx);
  const crossed = await spendLimitCrossed(ctx, value, context, afterStep);
  if (!crossed) return false;
  await apply(ctx, crossed);
  return true;
}

/**
 * Whether the commit that ends this step hands the agent back. Mail that arrived during this claim
 * (a cancel, say) is applied by a fresh claim, which takes it as one batch: hand the agent back at
 * this step boundary rather than run the turn to its end. A spent drive budget hands back the same way, in
 * the commit that ends this step (no lease is left behind).
 */
async function stepBoundary(
  ctx: ClaimContext, next: Need, driveBudget: RunningDriveBudget | undefined,
): Promise<{ handBack: { runnableAt: number | null } | null; yielded: boolean }> {
  const { clock } = ctx.deps;
  const yielded = next.yes && (ctx.lease.mailWaiting || (driveBudget !== undefined && driveBudgetSpent(driveBudget, clock)));
  const handBack = !next.yes ? { runnableAt: next.runnableAt } : yielded ? { runnableAt: clock.now() } : null;
  if (yielded && !ctx.lease.mailWaiting) {
    const data = { reason: "budget", steps: driveBudget!.limit.steps - driveBudget!.stepsLeft, elapsedMs: clock.now() - driveBudget!.startedAt };
    await apply(ctx, [{ kind: "log", type: "claim_yielded", data }]);
  }
  return { handBack, yielded };
}

type Need = { yes: true } | { yes: false; runnableAt: number | null };

/** Does the current state need this worker to do something now? */
function needsMe(ctx: ClaimContext): Need {
  const { clock } = ctx.deps;
  const { value, context } = snap(ctx);
  if (value === "running" || value === "revising") return { yes: true };
  if (value === "waiting-tools") {
    // In-process calls to run; a call that waits for a person's approval is not one (actors/steps/approvals.ts).
    if (Object.entries(context.pending).some(([id, p]) => !p.external && !awaitsApproval(ctx, id, p))) return { yes: true };
    // Waiting on a child: come back now and then to re-dispatch and pull (actors/delegation/delegation.ts, 5.).
    return { yes: false, runnableAt: delegationPollAt(ctx, context) };
  }
  if (value === "verifying") {
    const at = context.verification.retryAt;
    return at !== null && at > clock.now() ? { yes: false, runnableAt: at } : { yes: true };
  }
  return { yes: false, runnableAt: null };
}
