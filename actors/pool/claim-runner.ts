/**
 * `claimRunner`: runs claims to their end with poison handling
 * (actors/pool/claim-failure.ts), what every caller of `runClaim` uses (the
 * worker pool's loops, a Workers drive: actors/pool/drive.ts).
 *
 * Invariant: `run` never throws. A claim that throws is logged, counted in
 * the store with `recordClaimFailure` (the turn fails at the bound) and
 * answered `null`; a store that cannot be reached then counts nothing.
 * A claim whose last commit took the agent's next task (turn chaining) goes
 * on with it, at most `maxChainedTurns` in a row.
 */
import type { ClaimResult } from "../../store/port.ts";
import { DEFAULT_MAX_CHAINED_TURNS, type HostDeps, type HostOutcome } from "../claim/context.ts";
import type { RunningDriveBudget } from "../claim/drive-budget.ts";
import { runClaim } from "../host/run-claim.ts";
import { markStoreErrors, recordClaimFailure } from "./claim-failure.ts";

type Claimed = Extract<ClaimResult, { status: "claimed" }>;

/**
 * Runs claims with poison handling: what every caller of `runClaim` uses
 * (the worker pool's loops, a Workers drive). A claim that throws is logged,
 * counted with `recordClaimFailure` and answered `null`; it never throws.
 *
 * @example
 * const runner = claimRunner(deps);
 * const out = await runner.run(claim, workerId); // null: the claim threw and was counted
 *
 * `onOutcome` sees every claim's outcome, each of a chain included, with the claim's time (ms).
 */
export function claimRunner(
  deps: HostDeps,
  onOutcome?: (claim: Claimed, out: HostOutcome, ms: number) => void,
): { run(claim: Claimed, workerId: string, driveBudget?: RunningDriveBudget): Promise<HostOutcome | null> } {
  // Errors thrown by store calls inside a claim are remembered, to tell an outage from poison.
  const storeErrors = new WeakSet<object>();
  const claimDeps: HostDeps = { ...deps, store: markStoreErrors(deps.store, storeErrors) };
  return {
    async run(first, workerId, driveBudget) {
      // A claim whose last commit took the agent's next task (turn chaining) goes on with it, up to the bound.
      const maxChained = deps.maxChainedTurns ?? DEFAULT_MAX_CHAINED_TURNS;
      let claim = first;
      let chainedTurns = 0;
      try {
        for (;;) {
          const startedAt = deps.clock.now();
          const out = await runClaim(claimDeps, claim, workerId, driveBudget, chainedTurns < maxChained);
          onOutcome?.(claim, out, deps.clock.now() - startedAt);
          if (out.status !== "released" || !out.chained) return out;
          claim = out.chained;
          chainedTurns++;
        }
      } catch (err) {
        deps.logger.error("claim failed", { agentId: claim.agentId, error: String((err as Error)?.stack ?? err) });
        try {
          const r = await recordClaimFailure(deps, claim, workerId, err, storeErrors);
          deps.logger.warn("claim failure recorded", { agentId: claim.agentId, ...r });
        } catch (e) {
          // The store is unreachable too: the lease runs out and the claim is retried, uncounted.
          deps.logger.warn("claim failure not recorded", { agentId: claim.agentId, error: String(e) });
        }
        return null;
      }
    },
  };
}
