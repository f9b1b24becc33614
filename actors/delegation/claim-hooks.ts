/**
 * Delegation at the named points of a claim (actors/host/): the claim's
 * delegation settings when it starts, the child's spend read when a
 * delegated result is applied, and the effects on other agents after every
 * applied commit. The rules themselves (child ids, idempotent dispatch,
 * push and pull) are in actors/delegation/delegation.ts.
 *
 * Invariants (docs/contracts.md, "Delegation"):
 * - A call of an agent tool is recorded like an external call; the child's
 *   task is enqueued only after that commit applied (`afterCommit`) and,
 *   when the call needs approval, only by a claim that knows it approved, and
 *   again (idempotently) by every claim that releases the parent while it
 *   waits, which also pulls the results of children whose turns ended.
 * - The commit that ends a delegated turn is followed by the push of its
 *   result to the parent; children of calls the parent stopped waiting for
 *   are cancelled after the commit that stopped waiting.
 */
import type { AgentContext } from "../../machines/types.ts";
import type { AfterCommitNotes, ClaimContext, Claimed, HostDeps } from "../claim/context.ts";
import { snap } from "../claim/context.ts";
import {
  agentToolOf, cancelChildren, childAgentId, childUsageOf, DEFAULT_DELEGATION_POLL_MS, DEFAULT_MAX_DELEGATION_DEPTH, type DelegatedCall,
  type DelegationDeps, depthOf, isLinkedChild, pendingDelegations, pushChildResult, syncDelegations,
} from "./delegation.ts";

/** The delegation of the turn a claim works on: its link to the parent, its depth, the nesting bound and the pull interval. */
export function claimDelegation(deps: HostDeps, claim: Claimed): ClaimContext["delegation"] {
  const link = claim.task?.options?.delegation;
  return {
    link,
    depth: depthOf(link),
    maxDepth: deps.delegation?.maxDepth ?? DEFAULT_MAX_DELEGATION_DEPTH,
    pollMs: deps.delegation?.pollMs ?? DEFAULT_DELEGATION_POLL_MS,
  };
}

/** Effects on other agents that wait for an applied commit of this one (run by the commit buffer). */
export async function afterCommit(ctx: ClaimContext, released: boolean, notes: AfterCommitNotes): Promise<void> {
  const { agentId, agent, claim } = ctx;
  const { store, clock, logger, agents } = ctx.deps;
  const delegationDeps: DelegationDeps = { store, clock, logger, agents };
  const { link, depth } = ctx.delegation;
  const ended = notes.endedTurn;
  const cancels = notes.abandoned;
  const dispatchNow = notes.delegationsRecorded || released;
  const dispatchedFirst = notes.delegationsRecorded;
  if (ended && link && claim.task && ended.turnId === claim.task.turnId && await isLinkedChild(agentId, link)) {
    await pushChildResult(delegationDeps, agentId, link, ended);
  }
  if (cancels.length > 0) {
    for (const c of cancels) await cancelChildren(delegationDeps, agentId, c.turnId, [c], c.reason);
  }
  const { value, context } = snap(ctx);
  if (dispatchNow && value === "waiting-tools" && context.turnId) {
    // The turn's task's key is the children's unless their definition derives one (agents/concurrency-key.ts).
    const parentKey = (claim.task ?? claim.head.currentTask)?.concurrencyKey;
    // A call that waits for a person's approval is dispatched by the claim that knows it approved (actors/steps/approvals.ts).
    const calls: DelegatedCall[] = pendingDelegations(agent, context).filter(([id]) => context.pending[id].approval !== true || ctx.approved.has(id)).map(([toolCallId, tool, args]) => ({
      parentAgentId: agentId, parentAgentName: agent.name, parentTurnId: context.turnId!, toolCallId, tool, args, depth: depth + 1,
      ...(parentKey !== undefined ? { parentKey } : {}),
    }));
    // Calls recorded by this very commit are new: nothing to pull yet.
    if (calls.length > 0) await syncDelegations(delegationDeps, calls, !dispatchedFirst);
  }
}

/** What the child of a delegation call spent, read when its result is applied (actors/delegation/delegation.ts, 8.). */
export async function delegatedUsage(ctx: ClaimContext, context: AgentContext, toolCallId: string) {
  const { agent, agentId } = ctx;
  const { store, logger } = ctx.deps;
  const p = context.pending[toolCallId];
  if (!p?.external || !agentToolOf(agent, p.name) || !context.turnId) return undefined;
  try {
    return childUsageOf(await store.getAgent(await childAgentId(agentId, context.turnId, toolCallId, p.name)));
  } catch (err) {
    logger.warn("child usage unreadable", { agentId, toolCallId, error: String(err) });
    return undefined;
  }
}

/** When a parent waiting only on external calls is due again: after the pull interval if one of them is a delegation. */
export function delegationPollAt(ctx: ClaimContext, context: AgentContext): number | null {
  return pendingDelegations(ctx.agent, context).length > 0 ? ctx.deps.clock.now() + ctx.delegation.pollMs : null;
}
