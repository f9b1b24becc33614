/**
 * Tool calls that need a person's approval (tools/define.ts `needsApproval`),
 * as a claim sees them. The statechart has no state for them: such a call is
 * one more pending call of `waiting-tools` (machines/types.ts PendingCall
 * `approval`), and the decision lives in the store's record of the call
 * (store/port.ts invariants `first-decision-wins`, `approval-before-result`).
 *
 * Invariants:
 * - A call that needs approval is recorded with its pending approval, and
 *   logged as `approval_requested`, by the commit of its step: before anyone
 *   could decide on it or anything could run it. While it waits its deadline
 *   is the approval's (`approvalTimeoutMs`, default DEFAULT_APPROVAL_TIMEOUT_MS,
 *   7 days); no claim is held meanwhile, and the call's own window (`runMs`)
 *   starts when a person approves it.
 * - An in-process call that needs approval runs only once the store's record
 *   says `approved` (`ClaimContext.approved`: from the claim's `approval`
 *   mail, else read from the store at the claim's start by the inbox,
 *   actors/host/inbox.ts), with the arguments the person edited if there
 *   are (`ClaimContext.approved` `args`; the proposed ones stay in the
 *   machine's pending call and the store's record), and then at most
 *   once like any call (the commit that resolves it is fenced). A rejected
 *   or timed-out call reaches the turn as a tool result (its error outcome)
 *   and never runs.
 * - A claim whose in-process calls all wait for a decision hands the agent
 *   back (actors/host/effects.ts `needsMe`); the decision's mail rings it.
 * - A delegation (an agent tool's call, agents/agent-tool.ts) that needs
 *   approval is recorded like any, but its child's task is enqueued only once
 *   this claim knows it approved (actors/delegation/claim-hooks.ts
 *   `afterCommit`, the same `ClaimContext.approved`); rejected or timed out,
 *   no child is ever created. A handoff (agents/handoff.ts) is an in-process
 *   call: it transfers only once approved.
 * - A predicate that throws asks for approval; calls the tool runner refuses
 *   anyway (bad arguments, refused preconditions, a tool not offered, a
 *   delegation past the nesting bound) are never held for approval.
 */
import { checkPreconditions } from "../../contracts/preconditions.ts";
import type { ModelToolCall, PendingCall } from "../../machines/types.ts";
import { type AnyTool, DEFAULT_APPROVAL_TIMEOUT_MS } from "../../tools/define.ts";
import { prepareArgs } from "../../tools/specs.ts";
import type { ClaimContext } from "../claim/context.ts";

/** The calls of a step with `approval` set (and the approval's deadline) where their tool asks for it; `runMs` by id. */
export async function askApprovals(
  ctx: Pick<ClaimContext, "agent" | "agentId">, calls: ModelToolCall[], tId: string, now: number,
): Promise<{ calls: ModelToolCall[]; runMs: Map<string, number> }> {
  const runMs = new Map<string, number>();
  const out: ModelToolCall[] = [];
  for (const c of calls) {
    const tool = ctx.agent.offeredTools.find((t) => t.name === c.name);
    if (!tool?.needsApproval || (!c.external && !tool.execute) || checkPreconditions(tool, c.args)) {
      out.push(c);
      continue;
    }
    const prepared = prepareArgs(tool, c.args);
    if (!prepared.ok || !(await needsApproval(tool.needsApproval, prepared.args as Record<string, unknown>, { agentId: ctx.agentId, turnId: tId, toolCallId: c.id }))) {
      out.push(c);
      continue;
    }
    const window = Math.max(1, c.deadline - now);
    runMs.set(c.id, window);
    out.push({ ...c, approval: true, deadline: now + (tool.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS) });
  }
  return { calls: out, runMs };
}

async function needsApproval(rule: NonNullable<AnyTool["needsApproval"]>, args: Record<string, unknown>, call: { agentId: string; turnId: string; toolCallId: string }): Promise<boolean> {
  if (typeof rule === "boolean") return rule;
  try {
    return (await rule(args, call)) !== false;
  } catch {
    // A predicate that cannot answer asks: running a call nobody approved is the one outcome to avoid.
    return true;
  }
}

/** True while the pending call `id` waits for a person's decision (as far as this claim knows). */
export function awaitsApproval(ctx: Pick<ClaimContext, "approved">, id: string, p: PendingCall): boolean {
  return p.approval === true && !ctx.approved.has(id);
}
