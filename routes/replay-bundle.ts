/**
 * Replay bundles: one agent's run, exported whole so it can be looked at
 * offline (`GET /v1/agents/:agentId/export`, docs/debugging.md).
 *
 * A bundle holds the definition name, the machine definition, the head,
 * the whole event log, the conversation (inputs filled in), the verdict
 * records, each turn's input and the tool-call records of every turn of
 * the log, under `schemaVersion` 1. `loadReplayBundle` puts it into a
 * memory store under the same agent id, where every debugging route
 * (history, fork, what-if, the event log) answers what it answered on the
 * original store: the history of a loaded bundle replays to its head
 * (tests/routes/replay-bundle.test.ts).
 *
 * Invariant: a bundle that loads can be served. Everything the routes
 * would refuse later is refused at load, with ReplayBundleError naming the
 * part (`field`) and the reason, and nothing is written: the agent id
 * (`AGENT_ID`, the id alphabet of common/ids.ts, not `.` or `..`, the same
 * as `head.agentId`), the head's snapshot and the checkpoint's (the checks
 * and migrations of machines/persist.ts: a known state, a context, a schema
 * version this build reads or upgrades), and the head's `state` (the
 * snapshot's). A bundle of an older snapshot schema loads as it is and is
 * upgraded on read, as a stored agent is.
 */
import { z } from "zod";
import { readEventsThrough } from "../actors/replay/time-travel.ts";
import { memoryStoreImport } from "../store/memory.ts";
import type { Checkpoint, Store, TurnStatus } from "../store/port.ts";
import type { AgentHead, ToolCallRecord } from "../store/types.ts";
import type { StoredEvent } from "../common/events.ts";
import type { Message } from "../common/message.ts";
import { machineView } from "./machine.ts";
import { defineRoute, json, routeApp } from "./define.ts";
import { ProblemError } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";
import { ReplayBundle } from "./debug-schemas.ts";
import { AGENT_ID, AgentParams } from "./schemas.ts";
import { checkSnapshot } from "../machines/persist.ts";
import { STATES } from "../machines/types.ts";
import { SnapshotError } from "../errors/errors.ts";
import { ReplayBundleError } from "../errors/replay.ts";

export const REPLAY_BUNDLE_SCHEMA_VERSION = 1;

export interface ReplayBundleV1 {
  schemaVersion: 1;
  exportedAt: string;
  agentId: string;
  agent: string;
  machine: Record<string, unknown>;
  head: AgentHead;
  events: StoredEvent[];
  messages: Message[];
  verdicts: Array<Record<string, unknown>>;
  inputs: Record<string, unknown>;
  toolCalls: ToolCallRecord[];
  /** A trimmed agent's base checkpoint (store/port.ts invariant `retention`): `events` start right after it. */
  checkpoint?: Checkpoint;
  /** Index of `messages[0]` in the whole conversation, for a trimmed agent. */
  messagesFrom?: number;
}

export { ReplayBundleError };

/** The snapshot's state, or ReplayBundleError when the routes could not restore it. */
function checkedState(snapshot: unknown, field: string): string {
  try {
    return checkSnapshot(snapshot).value;
  } catch (err) {
    if (err instanceof SnapshotError) throw new ReplayBundleError(`Replay bundle ${field}: ${err.message.replace(/^Cannot restore agent: /, "")}`, field);
    throw err;
  }
}

/** The replay bundle of one agent; null when the agent does not exist. */
export async function exportReplayBundle(store: Store, agentId: string, now: number): Promise<ReplayBundleV1 | null> {
  const head = await store.getAgent(agentId);
  if (!head) return null;
  const checkpoint = head.eventsTrimmedThrough > 0 ? await store.readCheckpoint(agentId) : null;
  const events = await readEventsThrough(store, agentId, head.lastEventId);
  const turnIds = [...new Set(events.map((e) => e.turnId).filter((t): t is string => t !== null))];
  const inputs: Record<string, unknown> = {};
  const toolCalls: ToolCallRecord[] = [];
  for (const t of turnIds) {
    const turn = await store.getTurn(agentId, t);
    if (turn && "input" in turn) inputs[t] = turn.input;
    toolCalls.push(...await store.getToolCalls(agentId, t));
  }
  return {
    schemaVersion: 1,
    exportedAt: new Date(now).toISOString(),
    agentId,
    agent: head.agentName,
    machine: machineView() as unknown as Record<string, unknown>,
    head,
    events,
    messages: await store.readMessages(agentId),
    ...(checkpoint ? { checkpoint, messagesFrom: head.messagesTrimmedThrough } : {}),
    verdicts: (await store.listVerdicts(agentId, {})).map((j) => JSON.parse(j) as Record<string, unknown>),
    inputs,
    toolCalls,
  };
}

const TURN_STATUSES = new Set(["queued", "done", "failed", "ended", "cancelled"]);

/**
 * Loads a bundle into a memory store (`memoryStore()`). Throws
 * ReplayBundleError for a bundle of another schema version or shape, or one
 * whose agent id is taken in that store.
 */
export function loadReplayBundle(store: Store, bundle: unknown): { agentId: string } {
  const parsed = ReplayBundle.safeParse(bundle);
  if (!parsed.success) {
    const v = (bundle as { schemaVersion?: unknown } | null)?.schemaVersion;
    throw new ReplayBundleError(
      v !== undefined && v !== REPLAY_BUNDLE_SCHEMA_VERSION
        ? `Replay bundle schema version ${JSON.stringify(v)} is not supported (this build reads ${REPLAY_BUNDLE_SCHEMA_VERSION})`
        : `Not a replay bundle: ${z.prettifyError(parsed.error)}`,
    );
  }
  const b = bundle as ReplayBundleV1;
  if (!AGENT_ID.test(b.agentId)) {
    throw new ReplayBundleError(`Replay bundle agent id ${JSON.stringify(b.agentId.slice(0, 200))} must match ${AGENT_ID}`, "agentId");
  }
  if (b.head.agentId !== b.agentId) throw new ReplayBundleError("Replay bundle head belongs to another agent", "head.agentId");
  if (b.head.snapshot !== null && b.head.snapshot !== undefined) {
    const state = checkedState(b.head.snapshot, "head.snapshot");
    // A claim stores a new turn's state before its first commit stores the snapshot (store/port.ts invariant `turn-start`).
    const started = b.head.state === "running" && b.head.activeTurnId !== null &&
      (b.head.snapshot as { context?: { turnId?: unknown } }).context?.turnId !== b.head.activeTurnId;
    if (b.head.state !== state && !started) {
      throw new ReplayBundleError(`Replay bundle head.state ${JSON.stringify(b.head.state)} is not its snapshot's state ${JSON.stringify(state)}`, "head.state");
    }
  }
  if (!(STATES as readonly unknown[]).includes(b.head.state)) {
    throw new ReplayBundleError(`Replay bundle head.state ${JSON.stringify(b.head.state)} is not a state of the agent machine`, "head.state");
  }
  if (b.checkpoint) checkedState(b.checkpoint.snapshot, "checkpoint.snapshot");
  const from = b.checkpoint?.eventId ?? 0;
  b.events.forEach((e, i) => {
    if (e.id !== from + i + 1) {
      throw new ReplayBundleError(`Replay bundle events must be dense from ${from + 1}; event ${from + i + 1} has id ${e.id}`);
    }
  });
  // Where each turn ended, from the log's `task` events (a turn without one ended unseen).
  const turns: Record<string, Exclude<TurnStatus, "active">> = {};
  for (const t of Object.keys(b.inputs)) if (t !== b.head.activeTurnId) turns[t] = "ended";
  for (const e of b.events) {
    const st = e.data.status;
    if (e.type === "task" && typeof e.data.turnId === "string" && typeof st === "string" && TURN_STATUSES.has(st)) {
      turns[e.data.turnId] = st as Exclude<TurnStatus, "active">;
    }
  }
  const r = memoryStoreImport(store, {
    head: b.head,
    events: b.events,
    messages: b.messages,
    inputs: b.inputs,
    toolCalls: b.toolCalls,
    verdicts: b.verdicts.map((v) => ({
      verdictId: String(v.verdictId),
      turnId: String(v.taskId ?? v.turnId ?? ""),
      status: String(v.status),
      json: JSON.stringify(v),
    })),
    turns,
    ...(b.checkpoint ? { checkpoint: b.checkpoint, messagesFrom: b.messagesFrom ?? 0 } : {}),
  });
  if (r === "exists") throw new ReplayBundleError(`Agent "${b.agentId}" exists in this store`);
  return { agentId: b.agentId };
}

const exportAgent = defineRoute({
  method: "get",
  path: "/v1/agents/{agentId}/export",
  operationId: "exportAgent",
  summary: "A replay bundle of the agent: definition name, machine, events, messages, verdicts, inputs",
  tags: ["debugging"],
  request: { params: AgentParams },
  responses: { 200: json("The replay bundle", ReplayBundle) },
}, ["invalid_agent_id", "agent_not_found"], "read");

export function exportRoutes(rt: RouteRuntime) {
  return routeApp(rt).openapi(exportAgent, async (c) => {
    const { agentId } = c.req.valid("param");
    const bundle = await exportReplayBundle(rt.store, agentId, rt.clock.now());
    if (!bundle) throw new ProblemError("agent_not_found", `Agent "${agentId}" does not exist`);
    return c.json(bundle, 200, { "content-disposition": `attachment; filename="${agentId}.replay.json"` });
  });
}
