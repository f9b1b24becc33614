/**
 * Options renamed so that one word means one thing: a spend limit is
 * `spendLimit` (was `budget`), what one Workers drive may spend is
 * `driveBudget`/`scheduledDriveBudget` (was `budget`/`scheduledBudget`), the
 * verifier gate's attempts are `verifyAttempts` (was `verifyMaxAttempts`),
 * the model steps of one turn are `stepLimit` (was `maxStepsPerTurn`).
 *
 * Invariant: an old name is refused, never read: a config that gives one
 * fails with a DefinitionError naming the new name (CHANGELOG.md), whatever
 * the value, so a config never means something other than it says.
 * Stored tasks keep their stored field names (store/types.ts `TaskOptions`);
 * this is about the options a program passes, not about stored data.
 * @module
 */
import { DefinitionError } from "../errors/errors.ts";

/** Renamed option keys: new name -> old name (the old one refused). */
export const RENAMED_AGENT_KEYS = { spendLimit: "budget", verifyAttempts: "verifyMaxAttempts", stepLimit: "maxStepsPerTurn" } as const;
export const RENAMED_OUTPUT_KEYS = { verifyAttempts: "verifyMaxAttempts" } as const;
export const RENAMED_WORKERS_KEYS = { driveBudget: "budget", scheduledDriveBudget: "scheduledBudget" } as const;

/** Throws a DefinitionError when `config` gives an old name of `renamed` (`where` starts the message). */
export function refuseRenamed(config: object, renamed: Readonly<Record<string, string>>, where: string, keyPrefix = ""): void {
  for (const [name, old] of Object.entries(renamed)) {
    if ((config as Record<string, unknown>)[old] === undefined) continue;
    throw new DefinitionError(
      `${where}: ${keyPrefix}${old} was renamed ${keyPrefix}${name} (CHANGELOG.md); give ${keyPrefix}${name}`,
      { key: `${keyPrefix}${old}` },
    );
  }
}
