/**
 * Definition versions as routes see them (docs/operations.md, "Upgrades"):
 * whether a live process runs turns of a version (this one, or another whose
 * definition set this process's pool last heard of, store/port.ts invariant
 * `definition-sets`); `GET /v1/versions` (verb `read`): per definition
 * name, the versions of this process and of the live sets it knows of, and
 * the active turns pinned to each, running (a live process has the version
 * or upgrades from it) or waiting.
 */
import { z } from "@hono/zod-openapi";
import type { AgentIndexEntry } from "../store/port.ts";
import { pinnedVersion } from "../store/types.ts";
import { tenantsOf } from "./auth.ts";
import { defineRoute, json, routeApp } from "./define.ts";
import type { RouteRuntime } from "./runtime.ts";

/**
 * True when this process, or a live set it knows of, has `version` of `name` (or, here, upgrades from it), and
 * when neither this process nor a set it knows of serves `name` at all (it cannot tell).
 */
export function versionLive(rt: Pick<RouteRuntime, "agents" | "versions" | "liveSets">, name: string, version: string): boolean {
  const defs = rt.versions?.get(name) ?? (rt.agents.get(name) ? [rt.agents.get(name)!] : []);
  if (defs.some((d) => d.version === version || d.upgradeFrom.includes(version))) return true;
  const sets = (rt.liveSets?.others ?? []).filter((s) => s.agents.includes(name));
  // Judged among the processes known to serve the name: with none (a replay, a process without that definition
  // that heard of no set with it) nothing says the turn waits.
  if (defs.length === 0 && sets.length === 0) return true;
  return sets.some((s) => s.versions?.[name]?.includes(version) === true);
}

/** Index entries `GET /v1/versions` and the `/metrics` gauge read at most (the most recently updated agents). */
export const VERSION_SCAN = 1_000;

/** Active turns per (name, pinned version) among the most recently updated agents (at most VERSION_SCAN read). */
export async function pinnedTurns(
  rt: Pick<RouteRuntime, "store">,
  keep: (agentId: string) => boolean = () => true,
): Promise<{ counts: Map<string, Map<string, number>>; scanned: number; complete: boolean }> {
  const counts = new Map<string, Map<string, number>>();
  let after: AgentIndexEntry | undefined;
  let scanned = 0;
  for (;;) {
    const want = Math.min(200, VERSION_SCAN - scanned);
    if (want <= 0) return { counts, scanned, complete: false };
    const page = await rt.store.listAgents({ limit: want, ...(after ? { after } : {}) });
    const heads = await Promise.all(page.filter((e) => keep(e.agentId)).map((e) => rt.store.getAgent(e.agentId)));
    scanned += page.length;
    for (const h of heads) {
      const pin = h ? pinnedVersion(h) : null;
      if (!h || pin === null) continue;
      const byVersion = counts.get(h.agentName) ?? new Map<string, number>();
      byVersion.set(pin, (byVersion.get(pin) ?? 0) + 1);
      counts.set(h.agentName, byVersion);
    }
    if (page.length < want) return { counts, scanned, complete: true };
    after = page[page.length - 1];
  }
}

/** How many of those turns wait for a version no live process has (the `/metrics` gauge). */
export function waitingTurns(rt: Pick<RouteRuntime, "agents" | "versions" | "liveSets">, counts: Map<string, Map<string, number>>): number {
  let n = 0;
  for (const [name, byVersion] of counts) for (const [v, k] of byVersion) if (!versionLive(rt, name, v)) n += k;
  return n;
}

const VersionsView = z.object({
  definitions: z.array(z.object({
    name: z.string(),
    current: z.string().nullable().describe("The version new turns of this process start under; null: not registered here"),
    versions: z.array(z.object({
      version: z.string(),
      here: z.boolean().describe("Registered in this process"),
      processes: z.int().describe("Other live processes whose definition set lists it"),
      runningTurns: z.int().describe("Active turns pinned to it that a live process runs"),
      waitingTurns: z.int().describe("Active turns pinned to it that wait: no live process has it (nor upgrades from it)"),
    })),
  })),
  scanned: z.int().describe("Agents read (the most recently updated first)"),
  complete: z.boolean().describe("False when more agents exist than one request reads (1 000): the turn counts cover the newest ones"),
}).openapi("Versions");

const versionsRoute = defineRoute({
  method: "get",
  path: "/v1/versions",
  operationId: "listVersions",
  summary: "Definition versions: registered by live processes, and the turns running or waiting under each",
  tags: ["operations"],
  responses: { 200: json("The versions", VersionsView) },
}, [], "read");

export function versionRoutes(rt: RouteRuntime) {
  return routeApp(rt).openapi(versionsRoute, async (c) => {
    const tenants = tenantsOf(c);
    const { counts, scanned, complete } = await pinnedTurns(rt, (id) => tenants === null || tenants.some((p) => id.startsWith(p)));
    const names = new Set<string>([...rt.agents.keys(), ...counts.keys()]);
    for (const s of rt.liveSets?.others ?? []) for (const n of Object.keys(s.versions ?? {})) names.add(n);
    const definitions = [...names].sort().map((name) => {
      const here = rt.versions?.get(name) ?? (rt.agents.get(name) ? [rt.agents.get(name)!] : []);
      const all = new Set<string>(here.map((d) => d.version));
      for (const s of rt.liveSets?.others ?? []) for (const v of s.versions?.[name] ?? []) all.add(v);
      for (const v of counts.get(name)?.keys() ?? []) all.add(v);
      return {
        name,
        current: here[0]?.version ?? null,
        versions: [...all].map((version) => {
          const turns = counts.get(name)?.get(version) ?? 0;
          const live = versionLive(rt, name, version);
          return {
            version,
            here: here.some((d) => d.version === version),
            processes: (rt.liveSets?.others ?? []).filter((s) => s.versions?.[name]?.includes(version)).length,
            runningTurns: live ? turns : 0,
            waitingTurns: live ? 0 : turns,
          };
        }),
      };
    });
    return c.json({ definitions, scanned, complete }, 200);
  });
}
