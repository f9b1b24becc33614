/**
 * ScriptContext: what every operation of the script store shares: the
 * adapter's transport (`deps`), the key space, the claim hints of the
 * sharded layout, the memoized eviction check, and `run`, which runs one
 * described script (store/script/operation.ts) with its named values and
 * decodes the reply (`call`: the same for the commit and the claims, on
 * their tuned path). The operations are top-level functions of the context,
 * one file per section of the port; store/lua-store.ts binds them.
 *
 * The members are arrow-function properties, so an operation may take the
 * ones it uses apart (`const { keys, call } = c`).
 */
import type { Store } from "../port.ts";
import type { AgentKeys, KeySpace } from "../keys.ts";
import { EvictionPolicyError, type RunPipeline, type RunScript, type ScriptCall } from "../script-runner.ts";
import type { ScriptArgs, ScriptFields } from "../lua/args/layout.ts";
import { decode } from "./replies.ts";
import { hasLoneSurrogate, wellFormed } from "../../common/well-formed.ts";
import type { OperationLayout, ScriptOp } from "./operation.ts";

export interface ScriptStoreDeps {
  kind: "redis" | "upstash";
  keys: KeySpace;
  run: RunScript;
  /**
   * Several scripts in one pipeline, where the transport has one (TCP Redis on one server): what
   * `enqueueAndClaim` sends (store/script/enqueue-claim.ts, store/port.ts invariant `enqueue-then-claim`).
   */
  pipeline?: RunPipeline;
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

/** The oldest bell of every shard of a worker target (null: none) as read at `asOf`. */
export interface Heads {
  asOf: number;
  heads: Array<number | null>;
}

/** A script `ScriptContext.pipelined` holds back, and how its caller is answered. */
interface HeldScript {
  call: ScriptCall;
  resolve(reply: string): void;
  reject(error: unknown): void;
}

export class ScriptContext {
  readonly keys: KeySpace;
  readonly prefix: string;
  readonly shards: KeySpace["shards"];
  readonly sharded: boolean;
  /** Per worker target: the oldest bell of each shard as last read by claimNext (sharded layout only). */
  readonly hints = new Map<string, Heads>();
  /** Per worker target: how many claim_next calls of this store are running in each shard. */
  readonly inFlight = new Map<string, number[]>();
  #checked: Promise<{ policy: string | null }> | null = null;

  constructor(readonly deps: ScriptStoreDeps) {
    this.keys = deps.keys;
    this.prefix = deps.keys.prefix;
    this.shards = deps.keys.shards;
    this.sharded = deps.keys.shardCount > 0;
  }

  /**
   * The long-value keys a script is given after its own. On the sharded layout (Redis Cluster) a script
   * declares every key it touches of the agent, the keys of the head's long values included
   * (store/lua/includes/head.lua): while a slot migrates, Redis then answers TRYAGAIN instead of letting
   * the script write a key that already moved. On one Redis (and Upstash) there is nothing to migrate,
   * and the commit sends its head key only: the script builds the others (commit.lua), 12 key names
   * fewer per step.
   */
  readonly longKeys = (k: AgentKeys): string[] => (this.sharded ? [...k.headLong] : []);

  /**
   * A bell rung by this store with a score older than a hint's read breaks the hint's promise (every
   * bell rung since is at least as young as the read): forget the hints. Bells rung by other
   * processes at their `now` keep it, up to the clocks' skew.
   */
  readonly dropHints = (score: number | null | undefined) => {
    if (this.shards.length === 1 || typeof score !== "number") return;
    for (const [target, h] of this.hints) if (score < h.asOf) this.hints.delete(target);
  };

  /** Set once the check passed: later calls skip waiting for its settled promise (one microtask turn each). */
  #passed = false;

  readonly checkEviction = () =>
    (this.#checked ??= this.deps.checkEviction().then((r) => {
      this.#passed = true;
      return r;
    }, (err) => {
      // An outage is not an answer: check again at the next call. A refused policy stays refused.
      if (!(err instanceof EvictionPolicyError)) this.#checked = null;
      throw err;
    }));

  /**
   * Every key and argument of a script, well-formed (a raw lone surrogate becomes U+FFFD, store/port.ts
   * invariant `well-formed-text`): the JSON texts already are (values.ts), an identifier (an agent id, an
   * idempotency key) is made so here, so the script and the memory store see the same text, whatever the
   * transport's UTF-8 encoder does. Both paths below run through it, the last stop before Redis.
   */
  readonly #send = (script: ScriptArgs["script"], keys: string[], argv: string[]): Promise<string> => {
    const clean = (list: string[]) => (list.some(hasLoneSurrogate) ? list.map(wellFormed) : list);
    if (this.#held) {
      const held = this.#held;
      return new Promise<string>((resolve, reject) => void held.push({ call: { name: script, keys: clean(keys), args: clean(argv) }, resolve, reject }));
    }
    return this.deps.run(script, clean(keys), clean(argv));
  };

  /** The scripts held back while `pipelined` runs its start, in the order they were sent. */
  #held: HeldScript[] | null = null;

  /**
   * Runs `start` (synchronously) with every script it sends held back, then sends those in one
   * pipeline (`deps.pipeline`, which must exist) and settles each call with its own reply. The
   * operations `start` calls must reach their script without awaiting anything first, which the
   * unsharded layout's operations do once the eviction check passed (checked here first). Answers,
   * per script sent, whether it ran after the later ones (`late`: NOSCRIPT, sent again).
   */
  readonly pipelined = async (start: () => void): Promise<{ late: boolean[] }> => {
    if (!this.#passed) await this.checkEviction();
    const held: HeldScript[] = (this.#held = []);
    try {
      start();
    } finally {
      this.#held = null;
    }
    if (held.length === 0) return { late: [] };
    const replies = await this.deps.pipeline!(held.map((h) => h.call));
    held.forEach((h, i) => {
      const r = replies[i].reply;
      if (r.ok) h.resolve(r.value);
      else h.reject(r.error);
    });
    return { late: replies.map((r) => r.late) };
  };

  /** Runs one described script (store/script/operation.ts) with its named values and decodes the reply. */
  readonly run = async <L extends OperationLayout, R>(op: ScriptOp<L, R>, fields: ScriptFields<L>): Promise<R> => {
    if (!this.#passed) await this.checkEviction();
    const a = op.encode(fields);
    return op.reply(await this.#send(op.script, a.keys, a.argv));
  };

  /** The tuned path of the commit and the claims: runs one script with its encoded arguments and decodes the reply (replies.ts). */
  readonly call = async <T>(a: ScriptArgs, ctx?: { agentId?: string }): Promise<T> => {
    if (!this.#passed) await this.checkEviction();
    return decode(a.script, await this.#send(a.script, a.keys, a.argv), ctx) as T;
  };
}
