/**
 * The live channel: an optional capability of a store (`Store.live`) that
 * carries what is not stored, per agent, from the process that runs the
 * agent to every process that reads it.
 *
 * Two kinds of message travel on an agent's channel:
 * - `delta`: model text as it streams (`{ turnId, step, text }`), joined
 *   into one message per few milliseconds. Never a store write: the stored
 *   `chunk` events of the step's commit stay the record (docs/http.md,
 *   "Live deltas").
 * - `grew`: "the agent's log grew to event N", published after a commit
 *   applied, so SSE streams and `Prefer: wait` read the store when there is
 *   something to read instead of polling it. A commit that leaves a turn
 *   running says so (`turnEnded: false`): it appended no turn's end, so a
 *   request waiting for a turn's end (`Prefer: wait`) need not read the log
 *   for it. Absent means "may have ended one" (every other writer). A
 *   commit that ends its turn names it (`endedTurn`), so a request waiting
 *   for another turn's end need not read for it either.
 *
 * Invariants:
 * - Best effort, never a source of truth: a message may be lost (a
 *   subscription that reconnects, a process that dies); nothing a client
 *   acts on durably comes only from here. Readers that must not miss a
 *   stored event read the store on every `grew` and once per safety interval.
 * - `publish` never throws and never waits for a reply the caller needs:
 *   a failed publish is dropped.
 * - Order per agent and publisher: messages published by one process for one
 *   agent reach each subscriber in the order published (Redis pub/sub and
 *   one in-process fan-out keep it).
 * - `subscribe` returns the unsubscribe function; after it returns no more
 *   messages are delivered to that listener.
 *
 * Adapters: `processLive()` (this file) fans out within the process (the
 * memory store, and createWorkersHandler, where one invocation is the
 * process); store/redis-live.ts (TCP Redis and Cluster, pub/sub on a
 * connection of its own); store/upstash-live.ts (Upstash REST `PUBLISH` and
 * the streaming `subscribe`).
 */
import type { KeySpace } from "./keys.ts";

/** Streamed model text of one step (not stored). */
export interface LiveDelta {
  type: "delta";
  turnId: string;
  step: number;
  text: string;
}

/**
 * The agent's log grew (to `lastEventId` when the writer knows it), published
 * after the write applied: by the commit, and by the routes that append events
 * outside one (a task enqueued, a tool result, a cancel, a reset, a fork).
 */
export interface LiveGrew {
  type: "grew";
  lastEventId?: number;
  /**
   * `false`: the write appended no `task` event (a commit that leaves the agent's turn running:
   * activeTurnId stays set). Absent: it may have. Never `true` (absent says as much).
   */
  turnEnded?: false;
  /** The turn whose end the write appended, when the writer knows it (a commit that ends its turn). */
  endedTurn?: string;
}

export type LiveMessage = LiveDelta | LiveGrew;

export type LiveListener = (msg: LiveMessage) => void;

export interface LiveChannel {
  /**
   * `process`: only this process hears it (the memory store, Workers);
   * `shared`: every process on the same store hears it (Redis, Upstash).
   */
  readonly reach: "process" | "shared";
  /**
   * True when the store's commit itself publishes `grew` on this channel
   * (the commit script of TCP Redis and Upstash: `PUBLISH` inside the script,
   * no extra command, nothing more billed); the worker then publishes no
   * `grew` of its own after a commit.
   */
  readonly grewOnCommit?: boolean;
  /** Sends `msg` to every subscriber of `agentId`; never throws. */
  publish(agentId: string, msg: LiveMessage): void;
  /** Listens to `agentId`'s channel until the returned function is called. */
  subscribe(agentId: string, onMsg: LiveListener): () => void;
  /**
   * Resolves once a subscription of `agentId` made before hears every
   * message published from then on (Redis: the SUBSCRIBE was acknowledged).
   * Absent on a `shared` channel that cannot tell (Upstash); a `process`
   * channel hears everything from `subscribe` on.
   */
  ready?(agentId: string): Promise<void>;
  /** Closes connections the channel opened (subscriptions end). */
  close?(): Promise<void>;
}

/** The channel name of `agentId` on Redis and Upstash, `<h>:{a:<agentId>}:live`: its hash tag is the agent's. */
export function liveChannelName(keys: KeySpace, agentId: string): string {
  return `${keys.agent(agentId).head.replace(/:head$/, "")}:live`;
}

/** The JSON a message travels as on a shared channel. */
export function encodeLive(msg: LiveMessage): string {
  return JSON.stringify(msg);
}

/** A message read from a shared channel; null for anything that is not one (ignored). */
export function decodeLive(raw: string): LiveMessage | null {
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return null;
  }
  if (!v || typeof v !== "object") return null;
  const m = v as Record<string, unknown>;
  if (m.type === "grew") {
    return {
      type: "grew",
      ...(Number.isSafeInteger(m.lastEventId) ? { lastEventId: m.lastEventId as number } : {}),
      ...(m.turnEnded === false ? { turnEnded: false as const } : {}),
      ...(typeof m.endedTurn === "string" ? { endedTurn: m.endedTurn } : {}),
    };
  }
  if (m.type === "delta" && typeof m.turnId === "string" && Number.isSafeInteger(m.step) && typeof m.text === "string") {
    return { type: "delta", turnId: m.turnId, step: m.step as number, text: m.text };
  }
  return null;
}

/**
 * The listeners of this process, per agent: what every adapter delivers to.
 * A listener that throws does not stop the others.
 */
export class LiveListeners {
  readonly #byAgent = new Map<string, Set<LiveListener>>();

  /** Adds a listener; `first` is called when the agent had none (a shared adapter subscribes then). */
  add(agentId: string, onMsg: LiveListener, first?: () => void): () => void {
    let set = this.#byAgent.get(agentId);
    if (!set) {
      set = new Set();
      this.#byAgent.set(agentId, set);
      first?.();
    }
    // Each call gets its own entry, so one function subscribed twice is removed once per call.
    const entry: LiveListener = (m) => onMsg(m);
    set.add(entry);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      set.delete(entry);
      if (set.size === 0 && this.#byAgent.get(agentId) === set) this.#byAgent.delete(agentId);
    };
  }

  /** True while `agentId` has a listener. */
  has(agentId: string): boolean {
    return this.#byAgent.has(agentId);
  }

  deliver(agentId: string, msg: LiveMessage): void {
    const set = this.#byAgent.get(agentId);
    if (!set) return;
    for (const l of [...set]) {
      try {
        l(msg);
      } catch {
        // One listener's failure is its own.
      }
    }
  }
}

/** The in-process channel: publish delivers to this process's subscribers, synchronously. */
export function processLive(): LiveChannel {
  const listeners = new LiveListeners();
  return {
    reach: "process",
    publish: (agentId, msg) => listeners.deliver(agentId, msg),
    subscribe: (agentId, onMsg) => listeners.add(agentId, onMsg),
  };
}

/** How long deltas are gathered into one message (ms). */
export const DELTA_BATCH_MS = 5;

/**
 * The first delta of a model call goes out at once (the first token is what
 * a reader waits for); later ones that arrive within DELTA_BATCH_MS of each
 * other's first are joined into one `delta` message; `flush()` sends what is
 * pending at once (the call returned). Order is kept.
 */
export class DeltaBatcher {
  #pending = "";
  #timer: ReturnType<typeof setTimeout> | null = null;
  #sent = false;

  readonly #live: LiveChannel;
  readonly #agentId: string;
  readonly #turnId: string;
  readonly #step: number;

  constructor(live: LiveChannel, agentId: string, turnId: string, step: number) {
    this.#live = live;
    this.#agentId = agentId;
    this.#turnId = turnId;
    this.#step = step;
  }

  push(text: string): void {
    if (typeof text !== "string" || text === "") return;
    this.#pending += text;
    if (!this.#sent) return this.flush();
    this.#timer ??= setTimeout(() => this.flush(), DELTA_BATCH_MS);
  }

  flush(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    if (this.#pending === "") return;
    const text = this.#pending;
    this.#pending = "";
    this.#sent = true;
    this.#live.publish(this.#agentId, { type: "delta", turnId: this.#turnId, step: this.#step, text });
  }
}
