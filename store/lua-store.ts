/**
 * The Store over the Lua scripts, shared by the Redis (TCP) and Upstash (REST)
 * adapters: they differ only in how a script reaches Redis (a RunScript) and
 * how the eviction policy is read. Each method is exactly one script call,
 * so one round trip and, on Upstash, one billed command, except on the
 * sharded layout (Redis Cluster, store/keys.ts), where the methods that read
 * every shard (claimNext, readyCount, nextReadyAt, dueToolCalls, listAgents,
 * getVerdict) call each shard: each call still touches one slot.
 *
 * Where things are: store/script/context.ts holds what the operations share
 * (ScriptContext: the transport, the key space, the claim hints, `run`);
 * the operations are top-level functions of that context, one file per
 * section of the port (script/turn-protocol.ts, script/reads.ts,
 * script/lifecycle.ts, script/side-stores.ts, script/approvals.ts,
 * script/schedules.ts), each beside the descriptor of its script
 * (script/operation.ts: the argument layout, named as the script's header
 * does, the reply words and their decoding), which `run` executes the same
 * way for every script. Values are formatted once (script/values.ts: JSON
 * texts for values the scripts store or compare, raw strings for
 * identifiers that become keys or index members). The commit and the claims
 * keep a tuned path (`call`, store/lua/args/turn-protocol.ts, script/wire.ts,
 * `decode` in script/replies.ts). This file binds every function of a
 * section into the store object; adding an operation is docs/store.md
 * "Adding a store operation".
 */
import type { Store } from "./port.ts";
import { ScriptContext, type ScriptStoreDeps } from "./script/context.ts";
import * as turnProtocol from "./script/turn-protocol.ts";
import { ENCODES_WELL_FORMED } from "./script/turn-protocol.ts";
import * as reads from "./script/reads.ts";
import * as lifecycle from "./script/lifecycle.ts";
import * as sideStores from "./script/side-stores.ts";
import * as approvals from "./script/approvals.ts";
import * as namedEvents from "./script/named-events.ts";
import * as schedules from "./script/schedules.ts";
import * as enqueueClaim from "./script/enqueue-claim.ts";
import { wellFormedValue } from "../common/well-formed.ts";

export type { ScriptStoreDeps };
export { decode, REPLY } from "./script/replies.ts";

/** A store backed by Redis scripts. */
export interface ScriptStore extends Store {
  readonly kind: "redis" | "upstash";
  readonly prefix: string;
  /**
   * Reads the server's maxmemory-policy and throws EvictionPolicyError for
   * `allkeys-*` / `volatile-*` unless eviction was allowed. Runs once, before
   * the first operation; call it at startup to fail early. `policy` is null
   * when the server does not expose it (CONFIG disabled, Upstash). The TCP
   * adapter reads the server's persistence in the same check and logs a
   * weaker one (`durability`, store/durability.ts); it never refuses it.
   */
  checkEviction(): Promise<{ policy: string | null }>;
}

/**
 * The operations of a section (its functions of the context first), bound to one context. A section
 * module also exports the descriptors of its scripts (store/script/operation.ts): they are no methods.
 */
type Bound<M> = {
  [K in keyof M as M[K] extends (c: ScriptContext, ...args: never[]) => unknown ? K : never]: M[K] extends (c: ScriptContext, ...args: infer A) => infer R ? (...args: A) => R : never;
};

function bind<M extends Record<string, unknown>>(c: ScriptContext, ops: M): Bound<M> {
  const out: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(ops)) {
    if (typeof fn !== "function") continue;
    // Every argument well-formed (store/port.ts invariant `well-formed-text`), as the memory store takes it:
    // walked here, or kept by the operation's own encoding (turn-protocol.ts ENCODES_WELL_FORMED).
    out[name] = ENCODES_WELL_FORMED.has(name) ? (...args: never[]) => fn(c, ...args) : (...args: never[]) => fn(c, ...(args.map(wellFormedValue) as never[]));
  }
  return out as Bound<M>;
}

/** Builds the Store over scripts. Adapters call this; see store/redis.ts and store/upstash.ts. */
export function scriptStore(deps: ScriptStoreDeps): ScriptStore {
  const c = new ScriptContext(deps);
  return {
    kind: deps.kind,
    prefix: c.prefix,
    checkEviction: c.checkEviction,
    // One home counts a key in one script; several count it in the key's own slot (script/key-slots.ts).
    keepsConcurrencyLimits: true,
    ...bind(c, turnProtocol),
    ...bind(c, reads),
    ...bind(c, lifecycle),
    ...bind(c, sideStores),
    ...bind(c, approvals),
    ...bind(c, namedEvents),
    ...bind(c, schedules),
    ...bind(c, enqueueClaim),
    ...(deps.watchBells ? { watchBells: deps.watchBells } : {}),
    ...(deps.live ? { live: deps.live } : {}),
    close: deps.close,
  };
}
