/**
 * The inbox records a claim took, applied as machine events: the task of
 * the turn (`TASK_STARTED`) and the mail, oldest first (greedy batch). They
 * ride with the claim's first commit, which acknowledges the mail. When the
 * claim started a new turn that needs an effect, that first commit is one of
 * their own, made before the first effect (actors/host/effects.ts): the turn
 * reads `running` from the moment its claim is taken.
 *
 * Invariants:
 * - A task starts a turn only once: not when the snapshot already runs that
 *   turn (a worker died after starting it) or any turn.
 * - A cancel applies only to the turn it was accepted for, never to another
 *   one; mail that fits no waiting call or turn is logged as `mail_ignored`.
 * - An `approval` mail lets the approved call run in this claim (actors/steps/approvals.ts);
 *   it changes no snapshot.
 * - A tool result of a delegation call carries what the child spent
 *   (actors/delegation/claim-hooks.ts), so the parent's spend includes it.
 */
import { resolveVerifyAttempts, type AnyAgent } from "../../agents/define.ts";
import { normalizeOutcome } from "../../common/outcome.ts";
import type { TurnConfig } from "../../machines/types.ts";
import type { InboxTask } from "../../store/types.ts";
import type { ClaimContext } from "../claim/context.ts";
import { IN_TURN, snap } from "../claim/context.ts";
import { delegatedUsage } from "../delegation/claim-hooks.ts";
import { applyEvent } from "../steps/apply-event.ts";
import { loadApprovals } from "../steps/approvals.ts";
import { completionToolOf } from "../steps/tool-specs.ts";

export function turnConfig(agent: AnyAgent, task: InboxTask): TurnConfig {
  return {
    maxSteps: agent.stepLimit,
    completion: completionToolOf(agent),
    mustEndWith: agent.effectiveMustEndWith,
    verifyMaxAttempts: resolveVerifyAttempts(agent, task.options.verifyMaxAttempts),
    maxVerifierErrors: agent.maxVerifierErrors ?? 3,
  };
}

/**
 * Applies the claim's task (new, or carried over from a worker that died before starting it) and its mail.
 * True when the task started a new turn here (`TASK_STARTED` applied).
 */
export async function applyInbox(ctx: ClaimContext): Promise<boolean> {
  // A new turn starts under the agent's own definition, whatever the last turn was handed off to.
  const { claim, binding } = ctx;
  const { clock } = ctx.deps;
  const turnAtClaim = snap(ctx).context.turnId;
  let startedHere = false;
  if (claim.task && turnAtClaim !== claim.task.turnId && !IN_TURN.has(snap(ctx).value)) {
    startedHere = true;
    applyEvent(ctx, {
      type: "TASK_STARTED",
      at: clock.now(),
      turnId: claim.task.turnId,
      input: claim.task.input,
      config: turnConfig(binding, claim.task),
    });
  }
  for (const m of claim.mail) {
    ctx.commit.ackMail(m.seq);
    if (m.kind === "cancel") applyCancel(ctx, m, startedHere ? turnAtClaim : undefined);
    else if (m.kind === "approval") applyApproval(ctx, m);
    else await applyToolResult(ctx, m);
  }
  const { value, context } = snap(ctx);
  await loadApprovals(ctx, value, context);
  return startedHere;
}

type Mail = ClaimContext["claim"]["mail"][number];

/**
 * A cancel applies to the turn it was accepted for, never to another one. Mail written before cancels
 * named their turn was accepted while the turn active at this claim's start ran (`turnAtClaim` when this
 * claim started a new turn): it belongs to that turn.
 */
function applyCancel(ctx: ClaimContext, m: Extract<Mail, { kind: "cancel" }>, turnAtClaim: string | null | undefined): void {
  const { value, context } = snap(ctx);
  const aimedAt = m.turnId ?? (turnAtClaim !== undefined ? turnAtClaim : context.turnId);
  if (aimedAt === context.turnId && IN_TURN.has(value)) applyEvent(ctx, { type: "CANCEL", at: m.at, reason: m.reason });
  else {
    ctx.commit.emit("mail_ignored", {
      seq: m.seq, kind: m.kind, state: value, turnId: aimedAt, activeTurnId: context.turnId,
      why: aimedAt === context.turnId ? "not_in_turn" : "turn_finished",
    });
  }
}

/** A person approved a call the turn waits on (actors/steps/approvals.ts): it may run now; any other is logged as ignored. */
function applyApproval(ctx: ClaimContext, m: Extract<Mail, { kind: "approval" }>): void {
  const { value, context } = snap(ctx);
  if (value === "waiting-tools" && m.turnId === context.turnId && context.pending[m.toolCallId]?.approval) {
    ctx.approved.set(m.toolCallId, m.deadline);
  } else {
    ctx.commit.emit("mail_ignored", { seq: m.seq, kind: m.kind, toolCallId: m.toolCallId, state: value });
  }
}

/** A tool result for a call the turn waits on; any other is logged as ignored. */
async function applyToolResult(ctx: ClaimContext, m: Extract<Mail, { kind: "tool_result" }>): Promise<void> {
  const { value, context } = snap(ctx);
  if (value === "waiting-tools" && m.turnId === context.turnId && m.toolCallId in context.pending) {
    const callName = context.pending[m.toolCallId].name;
    const outcome = normalizeOutcome(m.outcome);
    const usage = await delegatedUsage(ctx, context, m.toolCallId);
    applyEvent(ctx, {
      type: "TOOL_RESULT", at: m.at, toolCallId: m.toolCallId, outcome, afterExecution: m.afterExecution,
      ...(usage ? { usage } : {}),
    });
    if (outcome.ok && m.source !== "watchdog") await ctx.registry.record(callName, ctx.commit.emit);
  } else {
    ctx.commit.emit("mail_ignored", { seq: m.seq, kind: m.kind, toolCallId: m.toolCallId, state: value });
  }
}
