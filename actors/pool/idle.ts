/**
 * The idle machine of the worker pool: which loop polls, which loops park,
 * how long the polling loop (the sentinel) sleeps and what wakes whom. A pure
 * transition function, `idleTransition(state, event, config)`, answering the
 * next state, the effects the pool carries out (wake a parked loop, end or
 * shorten the sentinel's sleep, arm it) and, to the loop that sent the event,
 * what it does next. No timer, no store call and no promise lives here: the
 * pool (actors/pool/pool.ts) holds those and reports to the machine; the
 * store calls the decisions need (`nextReadyAt`) are made by the pool
 * between two events.
 *
 * States. `sentinel` is `none`, `polling` (a loop found nothing and reads
 * the due times before its sleep, with the wait it will sleep at most) or
 * `sleeping`. `parked` counts loops waiting on a waker (after a store error
 * with a timer as well). `wakes` counts wakes, so a loop can tell whether
 * one landed between its poll and its sleep. `backoffMs` is the sentinel's
 * next wait while bells are polled; `listening` whether the store's bell
 * watch listens; `foreignDue` whether the last empty claim pass left an
 * agent of another definition set due (actors/pool/definition-sets.ts).
 *
 * Invariants (tests/pool/pool-idle-machine.test.ts walks every transition and
 * checks them after each step of seeded random runs):
 * 1. One sentinel at most: a loop becomes the sentinel only from `none`;
 *    every other idle loop parks.
 * 2. A parked loop always has a waker: a loop parks (without a timer) only
 *    while a sentinel exists or, at start, while loop 0 polls; the sentinel
 *    never parks, and its sleep always has a timer (at most `listenMaxMs`
 *    or the backoff), after which it polls and wakes a sibling when it
 *    claims. While the pool runs, never all loops are parked.
 * 3. A wake heard while polling is not lost: a wake, a bell or the watch
 *    starting to listen bumps `wakes`; a loop whose poll started before it
 *    polls again instead of parking or sleeping.
 * 4. A wake or bell due now ends the sentinel's sleep, else wakes one parked
 *    loop; it never wakes more than one (one poll per wake, whatever the
 *    number of loops). A bell due later only shortens the sleep.
 * 5. The backoff starts over (`pollMs`) at every wake and claim; it doubles
 *    only when the sentinel sleeps while bells are polled, and never exceeds
 *    `maxWaitMs`. While the watch listens (no foreign agent due, no target
 *    held elsewhere) the sentinel sleeps up to `listenMaxMs` and the backoff
 *    stays as it is.
 * 6. The sentinel never sleeps past the earliest due time it read.
 * 7. `stop` wakes every parked loop and ends the sleep; afterwards no loop
 *    parks or sleeps.
 * 8. The hand-over rule. A hand-over (`handOver`: a route of this process sends its enqueue with
 *    a claim for a free loop, actors/pool/pool.ts) takes one parked loop,
 *    never the sentinel, and only while the pool runs; with none parked it
 *    does nothing (the route rings as before). It is no wake: the loop it
 *    takes polls (its claim is the poll), the sentinel sleeps on.
 */

/** The machine's fixed settings (ms). */
export interface IdleConfig {
  /** First wait of the sentinel, and the wait after any wake or claim. */
  pollMs: number;
  /** Longest wait while bells are polled (at least `pollMs`). */
  maxWaitMs: number;
  /** Longest wait while the bell watch listens. */
  listenMaxMs: number;
}

export type SentinelPhase =
  | { phase: "none" }
  /** Reading due times before its sleep; `waitMs` is the longest it will sleep. */
  | { phase: "polling"; waitMs: number }
  | { phase: "sleeping" };

export interface IdleState {
  running: boolean;
  listening: boolean;
  backoffMs: number;
  sentinel: SentinelPhase;
  /** Loops parked (without a timer, or with one after a store error). */
  parked: number;
  /** Wakes counted so far (a loop compares the count at its poll's start with the count at its end). */
  wakes: number;
  foreignDue: boolean;
}

export type IdleEvent =
  | { type: "start" }
  | { type: "stop" }
  /** An in-process wake (`nudge`), or a bell due now. */
  | { type: "wake" }
  /** A loop claimed an agent. */
  | { type: "claimed" }
  /** A route asks for a parked loop to hand a claim to (the hand-over rule, header). */
  | { type: "handOver" }
  /** A bell pushed by the store: due in `dueInMs` (<= 0: now); `heldElsewhere` when its target is another process's. */
  | { type: "bell"; dueInMs: number; heldElsewhere: boolean }
  /** The bell watch started (`on`) or stopped listening. */
  | { type: "listening"; on: boolean }
  /** A claim pass found nothing; `foreign` when it left an agent of another definition set due. */
  | { type: "empty"; foreign: boolean }
  /** A loop's poll (started when `wakes` was `seen`) found nothing; `pushed` when no target it polls is held elsewhere. */
  | { type: "idle"; seen: number; afterWork: boolean; noneHeldElsewhere: boolean }
  /** A loop waits for a waker (a loop at start, or after `idle` answered park). */
  | { type: "park"; seen: number }
  /** A loop waits `ms` after a store error (woken sooner like any parked loop). */
  | { type: "parkFor" }
  /** A parked loop's timer ran out before a waker came. */
  | { type: "parkTimedOut" }
  /** The sentinel read the due times: the earliest is in `dueInMs` (null: none, or not read). */
  | { type: "sleep"; seen: number; dueInMs: number | null }
  /** A loop read the due times after its claim (`idle` answered `checkDue`): the earliest is in `dueInMs`. */
  | { type: "due"; dueInMs: number | null }
  /** The sentinel's sleep ended. */
  | { type: "woke" };

export type IdleEffect =
  /** Wake the loop parked longest. */
  | { type: "wakeParked" }
  /** Wake the loop parked longest with the claim a route sends for it (the hand-over rule, header). */
  | { type: "handParked" }
  /** Wake every parked loop. */
  | { type: "wakeAllParked" }
  /** End the sentinel's sleep now. */
  | { type: "endSleep" }
  /** End the sentinel's sleep within `ms`, if it would end later. */
  | { type: "shortenSleep"; ms: number }
  /** Put the sentinel to sleep for `ms`. */
  | { type: "sleep"; ms: number };

/**
 * What the loop that sent the event does next: `poll` (claim again), `park`
 * (wait for a waker), `checkDue` (read due times, send `due`, then `park`),
 * `sentinel` (read due times unless `readDue` is false, then send `sleep`),
 * `sleep` (the sentinel sleeps: the `sleep` effect is armed), or `none`.
 */
export type LoopNext = "poll" | "park" | "checkDue" | "sentinel" | "sleep" | "none";

export interface IdleStep {
  state: IdleState;
  effects: IdleEffect[];
  next: LoopNext;
  /** With next `sentinel`: whether to read the due times first (not while a foreign agent is due). */
  readDue?: boolean;
}

export function initialIdleState(config: IdleConfig): IdleState {
  return { running: false, listening: false, backoffMs: config.pollMs, sentinel: { phase: "none" }, parked: 0, wakes: 0, foreignDue: false };
}

const step = (state: IdleState, effects: IdleEffect[] = [], next: LoopNext = "none"): IdleStep => ({ state, effects, next });

/** Invariant `mail-until-acked`: the sleeping sentinel polls now, else one parked loop does; the backoff starts over. */
function wake(s: IdleState, config: IdleConfig): IdleStep {
  const state = { ...s, wakes: s.wakes + 1, backoffMs: config.pollMs };
  if (s.sentinel.phase === "sleeping") return step(state, [{ type: "endSleep" }]);
  if (s.parked > 0) return step({ ...state, parked: s.parked - 1 }, [{ type: "wakeParked" }]);
  return step(state);
}

/**
 * The transition function (the header's invariants hold across it).
 *
 * @example
 * let s = initialIdleState(config);
 * ({ state: s } = idleTransition(s, { type: "start" }, config));
 * const r = idleTransition(s, { type: "idle", seen: s.wakes, afterWork: false, noneHeldElsewhere: true }, config);
 * r.next; // "sentinel": this loop polls for the pool
 */
export function idleTransition(s: IdleState, e: IdleEvent, config: IdleConfig): IdleStep {
  switch (e.type) {
    case "start":
      return step({ ...s, running: true, listening: false, backoffMs: config.pollMs });
    case "stop": {
      const effects: IdleEffect[] = [{ type: "wakeAllParked" }];
      if (s.sentinel.phase === "sleeping") effects.push({ type: "endSleep" });
      return step({ ...s, running: false, listening: false, wakes: s.wakes + 1, parked: 0 }, effects);
    }
    case "wake":
      return wake(s, config);
    case "claimed":
      // A burst is taken up loop by loop: the claiming loop wakes one sibling.
      if (s.parked > 0) return step({ ...s, backoffMs: config.pollMs, parked: s.parked - 1 }, [{ type: "wakeParked" }]);
      return step({ ...s, backoffMs: config.pollMs });
    case "handOver":
      if (!s.running || s.parked === 0) return step(s);
      return step({ ...s, parked: s.parked - 1, backoffMs: config.pollMs }, [{ type: "handParked" }]);
    case "bell":
      if (!s.running || e.heldElsewhere) return step(s);
      if (e.dueInMs <= 0) return wake(s, config);
      if (s.sentinel.phase === "sleeping") return step(s, [{ type: "shortenSleep", ms: e.dueInMs }]);
      // Invariant `fencing`: a loop between its poll and its sleep reads the due times again.
      return step({ ...s, wakes: s.wakes + 1 });
    case "listening": {
      const state = { ...s, listening: e.on };
      if (!s.running) return step(state);
      // Bells rung while the watch did not listen were not heard: poll once.
      if (e.on) return wake(state, config);
      // Heard nothing more from now on: the sleep is cut to the polling backoff.
      return step(state, s.sentinel.phase === "sleeping" ? [{ type: "shortenSleep", ms: s.backoffMs }] : []);
    }
    case "empty":
      return step({ ...s, foreignDue: e.foreign });
    case "idle": {
      if (!s.running || s.wakes !== e.seen) return step(s, [], "poll");
      if (s.sentinel.phase !== "none") {
        // The claim just run may have set a due time the sleeping sentinel does not know of.
        return step(s, [], e.afterWork && s.sentinel.phase === "sleeping" ? "checkDue" : "park");
      }
      // An agent of another definition set is due (its bells are not pushed) or a target is held elsewhere
      // (its release is not pushed): poll with the backoff.
      const pushed = !s.foreignDue && s.listening && e.noneHeldElsewhere;
      const waitMs = pushed ? config.listenMaxMs : s.backoffMs;
      const backoffMs = pushed ? s.backoffMs : Math.min(config.maxWaitMs, s.backoffMs * 2);
      return { ...step({ ...s, backoffMs, sentinel: { phase: "polling", waitMs } }, [], "sentinel"), readDue: !s.foreignDue };
    }
    case "park":
      if (!s.running || s.wakes !== e.seen) return step(s, [], "poll");
      return step({ ...s, parked: s.parked + 1 }, [], "park");
    case "parkFor":
      return step({ ...s, parked: s.parked + 1 }, [], "park");
    case "parkTimedOut":
      return step({ ...s, parked: Math.max(0, s.parked - 1) });
    case "due":
      if (e.dueInMs === null || s.sentinel.phase !== "sleeping") return step(s);
      return step(s, [{ type: "shortenSleep", ms: e.dueInMs }]);
    case "sleep": {
      if (s.sentinel.phase !== "polling") return step(s, [], "poll");
      const waitMs = e.dueInMs === null ? s.sentinel.waitMs : Math.min(s.sentinel.waitMs, e.dueInMs);
      if (!s.running || s.wakes !== e.seen) return step({ ...s, sentinel: { phase: "none" } }, [], "poll");
      return step({ ...s, sentinel: { phase: "sleeping" } }, [{ type: "sleep", ms: waitMs }], "sleep");
    }
    case "woke":
      return step({ ...s, sentinel: { phase: "none" } });
  }
}
