/**
 * Results of in-process tool calls that this process ran and has not yet
 * seen committed, kept so that a later claim in the same process commits
 * them instead of running the tool again.
 *
 * A claim can lose its lease after a tool returned and before the result's
 * commit applied, without the process dying: renewals and the commit are
 * refused or unanswered while a Redis Cluster fails over, or the commit
 * throws. The call stays recorded and unresolved in the store, and the next
 * claim of the agent meets it again. When that claim runs in the same
 * process, it takes the kept result (actors/steps/tool-runner.ts) and commits it;
 * the tool does not run twice in one living process.
 *
 * Invariants:
 * - Keyed by (agent, turn, tool-call id). An entry is only ever used for
 *   a call of that key that the claim's restored snapshot holds as pending
 *   (recorded, unresolved); the result is the one the tool returned for
 *   exactly that call.
 * - Kept: results of a tool that actually ran (returned, threw, or outlived
 *   its deadline), except a throw once the attempt's abort had fired (the
 *   tool stopped because the lease was gone: it runs again, as after a
 *   pause). Refusals that never reached the tool (not offered, bad
 *   arguments, a lapsed lease at the start) are not kept: computing them
 *   again runs nothing.
 * - Dropped once a commit that resolves the call applied, or a commit that
 *   ends the turn. Using an entry does not drop it: a claim that uses it
 *   and loses the agent too before its commit applied leaves it for the
 *   next one.
 * - Bounded: at most `max` entries, the oldest dropped first. A dropped
 *   entry only means the tool may run again, as it did before this cache.
 * - An entry whose call was resolved elsewhere (the watchdog's timeout, a
 *   claim in another process, a turn ended by a reset or by claim failures)
 *   is never used, since no claim meets that call as pending again; it
 *   leaves with the bound.
 */
import type { ContractValidation } from "../../common/contract-validation.ts";
import type { AfterExecution, Outcome } from "../../common/outcome.ts";

/** One kept result: what the call's commit would have carried. */
export interface KeptResult {
  outcome: Outcome;
  afterExecution: AfterExecution;
  contractValidation: ContractValidation;
}

export interface KeptResults {
  /** Keeps the result of a call the process ran. */
  keep(agentId: string, turnId: string, toolCallId: string, result: KeptResult): void;
  /** The kept result of a call (undefined: none). */
  get(agentId: string, turnId: string, toolCallId: string): KeptResult | undefined;
  /** Drops the results of these calls (a commit that resolved them applied). */
  drop(agentId: string, turnId: string, toolCallIds: readonly string[]): void;
  /** Drops every result of a turn (a commit that ended it applied). */
  dropTurn(agentId: string, turnId: string): void;
  /** Entries kept now. */
  readonly size: number;
}

/** Default bound of kept results per process. */
export const DEFAULT_KEPT_RESULTS = 1_000;

const keyOf = (agentId: string, turnId: string, toolCallId: string) => JSON.stringify([agentId, turnId, toolCallId]);
const turnOf = (agentId: string, turnId: string) => JSON.stringify([agentId, turnId]);

/** A process's kept results, at most `max` (oldest dropped first). */
export function keptResults(max = DEFAULT_KEPT_RESULTS): KeptResults {
  // Insertion order is age order: a Map drops its first key when full.
  const entries = new Map<string, { turn: string; result: KeptResult }>();
  return {
    keep(agentId, turnId, toolCallId, result) {
      const key = keyOf(agentId, turnId, toolCallId);
      entries.delete(key);
      entries.set(key, { turn: turnOf(agentId, turnId), result });
      while (entries.size > max) entries.delete(entries.keys().next().value!);
    },
    get(agentId, turnId, toolCallId) {
      return entries.get(keyOf(agentId, turnId, toolCallId))?.result;
    },
    drop(agentId, turnId, toolCallIds) {
      for (const id of toolCallIds) entries.delete(keyOf(agentId, turnId, id));
    },
    dropTurn(agentId, turnId) {
      const turn = turnOf(agentId, turnId);
      for (const [key, e] of entries) if (e.turn === turn) entries.delete(key);
    },
    get size() {
      return entries.size;
    },
  };
}
