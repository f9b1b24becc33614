/**
 * One claim attempt of the worker pool: over the pool's targets in order,
 * the first claimable agent this process has a definition for is claimed
 * and run to the end of the claim (with poison handling, actors/pool/claim-failure.ts).
 * The attempt on one target (`claimTarget`) is the one way a claim is
 * taken: a Workers drive (actors/pool/drive.ts) takes its claims with it too.
 *
 * Invariants:
 * - A single-consumer target is tried only while this process holds its
 *   lease (actors/pool/target-lease.ts).
 * - Only agents named in `agentNames` are claimed (store/port.ts invariant
 *   `definition-sets`, actors/pool/definition-sets.ts).
 * - A due schedule `claimNext` answers is fired (`fire`, one store step)
 *   and counts as work: the loop polls again at once.
 * - `onClaimed` is called before the claim runs (the pool wakes a sibling
 *   then, so a burst is taken up loop by loop); `onEmpty` after a pass that
 *   claimed nothing, saying whether it left an agent of another definition
 *   set due.
 *
 * Every turn a claim ends writes one `info` line, `turn_end` (`logTurnEnd`,
 * given to `claimRunner`, actors/pool/claim-runner.ts, so each turn of a chain
 * run in one claim gets its line): agentId, agent, turnId, status (the
 * turn's final state), steps (its model steps) and ms (the time of the claim
 * that ended it; a turn that waited for an external tool spanned several
 * claims). A turn ended because its claims kept throwing is logged by
 * `claimRunner` as `claim failure recorded` (`turn_failed`) instead.
 */
import type { ClaimNextRequest, ClaimResult, ConcurrencyLimits, ScheduleRecord, Store } from "../../store/port.ts";
import type { HostOutcome } from "../claim/context.ts";
import type { Clock, Logger } from "../runtime.ts";
import type { TargetLeases } from "./target-lease.ts";
import type { RunningDriveBudget } from "../claim/drive-budget.ts";

type Claimed = Extract<ClaimResult, { status: "claimed" }>;

/** What one claim attempt on a target needs: the pool's loops and a drive (actors/pool/drive.ts) give the same. */
export interface TargetAttemptDeps {
  store: Store;
  clock: Clock;
  leaseMs: number;
  agentNames: string[];
  /** The concurrency limits each claim keeps (store/port.ts invariant `concurrency-keys`); absent: none. */
  concurrencyLimits?: ConcurrencyLimits | undefined;
  /** Per name, the versions whose turns this process runs (store/port.ts invariant `turn-versions`, actors/host/versions.ts). */
  agentVersions?: Record<string, string[]>;
  /** Runs one claim to its end, within `driveBudget` when given; never throws (actors/pool/claim-runner.ts `claimRunner`). */
  run(claim: Claimed, workerId: string, driveBudget?: RunningDriveBudget): Promise<HostOutcome | null>;
  /** Called before a claimed agent runs. */
  onClaimed?(): void;
  /** Fires a due schedule `claimNext` answered (actors/pool/schedule-fire.ts); a store error throws, as a claim's does. */
  fire(schedule: ScheduleRecord): Promise<void>;
}

export interface ClaimAttemptDeps extends TargetAttemptDeps {
  targets: readonly string[];
  leases: TargetLeases;
  onClaimed(): void;
  onEmpty(foreign: boolean): void;
}

/**
 * What one attempt on a target did: `worked` (an agent claimed and run, or
 * a due schedule fired), `empty`, or `foreign` (empty for us, but an agent
 * only another definition set has is due there).
 */
export type TargetAttempt = "worked" | "empty" | "foreign";

/** The `turn_end` line of a claim that ended a turn; nothing for one that did not. */
export function logTurnEnd(logger: Logger, claim: Claimed, out: HostOutcome, ms: number): void {
  if (out.status !== "released" || !out.ended) return;
  const { turnId, status, steps } = out.ended;
  logger.info("turn_end", { agentId: claim.agentId, agent: claim.head.agentName, turnId, status, steps, ms });
}

/**
 * One claim attempt on one target: the next claimable agent this process
 * has a definition for is claimed and run to the end of the claim (within
 * `driveBudget` when given), or the due schedule `claimNext` answered is fired.
 * The one way a claim is taken: the pool's loops (`claimOnce`) and a drive
 * (actors/pool/drive.ts) both call it.
 */
export async function claimTarget(
  deps: TargetAttemptDeps, target: string, workerId: string, driveBudget?: RunningDriveBudget,
): Promise<TargetAttempt> {
  return takeClaim(deps, await deps.store.claimNext(claimNextRequest(deps, target, workerId)), workerId, driveBudget);
}

/** The `claimNext` of one attempt on `target` (a loop's own, or the one a route sends with its enqueue: actors/pool/pool.ts). */
export function claimNextRequest(deps: TargetAttemptDeps, target: string, workerId: string): ClaimNextRequest {
  return {
    workerTarget: target, workerId, leaseMs: deps.leaseMs, now: deps.clock.now(), agentNames: deps.agentNames,
    ...(deps.concurrencyLimits ? { concurrencyLimits: deps.concurrencyLimits } : {}),
    ...(deps.agentVersions ? { agentVersions: deps.agentVersions } : {}),
  };
}

/**
 * What a `claimNext` answered, taken up: a claimed agent run to the end of the claim, a due schedule
 * fired, or nothing. The same for a loop's own claim and for one handed over (actors/pool/pool.ts).
 */
export async function takeClaim(deps: TargetAttemptDeps, c: ClaimResult, workerId: string, driveBudget?: RunningDriveBudget): Promise<TargetAttempt> {
  // A due schedule (store/port.ts invariant `schedule-tick-once`): one step of it is work done.
  if (c.status === "schedule_due") {
    await deps.fire(c.schedule);
    return "worked";
  }
  if (c.status === "claimed") {
    deps.onClaimed?.();
    await deps.run(c, workerId, driveBudget);
    return "worked";
  }
  return c.status === "empty" && (c.foreign ?? 0) > 0 ? "foreign" : "empty";
}

/** One claim attempt over all targets; true when an agent was claimed and run. */
export async function claimOnce(deps: ClaimAttemptDeps, loopId: string): Promise<boolean> {
  let foreign = false;
  for (const target of deps.targets) {
    if (!(await deps.leases.mayConsume(target))) continue;
    const r = await claimTarget(deps, target, loopId);
    if (r === "worked") return true;
    if (r === "foreign") foreign = true;
  }
  deps.onEmpty(foreign);
  return false;
}
