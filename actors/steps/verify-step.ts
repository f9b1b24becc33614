/**
 * The verification step of a claim (actors/host/effects.ts, state `verifying`): run
 * the verifier gate (verification/gate.ts) on the turn's candidate and feed
 * its event to the machine.
 *
 * Invariants:
 * - The gate's events go into the next commit before the transition they
 *   explain (cause before effect).
 * - The gate never throws; whatever goes wrong becomes `VERIFY_ERROR`, retried
 *   with backoff (`verifierBackoffMs`, doubled per error).
 * - The judge is the turn's gate (actors/steps/tool-specs.ts `gateDefinition`):
 *   the binding's schema, verifier and guardians when the binding declares
 *   `output`, under whatever definition a handoff made the turn run; so a
 *   handoff never ends a gated turn past its binding's verifier.
 */
import type { AgentContext } from "../../machines/types.ts";
import { runVerification } from "../../verification/gate.ts";
import { applyEvent } from "./apply-event.ts";
import { type ClaimContext, snap } from "../claim/context.ts";
import { gateDefinition } from "./tool-specs.ts";
import { endSpan, startSpan } from "../observe/tracing.ts";

/** Judges the candidate of the turn in `context` and applies the gate's answer. */
export async function verifyStep(ctx: ClaimContext, context: AgentContext): Promise<void> {
  const { deps, agentId, workerId, epoch, claim } = ctx;
  const agent = gateDefinition(ctx.binding, ctx.agent);
  const { clock, logger } = deps;
  const vSpan = startSpan("gatehouse.verification", ctx.spans.ids, ctx.spans.turn);
  const vStarted = clock.now();
  const result = await runVerification({
    agent, agentId, turnId: context.turnId!, context, workerId, epoch,
    input: claim.task?.input ?? null,
    now: () => clock.now(), backoffMs: deps.verifierBackoffMs, signal: ctx.abort.signal,
    hooks: deps.verification,
  });
  ctx.commit.append(result.before);
  applyEvent(ctx, result.event);
  const outcome = result.event.type === "VERIFY_PASSED" ? "passed" : result.event.type === "VERIFY_REJECTED" ? "rejected" : "error";
  logger.info("verification", {
    agentId, turnId: context.turnId, outcome, attempt: snap(ctx).context.verification.attemptsUsed,
    state: snap(ctx).value, durationMs: clock.now() - vStarted,
  });
  endSpan(vSpan, { "gatehouse.verification_outcome": outcome }, outcome === "error" ? "verifier error" : undefined);
}
