/** What the routes need from the runtime. Routes never touch workers or timers directly. */
import type { AnyAgent } from "../agents/define.ts";
import type { JsonLimits } from "../common/json-bounds.ts";
import type { Clock, IdSource, Logger } from "../actors/runtime.ts";
import type { WatchdogTickResult } from "../actors/watchdog.ts";
import type { Store } from "../store/port.ts";

export interface RouteLimits {
  /** Largest accepted request body in bytes (413 above it). */
  maxBodyBytes: number;
  /** Nesting depth, string length and items per array/object of every JSON body (400 above them). */
  json: JsonLimits;
  /** Largest page of `GET /events?after=`. */
  maxEventPage: number;
}

export interface RouteRuntime {
  store: Store;
  agents: ReadonlyMap<string, AnyAgent>;
  clock: Clock;
  ids: IdSource;
  logger: Logger;
  limits: RouteLimits;
  /** Rings local workers after this process enqueued work. */
  wake(): void;
  watchdogTick(): Promise<WatchdogTickResult>;
  /** How often an open SSE stream polls the store for new events (ms). */
  ssePollMs: number;
  /** Interval of keep-alive comments on an idle SSE stream (ms, default 15 000). */
  sseKeepAliveMs?: number;
  /** When set, every route but `/healthz` requires `Authorization: Bearer <one of bearerTokens>`. */
  auth?: RouteAuth;
}

export interface RouteAuth {
  /** Accepted tokens (non-empty strings); several allow rotation. */
  bearerTokens: string[];
}
