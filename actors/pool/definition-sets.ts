/**
 * Deployments with different agent definitions on one key space (store
 * prefix). Invariant: a worker claims only agents it has a definition for
 * (`claimNext` with `agentNames`, store/port.ts invariant `definition-sets`), so an agent
 * that only another deployment defines stays due for that deployment's
 * workers instead of being held by a lease this worker cannot use.
 *
 * Each worker pool records its definition set (its agent names) in the store
 * when it starts and every `DEFINITION_SET_HEARTBEAT_MS`; a record not
 * renewed within `DEFINITION_SET_TTL_MS` is dropped. The pool logs a warning
 * (`store prefix shared with another definition set`) for each other set it
 * learns of: at start, and when a new one appears later (docs/operations.md,
 * "Several deployments on one Redis").
 */
import type { Logger } from "../runtime.ts";
import type { DefinitionSetRecord, LiveSets, Store } from "../../store/port.ts";
import type { AnyAgent } from "../../agents/define.ts";
import { ownVersions } from "../host/versions.ts";
import { READ_FORMATS } from "../../store/formats.ts";

/** A record older than this is dropped (ms): a few missed heartbeats. */
export const DEFINITION_SET_TTL_MS = 15 * 60_000;
/** How often a running pool renews its record (ms). */
export const DEFINITION_SET_HEARTBEAT_MS = 5 * 60_000;

export interface DefinitionSetDeps {
  store: Store;
  logger: Logger;
  clock: { now(): number };
  agents: ReadonlyMap<string, AnyAgent>;
  versions?: ReadonlyMap<string, readonly AnyAgent[]>;
  liveSets?: LiveSets;
}

/** Announces this process's definition set and warns once per other set; `reported` keeps the sets already warned about. */
export async function announceDefinitions(deps: DefinitionSetDeps, reported: Set<string>): Promise<DefinitionSetRecord[]> {
  const own = [...deps.agents.keys()].sort();
  const { others } = await deps.store.announceDefinitionSet({
    agents: own, versions: ownVersions(deps), formats: [...READ_FORMATS], now: deps.clock.now(), ttlMs: DEFINITION_SET_TTL_MS,
  });
  if (deps.liveSets) deps.liveSets.others = others;
  for (const o of others) {
    const key = o.agents.join(",");
    // The same names with other versions or formats: another build of this deployment (a rolling upgrade), no warning.
    if (key === own.join(",")) continue;
    if (reported.has(key)) continue;
    reported.add(key);
    deps.logger.warn("store prefix shared with another definition set", {
      agents: own,
      otherAgents: o.agents,
      onlyHere: own.filter((n) => !o.agents.includes(n)),
      onlyThere: o.agents.filter((n) => !own.includes(n)),
      otherSeenAt: new Date(o.seenAt).toISOString(),
    });
  }
  return others;
}

/** Withdraws this process's record (a pool that stops: store/port.ts invariant `definition-sets`), so it no longer counts as live. */
export async function withdrawDefinitions(deps: DefinitionSetDeps): Promise<void> {
  const own = [...deps.agents.keys()].sort();
  await deps.store.announceDefinitionSet({
    agents: own, versions: ownVersions(deps), formats: [...READ_FORMATS], now: deps.clock.now(), ttlMs: DEFINITION_SET_TTL_MS, withdraw: true,
  });
}
