/**
 * Which definition a claim runs under (store/port.ts invariant
 * `turn-versions`, agents/version.ts).
 *
 * - A turn runs under the version it started with: the head's pin
 *   (`pinnedVersion`). No pin (between turns, a turn started before versions
 *   were recorded, or one a build without versions started): the current
 *   version, the first listed in `agents`.
 * - A pinned version this process lacks is taken over by the first of the
 *   name's versions whose `upgradeFrom` lists it (`upgrade`); else the
 *   process does not run the turn: the pool never claims it (claimNext
 *   `agentVersions`), and a claim by another path hands it back at once.
 */
import type { AnyAgent } from "../../agents/define.ts";
import { pinnedVersion } from "../../store/types.ts";
import type { Claimed, HostDeps } from "../claim/context.ts";

/** The definitions of one name, current first. */
export type VersionsByName = ReadonlyMap<string, readonly AnyAgent[]>;

/** A process's definitions of `name`: its versions when registered, else the one definition. */
export function definitionsOf(deps: Pick<HostDeps, "agents" | "versions">, name: string): readonly AnyAgent[] {
  const listed = deps.versions?.get(name);
  if (listed && listed.length > 0) return listed;
  const one = deps.agents.get(name);
  return one ? [one] : [];
}

/** What a claim of `head` runs under: the definition, and the version it takes the turn over from (an upgrade), or why none. */
export type ClaimDefinition =
  | { binding: AnyAgent; upgradeFrom?: string }
  | { missing: "definition" }
  | { missing: "version"; version: string };

export function claimDefinition(deps: Pick<HostDeps, "agents" | "versions">, head: Claimed["head"]): ClaimDefinition {
  const defs = definitionsOf(deps, head.agentName);
  if (defs.length === 0) return { missing: "definition" };
  const pin = pinnedVersion(head);
  if (pin === null) return { binding: defs[0] };
  const same = defs.find((d) => d.version === pin);
  if (same) return { binding: same };
  const up = defs.find((d) => d.upgradeFrom.includes(pin));
  return up ? { binding: up, upgradeFrom: pin } : { missing: "version", version: pin };
}

/** Per name, the versions this process runs turns of: its own and those it upgrades from (claimNext `agentVersions`). */
export function claimableVersions(deps: Pick<HostDeps, "agents" | "versions">): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const name of deps.agents.keys()) {
    const vs = new Set<string>();
    for (const d of definitionsOf(deps, name)) {
      vs.add(d.version);
      for (const f of d.upgradeFrom) vs.add(f);
    }
    out[name] = [...vs];
  }
  return out;
}

/** Per name, the versions this process has, current first (announced with the definition set). */
export function ownVersions(deps: Pick<HostDeps, "agents" | "versions">): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const name of deps.agents.keys()) out[name] = definitionsOf(deps, name).map((d) => d.version);
  return out;
}
