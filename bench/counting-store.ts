/**
 * A Store wrapper that counts client calls per port method and per answer
 * (`commit:applied`, `claimNext:empty`, …, `<method>:threw`) and notices when a turn ends (an
 * applied commit that sets `activeTurnId` to null: the moment that commit's
 * reply arrives is the moment the turn's end is persisted). It adds no Redis
 * command, so the server-side counts of a run stay those of the runtime.
 *
 * It also follows the claims in flight (a claim that claimed, until an
 * applied commit that releases the lease without chaining the next task), so a run can say how many worker
 * loops were busy at once without reading the pool's configuration.
 */
import type { CommitRequest, Store } from "../store/port.ts";

export interface Counts {
  /** Calls per port method. */
  calls: Record<string, number>;
  /** Calls per method and answer status. */
  answers: Record<string, number>;
  turnsEnded: number;
  /** Claims held now, and the most held at once since the last reset. */
  inFlight: number;
  maxInFlight: number;
}

/**
 * Calls that are polls of idle loops, not work: a claim that found nothing,
 * `nextReadyAt`, the watchdog's `dueToolCalls`, the ready count and the
 * single-consumer target leases. Everything else a run counts is work.
 */
const POLL_METHODS = new Set(["nextReadyAt", "dueToolCalls", "readyCount", "acquireTargetLease", "releaseTargetLease"]);

/** Store calls that did work: every call but the polls of idle loops (see POLL_METHODS). */
export function workCalls(counts: Counts): number {
  let n = 0;
  for (const [method, calls] of Object.entries(counts.calls)) {
    if (POLL_METHODS.has(method)) continue;
    if (method === "claimNext" || method === "claim") n += counts.answers[`${method}:claimed`] ?? 0;
    else n += calls;
  }
  return n;
}

export interface CountingStore {
  store: Store;
  counts: Counts;
  reset(): void;
  /** Resolves when `turnsEnded` reaches `n`. */
  whenTurnsEnded(n: number): Promise<void>;
  /** Called with the turn and agent each time a commit that ends a turn has applied. */
  onTurnEnded: ((turnId: string, agentId: string) => void) | null;
}

export function countingStore(inner: Store): CountingStore {
  const counts: Counts = { calls: {}, answers: {}, turnsEnded: 0, inFlight: 0, maxInFlight: 0 };
  let waiting: { n: number; resolve: () => void } | null = null;
  const bump = (m: Record<string, number>, k: string) => (m[k] = (m[k] ?? 0) + 1);
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (typeof v !== "function" || prop === "close") return v;
      // A bell watch is a subscription, not a store call: passed through as it is (synchronous).
      if (prop === "watchBells") return (v as (...a: unknown[]) => unknown).bind(target);
      const name = String(prop);
      return async (...args: unknown[]) => {
        bump(counts.calls, name);
        let res: unknown;
        try {
          res = await (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        } catch (err) {
          bump(counts.answers, `${name}:threw`);
          throw err;
        }
        const status = res && typeof res === "object" && "status" in res ? String((res as { status: unknown }).status) : null;
        if (status) bump(counts.answers, `${name}:${status}`);
        if ((name === "claimNext" || name === "claim") && status === "claimed") {
          counts.maxInFlight = Math.max(counts.maxInFlight, ++counts.inFlight);
        }
        if (name === "commit" && status === "applied") {
          const req = args[0] as CommitRequest;
          // A release ends the claim, unless the commit chained the agent's next task (store invariant `turn-chaining`): the claim goes on.
          const chained = (res as { chained?: unknown }).chained !== undefined;
          if (req.release !== null && !chained) counts.inFlight = Math.max(0, counts.inFlight - 1);
          if (req.turnId !== null && req.activeTurnId === null) {
            counts.turnsEnded++;
            wrapper.onTurnEnded?.(req.turnId, req.agentId);
            if (waiting && counts.turnsEnded >= waiting.n) {
              waiting.resolve();
              waiting = null;
            }
          }
        }
        return res;
      };
    },
  });
  const wrapper: CountingStore = {
    store,
    counts,
    onTurnEnded: null,
    reset() {
      counts.calls = {};
      counts.answers = {};
      counts.turnsEnded = 0;
      counts.maxInFlight = counts.inFlight;
    },
    whenTurnsEnded(n) {
      if (counts.turnsEnded >= n) return Promise.resolve();
      return new Promise((resolve) => (waiting = { n, resolve }));
    },
  };
  return wrapper;
}
