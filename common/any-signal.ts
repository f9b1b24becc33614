/**
 * `anySignal(a, b)`: one signal that aborts when either does, with the reason
 * of the first. Uses `AbortSignal.any` where the runtime has it; elsewhere it
 * links the two by listeners, and `dispose()` removes them (the caller's
 * signal may live for a whole claim: a listener left per call would leak).
 */
export function anySignal(a: AbortSignal | undefined, b: AbortSignal): { signal: AbortSignal; dispose: () => void } {
  if (!a) return { signal: b, dispose: () => {} };
  const any = (AbortSignal as { any?: (signals: AbortSignal[]) => AbortSignal }).any;
  if (typeof any === "function") return { signal: any([a, b]), dispose: () => {} };
  const c = new AbortController();
  const onA = () => c.abort(a.reason);
  const onB = () => c.abort(b.reason);
  if (a.aborted) onA();
  else if (b.aborted) onB();
  else {
    a.addEventListener("abort", onA, { once: true });
    b.addEventListener("abort", onB, { once: true });
  }
  return {
    signal: c.signal,
    dispose: () => {
      a.removeEventListener("abort", onA);
      b.removeEventListener("abort", onB);
    },
  };
}
