/**
 * A Store wrapper that counts client calls per port method and per answer
 * (`commit:applied`, `claimNext:empty`, …, `<method>:threw`) and notices when a turn ends (an
 * applied commit that sets `activeTurnId` to null). It adds no Redis command,
 * so the server-side counts of a run stay those of the runtime.
 */
import type { CommitRequest, Store } from "../store/port.ts";

export interface Counts {
  /** Calls per port method. */
  calls: Record<string, number>;
  /** Calls per method and answer status. */
  answers: Record<string, number>;
  turnsEnded: number;
}

export interface CountingStore {
  store: Store;
  counts: Counts;
  reset(): void;
  /** Resolves when `turnsEnded` reaches `n`. */
  whenTurnsEnded(n: number): Promise<void>;
}

export function countingStore(inner: Store): CountingStore {
  const counts: Counts = { calls: {}, answers: {}, turnsEnded: 0 };
  let waiting: { n: number; resolve: () => void } | null = null;
  const bump = (m: Record<string, number>, k: string) => (m[k] = (m[k] ?? 0) + 1);
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (typeof v !== "function" || prop === "close") return v;
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
        if (name === "commit" && status === "applied") {
          const req = args[0] as CommitRequest;
          if (req.turnId !== null && req.activeTurnId === null) {
            counts.turnsEnded++;
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
  return {
    store,
    counts,
    reset() {
      counts.calls = {};
      counts.answers = {};
      counts.turnsEnded = 0;
    },
    whenTurnsEnded(n) {
      if (counts.turnsEnded >= n) return Promise.resolve();
      return new Promise((resolve) => (waiting = { n, resolve }));
    },
  };
}
