/**
 * The inbox records a claim took, applied as machine events: the task of
 * the turn (`TASK_STARTED`) and the mail, oldest first (greedy batch). They
 * ride with the claim's first commit, which acknowledges the mail: the
 * commit of the turn's first effect when there is one (actors/host/effects.ts).
 * The turn reads `running` from the moment its claim is taken all the same:
 * the claim stored that state (store/port.ts invariant `turn-start`).
 *
 * Invariants:
 * - A task starts a turn only once: not when the snapshot already runs that
 *   turn (a worker died after starting it) or any turn. The head's state
 *   does not decide it: it reads `running` from the claim on, before the
 *   snapshot holds the turn (a claim that ended before its first commit
 *   stored nothing of the start, so the task is applied as `TASK_STARTED`
 *   again, and the log holds it once).
 * - A cancel applies only to the turn it was accepted for, never to another
 *   one; mail that fits no waiting call or turn is logged as `mail_ignored`.
 * - An `approval` mail lets the approved call run in this claim (actors/steps/approvals.ts),
 *   with the arguments a person edited if there are; it changes no snapshot.
 * - A delivered result of an external call a person approved with edited arguments carries
 *   them in its TOOL_RESULT (`editedArgs`), so the model's tool message says what ran.
 * - A tool result of a delegation call carries what the child spent
 *   (actors/delegation/claim-hooks.ts), so the parent's spend includes it.
 */
import { resolveVerifyAttempts, type AnyAgent } from "../../agents/define.ts";
import { normalizeOutcome } from "../../common/outcome.ts";
import type { AgentContext, TurnConfig } from "../../machines/types.ts";
import type { InboxTask } from "../../store/types.ts";
import type { ClaimContext } from "../claim/context.ts";
import { IN_TURN, snap } from "../claim/context.ts";
import { delegatedUsage } from "../delegation/claim-hooks.ts";
import { agentToolOf } from "../delegation/delegation.ts";
import { apply } from "./apply.ts";
import { awaitsApproval } from "../steps/approvals.ts";
import { type Happening, log } from "../steps/happened.ts";
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
 * Applies the claim's task (new, or carried over from a worker that died before its first commit) and its mail.
 */
export async function applyInbox(ctx: ClaimContext): Promise<void> {
  // A new turn starts under the agent's own definition, whatever the last turn was handed off to.
  const { claim, binding } = ctx;
  const { clock } = ctx.deps;
  const turnAtClaim = snap(ctx).context.turnId;
  let startedHere = false;
  if (claim.task && turnAtClaim !== claim.task.turnId && !IN_TURN.has(snap(ctx).value)) {
    startedHere = true;
    await apply(ctx, [{
      kind: "event",
      event: {
        type: "TASK_STARTED", at: clock.now(), turnId: claim.task.turnId, input: claim.task.input, config: turnConfig(binding, claim.task),
        version: binding.version,
      },
    }]);
  }
  for (const m of claim.mail) {
    const ack: Happening = { kind: "ack-mail", seq: m.seq };
    if (m.kind === "cancel") await apply(ctx, [ack, cancelOf(ctx, m, startedHere ? turnAtClaim : undefined)]);
    else if (m.kind === "approval") await apply(ctx, [ack, ...approvalOf(ctx, m)]);
    else await apply(ctx, [ack, ...(await toolResultOf(ctx, m))]);
  }
  const { value, context } = snap(ctx);
  await loadApprovals(ctx, value, context);
}

type Mail = ClaimContext["claim"]["mail"][number];

/**
 * A cancel applies to the turn it was accepted for, never to another one. Mail written before cancels
 * named their turn was accepted while the turn active at this claim's start ran (`turnAtClaim` when this
 * claim started a new turn): it belongs to that turn.
 */
function cancelOf(ctx: ClaimContext, m: Extract<Mail, { kind: "cancel" }>, turnAtClaim: string | null | undefined): Happening {
  const { value, context } = snap(ctx);
  const aimedAt = m.turnId ?? (turnAtClaim !== undefined ? turnAtClaim : context.turnId);
  if (aimedAt === context.turnId && IN_TURN.has(value)) return { kind: "event", event: { type: "CANCEL", at: m.at, reason: m.reason } };
  return log("mail_ignored", {
    seq: m.seq, kind: m.kind, state: value, turnId: aimedAt, activeTurnId: context.turnId,
    why: aimedAt === context.turnId ? "not_in_turn" : "turn_finished",
  });
}

/** A person approved a call the turn waits on (actors/steps/approvals.ts): it may run now; any other is logged as ignored. */
function approvalOf(ctx: ClaimContext, m: Extract<Mail, { kind: "approval" }>): Happening[] {
  const { value, context } = snap(ctx);
  if (value === "waiting-tools" && m.turnId === context.turnId && context.pending[m.toolCallId]?.approval) {
    ctx.approved.set(m.toolCallId, { deadline: m.deadline, ...(m.args !== undefined ? { args: m.args } : {}) });
    return [];
  }
  return [log("mail_ignored", { seq: m.seq, kind: m.kind, toolCallId: m.toolCallId, state: value })];
}


/** A tool result for a call the turn waits on; any other is logged as ignored. */
async function toolResultOf(ctx: ClaimContext, m: Extract<Mail, { kind: "tool_result" }>): Promise<Happening[]> {
  const { value, context } = snap(ctx);
  if (value === "waiting-tools" && m.turnId === context.turnId && m.toolCallId in context.pending) {
    const callName = context.pending[m.toolCallId].name;
    const outcome = normalizeOutcome(m.outcome);
    const usage = await delegatedUsage(ctx, context, m.toolCallId);
    const editedArgs = m.source === "http" ? await editedArgsOf(ctx, context, m.toolCallId) : undefined;
    const result: Happening = {
      kind: "event",
      event: {
        type: "TOOL_RESULT", at: m.at, toolCallId: m.toolCallId, outcome, afterExecution: m.afterExecution, ...(usage ? { usage } : {}),
        ...(editedArgs ? { editedArgs } : {}),
      },
    };
    return outcome.ok && m.source !== "watchdog" ? [result, { kind: "tool-used", name: callName }] : [result];
  }
  return [log("mail_ignored", { seq: m.seq, kind: m.kind, toolCallId: m.toolCallId, state: value })];
}

/**
 * The arguments a person edited when approving the external call `id` (POST …/approvals `args`), which
 * its delivered result answers: from this claim's approval mail, else the store's record (one read, only
 * for a call that needed approval).
 */
async function editedArgsOf(ctx: ClaimContext, context: AgentContext, id: string): Promise<Record<string, unknown> | undefined> {
  if (!context.pending[id]?.approval || context.turnId === null) return undefined;
  const known = ctx.approved.get(id);
  if (known) return known.args;
  const r = (await ctx.deps.store.getToolCalls(ctx.agentId, context.turnId)).find((c) => c.toolCallId === id);
  return r?.approval?.status === "approved" ? r.approval.args : undefined;
}

/**
 * Fills `ctx.approved` from the store for pending calls of the turn that wait for approval and whose
 * approval this claim's mail did not bring (an earlier claim acknowledged it, then stopped before the
 * call ran). One read, and only when such a call exists.
 */
async function loadApprovals(ctx: ClaimContext, state: string, context: AgentContext): Promise<void> {
  if (state !== "waiting-tools" || context.turnId === null) return;
  // In-process calls run, delegations dispatch, once approved; an external tool's result needs no claim to know it.
  const held = (id: string, p: AgentContext["pending"][string]) => (!p.external || agentToolOf(ctx.agent, p.name) !== undefined) && awaitsApproval(ctx, id, p);
  if (!Object.entries(context.pending).some(([id, p]) => held(id, p))) return;
  for (const r of await ctx.deps.store.getToolCalls(ctx.agentId, context.turnId)) {
    if (r.status === "pending" && r.approval?.status === "approved" && r.toolCallId in context.pending) {
      ctx.approved.set(r.toolCallId, { deadline: r.deadline, ...(r.approval.args !== undefined ? { args: r.approval.args } : {}) });
    }
  }
}
