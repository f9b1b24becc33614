/**
 * `GET /v1/agents/:agentId/events`: the agent's event log, as a JSON page or
 * as a Server-Sent Events stream.
 *
 * Format: `?format=json` or `?format=sse` decides; without it, SSE when the
 * `Accept` header names `text/event-stream` (what `EventSource` sends), JSON
 * otherwise. Cursor: events with id > `after` (default 0); a `Last-Event-ID`
 * header (sent by `EventSource` when it reconnects) takes precedence over
 * `after` in both formats.
 *
 * The stream sends each event as `id: <id>`, `event: <type>`,
 * `data: <stored event JSON>`, and the model's streamed text as
 * `event: delta` frames without an id (routes/live-feed.ts; not stored, so
 * `Last-Event-ID` resume is unchanged). When every commit on the store
 * publishes on the live channel (`rt.livePushes`) it reads the store when a
 * "log grew" notice arrives, and once per `rt.sseKeepAliveMs` as a safety
 * net; otherwise it polls the store every `rt.ssePollMs` while the client
 * reads. It writes a `: keep-alive` comment after `rt.sseKeepAliveMs`
 * without events, and stops when the client disconnects (request signal
 * aborted or body stream cancelled). It is pull-driven: a client that does
 * not read does not make it read.
 *
 * Bounded reads and fan-out:
 * - A page (the JSON answer, or one write of the stream) holds at most
 *   `limit` events and at most `rt.limits.maxEventPageBytes` bytes of event
 *   JSON, but always one event when there is one: a single event larger
 *   than the budget comes alone. `more` says whether the log held events
 *   after `nextAfter` when the page was read; clients continue with
 *   `after=nextAfter` (the stream continues by itself).
 * - Open streams are capped per agent and per app (`rt.sseLimits`); a stream
 *   beyond a cap is refused with 429 `too_many_streams` and `Retry-After`
 *   before it opens. A stream's slot is released once, whichever way it
 *   ends: client disconnect (request signal), body cancelled, or a failed
 *   read that closes it.
 * Bounded streams (`rt.sseMaxReads`): every poll is one store read, and on
 * Cloudflare Workers every read through the Upstash adapter is a subrequest,
 * limited per request (50 on the Free plan). After `sseMaxReads` reads the
 * stream sends `retry: <rt.sseRetryMs>` and a `: reconnect` comment and ends;
 * `EventSource` reconnects after that delay with `Last-Event-ID`, so the
 * client sees one gapless stream, served by a chain of bounded requests (each
 * costing 1 + sseMaxReads reads). See docs/runtimes.md.
 */
import { z } from "@hono/zod-openapi";
import type { StoredEvent as StoredEventRecord } from "../common/events.ts";
import { defineRoute, routeApp } from "./define.ts";
import { ProblemError } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";
import { AgentParams, EventsPage, eventsQuery, LastEventId } from "./schemas.ts";
import { LiveFeed } from "./live-feed.ts";

const DEFAULT_KEEP_ALIVE_MS = 15_000;
export const DEFAULT_EVENT_PAGE_BYTES = 1024 * 1024;
export const DEFAULT_SSE_LIMITS = { maxStreamsPerAgent: 8, maxStreams: 1_000 };
/** Seconds a client refused with too_many_streams is told to wait. */
const STREAM_RETRY_AFTER_S = 5;

/** The `retry:` hint (ms) of a stream when the runtime sets none. */
export const DEFAULT_SSE_RETRY_MS = 1_000;

const LastEventIdHeader = z.object({
  "Last-Event-ID": LastEventId.optional().describe("Resume after this event id (overrides `after`)"),
});

/** The route; `maxEventPage` bounds `limit`, so the query schema is the runtime's. */
function readEventsRoute(maxEventPage: number) {
  return defineRoute({
    method: "get",
    path: "/v1/agents/{agentId}/events",
    operationId: "readEvents",
    summary: "Read the agent's event log: a JSON page, or a resumable SSE stream",
    description: "SSE when `format=sse`, or without `format` when Accept includes text/event-stream; JSON " +
      "otherwise. `Last-Event-ID` takes precedence over `after`. Stream frames: `id` = event id, `event` = " +
      "event type, `data` = the stored event JSON (the `StoredEvent` schema); the first event frame carries a " +
      "`retry:` hint; `: keep-alive` comments while idle. While a model call streams, `event: delta` frames " +
      "without an `id:` carry `data: {\"turnId\", \"step\", \"text\"}` (not stored: the step's `chunk` events are the " +
      "record). A stream may be opened before the agent's first task: " +
      "it waits for the first event. A page stops at `limit` events or at the server's byte budget (at least " +
      "one event); `more` says whether to read on. Open streams are capped per agent and per process: 429 " +
      "`too_many_streams` with `Retry-After` beyond the cap. A reader whose cursor lies before events that " +
      "retention removed gets an `events_trimmed` marker: the page's `trimmed` field, or an SSE frame " +
      "`event: events_trimmed` (id = the trimmed point) before the first event.",
    tags: ["agents"],
    request: { params: AgentParams, query: eventsQuery(maxEventPage), headers: LastEventIdHeader },
    responses: {
      200: {
        description: "A page of events (application/json), or the event stream (text/event-stream)",
        content: {
          "application/json": { schema: EventsPage },
          "text/event-stream": {
            schema: z.string().openapi({
              description: "Server-Sent Events: `id: <event id>`, `event: <event type>`, `data: <StoredEvent JSON>`",
            }),
          },
        },
      },
    },
  }, ["invalid_agent_id", "validation_failed", "agent_not_found", "too_many_streams"], "read");
}

/** True when an Accept header lists text/event-stream. */
export function wantsEventStream(accept: string | undefined): boolean {
  return !!accept && accept.split(",").some((part) => part.split(";")[0].trim().toLowerCase() === "text/event-stream");
}

/**
 * The marker a reader gets when it asked for events that retention removed
 * (store/port.ts invariant `retention`): ids stay dense, so a first event after
 * `after + 1` means events `after + 1 .. trimmedThrough` are gone. Null when
 * nothing the reader asked for is missing. `headTrimmed` (the head's
 * `eventsTrimmedThrough`) covers a page that came back empty.
 */
export function trimmedMarker(after: number, events: readonly StoredEventRecord[], headTrimmed = 0): EventsTrimmed | null {
  const through = events.length > 0 ? events[0].id - 1 : headTrimmed;
  return through > after ? { type: "events_trimmed", after, trimmedThrough: through } : null;
}

export interface EventsTrimmed {
  type: "events_trimmed";
  /** The cursor the reader asked from. */
  after: number;
  /** Events 1..trimmedThrough are no longer stored; the log goes on at trimmedThrough + 1. */
  trimmedThrough: number;
}

/** The SSE frame of the marker: its id is the trimmed point, so a reconnect resumes after it. */
export function trimmedFrame(m: EventsTrimmed): string {
  return `id: ${m.trimmedThrough}\nevent: events_trimmed\ndata: ${JSON.stringify(m)}\n\n`;
}

/** One SSE frame. Event types are identifiers; line breaks are stripped so a frame cannot be split. */
export function sseFrame(e: StoredEventRecord, retryMs?: number): string {
  const retry = retryMs !== undefined ? `retry: ${retryMs}\n` : "";
  return `${retry}id: ${e.id}\nevent: ${e.type.replace(/[\r\n]/g, "")}\ndata: ${JSON.stringify(e)}\n\n`;
}

interface StreamOptions {
  rt: RouteRuntime;
  agentId: string;
  after: number;
  pageSize: number;
  /** The request's signal: aborted when the client goes away. */
  signal: AbortSignal;
  /** Byte budget of one write (default: the route limit, else 1 MiB). */
  maxBytes?: number;
  /** Called once when the stream ends, however it ends (releases its slot). */
  onEnd?: () => void;
}

export function eventStream(
  { rt, agentId, after, pageSize, signal, maxBytes, onEnd }: StreamOptions,
): ReadableStream<Uint8Array> {
  const budget = maxBytes ?? rt.limits.maxEventPageBytes ?? DEFAULT_EVENT_PAGE_BYTES;
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    signal.removeEventListener("abort", end);
    onEnd?.();
  };
  signal.addEventListener("abort", end, { once: true });
  if (signal.aborted) end();
  const enc = new TextEncoder();
  const keepAliveMs = rt.sseKeepAliveMs ?? DEFAULT_KEEP_ALIVE_MS;
  // Pushed: the channel hears every commit, so the stream sleeps until a notice (a safety read per keep-alive).
  const pushed = rt.livePushes === true && rt.live !== undefined;
  const pollMs = pushed ? Math.max(1, keepAliveMs) : Math.max(1, rt.ssePollMs);
  const keepAliveEvery = Math.max(1, Math.ceil(keepAliveMs / pollMs));
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  signal.addEventListener("abort", onAbort, { once: true });
  // Deltas (and, when pushed, notices) from the moment the stream opens (routes/live-feed.ts).
  const feed = new LiveFeed(rt.live, agentId);
  stop.signal.addEventListener("abort", () => feed.close(), { once: true });
  let cursor = after;
  let idlePolls = 0;
  let reads = 0;
  /** A store read is due: at the start, after a page, after a notice, after a poll interval. */
  let readDue = true;
  const maxReads = rt.sseMaxReads ?? Infinity;
  const retryMs = Math.max(0, Math.trunc(rt.sseRetryMs ?? DEFAULT_SSE_RETRY_MS));
  /** The first event frame tells EventSource how long to wait before reconnecting. */
  let hinted = false;

  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        while (!stop.signal.aborted) {
          const deltas = feed.takeDeltas();
          if (deltas !== "") {
            controller.enqueue(enc.encode(deltas));
            return;
          }
          if (readDue || feed.takeGrew()) {
            readDue = false;
            if (reads >= maxReads) {
              // The request's read budget is spent: tell the client when to come back, then end.
              controller.enqueue(enc.encode(`retry: ${retryMs}\n: reconnect\n\n`));
              break;
            }
            reads++;
            const events = await rt.store.readEvents(agentId, cursor, pageSize, budget);
            // The client may have left while the read was in flight: drop what it returned.
            if (stop.signal.aborted) break;
            if (events.length > 0) {
              idlePolls = 0;
              readDue = true;
              const marker = trimmedMarker(cursor, events);
              cursor = events[events.length - 1].id;
              controller.enqueue(enc.encode(
                (marker ? trimmedFrame(marker) : "") + events.map((e, i) => sseFrame(e, i === 0 && !hinted ? retryMs : undefined)).join(""),
              ));
              hinted ||= events.length > 0;
              return;
            }
          }
          if (await feed.wait(pollMs, stop.signal)) continue;
          readDue = true;
          if (++idlePolls >= keepAliveEvery) {
            idlePolls = 0;
            controller.enqueue(enc.encode(": keep-alive\n\n"));
            return;
          }
        }
      } catch (err) {
        // A failed read ends the stream cleanly; EventSource reconnects with Last-Event-ID.
        rt.logger.warn("event stream read failed", { agentId, error: String(err) });
      }
      signal.removeEventListener("abort", onAbort);
      feed.close();
      end();
      try {
        controller.close();
      } catch {
        // Already closed by cancel(): nothing to do.
      }
    },
    cancel() {
      stop.abort();
      feed.close();
      signal.removeEventListener("abort", onAbort);
      end();
    },
  });
}

export function eventRoutes(rt: RouteRuntime) {
  const defaultLimit = Math.min(100, rt.limits.maxEventPage);
  const maxBytes = rt.limits.maxEventPageBytes ?? DEFAULT_EVENT_PAGE_BYTES;
  const caps = { ...DEFAULT_SSE_LIMITS, ...rt.sseLimits };
  /** Open streams of this app: in all, and per agent. */
  let open = 0;
  const openPerAgent = new Map<string, number>();
  const take = (agentId: string): (() => void) => {
    const mine = openPerAgent.get(agentId) ?? 0;
    if (open >= caps.maxStreams || mine >= caps.maxStreamsPerAgent) {
      const which = open >= caps.maxStreams ? `${caps.maxStreams} in all` : `${caps.maxStreamsPerAgent} for agent "${agentId}"`;
      throw new ProblemError("too_many_streams", `Too many open event streams (at most ${which}); retry later or read pages`, {
        headers: { "Retry-After": String(STREAM_RETRY_AFTER_S) },
        extra: { maxStreams: caps.maxStreams, maxStreamsPerAgent: caps.maxStreamsPerAgent },
      });
    }
    open++;
    openPerAgent.set(agentId, mine + 1);
    return () => {
      open--;
      const n = (openPerAgent.get(agentId) ?? 1) - 1;
      if (n <= 0) openPerAgent.delete(agentId);
      else openPerAgent.set(agentId, n);
    };
  };

  return routeApp(rt).openapi(readEventsRoute(rt.limits.maxEventPage), async (c) => {
    const { agentId } = c.req.valid("param");
    const q = c.req.valid("query");
    const after = c.req.valid("header")["Last-Event-ID"] ?? q.after ?? 0;
    const limit = q.limit ?? defaultLimit;
    const sse = q.format !== undefined ? q.format === "sse" : wantsEventStream(c.req.header("accept"));
    if (!sse) {
      const head = await rt.store.getAgent(agentId);
      if (!head) throw new ProblemError("agent_not_found", `Agent "${agentId}" does not exist`);
      const events = (await rt.store.readEvents(agentId, after, limit, maxBytes)) as EventsPage["events"];
      const nextAfter = events.length > 0 ? events[events.length - 1].id : after;
      const last = Math.max(head.lastEventId, nextAfter);
      const trimmed = trimmedMarker(after, events, head.eventsTrimmedThrough);
      const after2 = trimmed && events.length === 0 ? Math.max(nextAfter, trimmed.trimmedThrough) : nextAfter;
      return c.json({ events, nextAfter: after2, more: after2 < last, ...(trimmed ? { trimmed } : {}) }, 200);
    }
    // A stream needs no agent yet: one opened before the first task waits for its first event.
    const release = take(agentId);
    let body: ReadableStream<Uint8Array>;
    try {
      body = eventStream({ rt, agentId, after, pageSize: limit, signal: c.req.raw.signal, maxBytes, onEnd: release });
    } catch (err) {
      release();
      throw err;
    }
    return new Response(body, {
      headers: {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache, no-transform",
        "x-accel-buffering": "no",
      },
    });
  });
}
