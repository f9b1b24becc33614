/**
 * A drive: the worker pool's work done in one bounded piece, for runtimes
 * with no process that lives on (Cloudflare Workers, `workers.ts`). Where
 * the pool's loops run until stopped, a drive runs inside one invocation,
 * within a drive budget (steps and wall time, actors/claim/drive-budget.ts), and
 * says whether it stopped with work left.
 *
 * Invariants:
 * - One driver. A drive claims with the pool's own claim attempt on a
 *   target (`claimTarget`, actors/pool/claim-attempt.ts: `claimNext` with
 *   this process's definitions, a due schedule fired, a claimed agent run)
 *   and runs every claim through the same `claimRunner`
 *   (actors/pool/claim-runner.ts: poison handling, turn chaining, the
 *   `turn_end` line). Nothing of a claim runs another way on Workers.
 * - Bounded. The drive budget is checked before every claim and at every step
 *   boundary inside one (the hand-back: the commit that ends the step
 *   releases the lease, due at once); a drive never leaves an agent under a
 *   lease except while a step runs. It answers true only when the budget
 *   stopped it with work left (a rung agent handed back, or a pass over the
 *   targets that still found work).
 * - Order of a drive: when any due agent may be driven (`any`: a watchdog
 *   tick, a cron run), a tick firer pass first (actors/pool/tick-firer.ts:
 *   every due schedule tick enqueued before any turn runs, `liveFrom` the
 *   start of the drive); then each rung agent (`claim` by id, driven again
 *   while it hands back at the drive budget); then, with `any`, passes over every
 *   target, each claiming at most one agent per target, until a pass finds
 *   nothing (targets take turns, none starves the others).
 * - A drive never throws: a store outage mid-drive is logged (`drive
 *   failed`) and answers false (the lease of the claim it held expires; the
 *   next drive or the cron goes on). Whatever happened, it ends by writing
 *   the tool registry's batched call counts (actors/registry/writer.ts: no
 *   timer outlives an invocation).
 * - Worker ids: each drive claims as `<workerId>/d<n>`, n counting the
 *   drives of this driver, so two drives of one isolate never share a lease
 *   owner.
 */
import type { ClaimResult } from "../../store/port.ts";
import type { HostDeps } from "../claim/context.ts";
import { driveBudgetSpent, type DriveBudget, type RunningDriveBudget, startDriveBudget } from "../claim/drive-budget.ts";
import { claimTarget, logTurnEnd, type TargetAttemptDeps } from "./claim-attempt.ts";
import { claimRunner } from "./claim-runner.ts";
import { fireDueSchedule } from "./schedule-fire.ts";
import { TickFirer } from "./tick-firer.ts";
import { claimableVersions } from "../host/versions.ts";

type Claimed = Extract<ClaimResult, { status: "claimed" }>;

/** What rang during one request: the agents to drive, or any due agent (after a watchdog tick, a cron run). */
export interface DriveBells {
  agents: ReadonlySet<string>;
  any: boolean;
}

export interface DriverOptions {
  /** Worker targets a drive claims from, in order. */
  targets: string[];
  /** This isolate's worker id, asked for once, on the first drive (no randomness at module scope on Workers). */
  workerId: () => string;
  /** Turn ids of the tasks that schedule ticks enqueue. */
  turnId: () => string;
}

export interface Driver {
  /** One drive within `limit`; true when the budget stopped it with work left. Never throws. */
  drive(bells: DriveBells, limit: DriveBudget): Promise<boolean>;
}

/**
 * @example
 * const driver = createDriver(built.deps, { targets: built.targets, workerId: () => id, turnId: () => ids.turnId() });
 * const left = await driver.drive({ agents: new Set(["a1"]), any: false }, { steps: 10, ms: 20_000 });
 */
export function createDriver(deps: HostDeps, opts: DriverOptions): Driver {
  const runner = claimRunner(deps, (c, out, ms) => logTurnEnd(deps.logger, c, out, ms));
  const agentNames = [...deps.agents.keys()];
  const agentVersions = claimableVersions(deps);
  let drives = 0;
  let id: string | undefined;

  /** The claim attempt of one drive: the pool's, its schedules planned from this drive's `liveFrom`. */
  const attemptOf = (firer: TickFirer | null): TargetAttemptDeps => ({
    store: deps.store,
    clock: deps.clock,
    leaseMs: deps.leaseMs,
    concurrencyLimits: deps.concurrencyLimits,
    // Only agents this deployment defines (store/port.ts invariant `definition-sets`): another one's stay due for its workers.
    agentNames,
    agentVersions,
    run: (claim: Claimed, workerId: string, driveBudget?: RunningDriveBudget) => runner.run(claim, workerId, driveBudget),
    fire: async (schedule) => void (await fireDueSchedule(deps, schedule, opts.turnId(), firer?.liveFrom)),
  });

  /** Claims `agentId` and runs it until it needs nothing more or the budget is spent; true when the budget stopped it. */
  async function driveAgent(agentId: string, driveBudget: RunningDriveBudget, workerId: string): Promise<boolean> {
    while (!driveBudgetSpent(driveBudget, deps.clock)) {
      const c = await deps.store.claim({
        agentId, workerId, leaseMs: deps.leaseMs, now: deps.clock.now(), ...(deps.concurrencyLimits ? { concurrencyLimits: deps.concurrencyLimits } : {}),
      });
      // busy: the holder goes on (and hands back at a step boundary when it sees new mail); empty: nothing to do.
      if (c.status !== "claimed") return false;
      const out = await runner.run(c, workerId, driveBudget);
      // null: the claim threw; it was counted and the agent is offered again after a backoff.
      if (out === null || out.status !== "released" || !out.yielded) return false;
    }
    return true;
  }

  /** Passes over every target, one claim each, until a pass finds nothing or the budget is spent; true when the budget stopped it. */
  async function drainDue(attempt: TargetAttemptDeps, driveBudget: RunningDriveBudget, workerId: string): Promise<boolean> {
    for (;;) {
      if (driveBudgetSpent(driveBudget, deps.clock)) return true;
      let worked = false;
      for (const target of opts.targets) {
        if (driveBudgetSpent(driveBudget, deps.clock)) return true;
        if ((await claimTarget(attempt, target, workerId, driveBudget)) === "worked") worked = true;
      }
      if (!worked) return false;
    }
  }

  return {
    async drive(bells, limit) {
      const driveBudget = startDriveBudget(limit, deps.clock);
      const workerId = `${(id ??= opts.workerId())}/d${++drives}`;
      let left = false;
      try {
        // Every due tick first, the enqueue only: turns driven below cannot hold a tick back.
        const firer = bells.any ? new TickFirer({ ...deps, targets: opts.targets, agentNames, turnId: opts.turnId }) : null;
        await firer?.pass();
        for (const agentId of bells.agents) left = (await driveAgent(agentId, driveBudget, workerId)) || left;
        if (bells.any) left = (await drainDue(attemptOf(firer), driveBudget, workerId)) || left;
      } catch (err) {
        // A store outage mid-drive: the claim's lease expires and the next drive (or the cron) goes on.
        deps.logger.error("drive failed", { error: String((err as Error)?.stack ?? err) });
        return false;
      } finally {
        // Inside ctx.waitUntil: the tool registry's batched counts are written before the invocation ends (never throws).
        await deps.registryWriter?.flush();
      }
      return left;
    },
  };
}
