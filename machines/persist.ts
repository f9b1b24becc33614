/**
 * Persisted snapshots: checked and migrated on read, never restored into the
 * wrong state. A snapshot is the JSON of `actor.getPersistedSnapshot()`; its
 * context carries `schemaVersion`.
 */
import { createActor, type SnapshotFrom } from "xstate";
import { SnapshotError } from "../errors/errors.ts";
import { agentMachine } from "./agent.ts";
import { type AgentContext, SNAPSHOT_SCHEMA_VERSION, STATES } from "./types.ts";

export type PersistedSnapshot = {
  status: string;
  value: string;
  context: AgentContext;
  [k: string]: unknown;
};

/** Upgrades, keyed by the version they upgrade from. Add one per schema bump. */
const MIGRATIONS: Record<number, (ctx: Record<string, unknown>) => Record<string, unknown>> = {};

/** Validates a stored snapshot and migrates it to the current schema version. */
export function checkSnapshot(raw: unknown): PersistedSnapshot {
  if (!raw || typeof raw !== "object") throw new SnapshotError("Cannot restore agent: snapshot is not an object");
  const s = raw as Record<string, unknown>;
  if (typeof s.value !== "string" || !(STATES as readonly string[]).includes(s.value)) {
    throw new SnapshotError(`Cannot restore agent: unknown state ${JSON.stringify(s.value)}`);
  }
  let ctx = s.context as Record<string, unknown> | undefined;
  if (!ctx || typeof ctx !== "object") throw new SnapshotError("Cannot restore agent: snapshot has no context");
  let v = ctx.schemaVersion;
  while (typeof v === "number" && v < SNAPSHOT_SCHEMA_VERSION && MIGRATIONS[v]) {
    ctx = MIGRATIONS[v](ctx);
    v = ctx.schemaVersion;
  }
  if (v !== SNAPSHOT_SCHEMA_VERSION) {
    throw new SnapshotError(
      `Cannot restore agent: snapshot schema version ${JSON.stringify(v)} is not supported (current: ${SNAPSHOT_SCHEMA_VERSION})`,
    );
  }
  return { ...s, context: ctx } as unknown as PersistedSnapshot;
}

export type AgentSnapshot = SnapshotFrom<typeof agentMachine>;

/** The persisted form of the machine's initial state. */
export function initialPersisted(): PersistedSnapshot {
  const a = createActor(agentMachine);
  return a.getPersistedSnapshot() as unknown as PersistedSnapshot;
}
