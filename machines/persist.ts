/**
 * Persisted snapshots: checked and migrated on read, never restored into the
 * wrong state. A snapshot is the JSON of `actor.getPersistedSnapshot()`; its
 * context carries `schemaVersion`.
 *
 * Written without XState's walk: `persistedOf(snapshot)` builds the persisted
 * form from the actor's current snapshot. Invariant: for every snapshot of
 * the agent machine, `persistedOf(s)` deep-equals
 * `agentMachine.getPersistedSnapshot(s)` (same keys in the same order, so
 * the same JSON text) and restores to the same state. It holds because the
 * machine invokes and spawns nothing (`children` is empty), has no history
 * states (`historyValue` is empty) and its context is plain data from events
 * (no actor references to replace); XState's form is then the snapshot's own
 * `status`, `output`, `error`, `value`, `historyValue` and `context` (the
 * same object, not a copy) plus empty `children`. A snapshot with children
 * or a history value is handed to XState instead, so the equality holds even
 * if the machine gains either. tests/machines/machine-persisted-of.test.ts checks it
 * on every path of the model-based walk.
 */
import { createActor, type SnapshotFrom } from "xstate";
import { SnapshotError } from "../errors/errors.ts";
import { agentMachine } from "./agent.ts";
import { AGENT_OUTPUT, type AgentContext, type CompletionTool, SNAPSHOT_SCHEMA_VERSION, STATES, SUBMIT_RESULT } from "./types.ts";

export type PersistedSnapshot = {
  status: string;
  value: string;
  context: AgentContext;
  [k: string]: unknown;
};

/** What the reader knows about the agent that will run the snapshot. */
export interface RestoreHints {
  /** The completion tool the agent's definition offers now (actors/steps/tool-specs.ts `completionToolOf`). */
  completion?: CompletionTool;
}

type Migration = (ctx: Record<string, unknown>, state: string, hints: RestoreHints) => Record<string, unknown>;

/**
 * Version 1 -> 2: the turn config gains `completion`, the candidate `from`.
 *
 * Version 1 let either completion tool finish any turn, so the config does
 * not say which one the turn offered. The upgrade must not hand an in-flight
 * turn a way around the gate, so it picks `agent_output` (finish through the
 * verifier only) whenever anything says the turn may be gated: the v1 config
 * requires `agent_output` (`mustEndWith`), the turn has a candidate or is in
 * `verifying` / `revising`, or the reader cannot tell (no hint). Only when
 * the reader runs the agent and its definition offers `submit_result` (it
 * declares no `output`) does the turn keep finishing with `submit_result`,
 * which is what its model is offered from then on anyway. Every v1 candidate
 * came from an `agent_output` call.
 */
function migrate1to2(ctx: Record<string, unknown>, state: string, hints: RestoreHints): Record<string, unknown> {
  const config = (ctx.config && typeof ctx.config === "object" ? ctx.config : {}) as Record<string, unknown>;
  const verification = (ctx.verification && typeof ctx.verification === "object" ? ctx.verification : {}) as Record<string, unknown>;
  const candidate = verification.candidate as Record<string, unknown> | null | undefined;
  const mustEndWith = Array.isArray(config.mustEndWith) ? config.mustEndWith : [];
  const gatedSigns = mustEndWith.includes(AGENT_OUTPUT) || (candidate !== null && candidate !== undefined) ||
    state === "verifying" || state === "revising";
  const completion: CompletionTool = !gatedSigns && hints.completion === SUBMIT_RESULT ? SUBMIT_RESULT : AGENT_OUTPUT;
  return {
    ...ctx,
    schemaVersion: 2,
    config: { ...config, completion },
    verification: {
      ...verification,
      candidate: candidate && typeof candidate === "object" ? { ...candidate, from: "agent_output" } : null,
    },
  };
}

/** Upgrades, keyed by the version they upgrade from. Add one per schema bump. */
const MIGRATIONS: Record<number, Migration> = { 1: migrate1to2 };

/**
 * Validates a stored snapshot and migrates it to the current schema version.
 * `hints` describe the agent that will run it (the actor host passes them);
 * without them an upgrade takes the conservative choice (see migrate1to2).
 */
export function checkSnapshot(raw: unknown, hints: RestoreHints = {}): PersistedSnapshot {
  if (!raw || typeof raw !== "object") throw new SnapshotError("Cannot restore agent: snapshot is not an object");
  const s = raw as Record<string, unknown>;
  if (typeof s.value !== "string" || !(STATES as readonly string[]).includes(s.value)) {
    throw new SnapshotError(`Cannot restore agent: unknown state ${JSON.stringify(s.value)}`);
  }
  let ctx = s.context as Record<string, unknown> | undefined;
  if (!ctx || typeof ctx !== "object") throw new SnapshotError("Cannot restore agent: snapshot has no context");
  let v = ctx.schemaVersion;
  while (typeof v === "number" && v < SNAPSHOT_SCHEMA_VERSION && MIGRATIONS[v]) {
    ctx = MIGRATIONS[v](ctx, s.value, hints);
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

/** The initial state's persisted form, computed once (an actor created for nothing per new agent cost about 2 % of a step). */
let initial: PersistedSnapshot | undefined;

/**
 * The persisted form of the machine's initial state: a fresh copy each call (the caller may hand it to an actor that
 * moves on). The initial context is a constant (machines/agent.ts `initialContext`), so a copy of the first one is it.
 */
export function initialPersisted(): PersistedSnapshot {
  initial ??= createActor(agentMachine).getPersistedSnapshot() as unknown as PersistedSnapshot;
  return structuredClone(initial);
}

/**
 * The persisted form of `s` without XState's context walk (see the header:
 * equal to `agentMachine.getPersistedSnapshot(s)`). The context is shared,
 * not copied, as XState shares it: encode it before the actor moves on.
 */
export function persistedOf(s: AgentSnapshot): PersistedSnapshot {
  for (const _ in s.children) return agentMachine.getPersistedSnapshot(s) as unknown as PersistedSnapshot;
  for (const _ in s.historyValue) return agentMachine.getPersistedSnapshot(s) as unknown as PersistedSnapshot;
  return {
    status: s.status,
    output: s.output,
    error: s.error,
    value: s.value as string,
    historyValue: {},
    context: s.context,
    children: {},
  };
}
