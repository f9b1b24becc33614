/**
 * Options renamed so that one word means one thing (docs/api.md,
 * "Deprecations"): a spend limit is `spendLimit` (was `budget`), what one Workers
 * drive may spend is `driveBudget` (was `budget`/`scheduledBudget`), the
 * verifier gate's attempts are `verifyAttempts` (was `verifyMaxAttempts`),
 * the model steps of one turn are `stepLimit` (was `maxStepsPerTurn`).
 *
 * The old spelling keeps working for one minor version: it is read as the
 * new one. Giving both is a DefinitionError naming both, whatever the
 * values, so a config never says two things.
 * @module
 */
import { DefinitionError } from "../errors/errors.ts";

/** Renamed option keys: new name -> old name (each old one deprecated). */
export const RENAMED_AGENT_KEYS = { spendLimit: "budget", verifyAttempts: "verifyMaxAttempts", stepLimit: "maxStepsPerTurn" } as const;
export const RENAMED_OUTPUT_KEYS = { verifyAttempts: "verifyMaxAttempts" } as const;
export const RENAMED_WORKERS_KEYS = { driveBudget: "budget", scheduledDriveBudget: "scheduledBudget" } as const;

/**
 * `config` with each new name's value under `into` (`"old"`: the old name,
 * what the code reads; `"new"`: the new one), the other name removed.
 * Throws DefinitionError when both names are given (`where` starts the message).
 */
export function readRenamed<T extends object>(
  config: T,
  renamed: Readonly<Record<string, string>>,
  where: string,
  into: "old" | "new",
  keyPrefix = "",
): T {
  let out: Record<string, unknown> | null = null;
  for (const [name, old] of Object.entries(renamed)) {
    const c = config as Record<string, unknown>;
    const hasNew = c[name] !== undefined;
    const hasOld = c[old] !== undefined;
    if (hasNew && hasOld) {
      throw new DefinitionError(
        `${where}: ${keyPrefix}${name} and ${keyPrefix}${old} are the same option (${old} is its old name): give only ${name}`,
        { key: `${keyPrefix}${name}` },
      );
    }
    if (!hasNew && !hasOld) continue;
    const [from, to] = into === "old" ? [name, old] : [old, name];
    if (c[from] === undefined) continue;
    out ??= { ...c };
    out[to] = c[from];
    delete out[from];
  }
  return (out ?? config) as T;
}
