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
 * Single-consumer targets (`svc1_*`, actors/target-lease.ts) are claimed
 * only while this process holds the target's lease; the pool renews it while
 * it runs and releases it when it stops.
 */
import { claimRunner } from "./claim-failure.ts";
import type { HostDeps } from "./host.ts";
import { targetLeases } from "./target-lease.ts";

export interface WorkerPoolOptions {
  targets: string[];
  concurrency: number;
  /** Longest sleep of an idle loop before it polls again (ms). */
  pollMs: number;
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
  let running = false;
  let loops: Promise<void>[] = [];
  let waiters: Array<() => void> = [];
  const nudge = () => {
    const w = waiters;
    waiters = [];
    for (const f of w) f();
  };
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        resolve();
      }
      waiters.push(done);
    });

  /** One claim attempt over all targets; true when something was processed. */
  async function once(loopId: string): Promise<boolean> {
    for (const target of opts.targets) {
      if (!(await leases.mayConsume(target))) continue;
      const c = await deps.store.claimNext({ workerTarget: target, workerId: loopId, leaseMs: deps.leaseMs, now: deps.clock.now() });
      if (c.status === "claimed") {
        await runner.run(c, loopId);
        return true;
      }
    }
    return false;
  }

  async function loop(i: number) {
    const loopId = `${workerId()}/${i}`;
    while (running) {
      let worked = false;
      try {
        worked = await once(loopId);
      } catch (err) {
        deps.logger.warn("worker loop error", { error: String(err) });
        await sleep(opts.pollMs);
        continue;
      }
      if (worked || !running) continue;
      let wait = opts.pollMs;
      try {
        for (const t of opts.targets) {
          const at = await deps.store.nextReadyAt(t);
          if (at !== null) wait = Math.min(wait, Math.max(1, at - deps.clock.now()));
        }
      } catch { /* store unreachable: poll again later */ }
      await sleep(wait);
    }
  }

  return {
    get running() {
      return running;
    },
    start() {
      if (running) return;
      running = true;
      loops = Array.from({ length: opts.concurrency }, (_, i) => loop(i));
      renewTimer = setInterval(() => void leases.renew(), Math.max(1, Math.floor(deps.leaseMs / 3)));
    },
    async stop() {
      running = false;
      if (renewTimer) clearInterval(renewTimer);
      renewTimer = undefined;
      nudge();
      await Promise.all(loops);
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
        await Promise.all(Array.from({ length: opts.concurrency }, (_, i) => one(i)));
        if (total === before) return total;
      }
    },
    nudge,
  };
}
