/**
 * Store errors as the pool's log lines state them. An outage (store/outage.ts
 * `isOutageError`) is said in our words, `store unavailable: …`, with the
 * client's own error attached as `cause: { name, message }`; the raw text of
 * ioredis (`MaxRetriesPerRequestError`: "Reached the max retries per request
 * limit…") is never the line's `error`. Any other error is logged as before,
 * `String(err)`, since its text is what there is to read.
 */
import { isOutageError } from "../../store/outage.ts";
import type { Store } from "../../store/port.ts";

/** A type, not an interface: it goes where a logger takes `Record<string, unknown>`. */
export type StoreErrorFields = {
  error: string;
  cause?: { name: string; message: string };
};

/** ioredis's own texts for a dropped connection, said plainly. */
const CONNECTION_DOWN = /^(Connection is closed\.|Stream isn't writeable|connect E[A-Z]+|read ECONNRESET|write EPIPE)/;

/**
 * The `error` (and `cause`) fields of a warning about `err`, thrown by a call of a store of `kind`.
 *
 * @example
 * logger.warn("worker loop error", describeStoreError(err, store.kind));
 * // { error: "store unavailable: Redis stayed unreachable …", cause: { name: "MaxRetriesPerRequestError", message: "Reached the max retries …" } }
 */
export function describeStoreError(err: unknown, kind: Store["kind"]): StoreErrorFields {
  if (!(err instanceof Error) || !isOutageError(err, kind)) return { error: String(err) };
  const cause = { name: err.name, message: err.message };
  if (err.name === "MaxRetriesPerRequestError") {
    return { error: "store unavailable: Redis stayed unreachable through the client's reconnect attempts; the command was given up", cause };
  }
  if (CONNECTION_DOWN.test(err.message)) return { error: "store unavailable: the connection to Redis is down", cause };
  return { error: `store unavailable: ${err.message}`, cause };
}
