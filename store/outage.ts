/**
 * Telling a store outage from a store error that repeats. An outage (the
 * connection is down or stalled, a request timed out) is worth retrying and
 * answers 503 over HTTP; an error that repeats on every attempt (bad input to
 * the store, a value JSON cannot hold, an error answered by Redis such as a
 * script error, anything the in-process memory store throws) is not.
 *
 * A Redis Cluster that is moving slots or failing over answers `MOVED`,
 * `ASK`, `CLUSTERDOWN` or `TRYAGAIN`: replies, but not errors that repeat.
 * ioredis follows them itself (`maxRedirections` 16, `retryDelayOnMoved` 0,
 * `retryDelayOnClusterDown` and `retryDelayOnTryAgain` 100 ms, so about
 * 1.6 s of `CLUSTERDOWN`) and then rejects with a plain `Error` ("Too many
 * Cluster redirections. Last error: …"); either way the call counts as an
 * outage here, and the host retries renewals and commits through it while
 * its lease lasts (actors/claim/store-retry.ts).
 */
import { StoreInputError } from "./keys.ts";
import type { Store } from "./port.ts";
import { StoreReplyError } from "./script-runner.ts";
import { StoreUnavailableError } from "../errors/store.ts";

/** A store call did not complete: the store is unreachable or did not answer in time. */
export { StoreUnavailableError };

/** Replies of a Redis Cluster whose slots move or whose master fails over: the next attempt may succeed. */
const CLUSTER_TRANSIENT = /^(MOVED|ASK|CLUSTERDOWN|TRYAGAIN)\b/;

/** True when `err` is a Redis Cluster redirection or a "cluster down / try again" reply (see above). */
export function isClusterTransient(err: unknown): boolean {
  const message = (err as Error | null)?.message;
  return typeof message === "string" && (CLUSTER_TRANSIENT.test(message) || message.startsWith("Too many Cluster redirections"));
}

/** True when `err`, thrown by a call of `store`, means the store could not be reached. */
export function isOutageError(err: unknown, kind: Store["kind"]): boolean {
  if (err instanceof StoreUnavailableError) return true;
  if (kind === "memory") return false;
  if (err instanceof StoreInputError || err instanceof StoreReplyError || err instanceof RangeError) return false;
  if (isClusterTransient(err)) return true;
  const name = (err as Error | null)?.name;
  // Errors answered by Redis (ioredis ReplyError, @upstash/redis UpstashError) repeat on every attempt.
  return name !== "ReplyError" && name !== "UpstashError";
}

/**
 * The store as request handlers see it: every call settles within
 * `timeoutMs`, and a call that fails because the store is unreachable, or
 * does not answer in time, rejects with StoreUnavailableError (answered 503
 * with `Retry-After`). A call that timed out may still be applied later (a
 * command already sent, or queued by the client until it reconnects): the
 * caller does not know its outcome, which is why clients retry enqueues with
 * an idempotency key.
 *
 * @example
 * const routeStore = storeWithDeadline(redisStore(url), 3_000);
 */
export function storeWithDeadline(store: Store, timeoutMs: number): Store {
  return new Proxy(store, {
    get(target, p, receiver) {
      const v = Reflect.get(target, p, receiver);
      if (typeof v !== "function" || p === "close") return v;
      return (...args: unknown[]) => withDeadline(() => v.apply(target, args), target.kind, timeoutMs, String(p));
    },
  });
}

/**
 * One call of a `kind` store as `storeWithDeadline` makes it: settled within `timeoutMs`, an outage
 * answered as StoreUnavailableError naming `what`.
 */
export function withDeadline<T>(call: () => Promise<T>, kind: Store["kind"], timeoutMs: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new StoreUnavailableError(`The ${kind} store did not answer ${what} within ${timeoutMs} ms`)),
      timeoutMs,
    );
    Promise.resolve()
      .then(call)
      .then(resolve, (err: unknown) =>
        reject(isOutageError(err, kind) && !(err instanceof StoreUnavailableError)
          ? new StoreUnavailableError(`The ${kind} store is unreachable (${what})`, { cause: err })
          : err)
      )
      .finally(() => clearTimeout(timer));
  });
}
