/**
 * The worker pool: N concurrent loops per process, each claiming the next
 * ready agent of its targets and running the claim through the host
 * (actors/pool/claim-attempt.ts). The pool holds only config, clients and
 * timers; all business state lives in the store and in the local variables
 * of one claim. Who polls, who parks and what wakes whom is decided by the
 * idle machine (actors/pool/idle.ts, a pure transition function with its
 * invariants); this file carries out its effects (actors/pool/wakers.ts)
 * and makes the store calls between its events.
 *
 * A claim that throws out of `runClaim` is counted in the store and ends its
 * turn `failed` (`claim_error`) at the bound (actors/pool/claim-failure.ts), so a
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
 * The hand-over (`enqueue`: a route of this process enqueues a task). A
 * task due now (no `runAt` after its `now`) for a target this pool serves
 * (not a single-consumer one), while the pool runs and a loop is parked:
 * the route's enqueue and that loop's `claimNext` go to the store together
 * (`enqueueAndClaim`, store/port.ts invariant `enqueue-then-claim`: one
 * round trip and one fsync on one Redis instead of two in series), and the
 * loop, woken with the claim's answer, takes it up as it takes up a claim of
 * its own (actors/pool/claim-attempt.ts `takeClaim`). Otherwise the route
 * enqueues alone and nudges, as it always did. Invariants:
 * - Nothing acknowledged is lost: the route's answer is the enqueue's, and
 *   an `enqueued` task is stored whatever the claim answered.
 * - The claim is the loop's own `claimNext`, with its id, names, versions
 *   and limits, only sent earlier: it takes what the rules of `claimNext`
 *   pick (invariants `fair-lanes`, `priorities`, `concurrency-keys`,
 *   `definition-sets`, `turn-versions`), so the new task only when nothing
 *   is ahead of it by those rules; otherwise the agent that is, and the
 *   loop wakes a sibling as after any claim, which takes the new one. An
 *   agent already leased, a key at its limit, a duplicate or refused enqueue:
 *   the claim takes what else is due, or nothing, as the loop woken by a
 *   nudge would have. The rule in one line: a free loop with nothing ahead
 *   of the new task by claimNext's order takes it in the enqueue's round trip.
 * - A claim that took nothing leaves the bell as an empty `claimNext`
 *   does; the loop goes idle as after an empty poll (the sentinel keeps its
 *   watch: a hand-over never takes it, idle.ts, the hand-over rule). A claim that
 *   failed (its answer lost) is logged, the pool is nudged so another loop
 *   polls at once, and the loop backs off as after any store error; an
 *   agent the lost claim may have leased is offered again at its lease end.
 * - A stopping or draining pool (not running), a pool with no parked loop,
 *   a delayed task: no hand-over. A claim sent before `stop` is run to its
 *   end like any claim in flight (stop waits for the loop).
 *
 * Schedule ticks (actors/pool/tick-firer.ts): beside the loops, one tick
 * firer fires every due tick (the enqueue only, never a turn), so ticks are
 * enqueued on time while every loop is held by a long turn. It sleeps until
 * the earliest next tick it read, at most the longest idle wait above;
 * bells shorten its sleep, in-process wakes end it (at most once per
 * `pollMs`). A loop that finds a due schedule through `claimNext` still
 * fires it, planning with the firer's `liveFrom`.
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
import { claimRunner } from "./claim-runner.ts";
import type { HostDeps } from "../claim/context.ts";
import type { BellWatch, ClaimResult, EnqueueTaskRequest, EnqueueTaskResult, Settled, Store } from "../../store/port.ts";
import { enqueueAndClaim } from "../../store/enqueue-claim.ts";
import { type ClaimAttemptDeps, claimNextRequest, claimOnce, logTurnEnd, takeClaim } from "./claim-attempt.ts";
import { announceDefinitions, DEFINITION_SET_HEARTBEAT_MS, withdrawDefinitions } from "./definition-sets.ts";
import { claimableVersions } from "../host/versions.ts";
import { type IdleConfig, type IdleEvent, type IdleState, idleTransition, initialIdleState, type IdleStep } from "./idle.ts";
import { isSingleConsumerTarget, type TargetLeases, targetLeases } from "./target-lease.ts";
import { describeStoreError } from "./store-error.ts";
import { ParkedLoops, SentinelSleep } from "./wakers.ts";
import { fireDueSchedule } from "./schedule-fire.ts";
import { TickFirer } from "./tick-firer.ts";

/** The tick firer's longest sleep while no schedule of this process's definitions exists (docs/operations.md, "Idle cost"). */
export const FIRER_NO_SCHEDULE_MS = 60_000;

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
  /** Turn ids of the tasks that schedule ticks enqueue (the runtime's `ids`). */
  turnId: () => string;
}

export interface WorkerPool {
  start(): void;
  stop(): Promise<void>;
  /** Runs claims until nothing is claimable now; resolves with the number of claims run. */
  drain(): Promise<number>;
  /** Wakes idle loops (called when this process enqueues work). */
  nudge(): void;
  /**
   * Enqueues a task a route of this process accepted: with a loop parked, together with that loop's
   * claim in one round trip (the hand-over, header), else with `store.enqueueTask` alone (default: the
   * pool's store). Answers the enqueue's answer (throws what it threw) and `handed`: a loop took the
   * claim, so no nudge is needed.
   */
  enqueue(task: EnqueueTaskRequest, store?: Store): Promise<{ result: EnqueueTaskResult; handed: boolean }>;
  readonly running: boolean;
}

/**
 * @example
 * const pool = createWorkerPool(deps, { targets: ["default"], concurrency: 4, pollMs: 1_000, workerId: () => "w1" });
 * pool.start();
 * pool.nudge(); // after this process enqueued a task
 * await pool.stop();
 */
export function createWorkerPool(deps: HostDeps, opts: WorkerPoolOptions): WorkerPool {
  return new Pool(deps, opts);
}

/** A claim handed to a parked loop (the hand-over, header): its answer to come, the wakes counted when it was sent. */
interface Handover {
  claim: Promise<Settled<ClaimResult>>;
  seen: number;
}

class Pool implements WorkerPool {
  readonly #deps: HostDeps;
  readonly #opts: WorkerPoolOptions;
  readonly #config: IdleConfig;
  #idle: IdleState;
  readonly #parked = new ParkedLoops<Handover>();
  /** The gift the next `handParked` effect hands to a parked loop (set by `enqueue` around its `handOver`). */
  #gift: ((loopId: string) => Handover) | undefined;
  readonly #sleep = new SentinelSleep();
  readonly #leases: TargetLeases;
  readonly #attempt: ClaimAttemptDeps;
  #id: string | undefined;
  #loops: Promise<void>[] = [];
  /** The store's bell watch while the pool runs. */
  #watch: BellWatch | undefined;
  #renewTimer: ReturnType<typeof setInterval> | undefined;
  #definitionTimer: ReturnType<typeof setInterval> | undefined;
  /** Other definition sets already warned about (actors/pool/definition-sets.ts). */
  readonly #reportedSets = new Set<string>();
  readonly #firer: TickFirer;
  readonly #firerSleep = new SentinelSleep();
  #firing: Promise<void> | undefined;
  /** The earliest wake asked for since the firer's pass began (Date.now time base, like its sleep): its next sleep ends by then. */
  #firerWakeAt = Infinity;
  #lastFirerPass = -Infinity;

  constructor(deps: HostDeps, opts: WorkerPoolOptions) {
    this.#deps = deps;
    this.#opts = opts;
    this.#config = {
      pollMs: opts.pollMs,
      maxWaitMs: Math.max(opts.pollMs, opts.idlePollMaxMs ?? opts.pollMs),
      listenMaxMs: opts.listenMaxMs ?? DEFAULT_LISTEN_MAX_MS,
    };
    this.#idle = initialIdleState(this.#config);
    this.#leases = targetLeases({ store: deps.store, clock: deps.clock, logger: deps.logger, leaseMs: deps.leaseMs, holder: () => this.#workerId() });
    const runner = claimRunner(deps, (claim, out, ms) => logTurnEnd(deps.logger, claim, out, ms));
    this.#attempt = {
      store: deps.store,
      clock: deps.clock,
      leaseMs: deps.leaseMs,
      concurrencyLimits: deps.concurrencyLimits,
      targets: opts.targets,
      // The definitions this process has: a loop claims only agents of these names.
      agentNames: [...deps.agents.keys()],
      // A turn pinned to a version this process lacks stays due for one that has it (actors/host/versions.ts).
      agentVersions: claimableVersions(deps),
      leases: this.#leases,
      run: (claim, workerId) => runner.run(claim, workerId),
      onClaimed: () => {
        this.#send({ type: "claimed" });
        opts.onClaim?.();
      },
      onEmpty: (foreign) => void this.#send({ type: "empty", foreign }),
      // A store error fires nothing: it throws like a claim's, and the loop backs off (the tick stays due).
      fire: async (schedule) => void (await fireDueSchedule(deps, schedule, opts.turnId(), this.#firer.liveFrom)),
    };
    this.#firer = new TickFirer({ ...deps, targets: opts.targets, agentNames: this.#attempt.agentNames, turnId: opts.turnId });
  }

  get running(): boolean {
    return this.#idle.running;
  }

  start(): void {
    if (this.#idle.running) return;
    this.#send({ type: "start" });
    this.#watch = this.#deps.store.watchBells?.(this.#opts.targets, {
      bell: (target, at) => this.#bell(target, at),
      listening: (on) => void this.#send({ type: "listening", on }),
    });
    this.#loops = Array.from({ length: this.#opts.concurrency }, (_, i) => this.#loop(i));
    this.#firing = this.#fireLoop();
    this.#renewTimer = setInterval(() => void this.#leases.renew(), Math.max(1, Math.floor(this.#deps.leaseMs / 3)));
    void this.#announce();
    this.#definitionTimer = setInterval(() => void this.#announce(), DEFINITION_SET_HEARTBEAT_MS);
  }

  async stop(): Promise<void> {
    if (this.#renewTimer) clearInterval(this.#renewTimer);
    this.#renewTimer = undefined;
    const announced = this.#definitionTimer !== undefined;
    if (this.#definitionTimer) clearInterval(this.#definitionTimer);
    this.#definitionTimer = undefined;
    const w = this.#watch;
    this.#watch = undefined;
    this.#send({ type: "stop" });
    this.#wakeFirer(0);
    await Promise.all([w?.close(), ...this.#loops, this.#firing]);
    this.#loops = [];
    this.#firing = undefined;
    await this.#leases.release();
    // A stopped pool no longer counts as a live process with its versions and formats (docs/operations.md, "Upgrades").
    if (announced) {
      await withdrawDefinitions(this.#deps)
        .catch((err) => this.#deps.logger.debug("definition set not withdrawn", describeStoreError(err, this.#deps.store.kind)));
    }
  }

  async drain(): Promise<number> {
    let total = 0;
    const one = async (i: number) => {
      while (await claimOnce(this.#attempt, `${this.#workerId()}/drain${i}`)) total++;
    };
    // Loops see "empty" while a sibling holds an agent, so repeat until a full pass finds nothing.
    for (;;) {
      const before = total;
      await Promise.all(Array.from({ length: this.#opts.drainConcurrency ?? this.#opts.concurrency }, (_, i) => one(i)));
      if (total === before) return total;
    }
  }

  /** An in-process wake (a route of this process rang a bell, the watchdog timed a call out). */
  nudge(): void {
    this.#send({ type: "wake" });
    // At most one firer pass per pollMs for in-process wakes (each enqueue wakes).
    this.#wakeFirer(Math.max(0, this.#lastFirerPass + this.#opts.pollMs - this.#deps.clock.now()));
  }

  async enqueue(task: EnqueueTaskRequest, store: Store = this.#deps.store): Promise<{ result: EnqueueTaskResult; handed: boolean }> {
    let sent: Promise<{ enqueued: Settled<EnqueueTaskResult> }> | undefined;
    if (this.#mayHandOver(task)) {
      this.#gift = (loopId) => {
        const both = enqueueAndClaim(this.#deps.store, task, claimNextRequest(this.#attempt, task.workerTarget, loopId));
        sent = both;
        return { claim: both.then((r) => r.claim), seen: this.#idle.wakes };
      };
      try {
        this.#send({ type: "handOver" });
      } finally {
        this.#gift = undefined;
      }
    }
    if (!sent) return { result: await store.enqueueTask(task), handed: false };
    const r = (await sent).enqueued;
    if (!r.ok) throw r.error;
    return { result: r.value, handed: true };
  }

  /** A task the hand-over may take (header): due now, for a target this pool claims without a target lease, while it runs. */
  #mayHandOver(task: EnqueueTaskRequest): boolean {
    return this.#idle.running && this.#idle.parked > 0 && (task.runAt === undefined || task.runAt <= task.now) &&
      this.#opts.targets.includes(task.workerTarget) && !isSingleConsumerTarget(task.workerTarget) &&
      this.#attempt.agentNames.includes(task.agentName);
  }

  /** A loop woken with a handed claim takes it up: "error" when the claim's answer was lost (the pool is nudged). */
  async #takeHanded(h: Handover, loopId: string): Promise<"worked" | "empty" | "error"> {
    const c = await h.claim;
    if (!c.ok) {
      this.#deps.logger.warn("worker loop error", describeStoreError(c.error, this.#deps.store.kind));
      this.nudge();
      return "error";
    }
    const r = await takeClaim(this.#attempt, c.value, loopId);
    if (r === "worked") return r;
    this.#attempt.onEmpty(r === "foreign");
    return "empty";
  }

  /** Ends the firer's sleep within `ms`; a wake while it is in a pass bounds its next sleep. */
  #wakeFirer(ms: number): void {
    this.#firerWakeAt = Math.min(this.#firerWakeAt, Date.now() + Math.max(0, ms));
    this.#firerSleep.wakeIn(ms);
  }

  /** The tick firer's loop (actors/pool/tick-firer.ts): a pass, then sleep until the next tick it read. */
  async #fireLoop(): Promise<void> {
    while (this.#idle.running) {
      this.#firerWakeAt = Infinity;
      this.#lastFirerPass = this.#deps.clock.now();
      const cap = this.#idle.listening ? this.#config.listenMaxMs : this.#config.maxWaitMs;
      let wait: number;
      try {
        const next = await this.#firer.pass();
        // No schedule of this process's definitions: no idle poll of its own beside the sentinel's (a bell or an
        // in-process put wakes it; a polling store's put by another process is seen within FIRER_NO_SCHEDULE_MS,
        // and at once by a free loop's claim, which fires due schedules too).
        wait = next === null ? Math.max(cap, FIRER_NO_SCHEDULE_MS) : Math.min(cap, Math.max(0, next - this.#deps.clock.now()));
      } catch (err) {
        this.#deps.logger.warn("tick firer error", describeStoreError(err, this.#deps.store.kind));
        wait = this.#opts.pollMs;
      }
      if (!this.#idle.running) return;
      wait = Math.min(wait, this.#firerWakeAt - Date.now());
      if (wait > 0) await this.#firerSleep.sleep(wait);
    }
  }

  #workerId(): string {
    return (this.#id ??= this.#opts.workerId());
  }

  /** Feeds one event to the idle machine and carries out its effects; answers the machine's step. */
  #send(e: IdleEvent): IdleStep {
    const r = idleTransition(this.#idle, e, this.#config);
    this.#idle = r.state;
    for (const f of r.effects) {
      if (f.type === "wakeParked") this.#parked.wakeFirst();
      else if (f.type === "handParked") this.#parked.handFirst(this.#gift!);
      else if (f.type === "wakeAllParked") this.#parked.wakeAll();
      else if (f.type === "endSleep") this.#sleep.wakeIn(0);
      else if (f.type === "shortenSleep") this.#sleep.wakeIn(f.ms);
      // "sleep" is armed by the sentinel loop itself (#sentinel), which awaits it.
    }
    return r;
  }

  /** A bell pushed by the store: `at` is now the earliest ready score of `target`. */
  #bell(target: string, at: number): void {
    this.#wakeFirer(at - this.#deps.clock.now());
    const heldElsewhere = this.#leases.heldElsewhereUntil(target) !== undefined;
    this.#send({ type: "bell", dueInMs: at - this.#deps.clock.now(), heldElsewhere });
  }

  #announce(): Promise<unknown> {
    return announceDefinitions(this.#deps, this.#reportedSets)
      .catch((err) => this.#deps.logger.debug("definition set not announced", describeStoreError(err, this.#deps.store.kind)));
  }

  /** Earliest due time over the targets, as a wait from now (ms, at least 1), or null. */
  async #dueIn(): Promise<number | null> {
    let wait: number | null = null;
    for (const t of this.#opts.targets) {
      // A single-consumer target held by another process: its bells are not ours until that lease ends.
      const at = this.#leases.heldElsewhereUntil(t) ?? (await this.#deps.store.nextReadyAt(t));
      if (at !== null) wait = Math.min(wait ?? Infinity, Math.max(1, at - this.#deps.clock.now()));
    }
    return wait;
  }

  /** Parks until a waker (or, with `ms`, at most that long); answers a claim handed over meanwhile, if any. */
  #parkNow(loopId: string, ms?: number): Promise<Handover | undefined> {
    return this.#parked.park(ms, () => void this.#send({ type: "parkTimedOut" }), loopId);
  }

  /** One claim loop: claim while there is work (or take up a claim handed to it), else do what the idle machine says. */
  async #loop(i: number): Promise<void> {
    const loopId = `${this.#workerId()}/${i}`;
    let worked = false;
    let handed: Handover | undefined;
    // Only the first loop polls at start; the others park until a claim or a wake needs them.
    if (i > 0 && this.#send({ type: "park", seen: this.#idle.wakes }).next === "park") handed = await this.#parkNow(loopId);
    // A claim handed over is taken up even when the pool stopped meanwhile: it was sent before (stop waits for it).
    while (this.#idle.running || handed) {
      const seen = handed?.seen ?? this.#idle.wakes;
      const afterWork = worked;
      try {
        if (handed) {
          const h = handed;
          handed = undefined;
          const r = await this.#takeHanded(h, loopId);
          if (r === "error") {
            worked = false;
            this.#send({ type: "parkFor" });
            handed = await this.#parkNow(loopId, this.#opts.pollMs);
            continue;
          }
          worked = r === "worked";
        } else worked = await claimOnce(this.#attempt, loopId);
      } catch (err) {
        worked = false;
        this.#deps.logger.warn("worker loop error", describeStoreError(err, this.#deps.store.kind));
        this.#send({ type: "parkFor" });
        handed = await this.#parkNow(loopId, this.#opts.pollMs);
        continue;
      }
      if (worked || !this.#idle.running) continue;
      const noneHeldElsewhere = this.#opts.targets.every((t) => this.#leases.heldElsewhereUntil(t) === undefined);
      const r = this.#send({ type: "idle", seen, afterWork, noneHeldElsewhere });
      if (r.next === "checkDue" || r.next === "park") handed = await this.#idleSibling(r.next, seen, loopId);
      else if (r.next === "sentinel") await this.#sentinel(seen, r.readDue !== false);
    }
  }

  /** A loop that found nothing while another is the sentinel: tells it of a due time its claim may have set, then parks. */
  async #idleSibling(next: "checkDue" | "park", seen: number, loopId: string): Promise<Handover | undefined> {
    if (next === "checkDue") {
      // The claim just run may have set a due time (a retry backoff, a runnableAt): the sentinel,
      // asleep since before it, must not sleep past it.
      try {
        this.#send({ type: "due", dueInMs: await this.#dueIn() });
      } catch { /* store unreachable: the sentinel polls at its time */ }
    }
    if (this.#send({ type: "park", seen }).next === "park") return await this.#parkNow(loopId);
    return undefined;
  }

  /** The sentinel's turn: read the earliest due time, then sleep until then (at most the wait the machine chose). */
  async #sentinel(seen: number, readDue: boolean): Promise<void> {
    let dueInMs: number | null = null;
    try {
      if (readDue) dueInMs = await this.#dueIn();
    } catch { /* store unreachable: poll again after the machine's wait */ }
    const r = this.#send({ type: "sleep", seen, dueInMs });
    const arm = r.effects.find((f) => f.type === "sleep");
    if (r.next !== "sleep" || !arm) return;
    try {
      await this.#sleep.sleep(arm.ms);
    } finally {
      this.#send({ type: "woke" });
    }
  }
}
