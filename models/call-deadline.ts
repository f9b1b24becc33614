/**
 * The deadline of one model call, shared by `openaiCompatible` and
 * `aiSdkModel`: `timeoutMs` without progress (re-armed by `arm()` as data
 * arrives) aborts `signal`, which also follows the caller's signal.
 * `classify` says what an error of the call means, in this order: a
 * `ModelError` as it is; after the caller aborted, not retryable (a retry is
 * never wanted then); past the deadline, retryable; anything else as
 * `otherwise` says. `dispose()` ends the timer and unlinks the signals.
 */
import { anySignal } from "../common/any-signal.ts";
import { ModelError } from "../errors/errors.ts";

export type Fail = (message: string, retryable: boolean, cause?: unknown) => ModelError;

export interface CallDeadline {
  readonly signal: AbortSignal;
  arm(): void;
  /** Stops the timer (the answer is here; reading it has no deadline). */
  stop(): void;
  dispose(): void;
  classify(err: unknown): ModelError;
}

export function callDeadline(caller: AbortSignal | undefined, timeoutMs: number, fail: Fail, otherwise: (err: unknown) => ModelError): CallDeadline {
  const deadline = new AbortController();
  let timedOut = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const linked = anySignal(caller, deadline.signal);
  return {
    signal: linked.signal,
    arm: () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        timedOut = true;
        deadline.abort(new Error("timeout"));
      }, timeoutMs);
    },
    stop: () => clearTimeout(timer),
    dispose: () => {
      clearTimeout(timer);
      linked.dispose();
    },
    classify: (err) => {
      if (err instanceof ModelError) return err;
      if (caller?.aborted) return fail("call aborted", false, err);
      if (timedOut) return fail(`no response within ${timeoutMs} ms`, true, err);
      return otherwise(err);
    },
  };
}
