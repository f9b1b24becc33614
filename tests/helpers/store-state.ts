/**
 * The whole stored state of one agent, for "changes nothing" assertions:
 * read it before an operation that must not write, read it again after, and
 * compare. Comparing the head alone misses writes to tasks, tool calls, mail,
 * deadlines or bells that happen before a refusal.
 *
 * What is captured:
 * - memory store (`memoryStoreState`, store/memory.ts): every record of the
 *   agent (head, tasks, mail and its seq, messages, events, tool calls,
 *   idempotency keys, turns, inputs, verdict ids);
 * - Redis (TCP and Upstash adapters, read over a raw TCP connection to the
 *   same server): every key under the agent's hash tag `<p>:{a:<id>}:*`
 *   (found with SCAN MATCH; on the sharded layout of a Cluster, under the agent's home
 *   `<p>:{<shard tag>}`, scanned on the node holding its slot), dumped by TYPE (string, hash, list, set, zset,
 *   stream) with its expiry time, so a write of any command, an EXPIRE included,
 *   shows up;
 * - on both, the entries of the cross-agent indexes the agent appears in
 *   (store/keys.ts): its bell in every ready queue `<p>:ready:<target>`, its
 *   members of `<p>:deadlines`, and its records in `<p>:verdicts` (the ids
 *   its verdict list names, plus records that name it as `agentId`; on Redis
 *   a verdict written for an agent that does not exist, whose record does
 *   not name the agent, cannot be attributed to it).
 *
 * The `records` part is adapter-specific (compare a store with itself); the
 * index parts have one shape for every adapter, so a test can state the one
 * index change it expects (`withIndexes`).
 */
import { type KeySpace, keySpace } from "../../store/keys.ts";
import { memoryStoreState } from "../../store/memory.ts";
import type { Store } from "../../store/port.ts";

export interface AgentState {
  /** memory: the agent's records; Redis: key suffix (after `{a:<id>}:`) -> { type, ttl (expiry time), value }. Empty when nothing is stored. */
  records: Record<string, unknown>;
  /** worker target -> the agent's score in that ready queue. */
  ready: Record<string, number>;
  /** `<turnId>\n<toolCallId>` -> deadline, for the agent's members of the deadline index. */
  deadlines: Record<string, number>;
  /** verdictId -> stored record of the agent's verdicts. */
  verdicts: Record<string, unknown>;
}

export type StateReader = (agentId: string) => Promise<AgentState>;

/** Sends one raw Redis command (e.g. `(c) => client.call(c[0], ...c.slice(1))` with ioredis). */
export type RawRedis = (command: string[]) => Promise<unknown>;

/** The state reader of a memory store (also through `{ ...store }` wrappers). */
export function memoryStateReader(store: Store): StateReader {
  return async (agentId) => {
    const d = memoryStoreState(store);
    const own = d.agents.find(([id]) => id === agentId)?.[1];
    const ready: Record<string, number> = {};
    for (const [target, entries] of d.ready) {
      for (const [id, score] of entries) if (id === agentId) ready[target] = score;
    }
    const deadlines: Record<string, number> = {};
    for (const [member, score] of d.deadlines) {
      if (member.startsWith(`${agentId}\n`)) deadlines[member.slice(agentId.length + 1)] = score;
    }
    const verdicts: Record<string, unknown> = {};
    for (const [id, v] of d.verdicts) if (v.agentId === agentId || own?.verdicts.includes(id)) verdicts[id] = v;
    const schedules = d.schedules.find(([id]) => id === agentId)?.[1];
    const records = { ...(own ?? {}), ...(schedules && schedules.length > 0 ? { schedules } : {}) };
    return { records, ready, deadlines, verdicts };
  };
}

/** Escapes Redis glob characters so SCAN MATCH takes `s` literally. */
const globLiteral = (s: string) => s.replace(/[*?[\]\\]/g, (c) => `\\${c}`);

async function scanAll(redis: RawRedis, pattern: string): Promise<string[]> {
  const out = new Set<string>();
  let cursor = "0";
  do {
    const [next, keys] = (await redis(["SCAN", cursor, "MATCH", pattern, "COUNT", "1000"])) as [string, string[]];
    for (const k of keys) out.add(k);
    cursor = next;
  } while (cursor !== "0");
  return [...out].sort();
}

const pairs = (flat: string[]) => Array.from({ length: flat.length / 2 }, (_, i) => [flat[2 * i], flat[2 * i + 1]] as [string, string]);

/**
 * When the key expires: PEXPIRETIME (absolute ms, -1 without expiry; Redis 7),
 * else the sign of PTTL (a countdown would differ between two reads).
 */
async function expiry(redis: RawRedis, key: string): Promise<number> {
  try {
    return Number(await redis(["PEXPIRETIME", key]));
  } catch {
    const pttl = Number(await redis(["PTTL", key]));
    return pttl >= 0 ? 1 : pttl;
  }
}

/** One key's value by its TYPE; hashes and sets sorted, lists and zsets in their stored order. */
async function dumpKey(redis: RawRedis, key: string): Promise<{ type: string; ttl: number; value: unknown }> {
  const type = String(await redis(["TYPE", key]));
  const ttl = await expiry(redis, key);
  let value: unknown;
  switch (type) {
    case "string":
      value = await redis(["GET", key]);
      break;
    case "hash":
      value = Object.fromEntries(pairs((await redis(["HGETALL", key])) as string[]).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
      break;
    case "list":
      value = await redis(["LRANGE", key, "0", "-1"]);
      break;
    case "set":
      value = ((await redis(["SMEMBERS", key])) as string[]).sort();
      break;
    case "zset":
      value = pairs((await redis(["ZRANGE", key, "0", "-1", "WITHSCORES"])) as string[]);
      break;
    case "stream":
      value = await redis(["XRANGE", key, "-", "+"]);
      break;
    case "none":
      value = null; // deleted between SCAN and TYPE
      break;
    default:
      throw new Error(`store-state: key ${key} has type ${type}, which this reader does not dump`);
  }
  return { type, ttl, value };
}

/**
 * The state reader of a Redis store under `prefix`, reading the server through `redis`.
 * `prefix` may be a KeySpace (store/keys.ts) for the sharded layout: the agent's keys and
 * index entries are then read in its home. `nodeOf`, on a Redis Cluster, names the
 * connection of the node holding a key's slot (SCAN runs on one node).
 */
export function redisStateReader(redis: RawRedis, prefix: string | KeySpace, nodeOf?: (key: string) => RawRedis): StateReader {
  const keys = typeof prefix === "string" ? keySpace(prefix) : prefix;
  return async (agentId) => {
    const home = keys.homeOf(agentId).prefix;
    const scan = nodeOf ? nodeOf(`${home}:x`) : redis;
    const tag = `${home}:{a:${agentId}}:`;
    const records: Record<string, unknown> = {};
    for (const key of await scanAll(scan, `${globLiteral(tag)}*`)) {
      records[key.slice(tag.length)] = await dumpKey(redis, key);
    }
    const ready: Record<string, number> = {};
    for (const key of await scanAll(scan, `${globLiteral(`${home}:ready:`)}*`)) {
      const score = await redis(["ZSCORE", key, agentId]);
      if (score !== null && score !== undefined) ready[key.slice(`${home}:ready:`.length)] = Number(score);
    }
    const deadlines: Record<string, number> = {};
    for (const [member, score] of pairs((await redis(["ZRANGE", `${home}:deadlines`, "0", "-1", "WITHSCORES"])) as string[])) {
      if (member.startsWith(`${agentId}\n`)) deadlines[member.slice(agentId.length + 1)] = Number(score);
    }
    const listed = new Set(
      ((await redis(["LRANGE", `${tag}verdicts`, "0", "-1"])) as string[]).map((e) => (JSON.parse(e) as [string])[0]),
    );
    const verdicts: Record<string, unknown> = {};
    for (const [id, text] of pairs((await redis(["HGETALL", `${home}:verdicts`])) as string[])) {
      if (listed.has(id) || namesAgent(text, agentId)) verdicts[id] = text;
    }
    return { records, ready, deadlines, verdicts };
  };
}

function namesAgent(text: string, agentId: string): boolean {
  try {
    const v = JSON.parse(text);
    return !!v && typeof v === "object" && (v as { agentId?: unknown }).agentId === agentId;
  } catch {
    return false;
  }
}

/** The states of several agents at once, by id. */
export async function statesOf(read: StateReader, agentIds: string[]): Promise<Record<string, AgentState>> {
  const out: Record<string, AgentState> = {};
  for (const id of agentIds) out[id] = await read(id);
  return out;
}

/** `state` with some index parts replaced: the one change a test expects, everything else equal. */
export function withIndexes(state: AgentState, change: Partial<Omit<AgentState, "records">>): AgentState {
  return { ...state, ...change };
}

/** The state of an agent that has nothing stored. */
export const NOTHING: AgentState = Object.freeze({ records: {}, ready: {}, deadlines: {}, verdicts: {} }) as AgentState;

/** `state` without the named head fields, for a refusal that writes exactly those (e.g. a released lease). */
export function omitHeadFields(state: AgentState, fields: string[]): AgentState {
  const head = state.records.head as Record<string, unknown> | undefined;
  if (!head) return state;
  // Redis: { type: "hash", ttl, value: { field: JSON text } }; memory: the AgentHead itself.
  const isHash = head.type === "hash" && typeof head.value === "object";
  const fieldsOf = { ...((isHash ? head.value : head) as Record<string, unknown>) };
  for (const f of fields) delete fieldsOf[f];
  return { ...state, records: { ...state.records, head: isHash ? { ...head, value: fieldsOf } : fieldsOf } };
}
