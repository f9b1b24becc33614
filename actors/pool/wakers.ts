/**
 * The timers and promises behind the idle machine's effects
 * (actors/pool/idle.ts): the queue of parked loops and the sentinel's sleep.
 * They decide nothing: the machine says whom to wake and for how long the
 * sentinel sleeps.
 *
 * Invariant: the queue holds exactly the loops the machine counts as
 * `parked`. A loop woken by `wakeFirst`/`handFirst`/`wakeAll` leaves the queue before it
 * resumes; a loop whose own timer runs out leaves it and `onTimedOut` is
 * called (the pool reports `parkTimedOut`), never both.
 *
 * Invariant: a wake due now (`wakeIn(0)`, the idle machine's `endSleep`: a
 * route of this process enqueued a task) ends the sentinel's sleep at once,
 * without a timer: `setTimeout(0)` waits at least a millisecond in Node, which
 * a lone task would pay between its POST and its claim.
 */

/**
 * Loops waiting for a waker, oldest first. A loop may be woken with work handed to it (`handFirst`, the
 * hand-over of actors/pool/pool.ts): its `park` then resolves with that gift, else with undefined.
 */
export class ParkedLoops<G = never> {
  #queue: Array<{ id: string; wake: (gift?: G) => void }> = [];

  /** Waits until woken, or at most `ms` (then `onTimedOut` is called once); `id` names the loop to `handFirst`. */
  park(ms?: number, onTimedOut?: () => void, id = ""): Promise<G | undefined> {
    return new Promise<G | undefined>((resolve) => {
      const entry = {
        id,
        wake: (gift?: G) => {
          if (timer !== undefined) clearTimeout(timer);
          resolve(gift);
        },
      };
      const timer = ms === undefined ? undefined : setTimeout(() => {
        const i = this.#queue.indexOf(entry);
        if (i < 0) return;
        this.#queue.splice(i, 1);
        onTimedOut?.();
        resolve(undefined);
      }, ms);
      this.#queue.push(entry);
    });
  }

  /** Wakes the loop parked longest. */
  wakeFirst(): void {
    this.#queue.shift()?.wake();
  }

  /** Wakes the loop parked longest with the gift `make` builds for its id; false when none is parked. */
  handFirst(make: (id: string) => G): boolean {
    const first = this.#queue.shift();
    if (!first) return false;
    let gift: G;
    try {
      gift = make(first.id);
    } catch (err) {
      // Never a loop out of the queue and not woken: it polls instead.
      first.wake();
      throw err;
    }
    first.wake(gift);
    return true;
  }

  /** Wakes every parked loop. */
  wakeAll(): void {
    const q = this.#queue;
    this.#queue = [];
    for (const f of q) f.wake();
  }

  get size(): number {
    return this.#queue.length;
  }
}

/** The sentinel's sleep: one at a time, ended sooner by `wakeIn`. */
export class SentinelSleep {
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** When the sleep ends, on the timer's own time base (Date.now, like setTimeout). */
  #until = 0;
  #resolve: (() => void) | undefined;

  /** Sleeps `ms`, unless `wakeIn` ends it sooner. */
  sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#resolve = resolve;
      this.#arm(ms);
    });
  }

  /** Ends the current sleep within `ms` if it would end later; nothing when none. */
  wakeIn(ms: number): void {
    if (this.#resolve && ms < this.#until - Date.now()) this.#arm(Math.max(0, ms));
  }

  #arm(ms: number): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (ms <= 0) {
      // Due now: no timer (a zero timeout still waits a millisecond or more).
      const r = this.#resolve;
      this.#resolve = undefined;
      r?.();
      return;
    }
    this.#until = Date.now() + ms;
    this.#timer = setTimeout(() => {
      const r = this.#resolve;
      this.#timer = undefined;
      this.#resolve = undefined;
      r?.();
    }, ms);
  }
}
