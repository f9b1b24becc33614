/**
 * Definition versions as routes see them (docs/operations.md, "Upgrades"):
 * whether a live process runs turns of a version (this one, or another whose
 * definition set this process's pool last heard of, store/port.ts invariant
 * `definition-sets`).
 */
import type { RouteRuntime } from "./runtime.ts";

/** True when this process, or a live set it knows of, has `version` of `name` (or, here, upgrades from it). */
export function versionLive(rt: Pick<RouteRuntime, "agents" | "versions" | "liveSets">, name: string, version: string): boolean {
  const defs = rt.versions?.get(name) ?? (rt.agents.get(name) ? [rt.agents.get(name)!] : []);
  if (defs.some((d) => d.version === version || d.upgradeFrom.includes(version))) return true;
  return (rt.liveSets?.others ?? []).some((s) => s.versions?.[name]?.includes(version) === true);
}
