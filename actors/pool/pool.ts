/**
 * The worker pool: N concurrent loops per process, each claiming the next
 * ready agent of its targets and running the claim through the host. The pool
 * holds only config, clients and timers; all business state lives in the
 * store and in the local variables of one claim.
 *
 * A claim that throws out of `runClaim` is counted in the store and ends its
 * turn `failed` (`claim_error`) at the bound (actors/claim-failure.ts), so a
 * poison turn cannot hold the agent and the tasks behind it forever.
 *
 * Single-consumer targets (`svc1_*`, actors/pool/target-lease.ts) are claimed
 * only while this process holds the target's lease; the pool renews it while
 * it runs and releases it when it stops.
 *
 * Idle cost (docs/operations.md, "Idle cost"). While nothing is claimable,
 * one loop at a time polls (the sentinel); its siblings park without a timer.
 * How long the sentinel sleeps depends on whether the store pushes bells.
 *
 * Pushed bells (TCP Redis, Redis Cluster: `Store.watchBells`). The pool
 * watches its targets from `start()` to `stop()`. While the watch listens:
 * - Every write, by any process, that makes a new earliest ready score of a
 *   target publishes it (store/lua/includes/keys.lua, `set_bell`), and the
 *   watch hands it to every listening process. So the earliest due time the
 *   pool knows (its last `nextReadyAt` read, lowered by each bell heard
 *   since) is never later than the store's: a write that does not lower the
 *   earliest score leaves it at or after what the pool knows.
 * - The sentinel sleeps until that due time, at most `listenMaxMs` (60 s, a
 *   safety bound should the watch's connection die silently), with no
 *   backoff. A bell due now ends its sleep at once (one claim attempt by the
 *   sentinel, which wakes a sibling when it claims); a later one shortens it.
 * - When the watch starts listening, and again after every reconnect, the
 *   pool polls once: a bell rung while it was not listening was not heard.
 * - When the watch stops listening (connection lost), the sentinel falls
 *   back to the polling below until it listens again.
 * So an idle pool on TCP Redis makes no store call at all between a poll
 * and the next due time or `listenMaxMs`: 2 calls per target per 60 s.
 * Measured (`npm run bench:idle`, one process, default settings): 0.10
 * store calls/s in the second half of 20 s idle, all of them the watchdog's
 * (1 per 30 s), against 2.10 when TCP Redis was polled with a 1 s cap; 0.06
 * over the last 65 s of 130 s, the 60 s safety poll included. Upstash: 0.50.
 *
 * Polled bells (Upstash, the memory store, or a watch that does not listen):
 * - The sentinel's wait starts at `pollMs` and doubles after each empty poll
 *   up to `idlePollMaxMs`.
 * - A bell rung by another process is not heard: it is found at the
 *   sentinel's next poll, at most `idlePollMaxMs` later.
 * So an idle pool costs 2 store calls per target (`claimNext`,
 * `nextReadyAt`) per sentinel poll, whatever `concurrency` is: at the cap,
 * 2 x targets / idlePollMaxMs calls per second. Setting `idlePollMaxMs`
 * equal to `pollMs` gives fixed-interval polling (by the sentinel only).
 *
 * In both cases:
 * - The sentinel never sleeps past the store's `nextReadyAt` of any target:
 *   a `runnableAt`, a retry backoff or the end of another worker's lease is
 *   claimed on time, whatever the backoff.
 * - An in-process wake (`nudge`: a route of this process enqueued a task,
 *   delivered a tool result or a cancel; the watchdog timed a call out), like
 *   a pushed bell due now, makes the sleeping sentinel poll at once (else one
 *   parked loop) and sets the wait back to `pollMs`: one poll per wake,
 *   however many loops park (`concurrency` is 64 by default).
 * - A loop that claims wakes one parked sibling (more may be ready: a burst
 *   is taken up loop by loop) and sets the wait back to `pollMs`. At start
 *   only the first loop polls; the others park until woken that way, so a
 *   start costs one poll, not one per loop.
 * - A loop that finishes a claim and then finds nothing reads `nextReadyAt`
 *   and wakes the sentinel no later than it: the claim may have set a due
 *   time (a retry backoff, a `runnableAt`) after the sentinel went to sleep.
 * - A single-consumer target held by another process is not polled (and its
 *   bells are ignored): the sentinel sleeps until that process's lease ends,
 *   as last read (it asks for the lease again then), and no longer than the
 *   polling backoff allows, even while the watch listens: the holder's
 *   release is not pushed.
 *
 * Several deployments on one key space (actors/pool/definition-sets.ts): a loop
 * claims only agents this process has definitions for (`agentNames`), so an
 * agent only another deployment defines stays due for that deployment's
 * workers. While such an agent is due (the last claim attempt left one), the
 * store's earliest due time is not ours and its bells are not pushed to us
 * (a bell is published only when it becomes the earliest): the sentinel then
 * polls with the backoff above (`pollMs` doubling up to `idlePollMaxMs`)
 * instead of sleeping until that due time or `listenMaxMs`.
 */
import { claimRunner } from "../claim-failure.ts";
import type { HostDeps } from "../host.ts";
import { targetLeases } from "./target-lease.ts";
import { announceDefinitions, DEFINITION_SET_HEARTBEAT_MS } from "./definition-sets.ts";
import type { BellWatch } from "../../store/port.ts";

/** Longest idle wait of a pool whose store pushes bells: a safety bound, not a poll interval (ms). */
export const DEFAULT_LISTEN_MAX_MS = 60_000;

export interface WorkerPoolOptions {
  targets: string[];
  concurrency: number;
  /** Claims `drain()` runs at once (default `concurrency`): each of them costs a store call per pass even when nothing is claimable. */
  drainConcurrency?: number;
  /** First idle wait of the sentinel loop, and the wait after any wake or claim (ms). */
  pollMs: number;
  /** Longest idle wait while bells are polled: the backoff doubles from `pollMs` up to it (ms, default `pollMs`). */
  idlePollMaxMs?: number;
  /** Longest idle wait while the store's bell watch listens (ms, default DEFAULT_LISTEN_MAX_MS). */
  listenMaxMs?: number;
  /** Called each time a loop claims an agent (the watchdog resets its own backoff). */
  onClaim?: () => void;
  /**
   * This process's worker id, asked for on first use: an id source may use
   * randomness, which Cloudflare Workers refuse outside a request handler,
   * so building the pool at module scope must not call it.
   */
  workerId: () => string;
}

export interface WorkerPool {
  start(): void;
  stop(): Promise<void>;
  /** Runs claims until nothing is claimable now; resolves with the number of claims run. */
  drain(): Promise<number>;
  /** Wakes idle loops (called when this process enqueues work). */
  nudge(): void;
  readonly running: boolean;
}

export function createWorkerPool(deps: HostDeps, opts: WorkerPoolOptions): WorkerPool {
  let id: string | undefined;
  const workerId = () => (id ??= opts.workerId());
  const runner = claimRunner(deps);
  const leases = targetLeases({ store: deps.store, clock: deps.clock, logger: deps.logger, leaseMs: deps.leaseMs, holder: workerId });
  let renewTimer: ReturnType<typeof setInterval> | undefined;
  let definitionTimer: ReturnType<typeof setInterval> | undefined;
  /** Other definition sets already warned about (actors/pool/definition-sets.ts). */
  const reportedSets = new Set<string>();
  /** The definitions this process has: a loop claims only agents of these names. */
  const agentNames = [...deps.agents.keys()];
  /** The last claim attempt left an agent of another definition set due (then the sentinel polls). */
  let foreignDue = false;
  let running = false;
  let loops: Promise<void>[] = [];
  const maxWait = Math.max(opts.pollMs, opts.idlePollMaxMs ?? opts.pollMs);
  /** The sentinel's next idle wait (shared: the backoff is the pool's, not a loop's). */
  let idleWait = opts.pollMs;
  /** True from the sentinel's poll to the end of its sleep; the other idle loops park meanwhile. */
  let sentinel = false;
  /** The sentinel's sleep while it lasts: when it ends (Date.now base, like the timer) and how to end it sooner. */
  let sentinelSleep: { until: number; wakeIn(ms: number): void } | undefined;
  /** Parked loops (and loops waiting after a store error). */
  let parked: Array<() => void> = [];
  /** Counts in-process wakes, so one that lands between a loop's poll and its sleep is not lost. */
  let wakes = 0;
  const listenMax = opts.listenMaxMs ?? DEFAULT_LISTEN_MAX_MS;
  /** The store's bell watch while the pool runs, and whether it listens now. */
  let watch: BellWatch | undefined;
  let listening = false;

  /**
   * Wakes the pool, and the backoff starts over: the sleeping sentinel polls
   * now, else one parked loop does; a loop between its poll and its sleep
   * polls again (`wakes`). Each loop that claims wakes the next, so a burst is
   * taken up loop by loop, and a wake costs one poll however many loops park.
   */
  const wake = () => {
    wakes++;
    idleWait = opts.pollMs;
    if (sentinelSleep) sentinelSleep.wakeIn(0);
    else parked.shift()?.();
  };
  /** Every waiting loop returns now (stop). */
  const wakeAll = () => {
    wakes++;
    const p = parked;
    parked = [];
    for (const f of p) f();
    sentinelSleep?.wakeIn(0);
  };
  /** An in-process wake (a route of this process rang a bell). */
  const nudge = () => wake();
  /** After a claim: one parked sibling polls (a burst is taken up loop by loop) and the backoff starts over. */
  const wakeOne = () => {
    idleWait = opts.pollMs;
    parked.shift()?.();
  };
  /**
   * A bell pushed by the store: `at` is now the earliest ready score of `target`.
   * Due now: the sentinel polls at once (or, when it is polling right now,
   * again). Later: the sentinel's sleep ends no later than `at`.
   */
  const bell = (target: string, at: number) => {
    if (!running || leases.heldElsewhereUntil(target) !== undefined) return;
    const d = at - deps.clock.now();
    if (d <= 0) wake();
    else if (sentinelSleep) sentinelSleep.wakeIn(d);
    else wakes++;
  };
  /** The watch listens (poll once: bells before were not heard) or stopped listening (poll as without one). */
  const heard = (on: boolean) => {
    listening = on;
    if (!running) return;
    if (on) wake();
    else sentinelSleep?.wakeIn(idleWait);
  };
  /** Parks until woken, or at most `ms`. */
  const park = (ms?: number) =>
    new Promise<void>((resolve) => {
      const t = ms === undefined ? undefined : setTimeout(done, ms);
      function done() {
        if (t !== undefined) clearTimeout(t);
        parked = parked.filter((f) => f !== done);
        resolve();
      }
      parked.push(done);
    });
  /** The sentinel's sleep: `ms`, cut short by a nudge or by a due time a sibling learnt of. */
  const sentinelSleeps = (ms: number) =>
    new Promise<void>((resolve) => {
      let t: ReturnType<typeof setTimeout> | undefined;
      const arm = (d: number) => {
        if (t !== undefined) clearTimeout(t);
        sleep.until = Date.now() + d;
        t = setTimeout(() => {
          sentinelSleep = undefined;
          resolve();
        }, d);
      };
      const sleep = { until: 0, wakeIn: (d: number) => (d < sleep.until - Date.now() ? arm(Math.max(0, d)) : undefined) };
      sentinelSleep = sleep;
      arm(ms);
    });
  /** Earliest due time over the targets, as a wait from now (ms, at least 1), or null. */
  async function dueIn(): Promise<number | null> {
    let wait: number | null = null;
    for (const t of opts.targets) {
      // A single-consumer target held by another process: its bells are not ours until that lease ends.
      const at = leases.heldElsewhereUntil(t) ?? (await deps.store.nextReadyAt(t));
      if (at !== null) wait = Math.min(wait ?? Infinity, Math.max(1, at - deps.clock.now()));
    }
    return wait;
  }

  /** One claim attempt over all targets; true when something was processed. */
  async function once(loopId: string): Promise<boolean> {
    let foreign = false;
    for (const target of opts.targets) {
      if (!(await leases.mayConsume(target))) continue;
      const c = await deps.store.claimNext({ workerTarget: target, workerId: loopId, leaseMs: deps.leaseMs, now: deps.clock.now(), agentNames });
      if (c.status === "empty" && (c.foreign ?? 0) > 0) foreign = true;
      if (c.status === "claimed") {
        wakeOne();
        opts.onClaim?.();
        await runner.run(c, loopId);
        return true;
      }
    }
    foreignDue = foreign;
    return false;
  }

  async function loop(i: number) {
    const loopId = `${workerId()}/${i}`;
    let worked = false;
    // Only the first loop polls at start; the others park until a claim or a wake needs them.
    if (i > 0) await park();
    while (running) {
      const seen = wakes;
      const afterWork = worked;
      try {
        worked = await once(loopId);
      } catch (err) {
        worked = false;
        deps.logger.warn("worker loop error", { error: String(err) });
        await park(opts.pollMs);
        continue;
      }
      if (worked || !running || wakes !== seen) continue;
      if (sentinel) {
        // The claim just run may have set a due time (a retry backoff, a runnableAt): the
        // sentinel, asleep since before it, must not sleep past it.
        if (afterWork && sentinelSleep) {
          try {
            const d = await dueIn();
            if (d !== null) sentinelSleep?.wakeIn(d);
          } catch { /* store unreachable: the sentinel polls at its time */ }
        }
        if (running && wakes === seen) await park();
        continue;
      }
      sentinel = true;
      try {
        // A target held by another process is asked for again by polling (its release is not pushed).
        // An agent of another definition set is due: the earliest due time is not ours, and bells behind it are not pushed.
        const foreign = foreignDue;
        const pushed = !foreign && listening && opts.targets.every((t) => leases.heldElsewhereUntil(t) === undefined);
        let wait = pushed ? listenMax : idleWait;
        if (!pushed) idleWait = Math.min(maxWait, idleWait * 2);
        try {
          const d = foreign ? null : await dueIn();
          if (d !== null) wait = Math.min(wait, d);
        } catch { /* store unreachable: poll again after `wait` */ }
        if (running && wakes === seen) await sentinelSleeps(wait);
      } finally {
        sentinel = false;
        sentinelSleep = undefined;
      }
    }
  }

  return {
    get running() {
      return running;
    },
    start() {
      if (running) return;
      running = true;
      listening = false;
      watch = deps.store.watchBells?.(opts.targets, { bell, listening: heard });
      loops = Array.from({ length: opts.concurrency }, (_, i) => loop(i));
      renewTimer = setInterval(() => void leases.renew(), Math.max(1, Math.floor(deps.leaseMs / 3)));
      const announce = () =>
        announceDefinitions(deps, reportedSets).catch((err) => deps.logger.debug("definition set not announced", { error: String(err) }));
      void announce();
      definitionTimer = setInterval(() => void announce(), DEFINITION_SET_HEARTBEAT_MS);
    },
    async stop() {
      running = false;
      if (renewTimer) clearInterval(renewTimer);
      renewTimer = undefined;
      if (definitionTimer) clearInterval(definitionTimer);
      definitionTimer = undefined;
      const w = watch;
      watch = undefined;
      listening = false;
      wakeAll();
      await Promise.all([w?.close(), ...loops]);
      loops = [];
      await leases.release();
    },
    async drain() {
      let total = 0;
      const one = async (i: number) => {
        while (await once(`${workerId()}/drain${i}`)) total++;
      };
      // Loops see "empty" while a sibling holds an agent, so repeat until a full pass finds nothing.
      for (;;) {
        const before = total;
        await Promise.all(Array.from({ length: opts.drainConcurrency ?? opts.concurrency }, (_, i) => one(i)));
        if (total === before) return total;
      }
    },
    nudge,
  };
}
