/**
 * One claim attempt of the worker pool: over the pool's targets in order,
 * the first claimable agent this process has a definition for is claimed
 * and run to the end of the claim (with poison handling, actors/pool/claim-failure.ts).
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
import type { ClaimResult, ScheduleRecord, Store } from "../../store/port.ts";
import type { HostOutcome } from "../claim/context.ts";
import type { Clock, Logger } from "../runtime.ts";
import type { TargetLeases } from "./target-lease.ts";

type Claimed = Extract<ClaimResult, { status: "claimed" }>;

export interface ClaimAttemptDeps {
  store: Store;
  clock: Clock;
  leaseMs: number;
  targets: readonly string[];
  agentNames: string[];
  leases: TargetLeases;
  /** Runs one claim to its end; never throws (actors/pool/claim-runner.ts `claimRunner`). */
  run(claim: Claimed, workerId: string): Promise<HostOutcome | null>;
  onClaimed(): void;
  onEmpty(foreign: boolean): void;
  /** Fires a due schedule `claimNext` answered (actors/pool/schedule-fire.ts); a store error throws, as a claim's does. */
  fire(schedule: ScheduleRecord): Promise<void>;
}

/** The `turn_end` line of a claim that ended a turn; nothing for one that did not. */
export function logTurnEnd(logger: Logger, claim: Claimed, out: HostOutcome, ms: number): void {
  if (out.status !== "released" || !out.ended) return;
  const { turnId, status, steps } = out.ended;
  logger.info("turn_end", { agentId: claim.agentId, agent: claim.head.agentName, turnId, status, steps, ms });
}

/** One claim attempt over all targets; true when an agent was claimed and run. */
export async function claimOnce(deps: ClaimAttemptDeps, loopId: string): Promise<boolean> {
  let foreign = false;
  for (const target of deps.targets) {
    if (!(await deps.leases.mayConsume(target))) continue;
    const c = await deps.store.claimNext({
      workerTarget: target, workerId: loopId, leaseMs: deps.leaseMs, now: deps.clock.now(), agentNames: deps.agentNames,
    });
    if (c.status === "empty" && (c.foreign ?? 0) > 0) foreign = true;
    // A due schedule (store/port.ts invariant `schedule-tick-once`): one step of it is work done.
    if (c.status === "schedule_due") {
      await deps.fire(c.schedule);
      return true;
    }
    if (c.status === "claimed") {
      deps.onClaimed();
      await deps.run(c, loopId);
      return true;
    }
  }
  deps.onEmpty(foreign);
  return false;
}
