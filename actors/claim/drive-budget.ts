/**
 * A drive budget: how many steps and how much wall time one invocation may
 * spend driving agents (not a spend limit: that is `spendLimit`,
 * common/spend-limit.ts). Runtimes that cut an invocation short (Cloudflare
 * Workers: `waitUntil` work ends about 30 s after the response, a cron run
 * has its own limit, every store call and model call is a subrequest) give
 * each drive a budget instead of running a turn to its end.
 *
 * Invariant: the budget is checked at step boundaries, right before the
 * commit that ends a step. When it is spent, that commit releases the lease
 * with `runnableAt = now` (the agent is due again at once), so the agent is
 * handed back, never left under a lease that only its expiry would free. A
 * step that has started runs to its end: the wall-time budget is a soft
 * deadline, so it must leave room for one step (docs/runtimes.md). If the
 * platform kills the invocation in the middle of a step anyway, the lease
 * expires after `leaseMs` and the next drive takes the agent (visibility
 * timeout): nothing is lost, the step is repeated.
 */
import { DefinitionError } from "../../errors/errors.ts";
import type { Clock } from "../runtime.ts";

/** Limits of one drive (public as `DriveBudget`, createWorkersHandler's `driveBudget`). */
export interface DriveBudget {
  /** Steps (commits that end an effect: a model step, a batch of tools, a verification) before the hand-back. */
  steps: number;
  /** Wall time in ms after which no new step starts. */
  ms: number;
}

/** A running drive budget, shared by every claim of one drive. */
export interface RunningDriveBudget {
  readonly limit: DriveBudget;
  readonly startedAt: number;
  readonly deadline: number;
  stepsLeft: number;
}

export function startDriveBudget(limit: DriveBudget, clock: Clock): RunningDriveBudget {
  const startedAt = clock.now();
  return { limit, startedAt, deadline: startedAt + limit.ms, stepsLeft: limit.steps };
}

/** True when no further step may start. */
export function driveBudgetSpent(b: RunningDriveBudget, clock: Clock): boolean {
  return b.stepsLeft <= 0 || clock.now() >= b.deadline;
}

/** Checks user-supplied limits: positive integers (steps) and positive finite numbers (ms). */
export function checkDriveBudget(name: string, b: Partial<DriveBudget> | undefined, defaults: DriveBudget): DriveBudget {
  const steps = b?.steps ?? defaults.steps;
  const ms = b?.ms ?? defaults.ms;
  if (!Number.isInteger(steps) || steps < 1) throw new DefinitionError(`${name}.steps must be a positive integer, got ${steps}`);
  if (typeof ms !== "number" || !Number.isFinite(ms) || ms <= 0) throw new DefinitionError(`${name}.ms must be a positive number of milliseconds, got ${ms}`);
  return { steps, ms };
}
