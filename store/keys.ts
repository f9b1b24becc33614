/**
 * The Redis key layout, in one place. store/lua/includes/keys.lua builds the
 * same agent keys inside `claim_next.lua`; keep the two in step.
 *
 * Two layouts share one shape (docs/store.md, "Standalone, Sentinel,
 * Upstash, and Redis Cluster"): every key lives under a *home prefix*,
 *
 * - unsharded (one Redis, Sentinel, Upstash): one home, `<p>`;
 * - sharded (`shards: N`, Redis Cluster): N homes `<p>:{<tag n>}`, and an
 *   agent lives in home `crc16(agentId) mod N`. Redis hashes a key by its
 *   first `{...}`, so an agent's keys and its shard's indexes share a slot.
 *
 * Per agent, under its home `<h>` (every key carries `{a:<agentId>}`, the
 * hash tag on the unsharded layout):
 *
 * | key                              | type   | holds |
 * | -------------------------------- | ------ | ----- |
 * | `<h>:{a:<id>}:head`              | hash   | the AgentHead, one JSON text per field; `_`-fields are internal; long values apart |
 * | `<h>:{a:<id>}:head:<field>`      | string | a long head value (`snapshot`, `currentTask`, `_recentTurns`); the field holds a mark |
 * | `<h>:{a:<id>}:tasks`             | list   | queued tasks in join order (invariant `delayed-tasks`): `<turnId JSON>\n<InboxTask JSON>` |
 * | `<h>:{a:<id>}:delayed`           | zset   | the queue after `tasks`: delayed tasks and those joining behind one, `<seq 16 digits>\n<task entry>`, score = join time (store/lua/includes/queue.lua) |
 * | `<h>:{a:<id>}:mail`              | list   | MailItem JSON, seq ascending and dense |
 * | `<h>:{a:<id>}:msgs`              | list   | Message JSON (append-only) |
 * | `<h>:{a:<id>}:events`            | list   | StoredEvent JSON; event id k is at index k-1 |
 * | `<h>:{a:<id>}:idem`              | hash   | `k:<idempotency key>` -> turnId JSON; `t:<turnId JSON>` -> 1 |
 * | `<h>:{a:<id>}:calls:<turnId>`    | hash   | `c:<toolCallId>` -> record JSON; `r:<toolCallId>` -> resolution JSON |
 * | `<h>:{a:<id>}:verdicts`          | list   | `[verdictId, turnId, status]` JSON, write order |
 * | `<h>:{a:<id>}:turns`             | hash   | turnId -> `queued` / `done` / `failed` / `ended` / `cancelled` |
 * | `<h>:{a:<id>}:inputs`            | hash   | turnId -> the task's input JSON, its one stored copy |
 * | `<h>:{a:<id>}:sched`             | hash   | per scheduleId S: `r:S` record JSON, `n:S` next tick (ms or `null`), `v:S` revision, `a:S` agentName JSON, `t:S` worker target, `l:S` last fire JSON, `q:S` tasks queued since the newest left the queue `<count>\n<turnId JSON>\n<turnId>` (store/port.ts `Schedules`, invariant `schedule-bounds`) |
 *
 * Cross-agent indexes, one set per home (`ShardKeys`):
 *
 * | key                    | type   | holds |
 * | ---------------------- | ------ | ----- |
 * | `<h>:ready:<target>`   | zset   | agentId, score = when the agent is due (the bell: now, a lease end, a `runnableAt`, or a delayed task's `runAt`, invariant `delayed-tasks`); its name is also the pub/sub channel of its new earliest scores (`set_bell`, store/lua/includes/keys.lua); `<agentId>\n<scheduleId>`, score = the schedule's next tick |
 * | `<h>:ready:<target>:key:<K>` | zset | the bells of lane K (concurrency key K); the ready zset itself holds the default lane's (store/port.ts invariant `fair-lanes`; docs/store.md "Concurrency keys and lanes") |
 * | `<h>:ready:<target>:lanes` | zset | keyed lanes with bells: K, score = max(not-before of K, earliest bell of K) |
 * | `<h>:ready:<target>:nb` | hash | lane -> not-before: last served by claimNext, or parked until (ms); "" the default lane |
 * | `<h>:ck:<K>:running`   | zset   | agents leased for a turn of key K, score = lease end (invariant `concurrency-keys`) |
 * | `<h>:ticks:<target>`   | zset   | `<agentId>\n<scheduleId>`, score = the schedule's next tick: the schedule index the tick firer reads (store/port.ts invariant `schedule-index`) |
 * | `<h>:deadlines`        | zset   | `<agentId>\n<turnId>\n<toolCallId>`, score = resume deadline |
 * | `<h>:waits:<name>`     | zset   | `<agentId>\n<turnId>\n<toolCallId>` of a call waiting for the named event `<name>`, score = when the call was recorded (store/port.ts invariant `named-event-waits`) |
 * | `<h>:event:<eventId>`  | string | when the named event `<eventId>` first arrived (ms), expires after a day: a retry sees the same waits |
 * | `<h>:verdicts`         | hash   | verdictId -> verdict record text |
 * | `<h>:agents`           | zset   | agentId, score = the head's `updatedAt` (the agents index) |
 *
 * Deployment-wide keys, one set per key space whatever the layout (they
 * name no agent, so they have no home):
 *
 * | key                     | type   | holds |
 * | ----------------------- | ------ | ----- |
 * | `<p>:{rl}:<bucket>`     | string | a rate-limit bucket's TAT in microseconds, expires when it limits nothing (routes/rate-limit.ts) |
 * | `<p>:{ck:<K>}:running`  | zset   | sharded layout only: reservations under concurrency key K, `<ready key>\n<nonce>`, score = lease end (store/port.ts invariant `concurrency-keys`) |
 * | `<p>:{ck:<K>}:waiting`  | set    | sharded layout only: the ready keys `<home>:ready:<target>` whose lane of K is parked at the limit, rung by the next release |
 * | `<p>:lease:<target>`    | string | `<until ms>\n<holder>`: the consumer of a single-consumer target, expires with its lease |
 * | `<p>:dlv:<messageId>`   | string | `<until>\n<hold until>\n<holder>\n<target>\n<response JSON>`: transport dedup of one signed message, expires with its window |
 * | `<p>:defsets`           | hash   | a definition set's agent names (sorted, joined by `,`) -> when a process serving it last announced it (store/port.ts invariant `definition-sets`) |
 * | `<p>:tools`             | hash   | role -> tool registry entry JSON (common/tool-registry.ts); sharded: `<p>:{tools}:registry` |
 * | `<p>:tool_forms`        | hash   | `<role>\n<method form>` -> the method first seen with that form; sharded: `<p>:{tools}:forms` |
 *
 * Rate-limit buckets share the hash tag `{rl}`: one script checks a token's
 * and an agent's bucket together, so on Redis Cluster they must live in one
 * slot (all rate limits of a deployment in one slot; their records are
 * small and expire on their own). A target lease is one key per script
 * call, so it needs no tag. A concurrency key's two keys share the tag
 * `{ck:<K>}` (the key itself may hold braces: the tag ends at the first `}`,
 * the same in both names), so its scripts are one slot. The tool registry's two hashes are written by
 * one script: on the sharded layout they share the tag `{tools}`; on the
 * unsharded layout they keep their untagged names (one Redis checks no
 * slots, and renaming them would orphan registries already written). The
 * sharded layout is new, so its names need no migration.
 *
 * The rule every script follows (and new ones must): it touches one agent's
 * keys and that agent's home indexes (`agent(id).home`), or one home's
 * indexes, or one group of deployment-wide keys that share a slot (one
 * lease, the `{rl}` buckets, the `{tools}` registry, one key's `{ck:<K>}`); it receives the home
 * prefix where it needs a prefix and builds undeclared keys under it only.
 * Readers of an index call every home (`shards`) and merge. So on a Cluster
 * every script stays in one slot.
 *
 * `agent(id)` is a function of the id: built once per id and kept (frozen)
 * for the ids asked for last, since every claim and commit asks for it; a
 * kept entry equals a fresh build, and an id that fails the check is never
 * kept (tests/store/store-keys-kept.test.ts).
 *
 * The agents index is written by the scripts that write a head's
 * `updatedAt` (enqueue_task on creation, claim, claim_next, commit,
 * record_claim_failure, reset_turn, create_fork), into the agent's home.
 *
 * A head value longer than 64 bytes would turn the hash out of Redis's
 * compact (listpack) encoding for good (about 2 KB stored for 900 B of
 * data). The values that can be long (the snapshot always; a task's
 * `currentTask` and the `_recentTurns` list when over 64 bytes) have their
 * own key, `<head key>:<field>`, which a script derives from the head key it
 * was given (same hash tag, same slot); the hash field then holds a mark.
 * Heads written before hold them in the hash: store/lua/includes/head.lua
 * reads both.
 *
 * Identifiers that become part of a key or of an index member are checked
 * here: an agent id may not contain `{`, `}` or control characters (they
 * would move the hash tag or break the `\n`-separated deadline member); a
 * turn id may not contain control characters; a worker target is one token
 * of `[a-z0-9_-]`; the prefix is `[A-Za-z0-9_.:-]`.
 */
import { ID_CHARS, SHORT_ID_PATTERN } from "../common/ids.ts";
import { crc16, keySlot, SLOTS } from "./key-slot.ts";
import { StoreInputError } from "../errors/store.ts";

/** Bad input to a store adapter: an identifier that cannot become a key, a time that is not an integer. */
export { StoreInputError };

// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;
const TARGET = /^[a-z0-9_-]{1,64}$/;
const PREFIX = SHORT_ID_PATTERN;

const MESSAGE_ID = /^[\x21-\x7e]{1,300}$/;
const DELIVERY_TARGET = /^[\x20-\x7e]{1,1100}$/;
const BUCKET = /^[\x21-\x7e]{1,1024}$/;
const HOLDER = /^[\x21-\x7e]{1,200}$/;

/** A rate-limit bucket key: 1-1024 visible ASCII characters. */
export function checkBucketKey(key: string): string {
  if (typeof key !== "string" || !BUCKET.test(key)) {
    throw new StoreInputError(`Cannot use rate-limit bucket ${JSON.stringify(String(key).slice(0, 80))}: it must be 1-1024 visible ASCII characters`);
  }
  return key;
}

/** The holder of a target lease: 1-200 visible ASCII characters. */
export function checkHolder(holder: string): string {
  if (typeof holder !== "string" || !HOLDER.test(holder)) {
    throw new StoreInputError(`Cannot use lease holder ${JSON.stringify(String(holder).slice(0, 80))}: it must be 1-200 visible ASCII characters`);
  }
  return holder;
}

/** What a signed delivery is for (transport dedup): `<METHOD> <path>`, 1-1100 visible ASCII characters and spaces. */
export function checkDeliveryTarget(target: string): string {
  if (typeof target !== "string" || !DELIVERY_TARGET.test(target)) {
    throw new StoreInputError(`Cannot use delivery target ${JSON.stringify(String(target).slice(0, 80))}: it must be 1-1100 visible ASCII characters and spaces`);
  }
  return target;
}

/** A signed message id (transport dedup): 1-300 visible ASCII characters. */
export function checkMessageId(messageId: string): string {
  if (typeof messageId !== "string" || !MESSAGE_ID.test(messageId)) {
    throw new StoreInputError(`Cannot use message id ${JSON.stringify(String(messageId).slice(0, 80))}: it must be 1-300 visible ASCII characters`);
  }
  return messageId;
}

export function checkAgentId(agentId: string): string {
  if (
    typeof agentId !== "string" || agentId.length === 0 || agentId.length > 256 || /[{}]/.test(agentId) || CONTROL.test(agentId) ||
    agentId === "." || agentId === ".."
  ) {
    throw new StoreInputError(
      `Cannot use agent id ${JSON.stringify(agentId)} as a store key: it must be 1-256 characters without "{", "}" or control characters, and not "." or ".."`,
    );
  }
  return agentId;
}

/** A bound given to the store (store/port.ts invariant `schedule-bounds`): a positive safe integer, or `dflt` when absent. */
export function positiveBound(v: number | undefined, what: string, dflt: number): number {
  if (v === undefined) return dflt;
  if (!Number.isSafeInteger(v) || v < 1) throw new StoreInputError(`Cannot use ${what} ${JSON.stringify(v)}: it must be a positive safe integer`);
  return v;
}

/** A schedule id: 1-64 characters of [A-Za-z0-9_.:-] (it becomes a hash field and a ready-queue member). */
export function checkScheduleId(scheduleId: string): string {
  if (typeof scheduleId !== "string" || !SHORT_ID_PATTERN.test(scheduleId)) {
    throw new StoreInputError(`Cannot use schedule id ${JSON.stringify(scheduleId)}: it must be 1-64 characters of [${ID_CHARS}]`);
  }
  return scheduleId;
}

export function checkTurnId(turnId: string, what = "turn id"): string {
  if (typeof turnId !== "string" || turnId.length === 0 || CONTROL.test(turnId)) {
    throw new StoreInputError(`Cannot use ${what} ${JSON.stringify(turnId)}: it must be a non-empty string without control characters`);
  }
  return turnId;
}

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** A tool role or method name (the tool name pattern): it becomes a hash field of the tool registry. */
export function checkToolName(name: string, what: "role" | "method"): string {
  if (typeof name !== "string" || !TOOL_NAME.test(name)) {
    throw new StoreInputError(`Cannot use tool ${what} ${JSON.stringify(name)}: it must match ${TOOL_NAME}`);
  }
  return name;
}

/** The `calls` of a registry write (store/port.ts invariant `tool-registry`): a positive safe integer, default 1. */
export function toolCalls(calls: number | undefined): number {
  if (calls === undefined) return 1;
  if (typeof calls !== "number" || !Number.isSafeInteger(calls) || calls < 1) {
    throw new StoreInputError(`Cannot record ${JSON.stringify(calls)} tool calls: calls must be a positive integer`);
  }
  return calls;
}

export function checkTarget(target: string): string {
  if (typeof target !== "string" || !TARGET.test(target)) {
    throw new StoreInputError(`Cannot use worker target ${JSON.stringify(target)}: it must be one token of [a-z0-9_-]`);
  }
  return target;
}

/** An agent definition name as `claimNext`'s `agentNames` and `announceDefinitionSet` take it: 1-256 characters, no ",". */
export function checkAgentName(name: string): string {
  if (typeof name !== "string" || name.length === 0 || name.length > 256 || name.includes(",")) {
    throw new StoreInputError(`Cannot use agent name ${JSON.stringify(name)}: it must be 1-256 characters without ","`);
  }
  return name;
}

/** A definition version as the store takes it (invariant `turn-versions`): 1-64 of [A-Za-z0-9_.:+-], so its JSON text is itself in quotes. */
export const VERSION = /^[A-Za-z0-9_.:+-]{1,64}$/;

export function checkVersion(version: string): string {
  if (typeof version !== "string" || !VERSION.test(version)) {
    throw new StoreInputError(`Cannot use definition version ${JSON.stringify(version)}: it must be 1-64 of [A-Za-z0-9_.:+-]`);
  }
  return version;
}

export function checkPrefix(prefix: string): string {
  if (typeof prefix !== "string" || !PREFIX.test(prefix)) {
    throw new StoreInputError(`Cannot use key prefix ${JSON.stringify(prefix)}: it must be 1-64 characters of [${ID_CHARS}]`);
  }
  return prefix;
}

/** The cross-agent indexes of one home (the whole key space on the unsharded layout, one shard on the sharded one). */
export interface ShardKeys {
  /** The home prefix: `<p>` unsharded, `<p>:{<tag n>}` sharded. Scripts build every undeclared key under it. */
  readonly prefix: string;
  /** The ready queue (bell) of a worker target. */
  ready(target: string): string;
  /** The schedule index of a worker target (store/port.ts invariant `schedule-index`). */
  ticks(target: string): string;
  /** Resume deadlines of pending tool calls, for the watchdog. */
  readonly deadlines: string;
  /** The calls waiting for a named event (common/event-name.ts checks the name). */
  waits(name: string): string;
  /** When a named event first arrived, by its id. */
  namedEvent(eventId: string): string;
  /** verdictId -> verdict record. */
  readonly verdicts: string;
  /** The agents index: agentId by updatedAt (store/lua/includes/keys.lua builds the same name). */
  readonly agents: string;
}

/** The keys of one agent; all share its home's slot. */
export interface AgentKeys {
  /** The agent's home: the indexes its scripts may write. */
  home: ShardKeys;
  head: string;
  /** The keys of the head's long values, `<head>:<field>` (store/lua/includes/head.lua `long_key`; scripts derive them from `head`). */
  headLong: readonly string[];
  tasks: string;
  /** The queue after `tasks`: delayed tasks by join time (store/lua/includes/queue.lua). */
  delayed: string;
  mail: string;
  messages: string;
  events: string;
  idem: string;
  verdicts: string;
  /** turnId -> where the turn is when it is not the active one. */
  turns: string;
  /** turnId -> the task's input JSON (store/inputs.ts). */
  inputs: string;
  /** Retention checkpoints, oldest first (store/retention.ts). */
  ckpts: string;
  /** Ended turns not yet dropped, `<turnId>\n<idempotency key or empty>\n<message count at the end>`. */
  ended: string;
  /** The rolling conversation summary, `{content, through}` JSON. */
  summary: string;
  /** The agent's schedules (store/port.ts `Schedules`). */
  schedules: string;
  /** The deletion marker: the time the agent was deleted (store/port.ts invariant `deletion-marker`); outlives the agent. */
  deleted: string;
  /** A SCAN MATCH pattern for every key of the agent (glob characters of the id escaped). */
  pattern: string;
  /** The tool-call hash of one turn. */
  calls(turnId: string): string;
}

export interface KeySpace {
  /** The prefix the caller chose (`gh` by default). */
  readonly prefix: string;
  /** 0 on the unsharded layout, else the number of shards. */
  readonly shardCount: number;
  /** Every home: one on the unsharded layout, `shardCount` otherwise. Index readers call each. */
  readonly shards: readonly ShardKeys[];
  agent(agentId: string): AgentKeys;
  /** The home of an agent id, without checking the id (a corrupt index member still has a home). */
  homeOf(agentId: string): ShardKeys;
  /** Sharded layout only: `<p>:layout`, holding `shards=<N>` (the same key for every N); null when unsharded. */
  readonly layout: string | null;
  /** A rate-limit bucket (hash tag `{rl}`: all buckets in one slot). Deployment-wide. */
  rateLimit(bucket: string): string;
  /**
   * The count of concurrency key K on the sharded layout, in K's own slot (`<p>:{ck:<K>}:…`,
   * store/port.ts invariant `concurrency-keys`): its reservations and its waiting homes. Deployment-wide.
   */
  keySlot(key: string): { running: string; waiting: string };
  /** The consumer lease of a single-consumer worker target (one key per call). Deployment-wide. */
  targetLease(target: string): string;
  /** The transport dedup record of one signed message (one key per call). Deployment-wide. */
  delivery(messageId: string): string;
  /** The definition sets recorded in the key space (store/port.ts invariant `definition-sets`; one key per call). Deployment-wide. */
  readonly definitionSets: string;
  /** The tool registry: role -> entry JSON. Shares a slot with `toolForms` on the sharded layout. */
  readonly tools: string;
  /** The tool registry's method forms: `<role>\n<form>` -> canonical method. */
  readonly toolForms: string;
}

/** Head fields whose value may live in its own key (store/lua/includes/head.lua `LONG_FIELDS`). */
export const LONG_HEAD_FIELDS = ["snapshot", "currentTask", "_recentTurns"] as const;

/** The most shards a key space takes (the tag search of each shard costs about 4 N CRCs). */
export const MAX_SHARDS = 256;

/**
 * The hash tag of shard `n` of `count`: the first of `s:<n>`, `s:<n>.1`,
 * `s:<n>.2`, ... whose slot lies near the middle of the n-th of `count`
 * equal slot ranges (within an eighth of the range), so shards spread
 * evenly over masters that own contiguous slot ranges.
 */
export function shardTag(n: number, count: number): string {
  const width = SLOTS / count;
  const middle = Math.floor((n + 0.5) * width);
  const reach = Math.max(1, Math.floor(width / 8));
  const lo = middle - reach;
  const hi = middle + reach;
  for (let k = 0; ; k++) {
    const tag = k === 0 ? `s:${n}` : `s:${n}.${k}`;
    const slot = keySlot(tag);
    if (slot >= lo && slot <= hi) return tag;
  }
}

function shardKeys(prefix: string): ShardKeys {
  return {
    prefix,
    ready: (target) => `${prefix}:ready:${checkTarget(target)}`,
    ticks: (target) => `${prefix}:ticks:${checkTarget(target)}`,
    deadlines: `${prefix}:deadlines`,
    waits: (name) => `${prefix}:waits:${name}`,
    namedEvent: (eventId) => `${prefix}:event:${eventId}`,
    verdicts: `${prefix}:verdicts`,
    agents: `${prefix}:agents`,
  };
}

/** How many agents' keys a key space keeps built (the ids asked for last). */
const AGENT_KEYS_KEPT = 4_096;

/** The keys of a checked agent id in its home (frozen: shared by every caller). */
function agentKeys(home: ShardKeys, agentId: string): AgentKeys {
  const tag = `${home.prefix}:{a:${agentId}}`;
  return Object.freeze({
    home,
    head: `${tag}:head`,
    headLong: Object.freeze(LONG_HEAD_FIELDS.map((f) => `${tag}:head:${f}`)),
    tasks: `${tag}:tasks`,
    delayed: `${tag}:delayed`,
    mail: `${tag}:mail`,
    messages: `${tag}:msgs`,
    events: `${tag}:events`,
    idem: `${tag}:idem`,
    verdicts: `${tag}:verdicts`,
    turns: `${tag}:turns`,
    inputs: `${tag}:inputs`,
    ckpts: `${tag}:ckpts`,
    ended: `${tag}:ended`,
    summary: `${tag}:summary`,
    deleted: `${tag}:deleted`,
    schedules: `${tag}:sched`,
    pattern: `${tag.replace(/[*?[\]\\]/g, "\\$&")}:*`,
    calls: (turnId: string) => `${tag}:calls:${turnId}`,
  });
}

/**
 * The key space under `prefix` (default `gh`): unsharded unless `shards` is
 * given (an integer 1-256; Redis Cluster needs it, docs/store.md).
 */
export function keySpace(prefix = "gh", opts: { shards?: number } = {}): KeySpace {
  checkPrefix(prefix);
  const count = opts.shards ?? 0;
  if (opts.shards !== undefined && (!Number.isInteger(count) || count < 1 || count > MAX_SHARDS)) {
    throw new StoreInputError(`Cannot lay keys out in ${JSON.stringify(opts.shards)} shards: it must be an integer of 1-${MAX_SHARDS}`);
  }
  const shards = count === 0 ? [shardKeys(prefix)] : Array.from({ length: count }, (_, n) => shardKeys(`${prefix}:{${shardTag(n, count)}}`));
  const homeOf = (agentId: string) => (count === 0 ? shards[0] : shards[crc16(String(agentId)) % count]);
  // An agent's keys are a function of its id: built once per id (every claim and commit asks for them), frozen,
  // for the AGENT_KEYS_KEPT ids asked for last. An id that fails the check is never kept.
  const known = new Map<string, AgentKeys>();
  return {
    prefix,
    shardCount: count,
    shards,
    homeOf,
    layout: count === 0 ? null : `${prefix}:layout`,
    agent(agentId) {
      const kept = known.get(agentId);
      if (kept) return kept;
      const keys = agentKeys(homeOf(checkAgentId(agentId)), agentId);
      if (known.size >= AGENT_KEYS_KEPT) known.delete(known.keys().next().value!);
      known.set(agentId, keys);
      return keys;
    },
    rateLimit: (bucket) => `${prefix}:{rl}:${checkBucketKey(bucket)}`,
    keySlot: (key) => ({ running: `${prefix}:{ck:${key}}:running`, waiting: `${prefix}:{ck:${key}}:waiting` }),
    targetLease: (target) => `${prefix}:lease:${checkTarget(target)}`,
    delivery: (messageId) => `${prefix}:dlv:${checkMessageId(messageId)}`,
    definitionSets: `${prefix}:defsets`,
    tools: count === 0 ? `${prefix}:tools` : `${prefix}:{tools}:registry`,
    toolForms: count === 0 ? `${prefix}:tool_forms` : `${prefix}:{tools}:forms`,
  };
}
