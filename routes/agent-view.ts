/**
 * The public view of an agent (`GET /v1/agents/:agentId`): its head record
 * plus what the snapshot's context says about the current turn. An agent
 * whose first task is not claimed yet has no snapshot; it reads as the
 * machine's initial context. `lease` says which worker holds the agent and
 * until when, so an agent that waits for a dead worker's lease explains
 * itself (docs/operations.md, "A stuck-looking agent"). Times are ISO 8601 (UTC); the `…Ms` twins keep
 * the raw milliseconds.
 *
 * Invariants:
 * - `activity` says what the turn is doing, read from the stored state, so
 *   any process serves it (no worker is asked): the host commits before each
 *   effect (a turn's start before its first model call, a step's calls
 *   before their dispatch, a step before its verification; actors/host/effects.ts),
 *   so the stored state names the effect under way and `updatedAt` (the last
 *   commit or claim) when it began. `running`/`revising`: `model`, step
 *   `step + 1`; `waiting-tools`: `tool`, with the ids of every call not yet
 *   answered (in-process calls running, external calls awaited); `verifying`:
 *   `verifier`. At rest (idle, done, failed) it is null. One
 *   window reads one effect behind: the model step that follows
 *   `retrySafe` tools runs before their results are committed, so it reads
 *   as `tool` until its commit.
 * - `queuedTasks` lists the first queued tasks in the order they will start
 *   (store invariant `delayed-tasks`), a delayed one with its `runAt`, so a
 *   person sees what waits and until when.
 * - `waiting` says why the first queued task has not started (routes/waiting.ts),
 *   `concurrencyKey` the active turn's key; each queued task shows its key and priority.
 * - `definition` is the definition the current (or last) turn runs under:
 *   the binding (`agent`), or the target of the turn's last handoff
 *   (machine context `definition`, actors/steps/handoff.ts).
 * - A pending call whose result the store accepted (`POST …/tool-results`,
 *   or the watchdog's timeout) reads `delivered: true` at once, from the
 *   store's record of the call, until the worker applies it and the call
 *   leaves `pendingToolCalls`. The record is read only when the agent has
 *   pending calls and unapplied mail.
 * - A pending call that needs a person's approval carries `approval`, read
 *   from the store's record of the call (the decision lives there, store
 *   invariant `first-decision-wins`): `pending` until the first decision,
 *   then `approved` (the call runs, or waits for its external result),
 *   `rejected` or `timeout` (until the worker applies that error). Its
 *   `deadlineMs` is the approval's deadline while it waits, and the
 *   call's own (moved by the approval, from the record) once approved. Approved with
 *   edited arguments, `args` are the edited ones (what runs, what an
 *   external worker answers) and `proposedArgs` the model's.
 * - Who acted on a pending call, from the same record (common/by.ts):
 *   `decidedBy` (who decided its approval) and `deliveredBy` (who delivered
 *   its result over HTTP), each present once recorded.
 */
import { pinnedVersion } from "../store/types.ts";
import type { By } from "../common/by.ts";
import { SnapshotError } from "../errors/errors.ts";
import { initialContext, turnStarted } from "../machines/agent.ts";
import { checkSnapshot } from "../machines/persist.ts";
import type { AgentContext } from "../machines/types.ts";
import type { QueuedTask, ScheduleRecord, Store } from "../store/port.ts";
import type { AgentHead, ApprovalStatus } from "../store/types.ts";
import { ProblemError } from "./problem.ts";
import { type AgentView, agentState } from "./schemas.ts";
import type { Waiting } from "./waiting.ts";

const iso = (ms: number) => new Date(ms).toISOString();
const isoOrNull = (ms: number | null) => (ms === null ? null : iso(ms));

/**
 * The context of the stored state. A turn whose claim stored its start and whose first commit has not
 * applied yet (the head says `running` for a turn the snapshot does not hold, store/port.ts invariant
 * `turn-start`) reads as that turn started with nothing done.
 */
function contextOf(head: AgentHead): AgentContext {
  let ctx: AgentContext;
  if (head.snapshot === null || head.snapshot === undefined) ctx = initialContext();
  else {
    try {
      ctx = checkSnapshot(head.snapshot).context;
    } catch (err) {
      if (err instanceof SnapshotError) throw new ProblemError("snapshot_unrestorable", err.message);
      throw err;
    }
  }
  if (head.state !== "running" || head.activeTurnId === null || ctx.turnId === head.activeTurnId) return ctx;
  return { ...ctx, ...turnStarted(ctx, { turnId: head.activeTurnId, config: ctx.config }) };
}

/** What the store's records of the pending calls add to the snapshot: results not applied yet, approval decisions. */
export interface CallRecordsView {
  /** Pending calls whose result the store accepted but the worker has not applied yet. */
  delivered: ReadonlySet<string>;
  /** The approval status of pending calls that need one (store/types.ts ToolCallApproval). */
  approvals: ReadonlyMap<string, ApprovalStatus>;
  /** The arguments a person edited when approving a pending call (ToolCallApproval `args`). */
  edited?: ReadonlyMap<string, Record<string, unknown>>;
  /** The deadline of approved pending calls, which the approval moved (the snapshot keeps the approval's). */
  approvedDeadlines?: ReadonlyMap<string, number>;
  /** Who decided a pending call's approval, and who delivered its result, where the record says (common/by.ts). */
  by?: ReadonlyMap<string, { decidedBy?: By; deliveredBy?: By }>;
}

/**
 * Reads the records of the agent's pending calls when they can tell more than the snapshot: unapplied
 * mail (a delivered result), or a call that needs approval (its decision lives in the record).
 */
export async function deliveredCalls(store: Pick<Store, "getToolCalls">, head: AgentHead): Promise<CallRecordsView> {
  const none = { delivered: new Set<string>(), approvals: new Map<string, ApprovalStatus>() };
  if (head.activeTurnId === null) return none;
  const pending = Object.values(contextOf(head).pending);
  if (pending.length === 0 || (head.pendingMail <= 0 && !pending.some((p) => p.approval))) return none;
  const records = await store.getToolCalls(head.agentId, head.activeTurnId);
  return {
    delivered: new Set(records.filter((r) => r.status === "resolved").map((r) => r.toolCallId)),
    approvals: new Map(records.flatMap((r) => (r.approval ? [[r.toolCallId, r.approval.status] as const] : []))),
    edited: new Map(records.flatMap((r) => (r.approval?.args !== undefined ? [[r.toolCallId, r.approval.args] as const] : []))),
    approvedDeadlines: new Map(records.flatMap((r) => (r.approval?.status === "approved" ? [[r.toolCallId, r.deadline] as const] : []))),
    by: new Map(records.map((r) => [r.toolCallId, {
      ...(r.approval?.by !== undefined ? { decidedBy: r.approval.by } : {}),
      ...(r.by !== undefined ? { deliveredBy: r.by } : {}),
    }])),
  };
}

/** The view of the pending calls: the snapshot's, with what the store's records add (see the header). */
function pendingCalls(ctx: AgentContext, records: CallRecordsView): AgentView["pendingToolCalls"] {
  const { delivered, approvals, edited, approvedDeadlines } = records;
  return Object.entries(ctx.pending).map(([toolCallId, p]) => {
    // An approval moved the call's deadline to `decidedAt + runMs`: the record has it, the snapshot the approval's.
    const deadline = approvedDeadlines?.get(toolCallId) ?? p.deadline;
    return {
      toolCallId,
      name: p.name,
      // What the call runs with: a person's edit replaces the model's proposal, kept as `proposedArgs`.
      args: edited?.get(toolCallId) ?? p.args,
      ...(edited?.has(toolCallId) ? { proposedArgs: p.args } : {}),
      external: p.external,
      deadline: iso(deadline),
      deadlineMs: deadline,
      delivered: delivered.has(toolCallId),
      ...(p.approval ? { approval: approvals.get(toolCallId) ?? "pending" } : {}),
      ...records.by?.get(toolCallId),
      ...(p.event !== undefined ? { event: p.event } : {}),
    };
  });
}

/** What the turn is doing, from the stored state (see the header); null at rest. */
export function activityOf(head: AgentHead, ctx: AgentContext): AgentView["activity"] {
  const since = { since: iso(head.updatedAt), sinceMs: head.updatedAt };
  switch (head.state) {
    case "running":
    case "revising":
      return { kind: "model", step: ctx.step + 1, ...since };
    case "waiting-tools":
      return { kind: "tool", step: ctx.step, ...since, toolCallIds: Object.keys(ctx.pending) };
    case "verifying":
      return { kind: "verifier", step: ctx.step, ...since };
    default:
      return null;
  }
}

export function agentView(
  head: AgentHead,
  records: CallRecordsView = { delivered: new Set(), approvals: new Map() },
  queued: readonly QueuedTask[] = [],
  schedules: readonly ScheduleRecord[] = [],
  waiting?: Waiting,
  /** Whether some live process runs turns of a version of this agent's name (actors/host/versions.ts). */
  versionLive: (name: string, version: string) => boolean = () => true,
): AgentView {
  const ctx = contextOf(head);
  const pin = pinnedVersion(head);
  const v = ctx.verification;
  const gateUsed = v.lastOutcome !== null || v.candidate !== null;
  return {
    agentId: head.agentId,
    agent: head.agentName,
    definition: ctx.definition ?? head.agentName,
    state: agentState(head.state),
    turnId: head.activeTurnId ?? ctx.turnId,
    activeTurnId: head.activeTurnId,
    epoch: head.epoch,
    version: head.version,
    pendingTasks: head.pendingTasks,
    queuedTasks: queued.map((t) => ({
      turnId: t.turnId, enqueuedAt: iso(t.enqueuedAt), ...(t.runAt !== undefined ? { runAt: iso(t.runAt) } : {}),
      ...(t.concurrencyKey !== undefined ? { concurrencyKey: t.concurrencyKey } : {}), ...(t.priority !== undefined ? { priority: t.priority } : {}),
    })),
    ...(pin !== null && !versionLive(head.agentName, pin) ? { waiting: { for: "version" as const, version: pin } } : waiting !== undefined ? { waiting } : {}),
    ...(head.activeTurnId !== null && head.currentTask?.concurrencyKey !== undefined ? { concurrencyKey: head.currentTask.concurrencyKey } : {}),
    ...(head.activeTurnId !== null && head.currentTask?.priority !== undefined ? { priority: head.currentTask.priority } : {}),
    lease: head.leaseOwner === null ? null : { workerId: head.leaseOwner, until: iso(head.leaseUntil), untilMs: head.leaseUntil },
    runnableAt: isoOrNull(head.runnableAt),
    runnableAtMs: head.runnableAt,
    activity: activityOf(head, ctx),
    pendingToolCalls: pendingCalls(ctx, records),
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
    ...(pin !== null ? { turnVersion: pin } : {}),
    ...(schedules.length > 0
      ? {
        schedules: schedules.map((r) => ({
          scheduleId: r.scheduleId,
          ...(r.spec.cron !== undefined ? { cron: r.spec.cron } : {}),
          ...(r.spec.everyMs !== undefined ? { everyMs: r.spec.everyMs } : {}),
          ...(r.spec.timezone !== undefined ? { timezone: r.spec.timezone } : {}),
          nextRunAt: isoOrNull(r.nextTick),
          ...(r.spec.paused === true ? { paused: true } : {}),
        })),
      }
      : {}),
  };
}
