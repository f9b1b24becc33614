/**
 * What one SSE stream hears on the agent's live channel (store/live.ts):
 * `delta` messages become frames waiting to be written, `grew` notices mark
 * the log as worth reading, and either wakes the stream's pull loop.
 *
 * Invariants:
 * - A delta frame has no `id:` line (deltas are not stored events, so
 *   `Last-Event-ID` only ever names a stored event) and its `data` is exactly
 *   `{ turnId, step, text }` (docs/http.md, "Live deltas").
 * - Bounded: deltas a slow client has not read are kept up to
 *   MAX_PENDING_DELTA_BYTES; later ones are dropped (the stored `chunk`
 *   events carry the text anyway).
 * - Subscribed from creation until `close()`: a notice published after the
 *   stream opened is never missed, however long a store read takes.
 */
import type { LiveChannel, LiveMessage } from "../store/live.ts";

/** Delta frames held for a client that does not read, at most (bytes of text). */
export const MAX_PENDING_DELTA_BYTES = 256 * 1024;

/** The SSE frame of a delta: no id, `data` = `{ turnId, step, text }`. */
export function deltaFrame(m: { turnId: string; step: number; text: string }): string {
  return `event: delta\ndata: ${JSON.stringify({ turnId: m.turnId, step: m.step, text: m.text })}\n\n`;
}

export class LiveFeed {
  #frames: string[] = [];
  #bytes = 0;
  #dirty = false;
  #wake: (() => void) | null = null;
  readonly #off: (() => void) | null;

  constructor(live: LiveChannel | undefined, agentId: string) {
    this.#off = live ? live.subscribe(agentId, (m) => this.#hear(m)) : null;
  }

  #hear(m: LiveMessage): void {
    if (m.type === "delta") {
      const frame = deltaFrame(m);
      if (this.#bytes + frame.length > MAX_PENDING_DELTA_BYTES) return;
      this.#frames.push(frame);
      this.#bytes += frame.length;
    } else {
      this.#dirty = true;
    }
    this.#wake?.();
  }

  /** The delta frames heard since the last call, joined ("" when none). */
  takeDeltas(): string {
    if (this.#frames.length === 0) return "";
    const out = this.#frames.join("");
    this.#frames = [];
    this.#bytes = 0;
    return out;
  }

  /** True once per notice heard since the last call: the log grew. */
  takeGrew(): boolean {
    const d = this.#dirty;
    this.#dirty = false;
    return d;
  }

  /** Resolves true when something was heard, false after `ms` or on abort. */
  wait(ms: number, signal: AbortSignal): Promise<boolean> {
    if (this.#dirty || this.#frames.length > 0) return Promise.resolve(true);
    return waitForWake(ms, signal, (wake) => (this.#wake = wake));
  }

  close(): void {
    this.#off?.();
    this.#wake?.();
  }
}

/**
 * Resolves true once the wake handed to `setWake` is called, false after `ms`
 * or on abort; the wake is cleared either way (the listeners' `wait`).
 */
export function waitForWake(ms: number, signal: AbortSignal, setWake: (wake: (() => void) | null) => void): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise<boolean>((resolve) => {
    const done = (heard: boolean) => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      setWake(null);
      resolve(heard);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(false), ms);
    signal.addEventListener("abort", onAbort, { once: true });
    setWake(() => done(true));
  });
}

/**
 * Tells the agent's readers that a route appended to its log (store/live.ts `LiveGrew`); `noTurnEnd`: the
 * write appended no turn's end (a task enqueued), so requests waiting for one need not read for it.
 */
export function logGrew(rt: { live?: LiveChannel }, agentId: string, noTurnEnd = false): void {
  rt.live?.publish(agentId, noTurnEnd ? { type: "grew", turnEnded: false } : { type: "grew" });
}
