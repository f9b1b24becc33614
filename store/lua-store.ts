/**
 * The Store over the Lua scripts, shared by the Redis (TCP) and Upstash (REST)
 * adapters: they differ only in how a script reaches Redis (a RunScript) and
 * how the eviction policy is read. Each method is exactly one script call,
 * so one round trip and, on Upstash, one billed command, except on the
 * sharded layout (Redis Cluster, store/keys.ts), where the methods that read
 * every shard (claimNext, readyCount, nextReadyAt, dueToolCalls, listAgents,
 * getVerdict) call each shard: each call still touches one slot.
 *
 * Arguments are encoded here, once: JSON texts for values the scripts store or
 * compare, raw strings for identifiers that become keys or index members.
 * Replies are turned into port results in one function, `decode`.
 *
 * Once also per value: a commit holds the same object in several places (a
 * tool call's arguments in its record, its events, the assistant message
 * and the snapshot; a result in its resolution and its events), and its
 * arguments are built with one memo (common/json-once.ts, the shapes
 * below), so each such object is stringified once per commit. The texts are
 * those of `JSON.stringify`, byte for byte.
 */
import type {
  DefinitionSetRecord,
  ClaimDeliveryRequest,
  ClaimDeliveryResult,
  RecordDeliveryRequest,
  RenewDeliveryRequest,
  SettleDeliveryResult,
  RateLimitRequest,
  RateLimitResult,
  TargetLeaseRequest,
  TargetLeaseResult,
  AgentIndexEntry,
  CreateForkRequest,
  CreateForkResult,
  ListAgentsRequest,
  RecordForkRequest,
  RecordToolMethodRequest,
  RecordToolMethodResult,
  CancelRequest,
  CancelResult,
  ClaimFailureRequest,
  ClaimFailureResult,
  CancelTaskRequest,
  CancelTaskResult,
  ClaimNextRequest,
  ClaimRequest,
  ClaimResult,
  PreviousLease,
  Checkpoint,
  CommitRequest,
  CommitResult,
  Conversation,
  DeliverToolResultRequest,
  DeliverToolResultResult,
  EnqueueTaskRequest,
  EnqueueTaskResult,
  RenewRequest,
  ResetTurnRequest,
  ResetTurnResult,
  Store,
  TurnEnd,
  SkipDueToolCallRequest,
  TurnStatus,
  VerdictFilter,
  VerdictPut,
} from "./port.ts";
import type { StoredEvent } from "../common/events.ts";
import type { Message } from "../common/message.ts";
import { normalizeRecord } from "./spelling.ts";
import type { AgentHead, InboxTask, MailItem, ToolCallRecord } from "./types.ts";
import {  type AgentKeys, checkAgentName, checkDeliveryTarget, checkHolder, checkTarget, checkToolName, checkTurnId, type KeySpace, StoreInputError, toolCalls  } from "./keys.ts";
import { gcraArgs } from "./rate-limit.ts";
import { notApplied } from "../common/contract-validation.ts";
import { loadToolRoleEntry, methodForm, type ToolRoleEntry } from "../common/tool-registry.ts";
import type { ScriptName } from "./lua/scripts.gen.ts";
import { answerResolved } from "./redelivery.ts";
import { EvictionPolicyError, type RunScript, StoreReplyError } from "./script-runner.ts";
import { inputBytes } from "./inputs.ts";
import { JsonOnce, SHARED, type Shape } from "../common/json-once.ts";

/** A store backed by Redis scripts. */
export interface ScriptStore extends Store {
  readonly kind: "redis" | "upstash";
  readonly prefix: string;
  /**
   * Reads the server's maxmemory-policy and throws EvictionPolicyError for
   * `allkeys-*` / `volatile-*` unless eviction was allowed. Runs once, before
   * the first operation; call it at startup to fail early. `policy` is null
   * when the server does not expose it (CONFIG disabled, Upstash).
   */
  checkEviction(): Promise<{ policy: string | null }>;
}

export interface ScriptStoreDeps {
  kind: "redis" | "upstash";
  keys: KeySpace;
  run: RunScript;
  /** Reads the policy and throws if refused; memoized by the store. */
  checkEviction(): Promise<{ policy: string | null }>;
  /** One SCAN step: `[next cursor, keys]` of the keys matching `pattern` (deleteAgent finds an agent's keys with it). */
  scan?(cursor: string, pattern: string): Promise<[string, string[]]>;
  /** Store.watchBells, where the transport can push (TCP Redis). */
  watchBells?: Store["watchBells"];
  /** Store.live, where the transport has pub/sub (store/redis-live.ts, store/upstash-live.ts). */
  live?: Store["live"];
  close(): Promise<void>;
}

const j = JSON.stringify;
/** JSON of a non-empty object without its opening brace; a script prepends its own fields. */
const tail = (obj: Record<string, unknown>) => j(obj).slice(1);

/**
 * Where one commit's values share objects (common/json-once.ts): a call's
 * `args`, a result's `outcome`, a finished turn's output.
 */
const CALL: Shape = { args: SHARED };
const RESOLUTION: Shape = { outcome: SHARED };
const MESSAGE: Shape = { toolCalls: [CALL] };
/** By event type, where its data shares values; the other types share none. */
const EVENTS: Record<string, Shape> = {
  tool_call: { data: CALL },
  tool_result: { data: RESOLUTION },
  transition: { data: { event: { toolCalls: [CALL], outcome: SHARED } } },
  task: { data: { deliverable: SHARED } },
};
const SNAPSHOT: Shape = { context: { pending: { "*": CALL }, output: SHARED } };

/** The event tail of `tail({ type, data })`, through the commit's memo. */
function eventTail(memo: JsonOnce, e: { type: string; data?: unknown }): string {
  const shape = Object.hasOwn(EVENTS, e.type) ? EVENTS[e.type] : undefined;
  return (shape ? memo.encode({ type: e.type, data: e.data }, shape)! : j({ type: e.type, data: e.data })).slice(1);
}

function int(n: number, what: string): string {
  if (!Number.isSafeInteger(n)) throw new StoreInputError(`${what} must be an integer (ms), got ${n}`);
  return String(n);
}

/** The limits as commit.lua reads them: four positive integers (anything else is refused before the call). */
function retentionArg(r: NonNullable<CommitRequest["retention"]>): string {
  const all = [["maxEvents", r.maxEvents], ["maxEventBytes", r.maxEventBytes], ["maxTurns", r.maxTurns], ["checkpointEvery", r.checkpointEvery]] as const;
  for (const [k, v] of all) {
    if (!Number.isSafeInteger(v) || v < 1) throw new StoreInputError(`Cannot use retention.${k} = ${String(v)}: a positive integer is needed`);
  }
  return all.map(([, v]) => String(v)).join(" ");
}

/** The TurnEnd as script arguments: snapshot, state, M, E, messages, event tails (includes/end_turn.lua). */
function turnEndArgs(end: TurnEnd): string[] {
  const memo = new JsonOnce();
  return [
    memo.encode(end.snapshot ?? null, SNAPSHOT)!, j(end.state), String(end.messages.length), String(end.events.length),
    ...end.messages.map((m) => memo.encode(m, MESSAGE)!), ...end.events.map((e) => eventTail(memo, e)),
  ];
}

/** Order of Redis member comparison (bytes of UTF-8, so code points), not of UTF-16 units. */
function byCodePoint(a: string, b: string): number {
  if (a === b) return 0;
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] !== y[i]) return x[i].codePointAt(0)! - y[i].codePointAt(0)!;
  }
  return x.length - y.length;
}

/** Reply words of every script, named once. */
export const REPLY = [
  "enqueued", "duplicate", "definition_conflict",
  "accepted", "resolved", "not_external", "delegated_call", "agent_not_found", "unknown_call", "turn_finished", "not_active",
  "claimed", "busy", "empty",
  "renewed", "lost",
  "applied", "fenced", "version", "turn", "tool_call_resolved", "cancel_pending",
  "head", "none", "list", "at", "count", "verdict",
  "written", "exists",
  "retry", "turn_failed", "stale", "reset", "conflict", "pong",
  "turn_not_started", "turn_not_found", "cancelled", "already_cancelled", "turn_started", "skipped", "absent",
  "fresh", "in_progress", "answered", "other_target",
  "created", "recorded", "entry",
  "allowed", "limited", "held", "released", "not_held",
  "conversation", "checkpoint", "deleted", "agent_deleted",
] as const;
type Word = (typeof REPLY)[number];
const WORDS = new Set<string>(REPLY);

type ClaimedReply = { epoch: number; head: AgentHead; mail: MailItem[]; previousLease: PreviousLease | null; input?: unknown };

/** A claim as a script answers it (claim, claim_next, and a commit that chained the next task). */
function claimedOf(c: ClaimedReply): Extract<ClaimResult, { status: "claimed" }> {
  // The input is stored once, apart from the task (store/inputs.ts); a task stored with it inline keeps it.
  const task: InboxTask | null = c.head.currentTask === null
    ? null
    : { ...structuredClone(c.head.currentTask), ...("input" in c ? { input: c.input } : {}) };
  return { status: "claimed", agentId: c.head.agentId, epoch: c.epoch, head: c.head, task, mail: c.mail, previousLease: c.previousLease };
}

/** Turns a script reply into the result of the operation (one place for every script). */
export function decode(name: ScriptName, reply: string, ctx: { agentId?: string } = {}): unknown {
  const sp = reply.indexOf(" ");
  const word = (sp < 0 ? reply : reply.slice(0, sp)) as Word;
  const payload = sp < 0 ? "" : reply.slice(sp + 1);
  if (!WORDS.has(word)) throw new StoreReplyError(`Script ${name} answered an unknown reply ${JSON.stringify(reply.slice(0, 80))}`);
  const json = () => JSON.parse(payload);
  switch (name) {
    case "enqueue_task":
      if (word === "agent_deleted") return { status: word, deletedAt: json() };
      return word === "definition_conflict" ? { status: word, boundTo: json() } : { status: word, turnId: json() };
    case "deliver_tool_result":
      // 'resolved' is turned into duplicate / already_resolved by answerResolved (store/redelivery.ts).
      return word === "accepted" || word === "resolved" ? { status: word, record: json() } : { status: word };
    case "request_cancel":
      return word === "accepted" ? { status: word, turnId: json() } : { status: word };
    case "cancel_task":
      if (word === "cancelled" || word === "already_cancelled") return { status: "cancelled", already: word === "already_cancelled" };
      return { status: word };
    case "get_turn":
      return word === "turn" ? json() : null;
    case "skip_due_tool_call":
      return { status: word };
    case "claim":
    case "claim_next": {
      if (word === "claimed") return claimedOf(json());
      if (word === "busy") return { status: "busy", agentId: ctx.agentId, leaseUntil: json() };
      if (word === "empty") return name === "claim" ? { status: "empty", agentId: ctx.agentId } : payload ? { status: "empty", ...json() } : { status: "empty" };
      return { status: word };
    }
    case "renew_lease":
      return word === "renewed" ? { status: word, leaseUntil: json() } : { status: word };
    case "commit": {
      if (word !== "applied") return { status: "conflict", reason: word };
      const { chained, ...applied } = json();
      return { status: word, ...applied, ...(chained ? { chained: claimedOf(chained) } : {}) };
    }
    case "record_claim_failure":
      return word === "retry" || word === "turn_failed" ? { status: word, ...json() } : { status: word };
    case "reset_turn":
      return word === "reset" ? { status: word, ...json() } : { status: word };
    case "ping":
      return undefined;
    case "delivery":
      if (word === "answered") return { status: word, response: json() };
      if (word === "in_progress") return { status: word, holdUntil: Number(payload) };
      return { status: word };
    case "rate_limit": {
      if (word === "allowed") return { status: "allowed" };
      const [bucket, wait] = payload.split(" ").map(Number);
      return { status: "limited", bucket, retryAfterMs: wait };
    }
    case "definition_sets":
      return (json() as Array<[string, number]>).map(([set, seenAt]) => ({ agents: set.split(","), seenAt }));
    case "target_lease": {
      if (word === "held") return { status: "held", leaseUntil: Number(payload) };
      if (word === "busy") {
        const sp2 = payload.indexOf(" ");
        return { status: "busy", leaseUntil: Number(payload.slice(0, sp2)), holder: payload.slice(sp2 + 1) };
      }
      return { status: word };
    }
    case "get_agent":
      return word === "head" ? json() : null;
    case "read_conversation":
    case "read_checkpoint":
      return word === "conversation" || word === "checkpoint" ? json() : null;
    case "delete_agent":
      return { status: word };
    case "next_ready_at":
      return word === "at" ? Number(payload) : null;
    case "ready_count":
      return Number(payload);
    case "get_verdict":
      return word === "verdict" ? payload : null;
    case "put_verdict":
      return { status: word };
    case "create_fork":
    case "record_fork":
      return word === "created" || word === "recorded" ? { status: word, ...json() } : { status: word };
    case "list_agents":
      return (json() as Array<[string, number]>).map(([agentId, updatedAt]) => ({ agentId, updatedAt }));
    case "record_tool_method": {
      const r = json() as { added: "method" | "alias" | "none"; entry: { role?: unknown } };
      const entry = loadToolRoleEntry(String(r.entry?.role ?? ""), r.entry);
      if (!entry) throw new StoreReplyError(`Script ${name} answered an entry that is not an object`);
      return { status: "recorded", added: r.added, entry };
    }
    case "get_tool_role":
      return word === "entry" ? payload : null;
    case "list_tool_roles":
      return json();
    case "read_messages":
    case "read_events":
    case "get_tool_calls":
    case "due_tool_calls":
    case "list_verdicts":
      return json();
  }
}

/** The oldest bell of every shard of a worker target (null: none) as read at `asOf`. */
interface Heads {
  asOf: number;
  heads: Array<number | null>;
}

/** Builds the Store over scripts. Adapters call this; see store/redis.ts and store/upstash.ts. */
export function scriptStore(deps: ScriptStoreDeps): ScriptStore {
  const { keys } = deps;
  const prefix = keys.prefix;
  const shards = keys.shards;
  const sharded = keys.shardCount > 0;
  /**
   * The keys a script is given. On the sharded layout (Redis Cluster) a script declares every key it
   * touches of the agent, the keys of the head's long values included (store/lua/includes/head.lua): while
   * a slot migrates, Redis then answers TRYAGAIN instead of letting the script write a key that already
   * moved. On one Redis (and Upstash) there is nothing to migrate, and the commit sends its head key only:
   * the script builds the others (commit.lua), 12 key names fewer per step.
   */
  const declare = (k: AgentKeys, list: string[]): string[] => (sharded ? [...list, ...k.headLong] : list);
  /** Per worker target: the oldest bell of each shard as last read by claimNext (sharded layout only). */
  const hints = new Map<string, Heads>();
  /** Per worker target: how many claim_next calls of this store are running in each shard. */
  const inFlight = new Map<string, number[]>();
  /**
   * A bell rung by this store with a score older than a hint's read breaks the hint's promise (every
   * bell rung since is at least as young as the read): forget the hints. Bells rung by other
   * processes at their `now` keep it, up to the clocks' skew.
   */
  const dropHints = (score: number | null | undefined) => {
    if (shards.length === 1 || typeof score !== "number") return;
    for (const [target, h] of hints) if (score < h.asOf) hints.delete(target);
  };
  let checked: Promise<{ policy: string | null }> | null = null;
  const checkEviction = () =>
    (checked ??= deps.checkEviction().catch((err) => {
      // An outage is not an answer: check again at the next call. A refused policy stays refused.
      if (!(err instanceof EvictionPolicyError)) checked = null;
      throw err;
    }));

  async function call<T>(name: ScriptName, k: string[], args: string[], ctx?: { agentId?: string }): Promise<T> {
    await checkEviction();
    return decode(name, await deps.run(name, k, args), ctx) as T;
  }

  const store: ScriptStore = {
    kind: deps.kind,
    prefix,
    checkEviction,

    async enqueueTask(req: EnqueueTaskRequest): Promise<EnqueueTaskResult> {
      dropHints(req.now);
      const k = keys.agent(req.agentId);
      checkTarget(req.workerTarget);
      checkTurnId(req.turnId);
      const now = int(req.now, "now");
      const task: InboxTask = {
        turnId: req.turnId,
        options: req.options,
        enqueuedAt: req.now,
        ...(req.idempotencyKey !== undefined ? { idempotencyKey: req.idempotencyKey } : {}),
      };
      const input = j(req.input ?? null);
      return call("enqueue_task", declare(k, [k.head, k.tasks, k.idem, k.events, k.turns, k.inputs, k.deleted]), [
        k.home.prefix, req.agentId, j(req.agentId), j(req.agentName), j(req.workerTarget), j(req.turnId),
        req.idempotencyKey !== undefined ? "1" : "0", req.idempotencyKey ?? "",
        `${j(req.turnId)}\n${j(task)}`,
        tail({ type: "task_enqueued", data: { turnId: req.turnId, options: req.options, inputBytes: inputBytes(req.input ?? null) } }),
        now, req.turnId, input, req.refuseDeleted ? "1" : "",
      ]);
    },

    async deliverToolResult(req: DeliverToolResultRequest): Promise<DeliverToolResultResult> {
      dropHints(req.now);
      const k = keys.agent(req.agentId);
      const now = int(req.now, "now");
      const { outcome, afterExecution, source } = req;
      const contractValidation = req.contractValidation ?? notApplied();
      const r = await call<DeliverToolResultResult | { status: "resolved"; record: ToolCallRecord }>(
        "deliver_tool_result",
        [k.head, k.calls(req.turnId), k.mail, k.events, k.home.deadlines],
        [
          k.home.prefix, req.agentId, j(req.turnId), req.turnId, req.toolCallId,
          j({ status: "resolved", outcome, afterExecution, source, resolvedAt: req.now, contractValidation }),
          tail({ kind: "tool_result", at: req.now, turnId: req.turnId, toolCallId: req.toolCallId, outcome, afterExecution, source }),
          tail({ type: "tool_result_received", data: { toolCallId: req.toolCallId, ok: outcome.ok, source, afterExecution, contractValidation } }),
          now, source === "watchdog" ? "1" : source === "delegation" ? "d" : "0",
        ],
      );
      return r.status === "resolved" ? answerResolved(r.record, req) : r;
    },

    async requestCancel(req: CancelRequest): Promise<CancelResult> {
      dropHints(req.now);
      const k = keys.agent(req.agentId);
      const now = int(req.now, "now");
      if (req.turnId !== undefined) checkTurnId(req.turnId);
      return call("request_cancel", [k.head, k.mail, k.events, k.turns, k.tasks, k.idem], [
        k.home.prefix, req.agentId, now, j(String(req.reason)), req.turnId ?? "", req.turnId === undefined ? "null" : j(req.turnId),
      ]);
    },

    async cancelTask(req: CancelTaskRequest): Promise<CancelTaskResult> {
      const k = keys.agent(req.agentId);
      checkTurnId(req.turnId);
      const now = int(req.now, "now");
      return call("cancel_task", [k.head, k.tasks, k.events, k.turns, k.idem, k.ended], [
        req.turnId, j(req.turnId), now,
        tail({ type: "task_cancelled", data: { turnId: req.turnId, reason: String(req.reason) } }),
      ]);
    },

    async getTurn(agentId, turnId) {
      const k = keys.agent(agentId);
      checkTurnId(turnId);
      const r = await call<{ status: TurnStatus; input?: unknown } | null>("get_turn", [k.head, k.tasks, k.turns, k.idem, k.inputs], [turnId, j(turnId)]);
      return r === null ? null : { turnId, ...r };
    },

    async claim(req: ClaimRequest): Promise<ClaimResult> {
      const k = keys.agent(req.agentId);
      return call("claim", declare(k, [k.head, k.tasks, k.mail, k.inputs]), [
        k.home.prefix, req.agentId, j(req.workerId), int(req.leaseMs, "leaseMs"), int(req.now, "now"),
      ], { agentId: req.agentId });
    },

    async claimNext(req: ClaimNextRequest): Promise<ClaimResult> {
      checkTarget(req.workerTarget);
      const args = [j(req.workerId), int(req.leaseMs, "leaseMs"), int(req.now, "now")];
      // Invariant 21: the names as the head stores them (JSON text), after `upto` (ARGV[5]).
      const names = req.agentNames ? req.agentNames.map((n) => j(checkAgentName(n))) : [];
      /** A claim_next answer without the script's `next` (the cluster loop's use only). */
      const answer = (r: ClaimResult & { next?: unknown }): ClaimResult => {
        if (r.status !== "empty" || r.next === undefined) return r;
        const { next: _, ...rest } = r;
        return rest;
      };
      if (shards.length === 1) {
        const r = await call<ClaimResult>("claim_next", [shards[0].ready(req.workerTarget)], [shards[0].prefix, ...args, ...(names.length > 0 ? [args[2], ...names] : [])]);
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
        const view = { asOf: req.now, heads: await Promise.all(readyKeys.map((k) => call<number | null>("next_ready_at", [k], []))) };
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
          r = await call<ClaimResult>("claim_next", [readyKeys[at]], [shards[at].prefix, ...args, String(upto), ...names]);
        } finally {
          claiming[at]--;
        }
        if (r.status === "claimed") return r;
        if (r.status === "empty" && r.foreign) {
          // Bells left for other definition sets (invariant 23) stay due: this caller's view of the shard starts after them.
          foreignOf[at] = r.foreign;
          heads[at] = r.next ?? null;
          continue;
        }
        heads[at] = await call<number | null>("next_ready_at", [readyKeys[at]], []);
      }
      return emptyResult();
    },

    async renewLease(req: RenewRequest) {
      const k = keys.agent(req.agentId);
      return call("renew_lease", [k.head], [
        k.home.prefix, req.agentId, j(req.workerId), int(req.epoch, "epoch"), int(req.leaseMs, "leaseMs"), int(req.now, "now"),
      ]);
    },

    async commit(req: CommitRequest): Promise<CommitResult> {
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
      const memo = new JsonOnce();
      const args = [
        k.home.prefix, req.agentId, j(req.workerId), int(req.epoch, "epoch"), int(req.expectedVersion, "expectedVersion"),
        j(req.turnId), req.turnId ?? "", j(req.activeTurnId), memo.encode(req.snapshot ?? null, SNAPSHOT)!, j(req.state),
        int(req.ackMailThrough, "ackMailThrough"), release, int(req.leaseMs, "leaseMs"), now,
        String(req.recordToolCalls.length), String(req.resolveToolCalls.length), String(req.messages.length), String(req.events.length),
      ];
      for (const c of req.recordToolCalls) {
        args.push(c.toolCallId, memo.encode({ ...c, agentId: req.agentId, recordedAt: req.now }, CALL)!, String(c.deadline));
      }
      for (const r of req.resolveToolCalls) {
        args.push(r.toolCallId, memo.encode({
          status: "resolved", outcome: r.outcome, afterExecution: r.afterExecution, source: "inline", resolvedAt: req.now,
          contractValidation: r.contractValidation ?? notApplied(),
        }, RESOLUTION)!);
      }
      for (const m of req.messages) args.push(memo.encode(m, MESSAGE)!);
      for (const e of req.events) args.push(eventTail(memo, e));
      const r = req.retention;
      args.push(r ? retentionArg(r) : "");
      args.push(req.summary === undefined ? "" : j({ content: String(req.summary.content), through: Number(int(req.summary.through, "summary.through")) }));
      args.push(req.chainNextTask ? "1" : "");
      args.push(req.stopAtCancel ? "1" : "");
      return call("commit", sharded ? declare(k, [
        k.head, k.tasks, k.mail, k.messages, k.events, k.calls(req.turnId ?? ""), k.home.deadlines, k.turns,
        k.ckpts, k.ended, k.inputs, k.idem, k.summary,
      ]) : [k.head], args);
    },

    async recordClaimFailure(req: ClaimFailureRequest): Promise<ClaimFailureResult> {
      dropHints(req.now);
      const k = keys.agent(req.agentId);
      if (req.turnId !== null) checkTurnId(req.turnId);
      const args = [
        k.home.prefix, req.agentId, j(req.workerId), int(req.epoch, "epoch"), int(req.expectedVersion, "expectedVersion"),
        j(req.turnId), req.turnId ?? "", j(req.error), int(req.maxFailures, "maxFailures"), int(req.retryBaseMs, "retryBaseMs"),
        int(req.now, "now"), ...turnEndArgs(req.end),
      ];
      return call(
        "record_claim_failure",
        declare(k, [k.head, k.tasks, k.mail, k.messages, k.events, k.calls(req.turnId ?? ""), k.home.deadlines, k.turns, k.ended]),
        args,
      );
    },

    async resetTurn(req: ResetTurnRequest): Promise<ResetTurnResult> {
      dropHints(req.now);
      const k = keys.agent(req.agentId);
      checkTurnId(req.turnId);
      const args = [
        k.home.prefix, req.agentId, int(req.expectedVersion, "expectedVersion"), j(req.turnId), req.turnId, int(req.now, "now"),
        ...turnEndArgs(req.end),
      ];
      return call("reset_turn", declare(k, [k.head, k.tasks, k.mail, k.messages, k.events, k.calls(req.turnId), k.home.deadlines, k.turns, k.ended]), args);
    },

    async ping(): Promise<void> {
      await call("ping", [], []);
    },

    async getAgent(agentId): Promise<AgentHead | null> {
      const k = keys.agent(agentId);
      return call("get_agent", declare(k, [k.head]), []);
    },

    async getToolCalls(agentId, turnId): Promise<ToolCallRecord[]> {
      const list = await call<ToolCallRecord[]>("get_tool_calls", [keys.agent(agentId).calls(turnId)], []);
      // Hash order is not insertion order once a hash grows: order by recording time.
      return list.map(normalizeRecord).sort((x, y) => x.recordedAt - y.recordedAt || (x.toolCallId < y.toolCallId ? -1 : x.toolCallId > y.toolCallId ? 1 : 0));
    },

    async readMessages(agentId, fromIndex = 0): Promise<Message[]> {
      const k = keys.agent(agentId);
      return call("read_messages", [k.messages, k.inputs, k.head], [int(Math.max(0, fromIndex), "fromIndex")]);
    },

    async readConversation(agentId, opts): Promise<Conversation | null> {
      const k = keys.agent(agentId);
      return call("read_conversation", [k.head, k.messages, k.inputs, k.summary], [opts?.fromSummary ? "1" : "0"]);
    },

    async readCheckpoint(agentId): Promise<Checkpoint | null> {
      const k = keys.agent(agentId);
      return call("read_checkpoint", [k.head, k.ckpts], []);
    },

    async deleteAgent(agentId, now) {
      const k = keys.agent(agentId);
      const at = now === undefined ? "0" : int(now, "now");
      // Every key under the agent's hash tag (calls hashes, delivery records), then one script deletes them all.
      const found = new Set<string>();
      let cursor = deps.scan ? "0" : "done";
      while (deps.scan && cursor !== "done") {
        const [next, batch] = await deps.scan(cursor, k.pattern);
        for (const key of batch) found.add(key);
        cursor = next === "0" ? "done" : next;
      }
      const fixed = [...k.headLong, k.tasks, k.mail, k.messages, k.events, k.idem, k.verdicts, k.inputs, k.ckpts, k.ended, k.summary];
      for (const key of fixed) found.add(key);
      found.delete(k.head);
      found.delete(k.turns);
      found.delete(k.deleted);
      return call<{ status: "deleted" } | { status: "agent_not_found" }>(
        "delete_agent",
        [k.head, k.turns, k.home.deadlines, k.home.agents, k.deleted, ...found],
        [k.home.prefix, agentId, at],
      );
    },

    async readEvents(agentId, after, limit, maxBytes): Promise<StoredEvent[]> {
      const k = keys.agent(agentId);
      if (limit <= 0) return [];
      return call("read_events", [k.events, k.head], [
        int(Math.max(0, after), "after"), int(limit, "limit"), maxBytes === undefined ? "" : int(Math.max(0, maxBytes), "maxBytes"),
      ]);
    },

    async dueToolCalls(now, limit) {
      if (limit <= 0) return [];
      let members: string[];
      if (shards.length === 1) {
        members = await call<string[]>("due_tool_calls", [shards[0].deadlines], [int(now, "now"), int(limit, "limit")]);
      } else {
        // Oldest first across shards: each shard's first `limit` with their deadlines, merged.
        const lists = await Promise.all(shards.map((s) => call<Array<[string, number]>>("due_tool_calls", [s.deadlines], [int(now, "now"), int(limit, "limit"), "scores"])));
        members = lists.flat().sort(([m1, t1], [m2, t2]) => t1 - t2 || byCodePoint(m1, m2)).slice(0, limit).map(([m]) => m);
      }
      return members.map((m) => {
        // agentId and turnId hold no control characters; the call id is the rest.
        const a = m.indexOf("\n");
        const b = m.indexOf("\n", a + 1);
        return { agentId: m.slice(0, a), turnId: m.slice(a + 1, b), toolCallId: m.slice(b + 1) };
      });
    },

    async skipDueToolCall(req: SkipDueToolCallRequest) {
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
      return call<{ status: "skipped" | "absent" }>("skip_due_tool_call", [home.deadlines, head, events], [
        member, req.retryAt === null ? "null" : int(req.retryAt, "retryAt"), int(req.now, "now"), j(req.turnId),
        tail({ type: "watchdog_skipped", data: { toolCallId: req.toolCallId, reason: String(req.reason), retryAt: req.retryAt } }),
      ]);
    },

    async readyCount(workerTarget, now): Promise<number> {
      const counts = await Promise.all(shards.map((s) => call<number>("ready_count", [s.ready(workerTarget)], [String(now)])));
      return counts.reduce((a, b) => a + b, 0);
    },

    async nextReadyAt(workerTarget): Promise<number | null> {
      const at = (await Promise.all(shards.map((s) => call<number | null>("next_ready_at", [s.ready(workerTarget)], [])))).filter((t) => t !== null);
      return at.length === 0 ? null : Math.min(...at);
    },

    async putVerdict(req: VerdictPut) {
      const k = keys.agent(req.agentId);
      return call("put_verdict", [k.verdicts, k.head, k.home.verdicts], [req.verdictId, j([req.verdictId, req.turnId, req.status]), req.json]);
    },

    async claimDelivery(req: ClaimDeliveryRequest): Promise<ClaimDeliveryResult> {
      return call("delivery", [keys.delivery(req.messageId)], [
        "claim", int(req.now, "now"), checkDeliveryTarget(req.target), checkHolder(req.holder), int(req.windowMs, "windowMs"), int(req.holdMs, "holdMs"),
      ]);
    },

    async renewDelivery(req: RenewDeliveryRequest): Promise<SettleDeliveryResult> {
      return call("delivery", [keys.delivery(req.messageId)], [
        "renew", int(req.now, "now"), checkDeliveryTarget(req.target), checkHolder(req.holder), "0", int(req.holdMs, "holdMs"),
      ]);
    },

    async recordDelivery(req: RecordDeliveryRequest): Promise<SettleDeliveryResult> {
      const response = req.response === null
        ? ""
        : j({ status: Number(int(req.response.status, "status")), contentType: String(req.response.contentType), body: String(req.response.body) });
      return call("delivery", [keys.delivery(req.messageId)], [
        req.response === null ? "forget" : "record", int(req.now, "now"), checkDeliveryTarget(req.target), checkHolder(req.holder),
        int(req.windowMs, "windowMs"), "0", response,
      ]);
    },

    async rateLimit(req: RateLimitRequest): Promise<RateLimitResult> {
      const now = int(req.now, "now");
      const { intervals, tolerances } = gcraArgs(req.buckets);
      if (req.buckets.length === 0) return { status: "allowed" };
      return call("rate_limit", req.buckets.map((b) => keys.rateLimit(b.key)), [now, ...intervals, ...tolerances]);
    },

    async acquireTargetLease(req: TargetLeaseRequest): Promise<TargetLeaseResult> {
      const leaseMs = int(req.leaseMs, "leaseMs");
      if (req.leaseMs < 1) throw new StoreInputError(`leaseMs must be at least 1, got ${req.leaseMs}`);
      return call("target_lease", [keys.targetLease(req.workerTarget)], ["acquire", checkHolder(req.holder), int(req.now, "now"), leaseMs]);
    },

    async announceDefinitionSet(req) {
      const own = [...req.agents].map(checkAgentName).sort().join(",");
      const others = await call<DefinitionSetRecord[]>("definition_sets", [keys.definitionSets], [own, int(req.now, "now"), int(req.ttlMs, "ttlMs")]);
      return { others };
    },

    async releaseTargetLease(req) {
      return call("target_lease", [keys.targetLease(req.workerTarget)], ["release", checkHolder(req.holder), int(req.now, "now")]);
    },

    async getVerdict(verdictId): Promise<string | null> {
      // The id does not name its agent: ask every home (one on the unsharded layout).
      const found = await Promise.all(shards.map((s) => call<string | null>("get_verdict", [s.verdicts], [verdictId])));
      return found.find((v) => v !== null) ?? null;
    },

    async listVerdicts(agentId, filter: VerdictFilter): Promise<string[]> {
      const k = keys.agent(agentId);
      return call("list_verdicts", [k.verdicts, k.home.verdicts], [
        filter.turnId !== undefined ? "1" : "0", filter.turnId ?? "",
        filter.status !== undefined ? "1" : "0", filter.status ?? "",
      ]);
    },

    async listAgents(req: ListAgentsRequest): Promise<AgentIndexEntry[]> {
      if (req.limit <= 0) return [];
      const args = [
        int(req.limit, "limit"),
        req.updatedSince === undefined ? "-inf" : int(req.updatedSince, "updatedSince"),
        req.after ? int(req.after.updatedAt, "after.updatedAt") : "",
        req.after ? req.after.agentId : "",
      ];
      if (shards.length === 1) return call("list_agents", [shards[0].agents], args);
      // Each shard's page after the cursor, merged in the index order: newest first, ties by id descending.
      const pages = await Promise.all(shards.map((s) => call<AgentIndexEntry[]>("list_agents", [s.agents], args)));
      return pages.flat().sort((x, y) => y.updatedAt - x.updatedAt || byCodePoint(y.agentId, x.agentId)).slice(0, req.limit);
    },

    async createFork(req: CreateForkRequest): Promise<CreateForkResult> {
      dropHints(Math.min(req.now, req.runnableAt ?? req.now));
      const k = keys.agent(req.agentId);
      const turn = req.activeTurnId;
      if (turn !== null) checkTurnId(turn);
      const args = [
        k.home.prefix, req.agentId, j(req.agentId), j(req.agentName), j(checkTarget(req.workerTarget)),
        j(req.snapshot), j(req.state), j(turn), turn ?? "", j(req.currentTask),
        turn !== null && req.input !== undefined ? j(req.input) : "",
        req.runnableAt === null ? "null" : int(req.runnableAt, "runnableAt"), int(req.now, "now"),
        tail({ type: req.event.type, data: req.event.data }),
        String(req.messages.length), String(turn === null ? 0 : req.toolCalls.length),
      ];
      for (const m of req.messages) args.push(j(m));
      if (turn !== null) {
        for (const c of req.toolCalls) {
          args.push(c.toolCallId, j({ agentId: req.agentId, turnId: turn, toolCallId: c.toolCallId, name: c.name, args: c.args, external: c.external, deadline: c.deadline, recordedAt: req.now }), int(c.deadline, "deadline"));
        }
      }
      return call("create_fork", declare(k, [k.head, k.messages, k.events, k.calls(turn ?? ""), k.home.deadlines, k.inputs, k.home.ready(req.workerTarget)]), args);
    },

    async recordFork(req: RecordForkRequest) {
      const k = keys.agent(req.agentId);
      return call("record_fork", [k.head, k.events], [int(req.now, "now"), tail({ type: req.event.type, data: req.event.data })]);
    },

    async recordToolMethod(req: RecordToolMethodRequest): Promise<RecordToolMethodResult> {
      checkToolName(req.role, "role");
      checkToolName(req.method, "method");
      const n = toolCalls(req.calls);
      return call("record_tool_method", [keys.tools, keys.toolForms], [req.role, req.method, methodForm(req.method), int(req.now, "now"), String(n)]);
    },

    async getToolRole(role: string): Promise<ToolRoleEntry | null> {
      checkToolName(role, "role");
      const text = await call<string | null>("get_tool_role", [keys.tools], [role]);
      return text === null ? null : loadToolRoleEntry(role, text);
    },

    async listToolRoles(): Promise<ToolRoleEntry[]> {
      const pairs = await call<Array<[string, string]> | Record<string, never>>("list_tool_roles", [keys.tools], []);
      return (Array.isArray(pairs) ? pairs : []).flatMap(([role, text]) => loadToolRoleEntry(role, text) ?? []);
    },

    ...(deps.watchBells ? { watchBells: deps.watchBells } : {}),
    ...(deps.live ? { live: deps.live } : {}),
    close: deps.close,
  };
  return store;
}
