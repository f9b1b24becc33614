/**
 * The errors of store adapters (store/): bad input, unavailable store,
 * unexpected script replies, a Redis that may evict keys. Re-exported where
 * they were first declared (store/keys.ts, store/outage.ts,
 * store/script-runner.ts).
 * @module
 */
import { GatehouseError } from "./base.ts";

/** Bad input to a store adapter: an identifier that cannot become a key, a time that is not an integer. */
export class StoreInputError extends GatehouseError {
  declare readonly code: "invalid_store_input";
  constructor(message: string) {
    super("invalid_store_input", message);
    this.name = "StoreInputError";
  }
}

/** A store call did not complete: the store is unreachable or did not answer in time. */
export class StoreUnavailableError extends GatehouseError {
  declare readonly code: "store_unavailable";
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super("store_unavailable", message, { cause: opts.cause });
    this.name = "StoreUnavailableError";
  }
}

/** A script answered something that is not one of its replies (a script bug or a foreign key). */
export class StoreReplyError extends GatehouseError {
  declare readonly code: "store_reply_invalid";
  constructor(message: string) {
    super("store_reply_invalid", message);
    this.name = "StoreReplyError";
  }
}

/** The Redis server may evict keys; gatehouse state would silently disappear. */
export class EvictionPolicyError extends GatehouseError {
  declare readonly code: "eviction_policy_refused";
  readonly policy: string;
  constructor(policy: string) {
    super(
      "eviction_policy_refused",
      `Cannot use a Redis with maxmemory-policy "${policy}": it may evict agent state. ` +
        `Set maxmemory-policy to noeviction, or pass { allowEviction: true } (GATEHOUSE_ALLOW_EVICTION=1) to accept the risk`,
    );
    this.name = "EvictionPolicyError";
    this.policy = policy;
  }
}
