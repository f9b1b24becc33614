/**
 * Records kept by a store. Everything here is plain JSON so every adapter
 * (memory, Redis over TCP, Upstash over REST) stores the same bytes.
 */
import type { AfterExecution, Outcome } from "../common/outcome.ts";
import type { ContractValidation } from "../common/contract-validation.ts";
import type { SpendLimit } from "../common/spend-limit.ts";

/**
 * Per-task options given at enqueue time. Stored as they are, so their field
 * names are a stored format: `verifyMaxAttempts` holds the task body's
 * `verifyAttempts`, `budget` its `spendLimit` (the names stored tasks have
 * always had; event logs and inboxes written before read the same).
 */
export interface TaskOptions {
  /** The task's `verifyAttempts`: overrides the agent's verifier attempts for this turn. */
  verifyMaxAttempts?: number;
  /** The task's `spendLimit`: per field it lowers the agent's, never raises it, unless `budgetMayRaise` (common/spend-limit.ts). */
  budget?: SpendLimit;
  /**
   * The task's spend-limit fields replace the agent's, so they may raise them.
   * The tasks route sets it only when the enqueuing request had the `admin`
   * verb (routes/agents.ts); code that enqueues through the store sets it
   * itself.
   */
  budgetMayRaise?: true;
  /** Set on a task a parent agent delegated (actors/delegation/delegation.ts): where its result goes. */
  delegation?: DelegationLink;
  /**
   * Set by a fork (routes/fork.ts) on the turn it continues: the in-process calls that were
   * pending at the fork point. The fork answers each with the error outcome `forked_unresolved`
   * instead of running the tool again under the same id (actors/steps/tool-runner.ts).
   */
  forkedUnresolved?: string[];
}

/** The parent end of a delegated task. */
export interface DelegationLink {
  parentAgentId: string;
  /** The parent's definition name and the agent tool it called (to find the call's `deliverable`). */
  parentAgentName: string;
  toolName: string;
  parentTurnId: string;
  toolCallId: string;
  /** 1 for a child of a top-level agent, 2 for a grandchild, … */
  depth: number;
}

/**
 * A task waiting in (or taken from) an agent's inbox. Stored without its
 * input (see store/inputs.ts): `input` is present in the task a claim hands
 * out, absent in `AgentHead.currentTask`.
 */
export interface InboxTask {
  turnId: string;
  input?: unknown;
  options: TaskOptions;
  enqueuedAt: number;
  idempotencyKey?: string;
  /** A delayed task: not claimed before this time (ms; store/port.ts invariant `delayed-tasks`). */
  runAt?: number;
  /** The task's concurrency key (store/port.ts invariant `concurrency-keys`); absent: the default lane. */
  concurrencyKey?: string;
  /** The task's priority in seconds ahead, 0-86,400 (store/port.ts invariant `priorities`); absent: 0. */
  priority?: number;
}

/**
 * Mail: inbox items for the agent's active turn. Mail is acknowledged by the
 * commit that applied it (`ackMailThrough`), never at claim time, so a worker
 * that dies after claiming loses nothing.
 */
export type MailItem =
  | {
    kind: "tool_result";
    seq: number;
    at: number;
    turnId: string;
    toolCallId: string;
    outcome: Outcome;
    afterExecution: AfterExecution;
    source: ToolResultSource;
  }
  /**
   * `turnId`: the turn the cancel was accepted for (absent only in mail
   * written before cancels named their turn).
   */
  | { kind: "cancel"; seq: number; at: number; reason: string; turnId?: string }
  /**
   * A person approved a call that waited for approval (store/port.ts invariant
   * `first-decision-wins`): the worker may now run it (in-process) or wait for
   * its result (external). `deadline`: the call's deadline from the decision on;
   * `args`: the arguments a person edited, which the call runs with instead of the proposed ones.
   */
  | { kind: "approval"; seq: number; at: number; turnId: string; toolCallId: string; args?: Record<string, unknown>; deadline: number };

/**
 * `delegation`: a child agent's result delivered to its parent (actors/delegation/delegation.ts);
 * `approval`: the error outcome of a rejected approval (store/port.ts invariant `first-decision-wins`).
 */
export type ToolResultSource = "http" | "watchdog" | "inline" | "delegation" | "approval";

/** The per-agent head record: small, compared-and-set on every commit. */
export interface AgentHead {
  agentId: string;
  /** Name of the agent definition the id is bound to (first task binds it). */
  agentName: string;
  workerTarget: string;
  createdAt: number;
  updatedAt: number;
  /** The turn the agent is working on; null between turns. */
  activeTurnId: string | null;
  /** The task of the active turn (kept until the turn ends, for recovery). */
  currentTask: InboxTask | null;
  /** Fencing token, incremented by every successful claim. */
  epoch: number;
  /** Snapshot version, incremented by every commit. */
  version: number;
  /** Persisted XState snapshot (no history: messages and events live apart). */
  snapshot: unknown | null;
  /** Machine state value of `snapshot`, kept apart for cheap reads. */
  state: string;
  leaseOwner: string | null;
  leaseUntil: number;
  /** When the agent needs a worker even without new inbox items; null = only on mail. */
  runnableAt: number | null;
  pendingTasks: number;
  pendingMail: number;
  /** Messages ever appended (logical count; trimmed ones included). */
  messageCount: number;
  lastEventId: number;
  /** Events 1..n were trimmed (0: none); the log starts at n + 1 (store/port.ts invariant `retention`). */
  eventsTrimmedThrough: number;
  /** Messages 0..n-1 were dropped (0: none). */
  messagesTrimmedThrough: number;
  /** The definition version `versionTurn` started under (store/port.ts invariant `turn-versions`); absent: none written. */
  turnVersion?: string | null;
  /** The turn `turnVersion` belongs to: the pin holds while this is `activeTurnId`. */
  versionTurn?: string | null;
}

/** The definition version the agent's active turn is pinned to (store/port.ts invariant `turn-versions`), or null. */
export function pinnedVersion(head: Pick<AgentHead, "activeTurnId" | "turnVersion" | "versionTurn">): string | null {
  return head.activeTurnId !== null && head.versionTurn === head.activeTurnId && typeof head.turnVersion === "string" ? head.turnVersion : null;
}

/** A tool call, recorded before it is dispatched. */
export interface ToolCallRecord {
  agentId: string;
  turnId: string;
  toolCallId: string;
  name: string;
  args: unknown;
  external: boolean;
  deadline: number;
  recordedAt: number;
  status: "pending" | "resolved";
  outcome?: Outcome;
  afterExecution?: AfterExecution;
  source?: ToolResultSource;
  resolvedAt?: number;
  /** A call of an agent tool: only its child's delivery or the watchdog resolves it (store/port.ts invariant `delegated-by-child`). */
  delegated?: boolean;
  /** The contract check of the result (store/port.ts invariant `contract-validation`); set once resolved. */
  contractValidation?: ContractValidation;
  /** Who delivered the result over HTTP (common/by.ts); absent for the runtime's own results and for those stored before `by`. */
  by?: string | null;
  /**
   * Set on a call that needs a person's approval before it runs (tools/define.ts `needsApproval`;
   * store/port.ts invariant `first-decision-wins`). While it is pending, `deadline` is the
   * approval's deadline.
   */
  approval?: ToolCallApproval;
  /** The named event the call waits for (tools/define.ts `waitFor`; store/port.ts invariant `named-event-waits`). */
  event?: string;
}

/** The approval of one tool call (store/port.ts invariant `first-decision-wins`). */
export interface ToolCallApproval {
  /** `pending` until the first decision; every other status is final. */
  status: ApprovalStatus;
  /** How long the call may take once approved (ms): the decision moves its deadline to `decidedAt + runMs`. */
  runMs: number;
  decidedAt?: number;
  /** The reason given with the decision (a rejection's reaches the model). */
  reason?: string;
  /** Approved with edited arguments: what the call runs with (the record's `args` stay the proposed ones). */
  args?: Record<string, unknown>;
  /** Who decided (common/by.ts); absent for the watchdog's timeout and for decisions stored before `by`. */
  by?: string | null;
}

export type ApprovalStatus = "pending" | "approved" | "rejected" | "timeout";
