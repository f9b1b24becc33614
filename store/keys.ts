/**
 * The Redis key layout, in one place. store/lua/includes/keys.lua builds the
 * same agent keys inside `claim_next.lua`; keep the two in step.
 *
 * Per agent, every key carries the hash tag `{a:<agentId>}`, so all of one
 * agent's records live in one Redis Cluster slot:
 *
 * | key                              | type   | holds |
 * | -------------------------------- | ------ | ----- |
 * | `<p>:{a:<id>}:head`              | hash   | the AgentHead, one JSON text per field; `_`-fields are internal |
 * | `<p>:{a:<id>}:tasks`             | list   | queued tasks: `<turnId JSON>\n<InboxTask JSON>` |
 * | `<p>:{a:<id>}:mail`              | list   | MailItem JSON, seq ascending and dense |
 * | `<p>:{a:<id>}:msgs`              | list   | Message JSON (append-only) |
 * | `<p>:{a:<id>}:events`            | list   | StoredEvent JSON; event id k is at index k-1 |
 * | `<p>:{a:<id>}:idem`              | hash   | `k:<idempotency key>` -> turnId JSON; `t:<turnId JSON>` -> 1 |
 * | `<p>:{a:<id>}:calls:<turnId>`    | hash   | `c:<toolCallId>` -> record JSON; `r:<toolCallId>` -> resolution JSON |
 * | `<p>:{a:<id>}:verdicts`          | list   | `[verdictId, turnId, status]` JSON, write order |
 * | `<p>:{a:<id>}:turns`             | hash   | turnId -> `queued` / `done` / `failed` / `ended` / `cancelled` |
 * | `<p>:{a:<id>}:inputs`            | hash   | turnId -> the task's input JSON, its one stored copy |
 * | `<p>:{a:<id>}:dlv:<messageId>`   | string | `<until ms>\n<response JSON or empty>`, expires with its window (transport dedup) |
 *
 * Cross-agent indexes (no agent hash tag):
 *
 * | key                    | type   | holds |
 * | ---------------------- | ------ | ----- |
 * | `<p>:ready:<target>`   | zset   | agentId, score = when the agent is due (the bell) |
 * | `<p>:deadlines`        | zset   | `<agentId>\n<turnId>\n<toolCallId>`, score = resume deadline |
 * | `<p>:verdicts`         | hash   | verdictId -> verdict record text |
 * | `<p>:agents`           | zset   | agentId, score = the head's `updatedAt` (the agents index) |
 * | `<p>:{rl}:<bucket>`    | string | a rate-limit bucket's TAT in microseconds, expires when it limits nothing (routes/rate-limit.ts) |
 * | `<p>:lease:<target>`   | string | `<until ms>\n<holder>`: the consumer of a single-consumer target, expires with its lease |
 *
 * Rate-limit buckets share the hash tag `{rl}`: one script checks a token's
 * and an agent's bucket together, so on Redis Cluster they must live in one
 * slot (all rate limits of a deployment in one slot; their records are
 * small and expire on their own).
 * | `<p>:tools`            | hash   | role -> tool registry entry JSON (common/tool-registry.ts) |
 * | `<p>:tool_forms`       | hash   | `<role>\n<method form>` -> the method first seen with that form |
 *
 * The agents index is written by the scripts that write a head's
 * `updatedAt` (enqueue_task on creation, claim, claim_next, commit,
 * create_fork). Like the ready queues and the deadlines it is one key for all
 * agents: on Redis Cluster it lives in one slot, apart from the agents'
 * slots, so these scripts are (as the ready queue writes already are)
 * single-node scripts; a Cluster deployment needs the index kept by a
 * second call instead.
 *
 * Identifiers that become part of a key or of an index member are checked
 * here: an agent id may not contain `{`, `}` or control characters (they
 * would move the hash tag or break the `\n`-separated deadline member); a
 * turn id may not contain control characters; a worker target is one token
 * of `[a-z0-9_-]`; the prefix is `[A-Za-z0-9_.:-]`.
 */
import { ID_CHARS, SHORT_ID_PATTERN } from "../common/ids.ts";

/** Bad input to a store adapter: an identifier that cannot become a key, a time that is not an integer. */
export class StoreInputError extends Error {
  readonly code = "invalid_store_input";
  constructor(message: string) {
    super(message);
    this.name = "StoreInputError";
  }
}

// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;
const TARGET = /^[a-z0-9_-]{1,64}$/;
const PREFIX = SHORT_ID_PATTERN;

const MESSAGE_ID = /^[\x21-\x7e]{1,300}$/;
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

export function checkTarget(target: string): string {
  if (typeof target !== "string" || !TARGET.test(target)) {
    throw new StoreInputError(`Cannot use worker target ${JSON.stringify(target)}: it must be one token of [a-z0-9_-]`);
  }
  return target;
}

export function checkPrefix(prefix: string): string {
  if (typeof prefix !== "string" || !PREFIX.test(prefix)) {
    throw new StoreInputError(`Cannot use key prefix ${JSON.stringify(prefix)}: it must be 1-64 characters of [${ID_CHARS}]`);
  }
  return prefix;
}

/** The keys of one agent; all share the hash tag `{a:<agentId>}`. */
export interface AgentKeys {
  head: string;
  tasks: string;
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
  /** A SCAN MATCH pattern for every key of the agent (glob characters of the id escaped). */
  pattern: string;
  /** The tool-call hash of one turn. */
  calls(turnId: string): string;
  /** Transport dedup record of one signed message. */
  delivery(messageId: string): string;
}

export interface KeySpace {
  readonly prefix: string;
  agent(agentId: string): AgentKeys;
  /** The ready queue (bell) of a worker target. */
  ready(target: string): string;
  /** Resume deadlines of pending tool calls, for the watchdog. */
  readonly deadlines: string;
  /** verdictId -> verdict record. */
  readonly verdicts: string;
  /** The agents index: agentId by updatedAt (store/lua/includes/keys.lua builds the same name). */
  readonly agents: string;
  /** A rate-limit bucket (hash tag `{rl}`). */
  rateLimit(bucket: string): string;
  /** The consumer lease of a single-consumer worker target. */
  targetLease(target: string): string;
  /** The tool registry: role -> entry JSON. */
  readonly tools: string;
  /** The tool registry's method forms: `<role>\n<form>` -> canonical method. */
  readonly toolForms: string;
}

/** The key space under `prefix` (default `gh`). */
export function keySpace(prefix = "gh"): KeySpace {
  checkPrefix(prefix);
  return {
    prefix,
    agent(agentId) {
      const tag = `${prefix}:{a:${checkAgentId(agentId)}}`;
      return {
        head: `${tag}:head`,
        tasks: `${tag}:tasks`,
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
        pattern: `${tag.replace(/[*?[\]\\]/g, "\\$&")}:*`,
        calls: (turnId) => `${tag}:calls:${turnId}`,
        delivery: (messageId) => `${tag}:dlv:${checkMessageId(messageId)}`,
      };
    },
    ready: (target) => `${prefix}:ready:${checkTarget(target)}`,
    deadlines: `${prefix}:deadlines`,
    verdicts: `${prefix}:verdicts`,
    agents: `${prefix}:agents`,
    rateLimit: (bucket) => `${prefix}:{rl}:${checkBucketKey(bucket)}`,
    targetLease: (target) => `${prefix}:lease:${checkTarget(target)}`,
    tools: `${prefix}:tools`,
    toolForms: `${prefix}:tool_forms`,
  };
}
