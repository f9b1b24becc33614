/**
 * A store that counts calls per port method (`close` excepted), for tests and
 * measurements that ask how many store calls something costs. Every other
 * property is the inner store's. `failCommits`: that many first commits
 * reject (an injected failure) instead of reaching the store.
 */
import type { Store } from "../../store/port.ts";

export interface CallCounting {
  store: Store;
  /** Calls per method name. */
  calls: Record<string, number>;
  /** Calls of every method. */
  total(): number;
}

export function callCounting(inner: Store, opts: { failCommits?: number } = {}): CallCounting {
  const calls: Record<string, number> = {};
  let toFail = opts.failCommits ?? 0;
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (typeof v !== "function" || prop === "close") return v;
      const name = String(prop);
      return (...args: unknown[]) => {
        calls[name] = (calls[name] ?? 0) + 1;
        if (name === "commit" && toFail > 0) {
          toFail--;
          return Promise.reject(new Error("Cannot commit: injected failure"));
        }
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  }) as Store;
  return { store, calls, total: () => Object.values(calls).reduce((a, b) => a + b, 0) };
}
