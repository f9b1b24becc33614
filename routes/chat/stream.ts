/**
 * A turn's answer as a response body: reads one turn's stored events (and
 * hears its live deltas) and writes what an encoder of the reading maps them
 * to (`TurnMapper`): the UI message stream protocol's SSE frames, then
 * `data: [DONE]` (routes/chat/ui-stream.ts, `chatStream`), or AG-UI events
 * (routes/chat/ag-ui-stream.ts).
 *
 * Invariants:
 * - The listener is subscribed, and its subscription effective
 *   (`ChatListener.ready`), before the request acts (enqueues the task,
 *   decides an approval) or reads the log, so no delta or notice published
 *   after that is missed; on a shared channel that cannot say when a
 *   subscription is effective (Upstash) the answer writes no deltas, only
 *   each step's stored text at its commit; a resumed answer (`catchUp`) writes no delta
 *   before it has read the log to its end, and then only deltas of steps
 *   that started after it subscribed (`liveFromStep` = the last stored step
 *   + 2): a step whose first deltas it may have missed shows its stored text.
 * - Deltas a slow reader has not taken are kept up to
 *   MAX_PENDING_DELTA_BYTES; past that the answer stops writing deltas for
 *   the rest of the turn (the stored text still comes, whole).
 * - Reads follow the events route: pushed notices when every commit
 *   publishes (`rt.livePushes`), else a poll every `rt.ssePollMs`; a
 *   `: keep-alive` comment after `rt.sseKeepAliveMs` without anything.
 * - The stream ends after the reading's `finish` (then the protocol's last
 *   frame), when the client goes away, or when a store read fails (the UI
 *   stream's client resumes with `GET /v1/chat/:id/stream`).
 */
import type { LiveChannel } from "../../store/live.ts";
import { MAX_PENDING_DELTA_BYTES, waitForWake } from "../live-feed.ts";
import type { RouteRuntime } from "../runtime.ts";
import type { StoredEvent } from "../../common/events.ts";
import type { Delta } from "./turn-reading.ts";
import { type ChatChunk, chunkFrame, DONE_FRAME, type UiStreamMapper } from "./ui-stream.ts";

const PAGE = 100;
const DEFAULT_KEEP_ALIVE_MS = 15_000;

/** What one chat answer hears on the agent's live channel. */
export class ChatListener {
  #deltas: Delta[] = [];
  #bytes = 0;
  /** Deltas were dropped: the answer writes no more of them. */
  overflowed = false;
  #grew = false;
  #wake: (() => void) | null = null;
  readonly #off: (() => void) | null;
  readonly #live: LiveChannel | undefined;
  readonly #agentId: string;
  /** The subscription hears every delta from `ready()` on: deltas may be written. */
  trusted = false;

  constructor(live: LiveChannel | undefined, agentId: string) {
    this.#live = live;
    this.#agentId = agentId;
    this.#off = live
      ? live.subscribe(agentId, (m) => {
        if (m.type === "delta") {
          if (this.overflowed || this.#bytes + m.text.length > MAX_PENDING_DELTA_BYTES) {
            this.overflowed = true;
            return;
          }
          this.#deltas.push({ turnId: m.turnId, step: m.step, text: m.text });
          this.#bytes += m.text.length;
        } else this.#grew = true;
        this.#wake?.();
      })
      : null;
  }

  /**
   * Waits until the subscription hears everything published from now on
   * (store/live.ts `ready`). A shared channel that cannot tell leaves
   * `trusted` false: the answer then writes no deltas, only stored text.
   */
  async ready(): Promise<void> {
    const live = this.#live;
    if (!live) return;
    if (live.reach === "process") this.trusted = true;
    else if (live.ready) {
      await live.ready(this.#agentId);
      this.trusted = true;
    }
  }

  takeDeltas(): Delta[] {
    const out = this.#deltas;
    this.#deltas = [];
    this.#bytes = 0;
    return out;
  }

  takeGrew(): boolean {
    const g = this.#grew;
    this.#grew = false;
    return g;
  }

  /** Resolves true when something was heard, false after `ms` or on abort. */
  wait(ms: number, signal: AbortSignal): Promise<boolean> {
    if (this.#grew || this.#deltas.length > 0) return Promise.resolve(true);
    return waitForWake(ms, signal, (wake) => (this.#wake = wake));
  }

  close(): void {
    this.#off?.();
    this.#wake?.();
  }
}

/** An encoder of one turn's reading (routes/chat/turn-reading.ts) into a protocol's chunks. */
export interface TurnMapper<C> {
  liveFromStep: number;
  readonly maxStep: number;
  readonly finished: boolean;
  start(): C[];
  delta(d: Delta): C[];
  event(e: StoredEvent): C[];
  settle(): C[];
}

export interface ChatStreamOptions {
  rt: RouteRuntime;
  agentId: string;
  mapper: UiStreamMapper;
  /** Subscribed before the request acted (see the invariants). */
  listener: ChatListener;
  /** Read events with id > after. */
  after: number;
  signal: AbortSignal;
  /** A resumed answer: no deltas until the log was read to its end. */
  catchUp?: boolean;
}

/** The answer's body: SSE frames of the UI message stream protocol. */
export function chatStream(o: ChatStreamOptions): ReadableStream<Uint8Array> {
  return turnStream<ChatChunk>({ ...o, frame: chunkFrame, last: DONE_FRAME });
}

export interface TurnStreamOptions<C> extends Omit<ChatStreamOptions, "mapper"> {
  mapper: TurnMapper<C>;
  /** One chunk as an SSE frame. */
  frame: (c: C) => string;
  /** Written after the reading's `finish` ("" for none). */
  last: string;
}

/** The answer's body: SSE frames of the mapper's protocol. */
export function turnStream<C>(o: TurnStreamOptions<C>): ReadableStream<Uint8Array> {
  const { rt, agentId, mapper, listener, signal } = o;
  const enc = new TextEncoder();
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  signal.addEventListener("abort", onAbort, { once: true });
  const keepAliveMs = rt.sseKeepAliveMs ?? DEFAULT_KEEP_ALIVE_MS;
  const pushed = rt.livePushes === true && rt.live !== undefined;
  const pollMs = pushed ? Math.max(1, keepAliveMs) : Math.max(1, rt.ssePollMs);
  let cursor = o.after;
  let readDue = true;
  let caughtUp = o.catchUp !== true;
  let idleMs = 0;
  let started = false;
  if (!caughtUp) mapper.liveFromStep = Infinity;
  const frames = (chunks: C[]) => enc.encode(chunks.map(o.frame).join("") + (mapper.finished ? o.last : ""));
  const end = () => {
    signal.removeEventListener("abort", onAbort);
    listener.close();
  };

  /** One step of the loop: the chunks to write now, or null to wait. */
  const next = async (): Promise<C[] | null> => {
    const deltas = listener.takeDeltas();
    if (listener.overflowed || !listener.trusted) mapper.liveFromStep = Infinity;
    const fromDeltas = caughtUp ? deltas.flatMap((d) => mapper.delta(d)) : [];
    if (fromDeltas.length > 0) return fromDeltas;
    if (!readDue && !listener.takeGrew()) return null;
    readDue = false;
    const events = await rt.store.readEvents(agentId, cursor, PAGE);
    if (events.length > 0) cursor = events[events.length - 1].id;
    const out = events.flatMap((e) => mapper.event(e));
    if (events.length === PAGE) readDue = true;
    else if (!caughtUp) {
      caughtUp = true;
      if (listener.trusted && !listener.overflowed) mapper.liveFromStep = mapper.maxStep + 2;
    }
    out.push(...mapper.settle());
    return out;
  };

  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        if (!started) {
          started = true;
          controller.enqueue(frames(mapper.start()));
          return;
        }
        while (!stop.signal.aborted && !mapper.finished) {
          const chunks = await next();
          if (chunks && chunks.length > 0) {
            idleMs = 0;
            controller.enqueue(frames(chunks));
            if (mapper.finished) break;
            return;
          }
          if (chunks) continue;
          if (await listener.wait(pollMs, stop.signal)) continue;
          readDue = true;
          idleMs += pollMs;
          if (idleMs >= keepAliveMs) {
            idleMs = 0;
            controller.enqueue(enc.encode(": keep-alive\n\n"));
            return;
          }
        }
      } catch (err) {
        rt.logger.warn("chat stream read failed", { agentId, error: String(err) });
      }
      end();
      try {
        controller.close();
      } catch {
        // Already closed by cancel().
      }
    },
    cancel() {
      stop.abort();
      end();
    },
  });
}
