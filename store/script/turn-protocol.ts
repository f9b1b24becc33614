/**
 * The turn protocol of the script store (store/port.ts `TurnProtocol`): tasks in, claims,
 * commits, mail, tool results, cancels, deadlines and the bell, each one script call
 * (the sharded layout's claimNext, dueToolCalls, nextReadyAt and readyCount call each shard).
 * Each operation is a top-level function of the store's ScriptContext over
 * its scripts, described here (store/script/operation.ts): layout, reply words,
 * decoding. The commit and the claims keep their tuned path: their layouts in
 * store/lua/args/turn-protocol.ts, their replies decoded by `decode`
 * (replies.ts), through `call`.
 */
import { byField } from "../../common/by.ts";
import { isEventName } from "../../common/event-name.ts";
import type { CancelRequest, CancelResult, CancelTaskRequest, CancelTaskResult, ClaimFailureRequest, ClaimFailureResult, ClaimNextRequest, ClaimRequest, ClaimResult, CommitRequest, CommitResult, ConcurrencyLimits, DeliverToolResultRequest, DeliverToolResultResult, EnqueueTaskRequest, EnqueueTaskResult, RenewRequest, ResetTurnRequest, ResetTurnResult, SkipDueToolCallRequest, TurnProtocol } from "../port.ts";
import type { InboxTask, ToolCallRecord } from "../types.ts";
import { checkAgentName, checkTarget, checkTurnId, checkVersion, StoreInputError } from "../keys.ts";
import { notApplied } from "../../common/contract-validation.ts";
import { answerResolved } from "../redelivery.ts";
import { inputBytes } from "../inputs.ts";
import { maxDelayedOf } from "../delayed-bound.ts";
import { compactSnapshot } from "../snapshot-form.ts";
import { limitsArg, taskLaneFields } from "../lanes.ts";
import { afterCommit, claimCounted, countsInSlots, type Need, releaseFreed, renewHeld, renewNamed, slotLimits, withoutFreed } from "./key-slots.ts";
import { wireEvent, wireMessage, wireRecord, wireResolution } from "./wire.ts";
import { wellFormedJson } from "../../common/well-formed.ts";
import { byCodePoint, CALL, eventTail, int, j, MESSAGE, RESOLUTION, retentionArg, SNAPSHOT, tail, turnEndArgs, WellFormedOnce } from "./values.ts";
import { encodeClaim, encodeClaimNext, encodeCommit } from "../lua/args/turn-protocol.ts";
import { json, scriptOp } from "./operation.ts";
import type { ScriptContext, Heads } from "./context.ts";

/** store/lua/enqueue_task.lua */
export const ENQUEUE_TASK = scriptOp({
  script: "enqueue_task",
  keys: ["head", "tasks", "idem", "events", "turns", "inputs", "deleted", "delayed"],
  argv: ["prefix", "agent_id", "agent_id_json", "name_json", "target_json", "turn_json", "has_key_flag", "idem_key", "entry", "event_tail", "now_str", "turn_raw", "input_json", "refuse_deleted", "run_at", "max_delayed"],
  keysRest: "long_keys",
  words: ["enqueued", "duplicate", "definition_conflict", "agent_deleted", "too_many_delayed"],
}, (word, payload) => {
  if (word === "agent_deleted") return { status: word, deletedAt: json<number>(payload) } as EnqueueTaskResult;
  if (word === "too_many_delayed") return { status: word, limit: json<number>(payload) } as EnqueueTaskResult;
  return (word === "definition_conflict" ? { status: word, boundTo: json<string>(payload) } : { status: word, turnId: json<string>(payload) }) as EnqueueTaskResult;
});

/** store/lua/deliver_tool_result.lua */
export const DELIVER_TOOL_RESULT = scriptOp({
  script: "deliver_tool_result",
  keys: ["head", "calls", "mail", "events", "deadlines"],
  argv: ["prefix", "agent_id", "turn_json", "turn_id", "call_id", "resolution", "mail_tail", "event_tail", "now_str", "source_flag"],
  words: ["accepted", "resolved", "not_external", "delegated_call", "agent_not_found", "unknown_call", "turn_finished", "approval_pending", "cancel_pending", "not_due"],
}, (word, payload) =>
  // 'resolved' is turned into duplicate / already_resolved by answerResolved (store/redelivery.ts).
  (word === "accepted" || word === "resolved" ? { status: word, record: json(payload) } : { status: word }) as
    | DeliverToolResultResult
    | { status: "resolved"; record: ToolCallRecord });

/** store/lua/request_cancel.lua */
export const REQUEST_CANCEL = scriptOp({
  script: "request_cancel",
  keys: ["head", "mail", "events", "turns", "tasks", "idem", "delayed"],
  argv: ["prefix", "agent_id", "now_str", "reason_json", "turn_raw", "turn_json", "by_field"],
  words: ["accepted", "agent_not_found", "not_active", "turn_finished", "turn_not_started", "turn_not_found"],
}, (word, payload) => (word === "accepted" ? { status: word, turnId: json<string>(payload) } : { status: word }) as CancelResult);

/** store/lua/cancel_task.lua */
export const CANCEL_TASK = scriptOp({
  script: "cancel_task",
  keys: ["head", "tasks", "events", "turns", "idem_hash", "ended", "delayed"],
  argv: ["turn_raw", "turn_json", "now_str", "event_tail"],
  words: ["cancelled", "already_cancelled", "agent_not_found", "turn_not_found", "turn_started", "turn_finished"],
}, (word) => {
  if (word === "cancelled" || word === "already_cancelled") return { status: "cancelled", already: word === "already_cancelled" } as CancelTaskResult;
  return { status: word } as CancelTaskResult;
});

/** store/lua/renew_lease.lua */
export const RENEW_LEASE = scriptOp({
  script: "renew_lease",
  keys: ["head"],
  argv: ["prefix", "agent_id", "worker_json", "epoch", "lease_ms_text", "now_text", "held"],
  optional: ["held"],
  words: ["renewed", "lost", "slot"],
}, (word, payload) =>
  word === "renewed"
    ? { status: word, leaseUntil: json<number>(payload) }
    : word === "slot"
    ? { status: word, ...json<{ ckHeld: string }>(payload) }
    : { status: word });

/** store/lua/record_claim_failure.lua */
export const RECORD_CLAIM_FAILURE = scriptOp({
  script: "record_claim_failure",
  keys: ["head", "tasks", "mail", "msgs", "events", "calls", "deadlines", "turns", "ended", "delayed"],
  argv: ["prefix", "agent_id", "worker_json", "epoch", "expected_version", "turn_json", "turn_raw", "error_json", "max_failures_text", "retry_base_ms", "now_str"],
  keysRest: "long_keys",
  argvRest: "turn_end",
  words: ["retry", "turn_failed", "stale", "agent_not_found"],
}, (word, payload) => (word === "retry" || word === "turn_failed" ? { status: word, ...json<object>(payload) } : { status: word }) as ClaimFailureResult);

/** store/lua/reset_turn.lua */
export const RESET_TURN = scriptOp({
  script: "reset_turn",
  keys: ["head", "tasks", "mail", "msgs", "events", "calls", "deadlines", "turns", "ended", "delayed"],
  argv: ["prefix", "agent_id", "expected_version", "turn_json", "turn_raw", "now_str"],
  keysRest: "long_keys",
  argvRest: "turn_end",
  words: ["reset", "agent_not_found", "not_active", "conflict"],
}, (word, payload) => (word === "reset" ? { status: word, ...json<object>(payload) } : { status: word }) as ResetTurnResult);

/** store/lua/due_tool_calls.lua */
export const DUE_TOOL_CALLS = scriptOp({
  script: "due_tool_calls",
  keys: ["deadlines"],
  argv: ["now_str", "limit", "mode"],
  optional: ["mode"],
  words: ["list"],
}, (_word, payload) => json<string[] | Array<[string, number]>>(payload));

/** store/lua/skip_due_tool_call.lua */
export const SKIP_DUE_TOOL_CALL = scriptOp({
  script: "skip_due_tool_call",
  keys: ["deadlines", "head", "events"],
  argv: ["member", "retry_at", "now_str", "turn_json", "event_tail"],
  words: ["skipped", "absent"],
}, (word) => ({ status: word }));

/** store/lua/next_ready_at.lua */
export const NEXT_READY_AT = scriptOp({
  script: "next_ready_at",
  keys: ["ready"],
  argv: [],
  words: ["at", "none"],
}, (word, payload) => (word === "at" ? Number(payload) : null));

/** store/lua/ready_count.lua */
export const READY_COUNT = scriptOp({
  script: "ready_count",
  keys: ["ready"],
  argv: ["now_str"],
  words: ["count"],
}, (_word, payload) => Number(payload));

/**
 * The limits argument of a claim (invariant `concurrency-keys`). The sharded layout with more than one
 * home counts each key in its own slot (key-slots.ts): its claims and chaining commits get the mark "\n".
 */
function limitsOn(c: ScriptContext, limits: ConcurrencyLimits | undefined): string {
  // Well-formed: a key holding a lone surrogate is sent with U+FFFD (commit and claimNext take their arguments unwalked).
  const arg = wellFormedJson(limitsArg(limits));
  return arg !== "" && countsInSlots(c, limits) ? slotLimits(limits!, undefined, {}) : arg;
}

/**
 * The operations that keep invariant `well-formed-text` (store/port.ts) by their encoding alone, so
 * their arguments are not walked before the call (store/lua-store.ts `bind`): every value they send
 * goes as a JSON text of `j`, `tail` or a WellFormedOnce memo (lone surrogates become U+FFFD) or as
 * a raw string that ScriptContext checks with one native `isWellFormed` at the last stop, and they
 * use no string of the request otherwise (no text of the request is answered back: the reply is
 * what the script read). They run once per step; walking a commit's every value cost about 6 % of
 * a worker's CPU (bench/results/path-cpu.md). An operation whose answer echoes a request string
 * (`claim` answers its `agentId`) is walked as before.
 */
export const ENCODES_WELL_FORMED: ReadonlySet<string> = new Set(["commit", "claimNext"]);

/** The result type of the port method `K`. */
type Ret<K extends keyof TurnProtocol> = ReturnType<NonNullable<TurnProtocol[K]>>;

export async function enqueueTask(c: ScriptContext, req: EnqueueTaskRequest): Promise<EnqueueTaskResult> {
  const { keys, longKeys, dropHints, run } = c;
  dropHints(req.now);
  const k = keys.agent(req.agentId);
  checkTarget(req.workerTarget);
  checkTurnId(req.turnId);
  const now = int(req.now, "now");
  // A delayed task (invariant `delayed-tasks`): a time already come is due at once.
  const runAt = req.runAt === undefined ? undefined : Math.max(Number(int(req.runAt, "runAt")), req.now);
  const task: InboxTask = {
    turnId: req.turnId,
    options: req.options,
    enqueuedAt: req.now,
    ...(req.idempotencyKey !== undefined ? { idempotencyKey: req.idempotencyKey } : {}),
    ...(runAt !== undefined ? { runAt } : {}),
    ...taskLaneFields(req),
  };
  const input = j(req.input ?? null);
  const maxDelayed = String(maxDelayedOf(req.maxDelayedTasks));
  return run(ENQUEUE_TASK, {
    head: k.head, tasks: k.tasks, idem: k.idem, events: k.events, turns: k.turns, inputs: k.inputs, deleted: k.deleted, delayed: k.delayed,
    long_keys: longKeys(k),
    prefix: k.home.prefix, agent_id: req.agentId, agent_id_json: j(req.agentId), name_json: j(req.agentName),
    target_json: j(req.workerTarget), turn_json: j(req.turnId),
    has_key_flag: req.idempotencyKey !== undefined ? "1" : "0", idem_key: req.idempotencyKey ?? "",
    entry: `${j(req.turnId)}\n${j(task)}`,
    event_tail: tail({ type: "task_enqueued", data: { turnId: req.turnId, options: req.options, inputBytes: inputBytes(req.input ?? null), ...(runAt !== undefined ? { runAt } : {}) } }),
    now_str: now, turn_raw: req.turnId, input_json: input, refuse_deleted: req.refuseDeleted ? "1" : "",
    run_at: runAt === undefined ? "" : int(runAt, "runAt"), max_delayed: maxDelayed,
  });
}

export async function deliverToolResult(c: ScriptContext, req: DeliverToolResultRequest): Promise<DeliverToolResultResult> {
  const { keys, dropHints, run } = c;
  dropHints(req.now);
  const k = keys.agent(req.agentId);
  const now = int(req.now, "now");
  const { outcome, afterExecution, source } = req;
  const contractValidation = req.contractValidation ?? notApplied();
  const r = await run(DELIVER_TOOL_RESULT, {
    head: k.head, calls: k.calls(req.turnId), mail: k.mail, events: k.events, deadlines: k.home.deadlines,
    prefix: k.home.prefix, agent_id: req.agentId, turn_json: j(req.turnId), turn_id: req.turnId, call_id: req.toolCallId,
    resolution: j({ status: "resolved", outcome, afterExecution, source, resolvedAt: req.now, contractValidation, ...byField(req.by) }),
    mail_tail: tail({ kind: "tool_result", at: req.now, turnId: req.turnId, toolCallId: req.toolCallId, outcome, afterExecution, source }),
    event_tail: tail({
      type: "tool_result_received",
      data: { toolCallId: req.toolCallId, ok: outcome.ok, source, afterExecution, contractValidation, ...(req.event !== undefined ? { event: req.event } : {}), ...byField(req.by) },
    }),
    now_str: now, source_flag: source === "watchdog" ? "1" : source === "delegation" ? "d" : "0",
  });
  return r.status === "resolved" ? answerResolved(r.record, req) : r;
}

export async function requestCancel(c: ScriptContext, req: CancelRequest): Promise<CancelResult> {
  const { keys, dropHints, run } = c;
  dropHints(req.now);
  const k = keys.agent(req.agentId);
  const now = int(req.now, "now");
  if (req.turnId !== undefined) checkTurnId(req.turnId);
  return run(REQUEST_CANCEL, {
    head: k.head, mail: k.mail, events: k.events, turns: k.turns, tasks: k.tasks, idem: k.idem, delayed: k.delayed,
    prefix: k.home.prefix, agent_id: req.agentId, now_str: now, reason_json: j(String(req.reason)),
    turn_raw: req.turnId ?? "", turn_json: req.turnId === undefined ? "null" : j(req.turnId),
    by_field: req.by === undefined ? "" : `,"by":${j(req.by)}`,
  });
}

export async function cancelTask(c: ScriptContext, req: CancelTaskRequest): Promise<CancelTaskResult> {
  const { keys, run } = c;
  const k = keys.agent(req.agentId);
  checkTurnId(req.turnId);
  const now = int(req.now, "now");
  return run(CANCEL_TASK, {
    head: k.head, tasks: k.tasks, events: k.events, turns: k.turns, idem_hash: k.idem, ended: k.ended, delayed: k.delayed,
    turn_raw: req.turnId, turn_json: j(req.turnId), now_str: now,
    event_tail: tail({ type: "task_cancelled", data: { turnId: req.turnId, reason: String(req.reason), ...byField(req.by) } }),
  });
}

export async function claim(c: ScriptContext, req: ClaimRequest): Promise<ClaimResult> {
  const { keys, longKeys, call } = c;
  const k = keys.agent(req.agentId);
  const claimHome = (limits_json?: string) => call<ClaimResult | Need>(encodeClaim({
    head: k.head, tasks: k.tasks, mail: k.mail, inputs: k.inputs, delayed: k.delayed, long_keys: longKeys(k),
    prefix: k.home.prefix, agent_id: req.agentId, worker_json: j(req.workerId), lease_ms: int(req.leaseMs, "leaseMs"), now_str: int(req.now, "now"),
    ...(limits_json !== undefined ? { limits_json } : {}),
  }), { agentId: req.agentId });
  const limits = req.concurrencyLimits ? limitsOn(c, req.concurrencyLimits) : undefined;
  // The sharded layout counts a limited key in its own slot (key-slots.ts).
  if (limits !== undefined && countsInSlots(c, req.concurrencyLimits)) return claimCounted(c, req.concurrencyLimits!, req, claimHome, true);
  return claimHome(limits) as Promise<ClaimResult>;
}

export async function claimNext(c: ScriptContext, req: ClaimNextRequest): Promise<ClaimResult> {
  // Long because the sharded layout's claim visits shards oldest bell first, a loop that needs its
  // state (view, hint, counts) in one place; one Redis is the first branch.
  const { shards, hints, inFlight, call, run } = c;
  checkTarget(req.workerTarget);
  const args = { worker_json: j(req.workerId), lease_ms_text: int(req.leaseMs, "leaseMs"), now_str: int(req.now, "now") };
  // Invariant `definition-sets`: the names as the head stores them (JSON text), after `upto` and the limits (ARGV[5], ARGV[6]).
  const names = req.agentNames ? req.agentNames.map((n) => j(checkAgentName(n))) : [];
  // Invariant `turn-versions`: `<name JSON>\n<version JSON>` for each version of a listed name.
  for (const [n, vs] of Object.entries(req.agentVersions ?? {})) {
    if (req.agentNames?.includes(n)) for (const v of vs) names.push(`${j(n)}\n${j(checkVersion(v))}`);
  }
  // Invariant `concurrency-keys`: the limits as one JSON object ('' : none).
  const limits = limitsOn(c, req.concurrencyLimits);
  const counted = limits !== "" && countsInSlots(c, req.concurrencyLimits);
  /** A claim_next answer without the script's `next` (the cluster loop's use only). */
  const answer = (r: ClaimResult & { next?: unknown }): ClaimResult => {
    if (r.status !== "empty" || r.next === undefined) return r;
    const { next: _, ...rest } = r;
    return rest;
  };
  if (shards.length === 1) {
    const r = await call<ClaimResult>(encodeClaimNext({
      ready: shards[0].ready(req.workerTarget), prefix: shards[0].prefix, ...args,
      ...(names.length > 0 || limits !== "" ? { upto_arg: args.now_str, limits_json: limits, names } : {}),
    }));
    return answer(r);
  }
  /** Per shard: the agents of other names its last claim_next left (each call counts its shard's from the oldest bell). */
  const foreignOf = new Array<number>(shards.length).fill(0);
  const emptyResult = (): ClaimResult => {
    const foreign = foreignOf.reduce((x, y) => x + y, 0);
    return foreign > 0 ? { status: "empty", foreign } : { status: "empty" };
  };
  // Shards: `view.heads[i]` bounds the bells of shard i from below, as of `view.asOf`: every bell
  // there is at least min(heads[i], asOf) (a bell rung since carries a later time). claim_next
  // runs in the shard with the oldest head, visiting its bells only up to min(asOf, the other
  // heads), so it passes no older bell of another shard. A shard that claimed nothing has its
  // head read again (one call); all shards are read again (one parallel round) only when no head
  // is due as of `asOf`. The view is kept per worker target for the next call (the hint) until
  // this store rings a bell older than its `asOf` (`dropHints`; docs/store.md). Concurrent calls
  // of this store spread over shards: a shard another call is claiming in is taken only when no
  // other is due, and left out of the bound (those calls have no order among themselves).
  const target = req.workerTarget;
  let claiming = inFlight.get(target);
  if (!claiming) inFlight.set(target, (claiming = new Array<number>(shards.length).fill(0)));
  const readyKeys = shards.map((s) => s.ready(target));
  const readAll = async (): Promise<Heads> => {
    const view = { asOf: req.now, heads: await Promise.all(readyKeys.map((k) => run(NEXT_READY_AT, { ready: k }))) };
    const hint = hints.get(target);
    if (!hint || hint.asOf <= view.asOf) hints.set(target, view);
    return view;
  };
  const hint = hints.get(target);
  let fresh = !hint || hint.asOf > req.now;
  let view = fresh ? await readAll() : hint!;
  // Each visit moves every bell it saw past `now` or removes it; the bound stops a loop fed by
  // bells that other clients keep ringing meanwhile.
  for (let round = 0; round < 2 * shards.length + 2; round++) {
    const { asOf, heads } = view;
    let at = -1;
    for (let i = 0; i < shards.length; i++) {
      const t = heads[i];
      if (t === null || t > asOf) continue;
      // Prefer a shard no other call of this store is claiming in, then the oldest head.
      if (at < 0 || (claiming[i] === 0 && claiming[at] > 0) || ((claiming[i] === 0) === (claiming[at] === 0) && t < heads[at]!)) at = i;
    }
    if (at < 0) {
      if (fresh) return emptyResult();
      view = await readAll();
      fresh = true;
      continue;
    }
    let upto = asOf;
    for (let i = 0; i < shards.length; i++) if (i !== at && heads[i] !== null && claiming[i] === 0) upto = Math.min(upto, heads[i]!);
    claiming[at]++;
    let r: ClaimResult & { next?: number | null };
    try {
      const claimHome = (limits_json: string) =>
        call<ClaimResult | Need>(encodeClaimNext({ ready: readyKeys[at], prefix: shards[at].prefix, ...args, upto_arg: String(upto), limits_json, names }));
      // Limits are counted in each key's own slot (key-slots.ts).
      r = counted ? await claimCounted(c, req.concurrencyLimits!, req, claimHome, false) : await claimHome(limits) as ClaimResult;
    } finally {
      claiming[at]--;
    }
    if (r.status === "claimed" || r.status === "schedule_due") return r;
    if (r.status === "empty" && r.foreign) {
      // Bells left for other definition sets (invariant `definition-sets`) stay due: this caller's view of the shard starts after them.
      foreignOf[at] = r.foreign;
      heads[at] = r.next ?? null;
      continue;
    }
    heads[at] = await run(NEXT_READY_AT, { ready: readyKeys[at] });
  }
  return emptyResult();
}

export async function renewLease(c: ScriptContext, req: RenewRequest): Ret<"renewLease"> {
  const { keys, run } = c;
  const k = keys.agent(req.agentId);
  const renewHome = (held?: string) => run(RENEW_LEASE, {
    head: k.head,
    prefix: k.home.prefix, agent_id: req.agentId, worker_json: j(req.workerId), epoch: int(req.epoch, "epoch"),
    lease_ms_text: int(req.leaseMs, "leaseMs"), now_text: int(req.now, "now"), ...(held !== undefined ? { held } : {}),
  });
  if (c.shards.length === 1) return renewHome() as Ret<"renewLease">;
  // The sharded layout: the lease's reservation is renewed first in its key's slot (key-slots.ts); the home
  // names one this store does not know of ('slot'), renewed then.
  const until = Number(int(req.now, "now")) + Number(int(req.leaseMs, "leaseMs"));
  let held = await renewHeld(c, req.agentId, req.epoch, until, req.now);
  for (let i = 0; held !== null && i < 2; i++) {
    const r = await renewHome(held);
    if (r.status !== "slot") return r as Awaited<Ret<"renewLease">>;
    held = await renewNamed(c, req.agentId, req.epoch, r.ckHeld, until, req.now);
  }
  return { status: "lost" };
}

export async function commit(c: ScriptContext, req: CommitRequest): Promise<CommitResult> {
  const { keys, sharded, longKeys, dropHints, call } = c;
  dropHints(Math.min(req.now, req.release?.runnableAt ?? req.now));
  const k = keys.agent(req.agentId);
  const now = int(req.now, "now");
  if (req.activeTurnId !== null) checkTurnId(req.activeTurnId);
  for (const c of req.recordToolCalls) {
    // A call belongs to the turn that records it; its hash is that turn's.
    if (c.turnId !== req.turnId) {
      throw new StoreInputError(`Cannot record tool call ${j(c.toolCallId)} of turn ${j(c.turnId)} in a commit of turn ${j(req.turnId)}`);
    }
    int(c.deadline, "deadline");
  }
  const release = req.release === null ? "-" : req.release.runnableAt === null ? "null" : int(req.release.runnableAt, "runnableAt");
  const memo = new WellFormedOnce();
  const named = {
    prefix: k.home.prefix, agent_id: req.agentId, worker_json: j(req.workerId), epoch: int(req.epoch, "epoch"),
    expected_version: int(req.expectedVersion, "expectedVersion"),
    turn_json: j(req.turnId), turn_id: req.turnId ?? "", next_active: j(req.activeTurnId),
    snapshot: memo.encode(compactSnapshot(req.snapshot ?? null), SNAPSHOT)!, state: j(req.state),
    ack_text: int(req.ackMailThrough, "ackMailThrough"), release, lease_ms_text: int(req.leaseMs, "leaseMs"), now_str: now,
    n_rec_text: String(req.recordToolCalls.length), n_res_text: String(req.resolveToolCalls.length),
    n_msg_text: String(req.messages.length), n_ev_text: String(req.events.length),
  };
  // The tail (commit.lua ARGV[19..]): calls to record, calls to resolve, messages, events, then four flags (and a chain's limits).
  const args: string[] = [];
  // JSON texts go packed (store/script/wire.ts); commit.lua unpacks them before it stores them.
  for (const c of req.recordToolCalls) {
    // A call waiting for a named event carries its name after the deadline (commit.lua indexes it).
    if (c.event !== undefined && !isEventName(c.event)) throw new StoreInputError(`Tool call ${j(c.toolCallId)} waits for an invalid event name ${j(c.event)}`);
    const deadline = c.event === undefined ? String(c.deadline) : `${c.deadline}\n${c.event}`;
    args.push(c.toolCallId, wireRecord(memo.encode({ ...c, agentId: req.agentId, recordedAt: req.now }, CALL)!), deadline);
  }
  for (const r of req.resolveToolCalls) {
    args.push(r.toolCallId, wireResolution(memo.encode({
      status: "resolved", outcome: r.outcome, afterExecution: r.afterExecution, source: "inline", resolvedAt: req.now,
      contractValidation: r.contractValidation ?? notApplied(),
    }, RESOLUTION)!));
  }
  for (const m of req.messages) args.push(wireMessage(memo.encode(m, MESSAGE)!));
  for (const e of req.events) args.push(wireEvent(e, eventTail(memo, e)));
  const r = req.retention;
  args.push(r ? retentionArg(r) : "");
  args.push(req.summary === undefined ? "" : j({ content: String(req.summary.content), through: Number(int(req.summary.through, "summary.through")) }));
  args.push(req.chainNextTask ? "1" : "");
  args.push(req.stopAtCancel ? "1" : "");
  // Invariant `concurrency-keys`: the limits a chained claim keeps ('' : none), always given so the pin's place is fixed.
  args.push(req.chainNextTask && req.concurrencyLimits ? limitsOn(c, req.concurrencyLimits) : "");
  // The turn's pin (invariant `turn-versions`).
  const pin = req.turnVersion;
  args.push(pin ? `${j(checkTurnId(pin.turnId))}\n${j(checkVersion(pin.version))}` : "");
  // On one Redis (and Upstash) the head key only: commit.lua builds the others.
  const declared = sharded
    ? {
      tasks_key: k.tasks, mail_key: k.mail, msgs_key: k.messages, events_key: k.events, calls_key: k.calls(req.turnId ?? ""),
      deadlines_key: k.home.deadlines, turns_key: k.turns, ckpts_key: k.ckpts, ended_key: k.ended, inputs_key: k.inputs,
      idem_key: k.idem, summary_key: k.summary, delayed_key: k.delayed, long_keys: longKeys(k),
    }
    : {};
  if (!sharded || c.shards.length === 1) return call(encodeCommit({ head: k.head, ...declared, ...named, tail: args }));
  // The sharded layout: a lease kept or chained keeps its reservation, renewed first in its key's slot (the one
  // this store holds, else the one the home names: 'slot'); a freed one goes back (key-slots.ts).
  const until = req.now + req.leaseMs;
  const goesOn = req.release === null || req.chainNextTask === true;
  let held: string | null = goesOn ? await renewHeld(c, req.agentId, req.epoch, until, req.now) : "";
  for (let i = 0; i < 2; i++) {
    const res = await call<CommitResult & { ckFreed?: string; ckHeld?: string }>(encodeCommit({ head: k.head, ...declared, ...named, tail: [...args, held ?? ""] }));
    if (res.status === "conflict" && res.reason === ("slot" as string) && res.ckHeld !== undefined) {
      held = await renewNamed(c, req.agentId, req.epoch, res.ckHeld, until, req.now);
      // A reservation run out: the lease has too (fenced at its end).
      if (held === null) return { status: "conflict", reason: "fenced" };
      continue;
    }
    await afterCommit(c, req.agentId, res, req.now);
    return withoutFreed<CommitResult>(res);
  }
  return { status: "conflict", reason: "fenced" };
}

export async function recordClaimFailure(c: ScriptContext, req: ClaimFailureRequest): Promise<ClaimFailureResult> {
  const { keys, longKeys, dropHints, run } = c;
  dropHints(req.now);
  const k = keys.agent(req.agentId);
  if (req.turnId !== null) checkTurnId(req.turnId);
  const r = await run(RECORD_CLAIM_FAILURE, {
    head: k.head, tasks: k.tasks, mail: k.mail, msgs: k.messages, events: k.events, calls: k.calls(req.turnId ?? ""),
    deadlines: k.home.deadlines, turns: k.turns, ended: k.ended, delayed: k.delayed, long_keys: longKeys(k),
    prefix: k.home.prefix, agent_id: req.agentId, worker_json: j(req.workerId), epoch: int(req.epoch, "epoch"),
    expected_version: int(req.expectedVersion, "expectedVersion"), turn_json: j(req.turnId), turn_raw: req.turnId ?? "",
    error_json: j(req.error), max_failures_text: int(req.maxFailures, "maxFailures"), retry_base_ms: int(req.retryBaseMs, "retryBaseMs"),
    now_str: int(req.now, "now"), turn_end: turnEndArgs(req.end),
  });
  // A freed reservation of the sharded layout goes back to its key's slot (key-slots.ts).
  await releaseFreed(c, (r as { ckFreed?: string }).ckFreed, req.now);
  return withoutFreed(r);
}

export async function resetTurn(c: ScriptContext, req: ResetTurnRequest): Promise<ResetTurnResult> {
  const { keys, longKeys, dropHints, run } = c;
  dropHints(req.now);
  const k = keys.agent(req.agentId);
  checkTurnId(req.turnId);
  const r = await run(RESET_TURN, {
    head: k.head, tasks: k.tasks, mail: k.mail, msgs: k.messages, events: k.events, calls: k.calls(req.turnId),
    deadlines: k.home.deadlines, turns: k.turns, ended: k.ended, delayed: k.delayed, long_keys: longKeys(k),
    prefix: k.home.prefix, agent_id: req.agentId, expected_version: int(req.expectedVersion, "expectedVersion"),
    turn_json: j(req.turnId), turn_raw: req.turnId, now_str: int(req.now, "now"), turn_end: turnEndArgs(req.end),
  });
  // A freed reservation of the sharded layout goes back to its key's slot (key-slots.ts).
  await releaseFreed(c, (r as { ckFreed?: string }).ckFreed, req.now);
  return withoutFreed(r);
}

export async function dueToolCalls(c: ScriptContext, now: number, limit: number): Ret<"dueToolCalls"> {
  const { shards, run } = c;
  if (limit <= 0) return [];
  let members: string[];
  if (shards.length === 1) {
    members = await run(DUE_TOOL_CALLS, { deadlines: shards[0].deadlines, now_str: int(now, "now"), limit: int(limit, "limit") }) as string[];
  } else {
    // Oldest first across shards: each shard's first `limit` with their deadlines, merged.
    const lists = await Promise.all(shards.map((s) =>
      run(DUE_TOOL_CALLS, { deadlines: s.deadlines, now_str: int(now, "now"), limit: int(limit, "limit"), mode: "scores" }) as Promise<Array<[string, number]>>
    ));
    members = lists.flat().sort(([m1, t1], [m2, t2]) => t1 - t2 || byCodePoint(m1, m2)).slice(0, limit).map(([m]) => m);
  }
  return members.map((m) => {
    // agentId and turnId hold no control characters; the call id is the rest.
    const a = m.indexOf("\n");
    const b = m.indexOf("\n", a + 1);
    return { agentId: m.slice(0, a), turnId: m.slice(a + 1, b), toolCallId: m.slice(b + 1) };
  });
}

export async function skipDueToolCall(c: ScriptContext, req: SkipDueToolCallRequest): Ret<"skipDueToolCall"> {
  const { keys, run } = c;
  const member = `${req.agentId}\n${req.turnId}\n${req.toolCallId}`;
  // The record sits in the deadlines of the home its agent id hashes to, whether or not the id can be a key.
  const home = keys.homeOf(req.agentId);
  let head = `${home.prefix}:none`;
  let events = `${home.prefix}:none`;
  try {
    const k = keys.agent(req.agentId);
    head = k.head;
    events = k.events;
  } catch {
    // An id that cannot be a key (a corrupt record): no agent to log to; the record is still moved.
  }
  return run(SKIP_DUE_TOOL_CALL, {
    deadlines: home.deadlines, head, events,
    member, retry_at: req.retryAt === null ? "null" : int(req.retryAt, "retryAt"), now_str: int(req.now, "now"), turn_json: j(req.turnId),
    event_tail: tail({ type: "watchdog_skipped", data: { toolCallId: req.toolCallId, reason: String(req.reason), retryAt: req.retryAt } }),
  });
}

export async function nextReadyAt(c: ScriptContext, workerTarget: string): Promise<number | null> {
  const { shards, run } = c;
  const at = (await Promise.all(shards.map((s) => run(NEXT_READY_AT, { ready: s.ready(workerTarget) })))).filter((t) => t !== null);
  return at.length === 0 ? null : Math.min(...at);
}

export async function readyCount(c: ScriptContext, workerTarget: string, now: number): Promise<number> {
  const { shards, run } = c;
  const counts = await Promise.all(shards.map((s) => run(READY_COUNT, { ready: s.ready(workerTarget), now_str: String(now) })));
  return counts.reduce((a, b) => a + b, 0);
}
