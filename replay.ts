/**
 * `@gatehouse-runtime/core/replay`: one run, exported and served again.
 * `exportReplayBundle` writes an agent's run as one JSON value,
 * `loadReplayBundle` puts it into a store, and `createReplayGatehouse` is a
 * gatehouse over it, for offline debugging.
 *
 * createReplayGatehouse(): a gatehouse over one exported run.
 * The bundle (routes/replay-bundle.ts) is loaded into a fresh memory store
 * and the usual app serves it: `GET /v1/agents/<id>`, its events, history,
 * fork and what-if answer as they did where the run was recorded. Workers
 * run only for definitions given in `agents`; without them the agent is
 * read-only in practice (a fork or a delivered result waits for a worker
 * that knows its definition).
 *
 * @example
 * const gh = await createReplayGatehouse(JSON.parse(await Deno.readTextFile("a1.replay.json")), { agents: [support] });
 * Deno.serve(gh.fetch);
 * @module
 */
import { buildGatehouse, type Gatehouse, type GatehouseOptions } from "./gatehouse.ts";
import { memoryStore } from "./store/memory.ts";
import { loadReplayBundle } from "./routes/replay-bundle.ts";

export { exportReplayBundle, loadReplayBundle, REPLAY_BUNDLE_SCHEMA_VERSION } from "./routes/replay-bundle.ts";
export type { ReplayBundleV1 } from "./routes/replay-bundle.ts";
export { ReplayBundleError } from "./errors/replay.ts";

/** A gatehouse over the run in `bundle` (a fresh memory store); `agentId` is the run's agent. */
export async function createReplayGatehouse(
  bundle: unknown,
  options: Omit<GatehouseOptions, "store" | "agents"> & { agents?: GatehouseOptions["agents"] } = {},
): Promise<Gatehouse & { agentId: string }> {
  const store = memoryStore();
  const { agentId } = loadReplayBundle(store, bundle);
  const gh = buildGatehouse({ ...options, agents: options.agents ?? [], store }, { allowNoAgents: true }).gatehouse;
  return Object.assign(gh, { agentId });
}
