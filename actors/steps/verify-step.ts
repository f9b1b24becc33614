/**
 * The verification step of a claim (actors/host/effects.ts, state `verifying`): run
 * the verifier gate (verification/gate.ts) on the turn's candidate and feed
 * its event to the machine (returned as what happened; the host applies it
 * and logs `verification` with the state it leads to).
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
import type { ClaimContext, HostDeps } from "../claim/context.ts";
import type { Happening } from "./happened.ts";
import { gateDefinition } from "./tool-specs.ts";
import { endSpan, startSpan } from "../observe/tracing.ts";

/** What the verification step reads. */
export type VerifyStepInput = Pick<ClaimContext, "agent" | "binding" | "agentId" | "workerId" | "epoch" | "abort" | "spans"> & {
  deps: Pick<HostDeps, "clock" | "verifierBackoffMs" | "verification">;
  claim: { task: { input?: unknown } | null };
};

/** The gate's answer: its events, then its machine event; `outcome` names it for the log. */
export interface Verified {
  happened: Happening[];
  outcome: "passed" | "rejected" | "error";
  startedAt: number;
}

/** Judges the candidate of the turn in `context`: what the gate's answer makes happen. */
export async function verifyStep(ctx: VerifyStepInput, context: AgentContext): Promise<Verified> {
  const { deps, agentId, workerId, epoch, claim } = ctx;
  const agent = gateDefinition(ctx.binding, ctx.agent);
  const { clock } = deps;
  const vSpan = startSpan("gatehouse.verification", ctx.spans.ids, ctx.spans.turn);
  const startedAt = clock.now();
  const result = await runVerification({
    agent, agentId, turnId: context.turnId!, context, workerId, epoch,
    input: claim.task?.input ?? null,
    now: () => clock.now(), backoffMs: deps.verifierBackoffMs, signal: ctx.abort.signal,
    hooks: deps.verification,
  });
  const outcome = result.event.type === "VERIFY_PASSED" ? "passed" : result.event.type === "VERIFY_REJECTED" ? "rejected" : "error";
  endSpan(vSpan, { "gatehouse.verification_outcome": outcome }, outcome === "error" ? "verifier error" : undefined);
  // Cause before effect: the gate's events, then the transition they explain.
  return { happened: [{ kind: "log-all", events: result.before }, { kind: "event", event: result.event }], outcome, startedAt };
}
