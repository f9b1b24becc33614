/**
 * The store port: every operation of the turn protocol, each one atomic on
 * one agent's records. The memory adapter runs each method without awaiting
 * in between; the Redis adapters run each as one Lua script on keys that share
 * the agent's hash tag (plus, where named, one cross-agent index).
 *
 * `Store` is the union of four sections, each an interface below with its
 * own invariants in its header:
 *
 * - `TurnProtocol`: enqueue, claim, commit, mail, tool results, cancels,
 *   deadlines and the ready queue (the bell).
 * - `Reads`: the head, turns, tool calls, messages, events, the conversation,
 *   the checkpoint and the agents index.
 * - `Lifecycle`: deletion (and its marker), liveness, closing; retention is
 *   applied by the commit and stated here.
 * - `SideStores`: records beside the agents' own: verdicts, delivery dedup,
 *   rate limits, target leases, the tool registry, forks, definition sets,
 *   and the agents' recurring schedules (`Schedules`).
 * - `Approvals`: a person's decision on a tool call that needs approval.
 * - `NamedEvents`: the calls waiting for a named event.
 *
 * Every invariant has a name, written as a heading `## <name>` in this file;
 * code, tests and docs cite it by that name (store invariant `fencing`),
 * never by a number (tests/store/store-invariant-names.test.ts checks). The
 * invariants every adapter must keep are checked by tests/store/store-conformance.ts.
 * Three hold for every operation:
 *
 * ## caller-clock
 * No operation reads a clock: `now` comes from the caller.
 *
 * ## all-or-nothing
 * An operation that throws (bad input, a value that cannot be copied) leaves
 * the store exactly as it was; event ids stay dense.
 *
 * ## well-formed-text
 * Every string an operation is given (an id, an idempotency key, a task's
 * input, a tool call's arguments, a result, a reason, an event, a message,
 * a snapshot, object keys included) is taken with each lone UTF-16
 * surrogate replaced by U+FFFD (common/well-formed.ts), on every adapter
 * alike: the memory store keeps what the scripts store, and no record
 * holds an escape Redis's Lua `cjson.decode` refuses. Results answer the
 * replaced text (`getAgent("a\ud800").agentId` is `"a\ufffd"`). The HTTP
 * edge refuses such text from clients (docs/http.md, "Errors"); this is for
 * text no client sent, such as a model's.
 */
import type { NewEvent, StoredEvent } from "../common/events.ts";
import type { Message } from "../common/message.ts";
import type { AfterExecution, Outcome } from "../common/outcome.ts";
import type { AgentHead, InboxTask, MailItem, TaskOptions, ToolCallRecord, ToolResultSource } from "./types.ts";
import type { ContractValidation } from "../common/contract-validation.ts";
import type { ToolRoleEntry } from "../common/tool-registry.ts";
import type { LiveChannel } from "./live.ts";
import type { ScheduleSpec } from "../common/schedule.ts";
import type { By } from "../common/by.ts";

export interface EnqueueTaskRequest {
  agentId: string;
  agentName: string;
  workerTarget: string;
  input: unknown;
  options: TaskOptions;
  idempotencyKey?: string;
  /** A fresh turn id proposed by the caller's id source; used unless the key is a duplicate. */
  turnId: string;
  now: number;
  /**
   * A delayed task (invariant `delayed-tasks`): not claimed before this time
   * (ms). A time at or before `now` is stored as `now` (due at once).
   */
  runAt?: number;
  /** Answer `agent_deleted` and write nothing when the id carries a deletion marker (invariant `deletion-marker`): a delegation's dispatch. */
  refuseDeleted?: boolean;
  /**
   * The most delayed tasks (`runAt` after `now`) the agent may hold (invariant `delayed-tasks`): a delayed task
   * beyond it answers `too_many_delayed` and writes nothing. A whole number from 0; absent: `DEFAULT_MAX_DELAYED_TASKS`
   * (store/delayed-bound.ts).
   */
  maxDelayedTasks?: number;
  /**
   * The task's concurrency key (invariants `concurrency-keys`, `fair-lanes`): 1-256 characters, no
   * control characters (checked by the caller: common/concurrency.ts). Absent: the default lane, no limit.
   */
  concurrencyKey?: string;
  /** The task's priority (invariant `priorities`): a whole number of seconds, 0-86,400. Absent: 0. */
  priority?: number;
}

/**
 * Concurrency limits by key (invariant `concurrency-keys`): a key's own entry, else `"*"`;
 * no entry: no limit. Each value is a whole number from 1. Given by the claiming process
 * (its `createGatehouse({ concurrencyLimits })`); every process of a deployment should give the same.
 */
export type ConcurrencyLimits = Readonly<Record<string, number>>;

/** Running and queued counts of one lane (invariant `fair-lanes`), as `concurrencyUsage` answers. */
export interface LaneUsage {
  /** The concurrency key; "" for the default lane (tasks without a key). */
  key: string;
  /** Agents leased now for a turn of this key. */
  running: number;
  /** Agents with due work in this lane that no worker holds (parked at the limit included). */
  queued: number;
  /** Set when the lane is parked at its limit (invariant `concurrency-keys`). */
  atLimit?: boolean;
}

export interface ConcurrencyUsageRequest {
  workerTarget: string;
  now: number;
  /** The limits the caller applies (to say `atLimit`). */
  concurrencyLimits?: ConcurrencyLimits;
  /** At most this many lanes, busiest first (running + queued); the rest are summed into `others`. */
  limit: number;
  /** Only these keys (the agent view and `GET …/tasks/:turnId` ask for one). */
  keys?: readonly string[];
}

export interface ConcurrencyUsage {
  lanes: LaneUsage[];
  /** The sums of the lanes beyond `limit`. */
  others: { lanes: number; running: number; queued: number };
}

export type EnqueueTaskResult =
  | { status: "enqueued"; turnId: string }
  | { status: "duplicate"; turnId: string }
  | { status: "definition_conflict"; boundTo: string }
  | { status: "agent_deleted"; deletedAt: number }
  | { status: "too_many_delayed"; limit: number };

export interface DeliverToolResultRequest {
  agentId: string;
  turnId: string;
  toolCallId: string;
  outcome: Outcome;
  afterExecution: AfterExecution;
  source: ToolResultSource;
  /** The contract check of this result (contracts/check.ts); default: not applied. */
  contractValidation?: ContractValidation;
  /** Who delivered it (common/by.ts): the caller's name, null without one; absent for the runtime's own results. */
  by?: By;
  /** The named event this result is (`POST /v1/events`); logged with the result. */
  event?: string;
  now: number;
}

/** Successful calls (one, or a batch) of a tool role's method (invariant `tool-registry`). */
export interface RecordToolMethodRequest {
  role: string;
  method: string;
  /** Successful calls this request records (a positive safe integer; default 1). */
  calls?: number;
  now: number;
}

export interface RecordToolMethodResult {
  status: "recorded";
  /** What this call added: a new method, a new alias, or nothing (only `calls` and `updatedAt` changed). */
  added: "method" | "alias" | "none";
  entry: ToolRoleEntry;
}

export type DeliverToolResultResult =
  | { status: "accepted"; record: ToolCallRecord }
  | { status: "duplicate"; record: ToolCallRecord }
  | { status: "already_resolved"; record: ToolCallRecord; resolvedBy: ResolvedBy }
  | { status: "not_external" }
  | { status: "delegated_call" }
  | { status: "agent_not_found" }
  | { status: "unknown_call" }
  | { status: "turn_finished" }
  /** The call waits for a person's approval (invariant `approval-before-result`): nothing changed. */
  | { status: "approval_pending" }
  /** The watchdog's timeout of an approved call whose new deadline has not passed (invariant `approval-before-result`). */
  | { status: "not_due" }
  /** A cancel of the call's turn is accepted and not yet applied; a delivery from outside changes nothing (invariant `results-after-cancel`). */
  | { status: "cancel_pending" };

/** How a resolved call was resolved: by the watchdog's timeout, or by a result. */
export type ResolvedBy = "timeout" | "result";

export interface CancelRequest {
  agentId: string;
  /**
   * The turn to cancel. Omitted: the turn active now, fixed at this moment
   * (stored in the cancel mail), so the cancel can never reach a later turn.
   */
  turnId?: string;
  reason: string;
  /** Who asked (common/by.ts), logged on `cancel_requested`. */
  by?: By;
  now: number;
}

export type CancelResult =
  | { status: "accepted"; turnId: string }
  | { status: "agent_not_found" }
  /** No turnId given and no turn is active. */
  | { status: "not_active" }
  /** The named turn ran and ended (or was cancelled while queued). */
  | { status: "turn_finished" }
  /** The named turn is still queued: cancel it with `cancelTask`. */
  | { status: "turn_not_started" }
  | { status: "turn_not_found" };

export interface CancelTaskRequest {
  agentId: string;
  turnId: string;
  reason: string;
  /** Who asked (common/by.ts), logged on `task_cancelled`. */
  by?: By;
  now: number;
}

export type CancelTaskResult =
  /** Removed from the inbox now, or by an earlier call (`already: true`; nothing changed). */
  | { status: "cancelled"; already: boolean }
  | { status: "agent_not_found" }
  | { status: "turn_not_found" }
  /** The turn is active: cancel it with `requestCancel`. */
  | { status: "turn_started" }
  | { status: "turn_finished" };

/**
 * Where a turn is: `queued` in the inbox, `active`, ended (`done`, `failed`,
 * or `ended` when the final state is not known), or `cancelled` while queued.
 */
export type TurnStatus = "queued" | "active" | "done" | "failed" | "ended" | "cancelled";

export interface ClaimRequest {
  agentId: string;
  workerId: string;
  leaseMs: number;
  now: number;
  /** The limits this claim keeps (invariant `concurrency-keys`); absent: none. */
  concurrencyLimits?: ConcurrencyLimits;
}

export interface ClaimNextRequest {
  workerTarget: string;
  workerId: string;
  leaseMs: number;
  now: number;
  /**
   * Claim only agents of these definition names (invariant `definition-sets`); absent:
   * any. A worker passes the names it has definitions for.
   */
  agentNames?: readonly string[];
  /**
   * Per name of `agentNames`, the definition versions this caller has (invariant `turn-versions`): an
   * agent of a listed name whose active turn is pinned to a version missing here is left like one of
   * another name. A name not listed here: any version.
   */
  agentVersions?: Readonly<Record<string, readonly string[]>>;
  /** The limits this claim keeps (invariant `concurrency-keys`); absent: none. */
  concurrencyLimits?: ConcurrencyLimits;
}

/** What one of two operations sent together answered (invariant `enqueue-then-claim`): its value, or what it threw. */
export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** The answers of `enqueueAndClaim` (invariant `enqueue-then-claim`), each on its own. */
export interface EnqueueAndClaimResult {
  /** What `enqueueTask` answered (or threw). */
  enqueued: Settled<EnqueueTaskResult>;
  /** What `claimNext` answered (or threw), made after the enqueue. */
  claim: Settled<ClaimResult>;
}

/** A definition set as `announceDefinitionSet` records it (invariant `definition-sets`). */
export interface DefinitionSetRecord {
  /** The agent names of the set, sorted. */
  agents: string[];
  /** When a process serving it last announced it (ms). */
  seenAt: number;
  /** Per name, the definition versions it has, current first (invariant `turn-versions`); absent: not announced. */
  versions?: Record<string, string[]>;
  /** The storage formats it reads (store/formats.ts); absent: announced by a build that predates formats. */
  formats?: string[];
}

/** The other definition sets a process last heard of (each announcement updates it: actors/pool/definition-sets.ts; routes/versions.ts reads it). */
export interface LiveSets {
  others: DefinitionSetRecord[];
}

export interface AnnounceDefinitionSetRequest {
  /** The agent names this process has definitions for. */
  agents: readonly string[];
  /** Per name, the definition versions this process has, current first (invariant `turn-versions`). */
  versions?: Readonly<Record<string, readonly string[]>>;
  /** The storage formats this process reads (store/formats.ts). */
  formats?: readonly string[];
  now: number;
  /** Records not announced again within this long are dropped (ms). */
  ttlMs: number;
  /** Removes this set's record instead of renewing it (a process that stops); the others are answered as usual. */
  withdraw?: boolean;
}

export type ClaimResult =
  | {
    status: "claimed";
    agentId: string;
    epoch: number;
    head: AgentHead;
    /** The task the active turn runs (new at this claim, or carried over after a crash). */
    task: InboxTask | null;
    /** Pending mail, oldest first (greedy batch). */
    mail: MailItem[];
    /**
     * The lease this claim took over: set when the agent was still leased to
     * a worker whose lease had run out (it died or stalled without releasing
     * it); null when the agent was free. `updatedAt` is the last write to the
     * agent before this claim (the previous holder's last commit, claim or
     * renewal). Read only; the claim writes the same with or without it.
     */
    previousLease?: PreviousLease | null;
  }
  | { status: "busy"; agentId: string; leaseUntil: number }
  /** `foreign`: claimable agents `claimNext` left because `agentNames` does not list them (invariant `definition-sets`). */
  | { status: "empty"; agentId?: string; foreign?: number }
  /** A due schedule (`claimNext` only; invariant `schedule-tick-once`): fire it with `fireScheduleTick`. */
  | { status: "schedule_due"; schedule: ScheduleRecord }
  | { status: "agent_not_found" };

export interface PreviousLease {
  workerId: string;
  leaseUntil: number;
  updatedAt: number;
}

export interface RenewRequest {
  agentId: string;
  workerId: string;
  epoch: number;
  leaseMs: number;
  now: number;
}

export interface CommitRequest {
  agentId: string;
  workerId: string;
  epoch: number;
  /** The head version the snapshot was computed from. */
  expectedVersion: number;
  /** The active turn the caller works on (null when it starts none). */
  turnId: string | null;
  snapshot: unknown;
  state: string;
  /** Turn id that becomes active, or null when the turn ended (done/failed). */
  activeTurnId: string | null;
  events: NewEvent[];
  messages: Message[];
  /** Tool calls to record as pending before they are dispatched. */
  recordToolCalls: Array<Omit<ToolCallRecord, "status" | "agentId" | "recordedAt">>;
  /** In-process results applied by this commit; each call must still be pending. */
  resolveToolCalls: Array<{ toolCallId: string; outcome: Outcome; afterExecution: AfterExecution; contractValidation?: ContractValidation }>;
  /** Removes mail with seq <= this value (0: none). */
  ackMailThrough: number;
  /**
   * Release the lease with this commit. `runnableAt` says when the agent
   * needs a worker again without new mail (null: only when mail arrives).
   */
  release: { runnableAt: number | null } | null;
  leaseMs: number;
  now: number;
  /** Trim the agent's history when this commit ends a turn (invariant `retention`); absent: keep everything. */
  retention?: RetentionLimits;
  /** A new rolling summary of the conversation (the host's memory policy); stored with the commit. */
  summary?: ConversationSummary;
  /**
   * Turn chaining (invariant `turn-chaining`): when this commit ends the turn and
   * releases, take the next queued task in the same step and keep the lease.
   */
  chainNextTask?: boolean;
  /** The limits a chained claim keeps (invariant `concurrency-keys`): a next task whose key is at its limit is not chained. */
  concurrencyLimits?: ConcurrencyLimits;
  /**
   * Firm cancels (invariant `firm-cancels`): refuse with `cancel_pending` while a cancel aimed at the active turn is
   * pending beyond `ackMailThrough`; the lease is released and the bell rung.
   */
  stopAtCancel?: boolean;
  /** Pins a turn to a definition version (invariant `turn-versions`): written to the head's `turnVersion` / `versionTurn`. */
  turnVersion?: { turnId: string; version: string };
}

/** Per-agent storage limits, applied at turn ends (store/retention.ts has the defaults). */
export interface RetentionLimits {
  /** Events kept: the log is cut at a checkpoint so that at most this many remain (plus those of the ending turn). */
  maxEvents: number;
  /** UTF-8 bytes of event JSON appended by commits that are kept, same rule. */
  maxEventBytes: number;
  /** Ended turns whose records are kept (at least; more while the event log still reaches them). */
  maxTurns: number;
  /** A checkpoint is stored at a turn end once this many events were appended since the last one. */
  checkpointEvery: number;
}

/** The rolling summary of the messages with index < `through` (durable; written by commits). */
export interface ConversationSummary {
  content: string;
  through: number;
}

/** The base a trimmed log is replayed from: the agent right after event `eventId`. */
export interface Checkpoint {
  eventId: number;
  at: number;
  /** The head's snapshot after that event's commit. */
  snapshot: unknown;
  /** Message count (logical index) right after that event. */
  messageIndex: number;
}

/** What the host reads to build the model's view of the conversation. */
export interface Conversation {
  summary: ConversationSummary | null;
  /** Logical index of `messages[0]` (the head's `messagesTrimmedThrough`). */
  firstIndex: number;
  /** Retained messages, user inputs filled in. */
  messages: Message[];
}

export type CommitResult =
  /** `messagesTrimmedThrough`: the head's value after the commit (retention may have moved it). */
  | {
    status: "applied";
    version: number;
    lastEventId: number;
    messagesTrimmedThrough?: number;
    /** The claim of the next queued task the commit took (`chainNextTask`, invariant `turn-chaining`). */
    chained?: Extract<ClaimResult, { status: "claimed" }>;
  }
  | { status: "conflict"; reason: "fenced" | "version" | "turn" | "tool_call_resolved" | "cancel_pending" | "agent_not_found" };

/** The writes that end a turn from outside the machine (see invariant `turn-end-without-machine`). */
export interface TurnEnd {
  /** The persisted snapshot of the failed turn. */
  snapshot: unknown;
  /** Its state value (`failed`; unchanged when no turn was active). */
  state: string;
  events: NewEvent[];
  messages: Message[];
}

export interface ClaimFailureRequest {
  agentId: string;
  workerId: string;
  epoch: number;
  /** The head version and active turn the caller read after the failure. */
  expectedVersion: number;
  turnId: string | null;
  /** What went wrong (logged in the `claim_failed` event). */
  error: string;
  /** Failures of one turn that end it (>= 1). */
  maxFailures: number;
  /** Backoff before the next attempt: baseMs * 2^(failures-1), at most 32 * baseMs. */
  retryBaseMs: number;
  /** Applied when this failure is the turn's `maxFailures`-th. */
  end: TurnEnd;
  now: number;
}

export type ClaimFailureResult =
  | { status: "retry"; failures: number; retryAt: number }
  | { status: "turn_failed"; failures: number; version: number }
  /** The claim no longer owns the agent, or the head moved: nothing written. */
  | { status: "stale" }
  | { status: "agent_not_found" };

export interface ResetTurnRequest {
  agentId: string;
  /** The head version and active turn the caller read. */
  expectedVersion: number;
  turnId: string;
  end: TurnEnd;
  now: number;
}

export type ResetTurnResult =
  | { status: "reset"; version: number; epoch: number }
  | { status: "agent_not_found" }
  | { status: "not_active" }
  /** The head moved since it was read (a commit, another reset): nothing written; read again. */
  | { status: "conflict" };

/** Takes a due record the watchdog could not process out of the way (see actors/pool/watchdog.ts). */
export interface SkipDueToolCallRequest {
  agentId: string;
  turnId: string;
  toolCallId: string;
  /** Move the record's deadline to this time; null removes it from the due index. */
  retryAt: number | null;
  /** Why it was skipped; logged in a `watchdog_skipped` event when the agent exists. */
  reason: string;
  now: number;
}

export interface VerdictPut {
  agentId: string;
  verdictId: string;
  turnId: string;
  status: string;
  /** The record as JSON text, stored as given. */
  json: string;
}

export interface VerdictFilter {
  turnId?: string;
  status?: string;
}

/**
 * Transport dedup of signed deliveries (routes/auth). One record per signed
 * message id, deployment-wide (it names no agent: a captured delivery
 * replayed to another agent's path finds the same record).
 *
 * Invariants:
 * - A record binds its message id to one target (`<METHOD> <path>`) for
 *   `windowMs` from its first claim (a recorded response extends it to
 *   `windowMs` from the record). A claim for another target while it lives
 *   answers `other_target` and changes nothing.
 * - A `fresh` claim makes `holder` the message's holder until
 *   `now + holdMs`. While the hold lives, other claims answer
 *   `in_progress`. Only the holder renews the hold (`renewDelivery`) or
 *   settles it (`recordDelivery`); a holder that dies stops renewing, and
 *   the first claim after its hold ran out takes the message over (`fresh`
 *   for the new holder), as does the first claim after the holder let go
 *   (response null).
 * - A recorded response is the answer (`answered`) to every later claim for
 *   the same target until the window ends; it is written at most once.
 * - Time is the caller's `now`, never the store's clock; a record outlives
 *   its window by nothing (Redis expires the key with it).
 * - Records are independent of the domain idempotency keys and of agents
 *   (deleting an agent leaves them to expire).
 */
export interface DeliveryResponse {
  status: number;
  contentType: string;
  body: string;
}

export interface DeliveryRef {
  /** `<scheme>:<message id>`, 1-300 visible ASCII characters. */
  messageId: string;
  /** What the delivery is for: `<METHOD> <path>`, 1-1100 visible ASCII characters and spaces. */
  target: string;
  /** Who handles it: 1-200 visible ASCII characters, unique per request. */
  holder: string;
  now: number;
}

export interface ClaimDeliveryRequest extends DeliveryRef {
  windowMs: number;
  /** How long the hold lives without a renewal. */
  holdMs: number;
}

export type ClaimDeliveryResult =
  | { status: "fresh" }
  | { status: "in_progress"; holdUntil: number }
  | { status: "answered"; response: DeliveryResponse }
  | { status: "other_target" };

export interface RenewDeliveryRequest extends DeliveryRef {
  holdMs: number;
}

export interface RecordDeliveryRequest extends DeliveryRef {
  windowMs: number;
  /** The response to answer replays with; null lets go of the hold (the first delivery failed, a retry runs again). */
  response: DeliveryResponse | null;
}

/** `lost`: the holder no longer holds the message (its hold ran out and another took over, or the window ended). */
export type SettleDeliveryResult = { status: "renewed" | "written" } | { status: "lost" };

/** A queued task as `listQueuedTasks` answers it. */
export interface QueuedTask {
  turnId: string;
  enqueuedAt: number;
  /** Set for a delayed task (invariant `delayed-tasks`). */
  runAt?: number;
  /** The task's concurrency key and priority, when it carries them (invariants `concurrency-keys`, `priorities`). */
  concurrencyKey?: string;
  priority?: number;
}

/** One entry of the agents index (invariant `agents-index`). */
export interface AgentIndexEntry {
  agentId: string;
  updatedAt: number;
}

export interface ListAgentsRequest {
  /** At most this many entries (> 0). */
  limit: number;
  /** Only agents whose updatedAt is at or after this time. */
  updatedSince?: number;
  /** Resume after this entry: the last one of the previous page. */
  after?: AgentIndexEntry;
}

export interface CreateForkRequest {
  /** The new agent's id. */
  agentId: string;
  agentName: string;
  workerTarget: string;
  /** The persisted snapshot at the fork point, and its state value. */
  snapshot: unknown;
  state: string;
  /** The turn active at the fork point (null between turns) and its task, stored without input. */
  activeTurnId: string | null;
  currentTask: InboxTask | null;
  /** The active turn's input (stored once, store/inputs.ts); absent when no turn is active. */
  input?: unknown;
  /** The conversation at the fork point, stored as given. */
  messages: Message[];
  /** Tool calls of the active turn pending at the fork point: stored pending, with their deadlines. */
  toolCalls: Array<Omit<ToolCallRecord, "status" | "agentId" | "recordedAt">>;
  /** The new log's first event (`forked_from`). */
  event: NewEvent;
  /** When a worker should take the fork up without mail (a turn in a working state); null: on mail only. */
  runnableAt: number | null;
  now: number;
}

export type CreateForkResult = { status: "created"; lastEventId: number } | { status: "exists" };

export interface RecordForkRequest {
  /** The source agent. */
  agentId: string;
  /** The `forked_to` event. */
  event: NewEvent;
  now: number;
}

/**
 * Rate limits (routes/rate-limit.ts): GCRA buckets held in the store, so a
 * limit holds across processes. One call checks every bucket named and, only
 * when all of them admit the request, charges each one; a refused call writes
 * nothing. Time comes from `now`, never the store's clock.
 *
 * A bucket admits `limit` requests at once (the burst) and then one every
 * `periodMs / limit` ms; its record is the theoretical arrival time (TAT, in
 * microseconds) and expires when it no longer limits anything.
 */
export interface RateLimitBucket {
  /** 1-300 visible ASCII characters, e.g. `t:<token digest>` or `a:<agent id>`. */
  key: string;
  /** Requests per period (>= 1). */
  limit: number;
  /** The period in ms (>= 1). */
  periodMs: number;
}

export interface RateLimitRequest {
  buckets: RateLimitBucket[];
  now: number;
}

export type RateLimitResult =
  | { status: "allowed" }
  /** `bucket`: index of the bucket that refused (the one that frees last); `retryAfterMs` > 0. */
  | { status: "limited"; bucket: number; retryAfterMs: number };

/**
 * A lease on a single-consumer worker target (`svc1_<service>_<scope>`,
 * actors/pool/target-lease.ts): one holder at a time. `acquire` takes a free or
 * expired lease, or renews the holder's own; another holder's live lease
 * answers `busy` and writes nothing. `release` frees only the holder's own.
 */
export interface TargetLeaseRequest {
  workerTarget: string;
  /** The consumer process (1-200 visible ASCII characters). */
  holder: string;
  leaseMs: number;
  now: number;
}

export type TargetLeaseResult =
  | { status: "held"; leaseUntil: number }
  | { status: "busy"; holder: string; leaseUntil: number };

/**
 * What a bell watch reports (Store.watchBells). Every call is made by the
 * adapter's own connection, never from inside a store call.
 */
export interface BellListener {
  /**
   * A write made `at` the earliest ready score of `target` (ms; at or before
   * now: an agent is claimable now; later: the next due time of the target).
   */
  bell(target: string, at: number): void;
  /**
   * `true`: the watch listens, and every bell from now on is heard (a bell
   * rung while it did not listen was not: poll once). `false`: it stopped
   * listening (the connection is down) until the next `true`.
   */
  listening(on: boolean): void;
}

/** A running bell watch; `close()` ends it at once (a pending wait included). */
export interface BellWatch {
  close(): Promise<void>;
}

/**
 * The turn protocol: tasks in, claims, commits, mail, tool results, cancels,
 * deadlines and the ready queue (the bell).
 *
 * ## inbox-is-truth
 * The inbox is the truth, the ready queue only a bell. `enqueueTask`,
 * `deliverToolResult` and `requestCancel` write the inbox record first and
 * then ring (put the agent in its worker target's ready queue). A claim
 * with nothing claimable answers `empty` and changes nothing else.
 *
 * ## exclusive-claims
 * Claims are exclusive. `claim` succeeds only when no unexpired lease is
 * held; it increments `epoch`, takes a lease until `now + leaseMs` and
 * sets the agent's ready score to the lease end, so an agent whose worker
 * dies is offered again when the lease expires (visibility timeout).
 *
 * ## fencing
 * `commit` applies only when `epoch`, `version` and `activeTurnId` all match
 * the head and the caller's lease is current; otherwise it answers
 * `conflict` and writes nothing.
 *
 * ## mail-until-acked
 * Mail is removed only by the commit that acknowledges it
 * (`ackMailThrough`); a task leaves the queue at claim but stays in
 * `currentTask` until the turn that runs it ends.
 *
 * ## first-result-wins
 * Tool results are first-wins per (agent, turn, toolCallId): the first
 * delivery resolves the call and enqueues mail; a later one changes
 * nothing and answers with the stored record: `duplicate` when the call
 * was resolved by a result (not the watchdog) with the same outcome and
 * `afterExecution` (compared as canonical JSON), else `already_resolved`
 * with `resolvedBy: "timeout"` (the watchdog) or `"result"`. A call of a
 * turn that is no longer active answers `turn_finished`.
 *
 * ## in-process-by-watchdog
 * Only the watchdog may resolve an in-process call (`external: false`)
 * through `deliverToolResult`; any other source answers `not_external`
 * and changes nothing, pending or resolved (the tool's own result is
 * applied by the worker's commit).
 *
 * ## delegated-by-child
 * A delegated call (`delegated: true`, a call of an agent tool) is
 * answered by its child agent (source `delegation`) or the watchdog's
 * timeout; any other source answers `delegated_call` and changes
 * nothing, pending or resolved.
 *
 * ## first-idempotency-key
 * Idempotency keys of tasks are first-wins per agent.
 *
 * ## idempotency-entry-with-key
 * An idempotency entry is kept only for a task that carries a key.
 *
 * ## aimed-cancels
 * Cancels are aimed at one turn. `requestCancel` fixes the turn when it
 * accepts (the named one, else the active one) and stores it in the mail
 * item; the host applies a cancel only to that turn. A queued task is
 * cancelled by `cancelTask`, which removes it from the inbox and records
 * the turn as `cancelled`; its idempotency key keeps answering that turn.
 *
 * ## firm-cancels
 * A commit with `stopAtCancel` is refused with `cancel_pending` while a
 * cancel aimed at the active turn is pending beyond its `ackMailThrough`
 * (accepted by `requestCancel`, not yet acknowledged): nothing of it is
 * written, the lease is released and the bell rung (like
 * `tool_call_resolved`), so the next claim takes the cancel and ends the
 * turn with its first commit. From the moment a cancel is accepted, no such
 * commit of its turn applies unless it acknowledges the cancel.
 *
 * ## results-after-cancel
 * While a cancel aimed at the active turn is pending (accepted by
 * `requestCancel`, its mail not yet acknowledged), `deliverToolResult` of a
 * pending call of that turn from any source other than the watchdog and a
 * child agent (`delegation`) answers `cancel_pending` and changes nothing:
 * the claim that applies the cancel ends the turn, and a result mailed after
 * the cancel would be dropped there (`mail_ignored`), so it is not taken.
 * Checked after `unknown_call`, `not_external`, `delegated_call`, a resolved
 * call's answer and `turn_finished`; before `approval_pending`. A result
 * delivered before the cancel was accepted is mailed ahead of it and applied
 * first. Once the cancel is acknowledged, `turn_finished` follows.
 *
 * ## input-stored-once
 * A task's input is stored once per turn and referenced elsewhere
 * (store/inputs.ts); `getTurn` answers it, a claim hands it out with the
 * task, `readMessages` puts it into the turn's user message.
 *
 * ## served-events
 * Events are stored as the commit gives them and served expanded
 * (common/event-form.ts): an event that names a transition of its commit by
 * `ref` is answered by `readEvents` with the fields it left to that
 * transition, in place, whatever the page's bounds; events without `ref`
 * come as stored. `maxBytes` counts the served JSON. The transitions outside
 * the page that it names are read in the same atomic read as the page (the
 * script store: one script call, so a page costs one store call and no trim
 * falls between the two). A compact event is never served: one whose
 * transition the store does not hold (a log cut within a commit; retention
 * never cuts there, it trims after a turn's last commit) counts as
 * trimmed, and the page starts after the last such event (when that leaves
 * nothing, the read goes on after it, so an empty page still means the end
 * of the log).
 *
 * ## turn-end-without-machine
 * A turn can be ended without the machine. `recordClaimFailure` counts
 * the claims of one turn that threw (per agent and turn, cumulative, kept
 * in the store so every worker process sees one count); below
 * `maxFailures` it releases the lease and offers the agent again at a
 * backoff, at `maxFailures` it applies the caller's `TurnEnd` (failed
 * snapshot, events, messages) and ends the turn, like `resetTurn` does
 * for an operator. Ending a turn this way drops the turn's pending mail,
 * takes its pending calls off the deadline index, clears `currentTask`
 * and the failure count, releases the lease and rings when tasks wait, so
 * the tasks behind the turn proceed. Both are fenced: a failure counts
 * only for the claim that still owns the agent (same epoch and worker) at
 * the version and turn it read; a reset only at the version and turn it
 * read, and it increments `epoch` so a worker still running the turn is
 * fenced out. The `TurnEnd` is computed from that version by the caller
 * without running the failing code path (actors/host/turn-end.ts).
 *
 * ## turn-chaining
 * A commit with `chainNextTask` that ends the active turn and asks to
 * release the lease takes the agent's next queued task in the same atomic
 * step instead, exactly as a claim would (the task leaves the queue,
 * becomes `currentTask`, `epoch` increments, the lease is kept until
 * `now + leaseMs`), and answers it as `chained`, a claim result without
 * mail. It chains only when no mail is pending after the acknowledgement
 * and a task is queued; otherwise the commit releases as asked and rings
 * when tasks wait. So a turn that ends never leaves its successor waiting
 * for the ready queue, and the worker that ended a turn starts the next
 * one without another round trip.
 *
 * ## turn-start
 * The claim that takes a task starts its turn in the stored state: with
 * `activeTurnId` and `currentTask` it sets the head's `state` to `running`
 * (a chaining commit too: the state it writes is the next turn's), so every
 * reader of the head (the agent view, the agent list, the debugger page)
 * reads `running` from the claim on. Nothing else of the start is written
 * there: the snapshot, the `TASK_STARTED` transition, the turn's user
 * message and the version pin (`turn-versions`) ride with the claim's first
 * commit, so a turn of n steps costs n commits. Until that commit the head
 * says `running` while its snapshot still holds the turn before (the
 * snapshot's `turnId` is not `activeTurnId`): a reader of the turn's context
 * reads it as started with nothing done (routes/agent-view.ts), and a worker
 * whose claim finds it so applies `currentTask` as `TASK_STARTED` (a claim
 * that ended before its first commit stored nothing of the start), so the
 * log holds one `TASK_STARTED` per turn. Every other write keeps the state
 * it is given (`commit`, a parking commit, `recordClaimFailure`,
 * `resetTurn` compute theirs from the snapshot).
 *
 * ## delayed-tasks
 * A task enqueued with `runAt` (a delayed task; a `runAt` at or before
 * `now` is stored as `now`) is never taken by a claim or a chaining commit
 * before `runAt`. Order rule: each task joins the agent's FIFO queue at its
 * join time (`runAt` for a delayed task, `enqueuedAt` otherwise) and tasks
 * start in join order, ties by enqueue order. The inbox keeps that order
 * itself: an enqueue inserts the task after every queued task that has
 * joined by its join time (as if it passed over, from the tail, only delayed tasks
 * whose `runAt` is later), so the first queued task is always the next to
 * start, and a claim takes it only once it is due. A task enqueued without
 * a delay therefore never waits behind a delayed task that is not due yet.
 * Whenever nothing is claimable, the agent's bell is set to the earliest of
 * `runnableAt` and the first queued task's `runAt` (no turn active), so a
 * delayed task rings when it comes due: the enqueue moves the bell to
 * `runAt` when that is earlier, and every write that drops or moves a bell
 * (an empty claim, a releasing commit, a turn ended without the machine)
 * keeps it. Cancelling a delayed task (`cancelTask`) removes it like any
 * queued task; its bell then rings for nothing and is dropped.
 * Bound: an agent holds at most `maxDelayedTasks` delayed tasks (runAt after
 * now; default 10,000, store/delayed-bound.ts); one more is refused
 * (`too_many_delayed`, nothing written), whatever else it holds. Cost: an
 * enqueue, a claim and a chaining commit do not grow with the delayed tasks
 * queued (Redis keeps them in a sorted set by join time and enqueue order,
 * store/lua/includes/queue.lua; an enqueue is one ZADD or one RPUSH). Clocks of
 * the processes are assumed close: an immediate task enqueued by a process
 * whose clock is ahead may be placed behind a delayed task due by that clock
 * and not yet by the claimer's.
 *
 * ## concurrency-keys
 * A task may carry a concurrency key. An agent is *running* under key K while
 * it is leased (claimed, lease unexpired) for a turn whose task has key K:
 * a turn waiting for tool results, approvals or events without a lease runs
 * under nothing. A claim (`claim`, `claimNext`, a chaining commit) that would
 * run a turn under K, starting its task or applying its mail, is made only
 * while fewer than `limit(K)` agents run under K (`concurrencyLimits`: K's own
 * entry, else `"*"`, else no limit), counted across every process, target and
 * home of the key space, atomically with the claim: no sequence of claims,
 * crashes and releases ever has more than `limit(K)` agents running under K.
 * A claim held back by the limit writes nothing of the agent's inbox: the
 * task stays queued in its place (enqueue answers `enqueued` as ever; never
 * a refusal) and the agent's lane is parked; a parked lane rings again, with
 * no polling, when an agent running under K releases its lease (a commit
 * that releases, a turn end, a reset, a claim failure, a deletion) or, at
 * the latest, when the earliest lease under K runs out (a crashed worker's
 * slot frees at its lease end). A chaining commit whose next task's key is
 * at its limit releases instead and rings; one whose next task has the key
 * the ended turn ran under counts the others only (the agent's slot carries
 * the next turn: nothing frees, nothing rings). A release rings the parked lane
 * of its key in the releasing agent's worker target; a parked lane of the
 * same key in another target rings at the earliest lease end under the key.
 * Tasks without a key run under no key: `"*"` limits keys only. Layout: the
 * running set `<p>:ck:<K>:running` (agent -> lease end) and the head field
 * `_ckRun`; docs/store.md "Concurrency keys and lanes". The sharded layout
 * (Redis Cluster) counts K in K's own slot: a claim under K first reserves
 * there (`<p>:{ck:<K>}:running`, one member per reservation, score = the
 * lease end, counted only while fewer than `limit(K)` live members are
 * there), then claims in the agent's home with the reservation, which the
 * head keeps (`_ckRun`); a home claim that takes nothing under K returns the
 * reservation. The home says which key it would claim under (writing only a
 * provisional park of that lane), so every script call stays in one slot.
 * Order keeps the count an upper bound: a reservation is made before its
 * lease, renewed (a renewal, a commit that keeps or chains the lease) before
 * the home's lease, released after the home released it (the home answers
 * the released member); a crash between two calls only holds a slot until
 * its lease end, never admits one more. A refusal records the waiting lane
 * (its home's ready key) in K's slot (`<p>:{ck:<K>}:waiting`) atomically
 * with the count; a release answers those and rings their parked lanes, of
 * every target (one call per lane). A chaining commit on this layout chains a task of a limited key
 * only under the ended turn's own reservation (the same key); else it
 * releases and the next claim reserves.
 *
 * ## fair-lanes
 * Ready agents of a worker target are grouped in lanes: the lane of an agent
 * is the key of the turn it runs or would run next (the active turn's task,
 * else the first queued task); no key: the default lane "". `claimNext`
 * serves due lanes in least-recently-served order: a lane claimed from
 * goes behind every lane that has due work at that moment, so between two
 * claims from lane L every other lane that had due work (not parked at its
 * limit, not only agents of other definition sets) when the first was made
 * is claimed from once. One key's backlog therefore holds another key's
 * task behind at most one claim per other due lane. Within a lane, due
 * agents are claimed in due order (invariant `priorities`). Layout: the
 * default lane's bells stay in the target's ready zset (data written before
 * lanes is read as is), lane K's in `<ready>:key:<K>`, the lanes ordered in
 * `<ready>:lanes` by max(last served, earliest bell); the head fields `_ck`
 * and `_cp` hold the agent's lane and priority. On the sharded layout the
 * rotation and the priority order hold within each home.
 *
 * ## priorities
 * A task may carry a priority p (a whole number of seconds, 0-86,400). Within
 * a lane, an agent whose work became ready at t with the priority p of the
 * task it would run is ordered as if it had become ready at t - p seconds
 * (its bell; the active turn's task gives mail its priority). Aging rule: a
 * task of priority p goes ahead of every lower-priority task that became
 * ready less than (p - q) seconds before it, never ahead of one that waited
 * longer, so no task waits forever behind higher priorities. Priority never
 * delays a claim: due work is due at once whatever its priority. Inside one
 * agent's inbox tasks keep their order (invariant `delayed-tasks`).
 *
 * ## enqueue-then-claim
 * `enqueueAndClaim(task, claim)` (optional) is `enqueueTask(task)` and then
 * `claimNext(claim)`, sent together, each answered on its own: the claim is
 * made after the enqueue was applied or refused, whatever it answered (an
 * enqueue that threw may have been applied or not, as ever). Each answer
 * means what the operation's own answer means: an `enqueued` task is stored
 * whatever the claim answered; a `claimed` agent is leased to
 * `claim.workerId`, which runs it like any claim of its own; an `empty` claim
 * wrote only what an empty `claimNext` writes (the bell stays for another
 * claim). The two are not one atomic step: another claim may come between
 * them (the second then takes what is due by the rules of `claimNext`:
 * invariants `fair-lanes`, `priorities`, `concurrency-keys`,
 * `definition-sets`, `turn-versions`, or nothing). A claim whose answer is
 * lost (the connection dropped) may have leased an agent: its lease runs
 * out and the agent is offered again (invariant `exclusive-claims`). It
 * never throws: bad input of either is that one's error (bad input of the
 * enqueue writes nothing, as ever). Callers without it send
 * the two calls one after the other (store/enqueue-claim.ts). Cost: one
 * round trip on one Redis (two EVALSHA in one pipeline, written at once and
 * answered together: Redis fsyncs once per event-loop iteration, so under
 * `appendfsync always` the pair costs one fsync when both arrive in one
 * read); one step on the memory store; the sharded layout and Upstash send
 * the two calls one after the other (docs/store.md).
 *
 * ## contract-validation
 * A resolved tool call carries `contractValidation` (common/
 * contract-validation.ts): the one given with the result, else the
 * "not applied" record; the `tool_result_received` event carries the same.
 */
export interface TurnProtocol {
  enqueueTask(req: EnqueueTaskRequest): Promise<EnqueueTaskResult>;
  deliverToolResult(req: DeliverToolResultRequest): Promise<DeliverToolResultResult>;
  requestCancel(req: CancelRequest): Promise<CancelResult>;
  /** Removes a queued (not yet started) task from the inbox and records its turn as cancelled. */
  cancelTask(req: CancelTaskRequest): Promise<CancelTaskResult>;
  claim(req: ClaimRequest): Promise<ClaimResult>;
  /** Claims the first ready agent of a worker target whose ready score is due. */
  claimNext(req: ClaimNextRequest): Promise<ClaimResult>;
  /**
   * Optional: `enqueueTask(task)` then `claimNext(claim)` in one round trip where the store can
   * (invariant `enqueue-then-claim`); never throws: each operation's answer or error is its own field.
   */
  enqueueAndClaim?(task: EnqueueTaskRequest, claim: ClaimNextRequest): Promise<EnqueueAndClaimResult>;
  renewLease(req: RenewRequest): Promise<{ status: "renewed"; leaseUntil: number } | { status: "lost" }>;
  commit(req: CommitRequest): Promise<CommitResult>;
  /** Counts a claim that threw; ends the turn at `maxFailures` (invariant `turn-end-without-machine`). */
  recordClaimFailure(req: ClaimFailureRequest): Promise<ClaimFailureResult>;
  /** Ends the active turn at once (operator reset, invariant `turn-end-without-machine`). */
  resetTurn(req: ResetTurnRequest): Promise<ResetTurnResult>;
  /** Pending tool calls whose deadline is at or before `now`, oldest first. */
  dueToolCalls(now: number, limit: number): Promise<Array<{ agentId: string; turnId: string; toolCallId: string }>>;
  /**
   * Moves a due record to `retryAt`, or out of the due index (null), and
   * logs `watchdog_skipped` on its agent when the agent exists. A record no
   * longer in the index answers `absent` and changes nothing.
   */
  skipDueToolCall(req: SkipDueToolCallRequest): Promise<{ status: "skipped" | "absent" }>;
  /** Earliest ready score of a worker target (for idle workers to sleep until), or null. */
  nextReadyAt(workerTarget: string): Promise<number | null>;
  /** How many agents of a worker target are due at `now` (bells at or before it): the ready-queue depth. */
  readyCount(workerTarget: string, now: number): Promise<number>;
  /**
   * Optional: pushes bells instead of being polled for them. Each write
   * that makes a new earliest ready score of one of `targets` (in any
   * process) calls `listener.bell` with it, while the watch listens
   * (`listener.listening`). TCP Redis has it (pub/sub on a connection of
   * its own); Upstash and the memory store do not, and an idle worker pool
   * polls them (actors/pool/pool.ts).
   */
  watchBells?(targets: readonly string[], listener: BellListener): BellWatch;
}

/**
 * Reads: they write nothing.
 *
 * ## agents-index
 * Every write of a head's `updatedAt` (enqueue that creates the agent,
 * claim, commit, createFork) writes the same score in the index, so
 * `listAgents` pages exactly the agents that exist, newest `updatedAt`
 * first. Other writes (mail, cancels, recordFork) leave `updatedAt` and the
 * index alone.
 */
export interface Reads {
  getAgent(agentId: string): Promise<AgentHead | null>;
  /** Where a turn of the agent is; null when the agent or the turn is unknown. */
  /** `runAt`: a delayed task's due time, while it is queued or active (invariant `delayed-tasks`). */
  getTurn(agentId: string, turnId: string): Promise<{ turnId: string; status: TurnStatus; input?: unknown; runAt?: number } | null>;
  /** The agent's first `limit` queued tasks in queue order (invariant `delayed-tasks`); [] for an unknown agent. */
  listQueuedTasks(agentId: string, limit: number): Promise<QueuedTask[]>;
  getToolCalls(agentId: string, turnId: string): Promise<ToolCallRecord[]>;
  /** Retained messages with logical index >= fromIndex (invariant `retention`). */
  readMessages(agentId: string, fromIndex?: number): Promise<Message[]>;
  /**
   * Events with id > max(after, eventsTrimmedThrough), at most `limit`, and (with `maxBytes`) no more
   * than fit in `maxBytes` bytes of their JSON (UTF-8), except that the
   * first event always comes, however large. Served expanded (invariant `served-events`).
   */
  readEvents(agentId: string, after: number, limit: number, maxBytes?: number): Promise<StoredEvent[]>;
  /**
   * The conversation as kept (invariant `retention`): the summary, the index of the
   * first retained message and the retained messages; null for an unknown
   * agent. `fromSummary`: only the messages the summary does not cover
   * (from max(messagesTrimmedThrough, summary.through) on; `firstIndex` says where).
   */
  readConversation(agentId: string, opts?: { fromSummary?: boolean }): Promise<Conversation | null>;
  /** The base checkpoint of a trimmed log (the one at `eventsTrimmedThrough`); null when nothing was trimmed. */
  readCheckpoint(agentId: string): Promise<Checkpoint | null>;
  /** A page of the agents index, newest updatedAt first, ties by agent id descending. */
  listAgents(req: ListAgentsRequest): Promise<AgentIndexEntry[]>;
  /**
   * Running and queued counts per lane of a worker target (invariants `concurrency-keys`,
   * `fair-lanes`), busiest first; the default lane "" counts its queued agents only
   * (its running agents are not tracked).
   */
  concurrencyUsage(req: ConcurrencyUsageRequest): Promise<ConcurrencyUsage>;
}

/**
 * An agent's life beyond its turns: retention (applied by the commit that
 * ends a turn), deletion, and the store's own liveness and closing.
 *
 * ## retention
 * Retention (store/retention.ts): a commit that ends a turn and carries
 * `retention` trims in the same atomic step. Event ids stay dense and
 * monotonic: trimming removes a prefix of the log and records it in
 * `eventsTrimmedThrough`; the log is cut only at a stored checkpoint (the
 * snapshot and message index right after that event), which becomes the
 * base time travel replays from. Records of ended turns (status, input,
 * tool calls, idempotency entry, messages) are dropped oldest first, only
 * when more than `maxTurns` turns ended and only for turns that ended at
 * or before the base checkpoint. Message indexes are logical:
 * `messageCount` counts every message ever appended,
 * `messagesTrimmedThrough` how many of the first were dropped.
 *
 * ## deletion
 * `deleteAgent` removes every record of the agent and its entries in the
 * shared indexes (agents, ready, deadlines), its schedules included, in one
 * atomic step; an id with schedules and no head counts as an agent; verdict
 * records (`getVerdict`) are kept (audit), the agent's verdict list goes.
 * The same step leaves the deletion marker (`deletion-marker`).
 *
 * ## deletion-marker
 * `deleteAgent` leaves a marker under the deleted id (the `now` it was
 * given; one small key per deleted id, kept until the id is deleted again
 * or the store is flushed). `enqueueTask` with `refuseDeleted` answers
 * `agent_deleted` and writes nothing while the marker is there; any other
 * enqueue ignores it (the id is free again).
 */
export interface Lifecycle {
  /** Removes the agent and every record it owns (invariant `deletion`). */
  /** `now`: the time the deletion marker records (invariant `deletion-marker`; default 0). */
  deleteAgent(agentId: string, now?: number): Promise<{ status: "deleted" } | { status: "agent_not_found" }>;
  /** One cheap round trip to the store (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Verdicts (verdicts/).
 *
 * ## write-once-verdicts
 * Verdicts are write-once: a second write of a verdict id answers `exists`
 * and leaves the stored record as it was.
 */
export interface Verdicts {
  putVerdict(req: VerdictPut): Promise<{ status: "written" } | { status: "exists" }>;
  getVerdict(verdictId: string): Promise<string | null>;
  listVerdicts(agentId: string, filter: VerdictFilter): Promise<string[]>;
}

/** Transport dedup of signed deliveries; its invariants are stated at `DeliveryResponse`. */
export interface DeliveryDedup {
  /** Transport dedup of signed deliveries (see DeliveryResponse). */
  claimDelivery(req: ClaimDeliveryRequest): Promise<ClaimDeliveryResult>;
  /** Extends the hold of its holder (see DeliveryResponse): `renewed` or `lost`. */
  renewDelivery(req: RenewDeliveryRequest): Promise<SettleDeliveryResult>;
  /** Settles the hold of its holder with the response (or lets go, null): `written` or `lost`. */
  recordDelivery(req: RecordDeliveryRequest): Promise<SettleDeliveryResult>;
}

/** Rate limits; their rules are stated at `RateLimitBucket`. */
export interface RateLimits {
  /** Checks and charges rate-limit buckets at once (see RateLimitBucket). */
  rateLimit(req: RateLimitRequest): Promise<RateLimitResult>;
}

/** Single-consumer target leases; their rules are stated at `TargetLeaseRequest`. */
export interface TargetLeases {
  /** Takes or renews the lease of a single-consumer worker target (see TargetLeaseRequest). */
  acquireTargetLease(req: TargetLeaseRequest): Promise<TargetLeaseResult>;
  /** Frees the holder's own lease of a target; another holder's lease is left alone. */
  releaseTargetLease(req: Omit<TargetLeaseRequest, "leaseMs">): Promise<{ status: "released" | "not_held" }>;
}

/**
 * The tool registry.
 *
 * ## tool-registry
 * The tool registry (common/tool-registry.ts) is one record per role,
 * shared by all agents. `recordToolMethod` is atomic: it reads the
 * role's entry and the method's form and writes the updated entry in one
 * step, so concurrent calls never lose a method, an alias or a count. A
 * method is appended once per form (`fetch_url`), another spelling of a
 * known form once as an alias (`fetchUrl`); `calls` grows by the
 * request's `calls` (default 1: one request may carry a batch of calls
 * of one method, actors/registry/writer.ts). An entry stored without
 * `methods` loads with empty lists and keeps its other fields. Role and
 * method match the tool name pattern and `calls` is a positive safe
 * integer; anything else is a StoreInputError and writes nothing.
 * The runtime writes a method's first call in a process at once and
 * batches the later ones: methods and aliases are exact, `calls` lags
 * by at most the writer's flush interval, and a process killed between
 * flushes loses at most that interval's count.
 */
export interface ToolRegistry {
  /** Notes a successful call of a role's method in the tool registry (invariant `tool-registry`). */
  recordToolMethod(req: RecordToolMethodRequest): Promise<RecordToolMethodResult>;
  /** The registry entry of one role, or null. */
  getToolRole(role: string): Promise<ToolRoleEntry | null>;
  /** Every registry entry, by role name. */
  listToolRoles(): Promise<ToolRoleEntry[]>;
}

/**
 * Forks.
 *
 * ## fork-is-new-agent
 * A fork is a new agent: `createFork` writes only the new agent's records
 * (refusing, with nothing written, an id that exists), and `recordFork`
 * appends one `forked_to` event to the source and changes nothing else of
 * it.
 */
export interface Forks {
  /** Creates a fork (invariant `fork-is-new-agent`); `exists` when the id is taken. */
  createFork(req: CreateForkRequest): Promise<CreateForkResult>;
  /** Logs `forked_to` on the source of a fork (invariant `fork-is-new-agent`). */
  recordFork(req: RecordForkRequest): Promise<{ status: "recorded"; eventId: number } | { status: "agent_not_found" }>;
}

/**
 * Definition sets.
 *
 * ## turn-versions
 * A turn runs under the definition version it started with. A commit with
 * `turnVersion` writes the head's `turnVersion` (the version) and
 * `versionTurn` (the turn it belongs to). The pin of an agent is
 * `turnVersion` while `versionTurn` is its `activeTurnId`; otherwise it has
 * none (between turns, a turn started before versions were recorded, or by a
 * build that writes no pin). `claimNext` with `agentVersions` listing the
 * agent's name leaves an agent whose pin is not among those versions exactly
 * as one of another name (invariant `definition-sets`: nothing written,
 * counted in `foreign`); an agent with no pin, or about to start a new turn,
 * is claimed as before. Heads written before this field have neither field
 * (readers treat both as null, and head replies leave them out).
 *
 * ## definition-sets
 * Deployments with different agent definitions may share one key space.
 * `claimNext` with `agentNames` claims only agents whose `agentName` is
 * listed: a claimable agent of another name is left exactly as it was
 * (lease, bell, inbox), so a worker that has its definition claims it as
 * soon as it polls or hears the bell; the answer `empty` then carries
 * `foreign` > 0, how many such agents it saw due (on the sharded layout,
 * among the shards it visited). Busy, empty and stale bells are maintained
 * whatever their name. `announceDefinitionSet` records a definition set
 * (its agent names) with a time, drops records older than `ttlMs` and
 * answers the other sets still recorded; with `withdraw` it removes the
 * set's record instead (a process that stops).
 */
export interface DefinitionSets {
  /** Records this process's definition set and answers the others recorded in the key space (invariant `definition-sets`). */
  announceDefinitionSet(req: AnnounceDefinitionSetRequest): Promise<{ others: DefinitionSetRecord[] }>;
}

/** A schedule as stored (store/port.ts `Schedules`). */
export interface ScheduleRecord {
  agentId: string;
  scheduleId: string;
  /** The definition each tick's task names (binding rules as for `enqueueTask`). */
  agentName: string;
  /** The ready queue the schedule's due time is kept in. */
  workerTarget: string;
  /** The timing and the task's input (common/schedule.ts). */
  spec: ScheduleSpec;
  /** The next tick to fire (ms); null: no more ticks. */
  nextTick: number | null;
  /** Counts the writes of the schedule (`putSchedule`): a fire is applied only to the revision it was planned from. */
  rev: number;
  /** The last tick fired and the turn its task got (null before the first). */
  lastFired: { tick: number; turnId: string; at: number } | null;
  createdAt: number;
  updatedAt: number;
  /** Who wrote this revision (created or replaced it; common/by.ts); absent on a schedule written without one. */
  by?: By;
}

/** What `deleteSchedule` logs on the agent: who deleted the schedule, and when. */
export interface DeleteScheduleLog {
  by: By;
  now: number;
}

export interface PutScheduleRequest {
  agentId: string;
  scheduleId: string;
  agentName: string;
  workerTarget: string;
  spec: ScheduleSpec;
  /** The first tick (ms), computed by the caller from `spec` and `now`. */
  nextTick: number | null;
  /** Who wrote this revision (common/by.ts), stored as the record's `by`. */
  by?: By;
  now: number;
  /**
   * The most schedules the agent may hold (invariant `schedule-bounds`; a
   * positive safe integer, default DEFAULTS.maxSchedulesPerAgent): a new
   * schedule past it is refused with `schedule_limit`.
   */
  maxSchedules?: number;
  /**
   * Write only over this revision of the schedule (a read-modify-write, as
   * pausing is): when the schedule is absent or at another `rev`, the answer
   * is `stale` and nothing is written (invariant `schedule-put`).
   */
  expectRev?: number;
}

export type PutScheduleResult =
  | { status: "created" | "replaced"; schedule: ScheduleRecord }
  | { status: "definition_conflict"; boundTo: string }
  /** The agent holds `limit` schedules already and this one is new (invariant `schedule-bounds`): nothing written. */
  | { status: "schedule_limit"; limit: number }
  /** `expectRev` was given and the schedule is absent or at another revision: nothing written. */
  | { status: "stale" };

export interface FireScheduleTickRequest {
  agentId: string;
  scheduleId: string;
  /** The record's `nextTick` and `rev` the caller planned from (invariant `schedule-tick-once`). */
  expectTick: number;
  expectRev: number;
  /** The tick whose task is enqueued (its idempotency key names it); null: none, only `nextTick` advances. */
  fireTick: number | null;
  /** The next tick to store (null: no more ticks). */
  nextTick: number | null;
  /** The task, as `enqueueTask` takes it (its input is the schedule's as stored). */
  turnId: string;
  /** The schedule's input as read at `expectRev` (the same as stored): sizes the `task_enqueued` event. */
  input: unknown;
  idempotencyKey: string;
  options: TaskOptions;
  now: number;
  /**
   * The most tasks of this schedule that may wait in the agent's queue at
   * once (invariant `schedule-bounds`; a positive safe integer, default 1):
   * common/schedule.ts `queuedTicksCap` of the spec planned from.
   */
  maxQueued?: number;
  /** The task's concurrency key and priority, as `enqueueTask` takes them (invariants `concurrency-keys`, `priorities`). */
  concurrencyKey?: string;
  priority?: number;
}

export type FireScheduleTickResult =
  /** Applied: the task's enqueue result (a duplicate key enqueued nothing), `nextTick` stored. */
  | { status: "fired"; enqueue: EnqueueTaskResult; nextTick: number | null }
  /** Applied with `fireTick` null: only `nextTick` advanced. */
  | { status: "skipped"; nextTick: number | null }
  /**
   * Applied without a task (invariant `schedule-bounds`): `maxQueued` tasks of
   * the schedule are still queued and unclaimed, `turnId` the newest of
   * them; the tick is folded into it and `nextTick` advanced.
   */
  | { status: "coalesced"; turnId: string; nextTick: number | null }
  /** The record is not at `expectTick` / `expectRev` any more (another worker fired it, or it was rewritten): nothing written. */
  | { status: "stale"; nextTick: number | null }
  | { status: "schedule_not_found" };

export interface NextDueScheduleRequest {
  workerTarget: string;
  now: number;
  /** When given, only schedules whose `agentName` is listed (invariant `definition-sets`). */
  agentNames?: readonly string[];
}

export type NextDueScheduleResult =
  /** The oldest due schedule of the target (as `claimNext` answers it): fire it with `fireScheduleTick`. */
  | { status: "schedule_due"; schedule: ScheduleRecord }
  /** None due; `next`: the earliest next tick of the target's schedules after `now` (null: none). */
  | { status: "none"; next: number | null };

/**
 * Recurring schedules of an agent. The records live with the agent's own
 * (one slot); the due time of each is a member `<agentId>\n<scheduleId>` of
 * the ready queue of its worker target, scored by its `nextTick`, so it
 * feeds the same earliest-due read (`nextReadyAt`) and bell as agents do.
 *
 * ## schedule-tick-once
 * `claimNext` answers a due schedule (`schedule_due`, with its record)
 * before claiming any agent due after it, and leaves it as it is; it never
 * fires it. `fireScheduleTick` applies only when the record is still at
 * `expectTick` and `expectRev`, and then, in one atomic step, enqueues the
 * task exactly as `enqueueTask` would (same checks, same idempotency key
 * dedup, same bell), records the fire, stores `nextTick` and moves the
 * schedule's score to it (removes it for null). So whatever the number of
 * workers and wherever one stops, a tick is either not fired (the record
 * still names it, and any worker fires it later) or fired once; a second
 * fire planned from the same record answers `stale` and writes nothing.
 * A definition conflict still advances the schedule (the enqueue answer
 * says so), so a bad tick cannot hold the queue.
 *
 * ## schedule-index
 * Beside its ready-queue member, every schedule with a next tick has a
 * member `<agentId>\n<scheduleId>` in its target's schedule index, scored
 * by that tick (`putSchedule`, `fireScheduleTick` and `deleteSchedule` /
 * `deleteAgent` keep it; a schedule written before the index existed joins
 * it when `claimNext` visits its due time). `nextDueSchedule` reads the
 * index only: it answers the oldest due schedule (of `agentNames`), never
 * claims, moves or reads any agent, and leaves the record as it is (a stale
 * member is moved to its record's tick or removed); else the earliest tick
 * after `now`. So a process can fire due ticks while all its worker loops
 * are held by turns, at a cost that does not grow with the agents due.
 *
 * ## schedule-put
 * `putSchedule` refuses (`definition_conflict`, nothing written) when the
 * agent exists under another definition; otherwise it writes the record
 * (a new `rev`), sets its score to `nextTick` and rings (a new earliest
 * due time is published like any bell). With `expectRev`, it writes only
 * over that revision of an existing schedule (else `stale`, nothing
 * written), so a read-modify-write (pause, resume) never revives a deleted
 * schedule nor undoes a concurrent write. `deleteSchedule` removes the
 * record and its score. `deleteAgent` removes every schedule of the agent.
 *
 * ## schedule-bounds
 * What one agent's schedules may cost, whoever writes them:
 * - Count. `putSchedule` of a new schedule id refuses (`schedule_limit`,
 *   nothing written) when the agent holds `maxSchedules` schedules already,
 *   counted inside the same atomic step (so concurrent writers cannot pass
 *   it); replacing an existing schedule is never refused by the bound.
 * - Queue. A schedule counts the tasks it enqueued since its newest task
 *   left the queue (claimed, cancelled or removed). An agent's queue is
 *   first-in first-out for ticks, so that count bounds how many of its
 *   tasks wait. `fireScheduleTick` with a tick to fire, when the newest task
 *   is still queued and the count has reached `maxQueued`, enqueues nothing
 *   (`coalesced`: the tick is folded into the waiting task) and still
 *   advances. The agent's queue thus holds at most the sum of its
 *   schedules' `maxQueued` tasks from ticks (1 each, `catchUp: "all"`
 *   MAX_CATCH_UP).
 * - Fair share. After any applied fire, the schedule's score in the ready
 *   queue is at least the fire's `now`, even when `nextTick` is due already
 *   (a catch-up tick): its next tick waits behind every agent and schedule
 *   that was due before that `now`. So a task due at `t` waits behind at
 *   most one fire of each schedule due before `t`, never behind a
 *   schedule's whole catch-up.
 */
export interface Schedules {
  putSchedule(req: PutScheduleRequest): Promise<PutScheduleResult>;
  getSchedule(agentId: string, scheduleId: string): Promise<ScheduleRecord | null>;
  /** The agent's schedules, by scheduleId. */
  listSchedules(agentId: string): Promise<ScheduleRecord[]>;
  /**
   * Removes a schedule. With `log` (who deleted it, common/by.ts, and when), an
   * agent that exists logs `schedule_deleted { scheduleId, by }` in the same
   * step; an agent that does not (a schedule written before its first task)
   * has no log to write to.
   */
  deleteSchedule(agentId: string, scheduleId: string, log?: DeleteScheduleLog): Promise<{ status: "deleted" } | { status: "schedule_not_found" }>;
  /** Fires one tick of a due schedule (invariant `schedule-tick-once`). */
  fireScheduleTick(req: FireScheduleTickRequest): Promise<FireScheduleTickResult>;
  /** The oldest due schedule of a target, from the schedule index alone (invariant `schedule-index`). */
  nextDueSchedule(req: NextDueScheduleRequest): Promise<NextDueScheduleResult>;
}

/** Records beside the agents' own (each part states its invariants). */
export interface SideStores extends Schedules, Verdicts, DeliveryDedup, RateLimits, TargetLeases, ToolRegistry, Forks, DefinitionSets {}

// ------------------------------------------------------------------ approvals

/** A decision on a call that waits for approval (invariant `first-decision-wins`). */
export interface DecideApprovalRequest {
  agentId: string;
  turnId: string;
  toolCallId: string;
  /** `timeout`: the watchdog's, refused (`not_due`) before the approval's deadline. */
  decision: "approved" | "rejected" | "timeout";
  /** Why; a rejection's reason reaches the model in its tool error. At most 2 000 characters are kept. */
  reason?: string;
  /**
   * `approved` only: the arguments the call runs with instead of the proposed
   * ones (a JSON object, already checked against the tool's schema by the
   * caller). Stored as `approval.args` beside the proposed `args`.
   */
  args?: Record<string, unknown>;
  /** Who decided (common/by.ts): stored on the approval and logged on `approval_decided`; absent for the watchdog's timeout. */
  by?: By;
  now: number;
}

export type DecideApprovalResult =
  /** This decision is the first: stored and mailed to the agent. */
  | { status: "decided"; record: ToolCallRecord }
  /** The same decision was stored before: nothing changed. */
  | { status: "duplicate"; record: ToolCallRecord }
  /** Another decision was stored before (`record.approval.status` says which): nothing changed. */
  | { status: "conflict"; record: ToolCallRecord }
  /** The call needs no approval. */
  | { status: "not_awaiting_approval" }
  /** A timeout before the approval's deadline. */
  | { status: "not_due" }
  | { status: "agent_not_found" }
  | { status: "unknown_call" }
  | { status: "turn_finished" };

/**
 * Approvals: a person decides whether a tool call that needs approval
 * (tools/define.ts `needsApproval`) runs. The call is recorded by the commit
 * of its step with `approval: { status: "pending", runMs }` and, while the
 * approval is pending, with the approval's deadline as its `deadline` (the
 * due index holds that deadline, so the watchdog ends an approval nobody
 * decided exactly then).
 *
 * ## first-decision-wins
 * `decideApproval` is first-wins per (agent, turn, toolCallId). The first
 * decision on a pending approval is stored in the call's `approval`
 * (`status`, `decidedAt`, `reason`, and an approval's edited `args`, the
 * proposed ones staying in the record's `args`), logs `approval_decided`
 * (with the edited `args` when there are) and mails the
 * agent (the bell rings, invariant `inbox-is-truth`): `approved` moves the
 * call's deadline (and its due-index entry) to `now + runMs` and mails
 * `approval` (with the edited `args`); `rejected` and `timeout` resolve the call with the error
 * outcome `approval_rejected` / `approval_timeout` (the reason in its
 * message and metadata; source `approval` / `watchdog`), log
 * `tool_result_received` and mail it as a tool result, exactly as a
 * delivery would. The same decision again (for an approval: with the same
 * edited `args`, compared as canonical JSON, or none) answers `duplicate`,
 * another one `conflict`; both answer the stored record and change nothing. A timeout
 * before the call's deadline answers `not_due`; a call without `approval`
 * answers `not_awaiting_approval`; an undecided call of a turn that is no
 * longer active answers `turn_finished`. All of it changes nothing.
 *
 * ## approval-before-result
 * No delivery resolves a call whose approval is pending: `deliverToolResult`
 * answers `approval_pending` and changes nothing, whatever the source (the
 * watchdog ends such a call with `decideApproval`'s `timeout`). A watchdog
 * timeout of an approved call whose deadline (moved by the approval) has
 * not passed answers `not_due` and changes nothing. (An in-process call's
 * own result comes with the worker's commit, which the worker makes only
 * for a call it read as approved: actors/steps/approvals.ts.)
 */
export interface Approvals {
  /** Decides a call's approval, first decision wins (invariant `first-decision-wins`). */
  decideApproval(req: DecideApprovalRequest): Promise<DecideApprovalResult>;
}

// ------------------------------------------------------------------ named events

/** One call waiting for a named event. */
export interface EventWaiter {
  agentId: string;
  turnId: string;
  toolCallId: string;
}

export interface EventWaitsRequest {
  /** The event's name (common/event-name.ts). */
  name: string;
  /** The event's id: its first arrival is recorded under it for a day (a retry of the event sees the same waits). */
  eventId: string;
  /** Waits to leave the index first (ones a delivery found resolved, ended or gone). */
  drop?: EventWaiter[];
  now: number;
}

export interface EventWaitsResult {
  /** When the event first arrived (the first call with its id; `now` for a new id). */
  since: number;
  /** The calls that began waiting for the name at or before `since`, oldest first. */
  waits: EventWaiter[];
}

/**
 * Named events: a call of a tool with `waitFor` (tools/define.ts) waits for
 * an event of a name; `POST /v1/events` delivers one (routes/named-events.ts).
 *
 * ## named-event-waits
 * The commit that records a call waiting for an event also puts it in the
 * index of that name (its home's, scored by the commit's `now`); the result
 * that resolves it (`deliverToolResult`, whatever the source) takes it out.
 * `eventWaits` first drops the waits it is given, then records the event's
 * first arrival under its id (kept if already there, forgotten a day later)
 * and answers the waits that began at or before it. A delivery resolves each
 * of them with `deliverToolResult` (first result wins, so a retried event
 * with the same id resolves nothing twice and reaches no wait that began
 * after its first arrival). A call whose turn ended stays in the index until
 * a delivery of its name finds it `turn_finished` and drops it.
 */
export interface NamedEvents {
  /** Records an event's first arrival and answers the calls waiting for its name (invariant `named-event-waits`). */
  eventWaits(req: EventWaitsRequest): Promise<EventWaitsResult>;
}

/** The whole port: its sections (and their invariants) above. */
export interface Store extends TurnProtocol, Reads, Lifecycle, SideStores, Approvals, NamedEvents {
  readonly kind: "memory" | "redis" | "upstash";
  /**
   * Optional: the live channel (store/live.ts) on which model deltas and
   * "log grew" notices reach every process on this store without a store
   * write. The memory store has an in-process one, TCP Redis and Upstash a
   * shared one; without it the runtime uses an in-process channel and the
   * event streams poll.
   */
  readonly live?: LiveChannel;
  /**
   * Optional: whether the store keeps `concurrencyLimits` (invariant
   * `concurrency-keys`); every adapter here does, the sharded layout too.
   * `false`: `createGatehouse` refuses non-empty limits at startup. Absent
   * or `true`: the store keeps them.
   */
  readonly keepsConcurrencyLimits?: boolean;
}
