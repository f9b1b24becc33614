/**
 * The public view of an agent (`GET /v1/agents/:agentId`): its head record
 * plus what the snapshot's context says about the current turn. An agent
 * whose first task is not claimed yet has no snapshot; it reads as the
 * machine's initial context. `lease` says which worker holds the agent and
 * until when, so an agent that waits for a dead worker's lease explains
 * itself (docs/operations.md, "A stuck-looking agent"). Times are ISO 8601 (UTC); the `…Ms` twins keep
 * the raw milliseconds.
 */
import { SnapshotError } from "../errors/errors.ts";
import { initialContext } from "../machines/agent.ts";
import { checkSnapshot } from "../machines/persist.ts";
import type { AgentContext } from "../machines/types.ts";
import type { AgentHead } from "../store/types.ts";
import { ProblemError } from "./problem.ts";
import { type AgentView, agentState } from "./schemas.ts";

const iso = (ms: number) => new Date(ms).toISOString();
const isoOrNull = (ms: number | null) => (ms === null ? null : iso(ms));

function contextOf(head: AgentHead): AgentContext {
  if (head.snapshot === null || head.snapshot === undefined) return initialContext();
  try {
    return checkSnapshot(head.snapshot).context;
  } catch (err) {
    if (err instanceof SnapshotError) throw new ProblemError("snapshot_unrestorable", err.message);
    throw err;
  }
}

export function agentView(head: AgentHead): AgentView {
  const ctx = contextOf(head);
  const v = ctx.verification;
  const gateUsed = v.lastOutcome !== null || v.candidate !== null;
  return {
    agentId: head.agentId,
    agent: head.agentName,
    state: agentState(head.state),
    turnId: head.activeTurnId ?? ctx.turnId,
    activeTurnId: head.activeTurnId,
    epoch: head.epoch,
    version: head.version,
    pendingTasks: head.pendingTasks,
    lease: head.leaseOwner === null ? null : { workerId: head.leaseOwner, until: iso(head.leaseUntil), untilMs: head.leaseUntil },
    runnableAt: isoOrNull(head.runnableAt),
    runnableAtMs: head.runnableAt,
    pendingToolCalls: Object.entries(ctx.pending).map(([toolCallId, p]) => ({
      toolCallId,
      name: p.name,
      args: p.args,
      external: p.external,
      deadline: iso(p.deadline),
      deadlineMs: p.deadline,
    })),
    ...(ctx.output !== null && ctx.output !== undefined ? { output: ctx.output } : {}),
    ...(ctx.error !== null ? { error: ctx.error } : {}),
    ...(gateUsed
      ? {
        verification: {
          maxAttempts: v.maxAttempts,
          attemptsUsed: v.attemptsUsed,
          lastOutcome: v.lastOutcome,
          lastAttemptAt: isoOrNull(v.lastAttemptAt),
          lastCandidateHash: v.lastCandidateHash,
          retryAt: isoOrNull(v.retryAt),
          lastRejection: v.lastRejection,
        },
      }
      : {}),
    usage: ctx.usage,
    turnUsage: ctx.turnUsage,
    createdAt: iso(head.createdAt),
    updatedAt: iso(head.updatedAt),
    updatedAtMs: head.updatedAt,
  };
}
