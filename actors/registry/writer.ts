/**
 * The process's writer of the tool registry (store/port.ts invariant `tool-registry`):
 * keeps successful tool calls off the step path.
 *
 * The registry record is shared by every agent (on Redis Cluster its keys
 * are in the `{tools}` slot, not the agent's), so it cannot ride in the
 * agent's commit; writing it on every call would cost one more round trip
 * per successful call. Instead:
 *
 * - The first successful call of a (role, method) this process sees is
 *   written at once, and its answer is returned: it may add a method or an
 *   alias, and the caller (actors/registry/claim-view.ts) logs `interface_overlap` on
 *   the calling agent from it, exactly as when every call was written.
 *   Calls of the same (role, method) made while that write is in flight are
 *   counted, not written.
 * - Later calls of a (role, method) this process has written only add to an
 *   in-memory count. Pending counts are written as ONE `recordToolMethod`
 *   per (role, method) carrying the summed `calls`, at most `flushMs` after
 *   the first of them (one timer, started only while something is pending,
 *   unref'd where the runtime allows it and cleared by `stop()`, so it never
 *   keeps a process alive), and on `flush()` / `stop()`.
 * - A failed write never fails a turn. A failed first write is thrown to the
 *   caller (which logs `tool_registry_failed`); its count is kept and the
 *   next call of that (role, method) is again written at once with it. A
 *   failed flush is logged (`tool_registry_failed`) and its counts are kept
 *   for the next flush.
 * - What the store holds: methods and aliases are exact (nothing is added by
 *   a batch that the first write did not already add, except after a failed
 *   first write, see `stop()`); `calls` and `updatedAt` lag by at most
 *   `flushMs`. A process killed between flushes loses at most the count of
 *   that window; nothing else.
 * - `flushMs: null` starts no timer: counts are written only by `flush()`
 *   and `stop()` (a runtime without long-lived timers, such as Cloudflare
 *   Workers, flushes at the end of each invocation: workers.ts).
 */
import type { RecordToolMethodResult, Store } from "../../store/port.ts";
import type { Clock, Logger } from "../runtime.ts";

/** Default interval of batched writes (ms). */
export const DEFAULT_REGISTRY_FLUSH_MS = 5_000;

export interface RegistryWriterOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** Longest wait before pending counts are written (ms, default 5 000); null: only `flush()` / `stop()` write them. */
  flushMs?: number | null;
  /** Timer functions (default: setTimeout / clearTimeout). */
  timers?: { set(fn: () => void, ms: number): unknown; clear(handle: unknown): void };
}

export interface RegistryWriter {
  /**
   * Records one successful call of `method` under `role`. The first of a
   * (role, method) in this process is written at once and its answer
   * returned; later ones are counted (null). Throws when the immediate write
   * fails (the count is kept).
   */
  record(role: string, method: string): Promise<RecordToolMethodResult | null>;
  /** Writes every pending count now: one `recordToolMethod` per (role, method). Never throws. */
  flush(): Promise<void>;
  /** Clears the timer and writes everything pending, including counts of a failed first write. A later call starts over. */
  stop(): Promise<void>;
  /** Calls counted and not yet written. */
  readonly pending: number;
}

type State = "writing" | "written";

/**
 * @example
 * const writer = createRegistryWriter({ store, clock: systemClock, logger, flushMs: 5_000 });
 * const first = await writer.record("web_fetcher", "fetch_url"); // written: { added: "method", entry }
 * await writer.record("web_fetcher", "fetch_url"); // null: counted
 * await writer.stop(); // one recordToolMethod({ ..., calls: 1 })
 */
export function createRegistryWriter(opts: RegistryWriterOptions): RegistryWriter {
  const flushMs = opts.flushMs === undefined ? DEFAULT_REGISTRY_FLUSH_MS : opts.flushMs;
  if (flushMs !== null && !(Number.isFinite(flushMs) && flushMs >= 0)) {
    throw new RangeError(`registry flushMs must be a number of milliseconds >= 0 or null, got ${flushMs}`);
  }
  const timers = opts.timers ?? {
    set: (fn: () => void, ms: number) => {
      const t = setTimeout(fn, ms);
      // Node and Bun: the timer does not keep the process alive.
      (t as unknown as { unref?: () => void }).unref?.();
      return t;
    },
    clear: (h: unknown) => clearTimeout(h as ReturnType<typeof setTimeout>),
  };
  return new ProcessRegistryWriter(opts, flushMs, timers);
}

const keyOf = (role: string, method: string) => `${role}\n${method}`;
const split = (key: string) => {
  const i = key.indexOf("\n");
  return { role: key.slice(0, i), method: key.slice(i + 1) };
};

/** The writer of one process (see the header for its rules). */
class ProcessRegistryWriter implements RegistryWriter {
  readonly #o: RegistryWriterOptions;
  readonly #flushMs: number | null;
  readonly #timers: NonNullable<RegistryWriterOptions["timers"]>;
  /** Keys ('<role>\n<method>') this process wrote, or is writing for the first time. */
  readonly #state = new Map<string, State>();
  /** Calls counted and not yet written, per key. */
  readonly #counts = new Map<string, number>();
  #timer: unknown = undefined;
  #flushing: Promise<void> = Promise.resolve();

  constructor(o: RegistryWriterOptions, flushMs: number | null, timers: NonNullable<RegistryWriterOptions["timers"]>) {
    this.#o = o;
    this.#flushMs = flushMs;
    this.#timers = timers;
  }

  async record(role: string, method: string): Promise<RecordToolMethodResult | null> {
    const { store, clock } = this.#o;
    const k = keyOf(role, method);
    if (this.#state.has(k)) {
      this.#add(k, 1);
      this.#arm();
      return null;
    }
    this.#state.set(k, "writing");
    const n = 1 + (this.#counts.get(k) ?? 0);
    this.#counts.delete(k);
    try {
      const r = await store.recordToolMethod(n === 1 ? { role, method, now: clock.now() } : { role, method, calls: n, now: clock.now() });
      this.#state.set(k, "written");
      this.#arm();
      return r;
    } catch (err) {
      this.#state.delete(k);
      this.#add(k, n);
      throw err;
    }
  }

  flush(): Promise<void> {
    return this.#run((k) => this.#state.get(k) === "written");
  }

  async stop(): Promise<void> {
    if (this.#timer !== undefined) this.#timers.clear(this.#timer);
    this.#timer = undefined;
    await this.#run((k) => this.#state.get(k) !== "writing");
    if (this.#timer !== undefined) this.#timers.clear(this.#timer);
    this.#timer = undefined;
  }

  get pending(): number {
    let n = 0;
    for (const c of this.#counts.values()) n += c;
    return n;
  }

  #add(key: string, n: number): void {
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + n);
  }

  #arm(): void {
    if (this.#flushMs === null || this.#timer !== undefined) return;
    // Only a count that a timer flush would write needs the timer.
    if (![...this.#counts.keys()].some((k) => this.#state.get(k) === "written")) return;
    this.#timer = this.#timers.set(() => {
      this.#timer = undefined;
      void this.flush();
    }, this.#flushMs);
  }

  /** Writes the pending counts of the keys `take` selects, one call each; failed ones are kept. */
  async #write(take: (key: string) => boolean): Promise<void> {
    const { store, clock, logger } = this.#o;
    const batch = [...this.#counts].filter(([k]) => take(k));
    for (const [k] of batch) this.#counts.delete(k);
    if (batch.length === 0) return;
    const now = clock.now();
    await Promise.all(batch.map(async ([k, n]) => {
      const { role, method } = split(k);
      try {
        const r = await store.recordToolMethod({ role, method, calls: n, now });
        this.#state.set(k, "written");
        if (r.added !== "none") {
          // Only after a failed first write: no agent to log the overlap on.
          logger.info("tool_registry_added_on_flush", { role, method, added: r.added });
        }
      } catch (err) {
        this.#add(k, n);
        logger.warn("tool_registry_failed", { role, method, calls: n, error: String(err) });
      }
    }));
  }

  #run(take: (key: string) => boolean): Promise<void> {
    const { logger } = this.#o;
    // Flushes run one after another, each taking what is pending when it starts.
    this.#flushing = this.#flushing.then(() => this.#write(take)).catch((err) => logger.warn("tool_registry_failed", { error: String(err) }))
      .finally(() => this.#arm());
    return this.#flushing;
  }
}
