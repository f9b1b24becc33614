/**
 * The writes of a claim's next commit (actors/host/run-claim.ts): events, new messages,
 * tool calls to record and to resolve, the mail acknowledged, a new summary.
 * `flush` sends them in one compare-and-set commit together with the actor's
 * persisted snapshot, and optionally releases the lease. The writes are
 * booked by actors/host/apply.ts alone; this module and that one are the
 * only ones that build a commit (tests/repo/layers.test.ts), so the parking
 * commit of an agent this worker cannot run (`parkingCommit`) is here too.
 *
 * Invariants:
 * - A tool call is recorded (committed) before it is dispatched. Every
 *   effect's result is committed before the next effect starts, except the
 *   results of `retrySafe` tools, which ride with the commit of the model
 *   step that follows them (the host decides; docs/architecture.md,
 *   "Commits and crash points").
 * - Turn chaining (store invariant `turn-chaining`): a commit that ends the turn and
 *   releases asks the store to claim the next queued task in the same step
 *   when the host allows it (`flush(release, { chain: true })`); the claim
 *   it took is `chained`.
 * - Transitions without an effect (mail, feedback) ride along with the next
 *   commit; the event log still lists each of them. A new turn's start is
 *   flushed on its own before the turn's first effect (actors/host/effects.ts),
 *   with the mail its claim applied: readers see `running` at once.
 * - The buffer is emptied only by an applied commit. A refused commit (lost
 *   compare-and-set: another worker or the watchdog answered first) stops
 *   this attempt: the abort fires, the cache entry is dropped, `fenceReason`
 *   says why, and nothing is flushed again.
 * - A commit that meets a store outage (a Redis Cluster failing over) is sent
 *   again while the lease lasts (actors/claim/store-retry.ts); the compare-and-set
 *   makes that safe.
 * - `version` is the version of the last applied commit (the claim's at
 *   first) and `commits` counts the applied commits of this claim.
 * - Storage limits ride along only with the commit that ends a turn (the
 *   store trims only then); a summary rides with the first commit after it
 *   was computed (actors/conversation/memory.ts: stored before anything depends on it).
 * - A delegated turn's commits stop at a cancel (store invariant `firm-cancels`): once a
 *   cancel of the turn is accepted, a commit that does not apply it is
 *   refused (`cancel_pending`, the agent given back), so the next claim ends
 *   the turn cancelled instead of committing the step that was running.
 * - An applied commit drops the process's kept results of the calls it
 *   resolved, and every kept result of its turn when it ends the turn
 *   (actors/claim/kept-results.ts).
 * - What a commit causes on other agents (actors/delegation/delegation.ts: a delegated
 *   turn's result, children to cancel, delegations to dispatch) is noted here
 *   and run by `afterCommit` only once the commit applied.
 * - The events are stored in their compact form (common/event-form.ts): a
 *   payload a transition of the commit carries is stored in it only.
 * - The parts of a claim book writes only through the `CommitSink` methods
 *   (actors/claim/context.ts); the buffered writes are private to this class.
 * - Every `transition` a commit appends carries `commit: { index, count }`:
 *   its position among the events of that commit and how many there are,
 *   so a reader of the log knows which events one commit wrote and where it
 *   ended (actors/replay/commit-point.ts: a fork at any event of a commit
 *   takes the agent at the commit's end).
 */
import type { NewEvent } from "../../common/events.ts";
import { compactEvents } from "../../common/event-form.ts";
import type { Message } from "../../common/message.ts";
import { persistedOf } from "../../machines/persist.ts";
import type { CommitRequest, ConversationSummary, RetentionLimits } from "../../store/port.ts";
import type { AbandonedChild, AfterCommitNotes, AgentActor, ClaimContext, Claimed, CommitSink, EndedTurn, HostDeps } from "./context.ts";
import { FINAL } from "./context.ts";
import { retryWithinLease } from "./store-retry.ts";

export interface CommitBufferOptions {
  ctx: Pick<ClaimContext, "deps" | "agentId" | "workerId" | "epoch" | "abort" | "history" | "usedIds" | "memory" | "lease">;
  actor: AgentActor;
  /** The version the claim read. */
  version: number;
  /** The turn active when the claim started (the compare-and-set checks it). */
  turnId: string | null;
  retention: RetentionLimits | null;
  /**
   * Refuse to commit while a cancel of the turn is pending (store invariant `firm-cancels`): set for a delegated
   * turn, so a parent's cancel ends its child's turn at the child's next commit (actors/delegation/delegation.ts, 6.).
   */
  stopAtCancel: boolean;
  /** Effects on other agents that wait for an applied commit. */
  afterCommit: (released: boolean, notes: AfterCommitNotes) => Promise<void>;
}

export class CommitBuffer implements CommitSink {
  #events: NewEvent[] = [];
  #messages: Message[] = [];
  #recordToolCalls: CommitRequest["recordToolCalls"] = [];
  #resolveToolCalls: CommitRequest["resolveToolCalls"] = [];
  /** The highest mail sequence number applied so far (0: none). */
  #ackMailThrough = 0;
  /** A summary computed for the next commit (actors/conversation/memory.ts). */
  #summary: ConversationSummary | null = null;
  /** The turn's version pin for the next commit (store/port.ts invariant `turn-versions`). */
  #pin: { turnId: string; version: string } | null = null;

  /** Delegations recorded by the buffered commit: dispatched once it applied. */
  #delegationsRecorded = false;
  /** The turn that the buffered commit ends. */
  #endedTurn: EndedTurn | null = null;
  /** Children to cancel once the buffered commit applied. */
  #abandoned: AbandonedChild[] = [];

  /** Version of the last applied commit. */
  version: number;
  /** Commits applied by this claim. */
  commits = 0;
  /** Why the store refused a commit ("" while none was refused). */
  fenceReason = "";
  /** The next task's claim, taken by the applied commit that ended the turn (turn chaining). */
  chained: Claimed | undefined;

  readonly #o: CommitBufferOptions;
  /** The lease's end, for the retry of a commit (one function per claim, not one per commit). */
  readonly #leaseUntil: () => number;

  constructor(o: CommitBufferOptions) {
    this.#o = o;
    this.version = o.version;
    this.#leaseUntil = () => o.ctx.lease.until;
  }

  readonly emit = (type: string, data: Record<string, unknown>): void => {
    this.#events.push({ type, data });
  };

  append(events: readonly NewEvent[]): void {
    this.#events.push(...events);
  }

  addMessage(message: Message): void {
    this.#messages.push(message);
  }

  recordCall(call: CommitRequest["recordToolCalls"][number], delegated: boolean): void {
    this.#recordToolCalls.push(call);
    if (delegated) this.#delegationsRecorded = true;
  }

  resolveCall(result: CommitRequest["resolveToolCalls"][number]): void {
    this.#resolveToolCalls.push(result);
  }

  ackMail(seq: number): void {
    this.#ackMailThrough = Math.max(this.#ackMailThrough, seq);
  }

  /** Pins `turnId` to `version` with the next commit (a turn's start, or its upgrade). */
  pin(turnId: string, version: string): void {
    this.#pin = { turnId, version };
  }

  setSummary(summary: ConversationSummary): void {
    this.#summary = summary;
  }

  endTurn(ended: EndedTurn): void {
    this.#endedTurn = ended;
  }

  endsTurn(turnId: string): boolean {
    return this.#events.some((e) => e.type === "task" && e.data.turnId === turnId);
  }

  withdrawTurnEnd(turnId: string): void {
    const i = this.#events.findIndex((e) => e.type === "task" && e.data.turnId === turnId);
    if (i >= 0) this.#events.splice(i, 1);
  }

  abandon(child: AbandonedChild): void {
    this.#abandoned.push(child);
  }

  withdrawToolCalls(): void {
    this.#recordToolCalls = [];
    this.#delegationsRecorded = false;
    this.#events = this.#events.filter((e) => e.type !== "delegation_started" && e.type !== "approval_requested");
  }

  /**
   * Commits the buffer with the actor's persisted snapshot; `release` hands the lease back
   * (`runnableAt`: when the agent is due again), null keeps it. False when the store refused.
   */
  async flush(release: { runnableAt: number | null } | null, opts: { chain?: boolean } = {}): Promise<boolean> {
    const { ctx, actor, turnId, retention } = this.#o;
    const { deps, agentId, workerId, epoch } = ctx;
    const { store, clock, logger, cache } = deps;
    const s = persistedOf(actor.getSnapshot());
    const final = FINAL.has(s.value) || s.value === "idle";
    let now = clock.now();
    // Only the commit that ends a turn and releases may start the next one.
    const chain = opts.chain === true && final && turnId !== null && release !== null;
    // Payloads a transition of this commit carries are stored once (common/event-form.ts).
    const events = compactEvents(markCommit(this.#events));
    // Through a store outage (a Cluster failover) the same commit is sent again while the lease lasts.
    const res = await retryWithinLease(() => (now = clock.now(), store.commit({
      agentId, workerId, epoch, expectedVersion: this.version, turnId,
      snapshot: s, state: s.value,
      activeTurnId: final ? null : turnId,
      events, messages: this.#messages, recordToolCalls: this.#recordToolCalls, resolveToolCalls: this.#resolveToolCalls,
      ackMailThrough: this.#ackMailThrough, release, leaseMs: deps.leaseMs, now,
      // The store trims only at a turn's end: the limits ride along with that commit only.
      ...(retention && final ? { retention } : {}),
      ...(this.#summary ? { summary: this.#summary } : {}),
      ...(this.#pin ? { turnVersion: this.#pin } : {}),
      ...(chain ? { chainNextTask: true, ...(deps.concurrencyLimits ? { concurrencyLimits: deps.concurrencyLimits } : {}) } : {}),
      ...(this.#o.stopAtCancel && turnId !== null ? { stopAtCancel: true } : {}),
    })), {
      kind: store.kind, clock, logger, leaseUntil: this.#leaseUntil, leaseMs: deps.leaseMs, signal: ctx.abort.signal, what: "commit", agentId,
    });
    if (res.status !== "applied") {
      // Another worker owns the agent now (or the watchdog answered first): stop every side effect.
      ctx.abort.abort();
      cache.delete(agentId);
      logger.info("commit_refused", { agentId, workerId, epoch, reason: res.reason });
      this.fenceReason = res.reason;
      return false;
    }
    this.commits++;
    this.version = res.version;
    // After it applied: open streams and waiting requests read the store now instead of polling (store/live.ts).
    // A script store's commit published it already, inside the script (no extra command).
    // A commit that leaves the turn running appended no turn's end (`turnEnded: false`); one that ends it names it (`endedTurn`):
    // requests waiting for another turn's end are spared a read.
    if (!deps.live?.grewOnCommit) {
      const ended = !final ? { turnEnded: false as const } : turnId !== null ? { endedTurn: turnId } : {};
      deps.live?.publish(agentId, { type: "grew", lastEventId: res.lastEventId, ...ended });
    }
    // The results this commit resolved are stored now: the process keeps them no longer (actors/claim/kept-results.ts).
    const kept = deps.keptResults;
    const keptTurn = s.context.turnId;
    if (kept && keptTurn) {
      if (final) kept.dropTurn(agentId, keptTurn);
      else if (this.#resolveToolCalls.length > 0) kept.drop(agentId, keptTurn, this.#resolveToolCalls.map((r) => r.toolCallId));
    }
    this.chained = res.chained;
    if (res.chained) logger.debug("turn_chained", { agentId, workerId, epoch: res.chained.epoch, turnId: res.chained.task?.turnId ?? null });
    this.#summary = null;
    this.#pin = null;
    dropTrimmed(ctx, res.messagesTrimmedThrough);
    logger.debug("commit", { agentId, workerId, epoch, version: this.version, state: s.value, released: release !== null });
    if (!release) ctx.lease.confirm(now + deps.leaseMs);
    this.#events = [];
    this.#messages = [];
    this.#recordToolCalls = [];
    this.#resolveToolCalls = [];
    this.#ackMailThrough = 0;
    // The snapshot cache is written once, when the claim ends (actors/host/restore.ts `leaveClaim`), which
    // replaces or deletes the entry in every case: a copy of the history here at each commit would be
    // O(history) per step for nothing.
    const notes: AfterCommitNotes = { endedTurn: this.#endedTurn, abandoned: this.#abandoned, delegationsRecorded: this.#delegationsRecorded };
    this.#endedTurn = null;
    this.#abandoned = [];
    this.#delegationsRecorded = false;
    await this.#o.afterCommit(release !== null, notes);
    return true;
  }
}

/** Drops from the history what the store's retention dropped, so a resident agent sees what a fresh read would. */
function dropTrimmed(ctx: Pick<ClaimContext, "history" | "usedIds" | "memory">, trimmedThrough: number | undefined) {
  const { history, usedIds, memory } = ctx;
  if (trimmedThrough === undefined || trimmedThrough <= memory.firstIndex) return;
  const dropped = history.splice(0, Math.min(history.length, trimmedThrough - memory.firstIndex));
  for (const m of dropped) usedIds.drop(m);
  memory.firstIndex = trimmedThrough;
}

/** The commit's events, each transition marked with its position in them and their number (the payload objects are kept). */
function markCommit(events: readonly NewEvent[]): NewEvent[] {
  const count = events.length;
  return events.map((e, index) => e.type === "transition" ? { type: e.type, data: { ...e.data, commit: { index, count } } } : e);
}

/**
 * The commit that parks an agent this worker cannot run (actors/host/restore.ts): `events` logged, the
 * snapshot and mail left as they are, the lease kept for `backoffMs` instead of released.
 */
/**
 * Hands a claimed agent back at once (its lease released, due in `dueInMs`, nothing else written): the claim of a
 * turn pinned to a version this worker lacks (store/port.ts invariant `turn-versions`), for a worker that has it.
 * The pool never claims such a turn (claimNext `agentVersions`): only a claim by another path gets here.
 */
export async function handBackCommit(deps: Pick<HostDeps, "store" | "clock">, claim: Claimed, workerId: string, dueInMs: number): Promise<void> {
  const { agentId, epoch, head } = claim;
  const turnId = head.activeTurnId;
  const now = deps.clock.now();
  await deps.store.commit({
    agentId, workerId, epoch, expectedVersion: head.version, turnId,
    snapshot: head.snapshot, state: head.state, activeTurnId: turnId,
    events: [], messages: [], recordToolCalls: [], resolveToolCalls: [], ackMailThrough: 0,
    release: { runnableAt: now + dueInMs }, leaseMs: 1, now,
  });
}

export async function parkingCommit(
  deps: Pick<HostDeps, "store" | "clock">, claim: Claimed, workerId: string, backoffMs: number, events: NewEvent[],
): Promise<void> {
  const { agentId, epoch, head } = claim;
  const turnId = head.activeTurnId;
  await deps.store.commit({
    agentId, workerId, epoch, expectedVersion: head.version, turnId,
    snapshot: head.snapshot, state: head.state, activeTurnId: turnId,
    events, messages: [], recordToolCalls: [], resolveToolCalls: [], ackMailThrough: 0,
    release: null, leaseMs: backoffMs, now: deps.clock.now(),
  });
}
