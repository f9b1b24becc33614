/**
 * The start and the end of a claim around the snapshot cache
 * (actors/conversation/cache.ts): `restoreClaim` takes the resident actor
 * and conversation when the cache holds this version, else restores the
 * snapshot and reads the conversation; `leaveClaim` puts them back when the
 * claim ended with its last commit applied, and drops them otherwise.
 *
 * Invariants:
 * - The cache only saves reads: an entry is used only for the exact version
 *   (and incarnation, `createdAt`) the claim read, and a claim that ends any
 *   other way (fenced, thrown) leaves no entry behind.
 * - The claim runs under the definition the snapshot names: the binding
 *   (`head.agentName`), or within a turn a handoff switched, its target
 *   (machine context `definition`, actors/steps/handoff.ts).
 * - The binding is the version the active turn is pinned to, else the
 *   current one (actors/host/versions.ts); a pinned version this worker
 *   lacks and cannot upgrade from is handed back at once (lease released,
 *   nothing else written).
 * - An agent this worker cannot run (definition unknown, snapshot not
 *   restorable) is parked: its lease is kept for a while instead of released
 *   (a release would be offered again at once whenever mail is pending), and
 *   nothing else is written.
 */
import { createActor } from "xstate";
import type { AnyAgent } from "../../agents/define.ts";
import type { NewEvent } from "../../common/events.ts";
import { deepFreeze } from "../../common/freeze.ts";
import type { Message } from "../../common/message.ts";
import { agentMachine } from "../../machines/agent.ts";
import { checkSnapshot, initialPersisted, type PersistedSnapshot } from "../../machines/persist.ts";
import type { Store } from "../../store/port.ts";
import { handBackCommit, parkingCommit } from "../claim/commit-buffer.ts";
import { claimDefinition } from "./versions.ts";
import type { AgentActor, Claimed, HostDeps, HostOutcome } from "../claim/context.ts";
import type { ConversationMemory } from "../conversation/memory.ts";
import { UsedToolCallIds } from "../conversation/tool-call-ids.ts";
import { completionToolOf } from "../steps/tool-specs.ts";
import { currentDefinitionName } from "../steps/handoff.ts";
import { type AgentContext, SNAPSHOT_SCHEMA_VERSION } from "../../machines/types.ts";

/** How long an agent whose snapshot cannot be restored is parked before the next attempt. */
const UNRESTORABLE_RETRY_MS = 5 * 60_000;

/** How long an agent whose snapshot a newer build wrote is held before another process may take it (ms). */
const NEWER_FORMAT_RETRY_MS = 1_000;

/**
 * A snapshot of a format newer than this build reads: a compact-form marker above 1 (store/snapshot-form.ts) or a
 * context schema version above this build's (machines/persist.ts). Another build reads it: no reason to hold it.
 */
export function newerFormat(snapshot: unknown): boolean {
  if (!snapshot || typeof snapshot !== "object") return false;
  const s = snapshot as { "~"?: unknown; context?: { schemaVersion?: unknown } };
  if (typeof s["~"] === "number" && s["~"] > 1) return true;
  const v = s.context?.schemaVersion;
  return typeof v === "number" && v > SNAPSHOT_SCHEMA_VERSION;
}

/** What a claim starts from. */
export interface Restored {
  /** The definition the agent is bound to (`head.agentName`). */
  binding: AnyAgent;
  /** The definition the snapshot runs under: the binding, or a handoff's target within its turn (actors/steps/handoff.ts). */
  agent: AnyAgent;
  actor: AgentActor;
  history: Message[];
  memory: ConversationMemory;
  usedIds: UsedToolCallIds;
  /** The pinned version this claim takes the turn over from (`upgradeFrom` of the binding; actors/host/versions.ts). */
  upgradeFrom?: string;
}

/** Logs a takeover of a lease that its worker neither renewed nor released, and the claim itself. */
export function logClaim(deps: HostDeps, claim: Claimed, workerId: string, claimedAt: number): void {
  const { logger } = deps;
  const { agentId, epoch, head } = claim;
  const prev = claim.previousLease;
  if (prev) {
    // The agent was still leased to a worker that neither renewed nor released it: it died or stalled.
    logger.info("lease_takeover", {
      agentId, workerId, epoch, previousWorker: prev.workerId, previousLeaseUntil: prev.leaseUntil,
      waitedMs: Math.max(0, claimedAt - prev.leaseUntil), sinceLastWriteMs: Math.max(0, claimedAt - prev.updatedAt),
    });
  }
  logger.debug("claim", { agentId, workerId, epoch, state: head.state, mail: claim.mail.length, task: claim.task?.turnId ?? null });
}

/** The actor and conversation of the claim, or the outcome of a claim this worker cannot run (the agent parked). */
export async function restoreClaim(deps: HostDeps, claim: Claimed, workerId: string): Promise<Restored | HostOutcome> {
  const { logger, cache } = deps;
  const { agentId, head } = claim;
  const chosen = claimDefinition(deps, head);
  if ("missing" in chosen && chosen.missing === "version") {
    // A turn pinned to a version this process lacks (invariant `turn-versions`): not run here, handed back at once.
    logger.info("turn_version_missing", { agentId, agent: head.agentName, version: chosen.version, workerId });
    await handBackCommit(deps, claim, workerId, 0);
    return { status: "unrestorable", message: `Agent definition "${head.agentName}" version ${chosen.version} is not registered` };
  }
  const binding = "binding" in chosen ? chosen.binding : undefined;
  if (!binding) {
    // Not reached from the worker pool, which claims only agents it has definitions for (claimNext `agentNames`,
    // actors/pool/definition-sets.ts). A claim by another path parks the agent; a worker that has the definition takes
    // it when the lease runs out.
    logger.warn("agent definition not registered in this worker", { agentId, agent: head.agentName });
    await park(deps, claim, workerId, 30_000, [{ type: "worker_missing_definition", data: { agent: head.agentName, workerId } }]);
    return { status: "unrestorable", message: `Agent definition "${head.agentName}" is not registered` };
  }
  const cached = cache.take(agentId, head.version, head.createdAt);
  let actor = cached?.actor as AgentActor | undefined;
  if (!actor) {
    let persisted: PersistedSnapshot;
    try {
      persisted = head.snapshot ? checkSnapshot(head.snapshot, { completion: completionToolOf(binding) }) : initialPersisted();
    } catch (err) {
      const message = (err as Error).message;
      if (newerFormat(head.snapshot)) {
        // Written by a newer build (docs/operations.md, "Upgrades"): held for a second only (not minutes), for a process
        // that reads it; not released at once, which pending mail would turn into a hot loop of claims.
        logger.warn("snapshot of a newer format", { agentId, message, workerId });
        await park(deps, claim, workerId, NEWER_FORMAT_RETRY_MS, []);
        return { status: "unrestorable", message };
      }
      logger.error("snapshot unrestorable", { agentId, message });
      // Retried after a while: a build that can migrate it may have been deployed by then.
      await park(deps, claim, workerId, UNRESTORABLE_RETRY_MS, [{ type: "snapshot_unrestorable", data: { message } }]);
      return { status: "unrestorable", message };
    }
    actor = createActor(agentMachine, { snapshot: persisted as never, ...(deps.inspect ? { inspect: deps.inspect } : {}) }).start();
  }
  // A turn a handoff switched runs under its target (actors/steps/handoff.ts); startup checked that it is registered.
  const s = actor.getSnapshot() as unknown as { value: string; context: AgentContext };
  const current = currentDefinitionName(head.agentName, s.value, s.context);
  // Without a handoff the turn runs under its binding: the version it is pinned to (actors/host/versions.ts).
  const agent = current === head.agentName ? binding : deps.agents.get(current);
  if (!agent) {
    logger.warn("agent definition not registered in this worker", { agentId, agent: current });
    actor.stop();
    cache.delete(agentId);
    await park(deps, claim, workerId, 30_000, [{ type: "worker_missing_definition", data: { agent: current, workerId } }]);
    return { status: "unrestorable", message: `Agent definition "${current}" (handed off to) is not registered` };
  }
  // A cache miss costs a read, except for an agent that has no conversation yet (its first turn).
  const memoryPolicy = binding.memory ?? deps.memory;
  const { history, memory } = await loadConversation(deps.store, agentId, head, cached, memoryPolicy !== undefined);
  // The tool-call ids of exactly `history` (actors/conversation/tool-call-ids.ts): every push and splice of it updates them too.
  const usedIds = cached?.toolCallIds ?? UsedToolCallIds.of(history);
  return { binding, agent, actor, history, memory, usedIds, ...("upgradeFrom" in chosen && chosen.upgradeFrom !== undefined ? { upgradeFrom: chosen.upgradeFrom } : {}) };
}

/** Keeps the actor and conversation resident after a claim that ended with its last commit applied; else drops them. */
export function leaveClaim(
  deps: HostDeps,
  claim: Claimed,
  r: Restored,
  end: { resident: boolean; version: number },
): void {
  if (end.resident) {
    deps.cache.put(claim.agentId, end.version, r.history, r.actor, { memory: r.memory, createdAt: claim.head.createdAt, toolCallIds: r.usedIds });
  } else {
    r.actor.stop();
    deps.cache.delete(claim.agentId);
  }
}

/**
 * Logs why this worker cannot run the agent and parks it: the lease is kept
 * for `backoffMs` instead of released. A release would be offered again at
 * once whenever mail is pending (the store rings for any agent with mail),
 * so every worker would spin on the same refusal; the held lease expires
 * into a retry instead. Mail and snapshot stay as they are.
 */
async function park(deps: HostDeps, claim: Claimed, workerId: string, backoffMs: number, events: NewEvent[]): Promise<void> {
  await parkingCommit(deps, claim, workerId, backoffMs, events);
}

/** The conversation a claim starts from: the cached one, none for a new agent, else the store's. */
async function loadConversation(
  store: Store,
  agentId: string,
  head: Claimed["head"],
  cached: { messages: Message[]; memory?: ConversationMemory } | undefined,
  fromSummary: boolean,
): Promise<{ history: Message[]; memory: ConversationMemory }> {
  if (cached) return { history: cached.messages, memory: cached.memory ?? { summary: null, firstIndex: head.messagesTrimmedThrough ?? 0 } };
  if (head.messageCount === 0) return { history: [], memory: { summary: null, firstIndex: 0 } };
  // With a memory policy only what the summary does not cover is ever shown: read from there.
  const conv = await store.readConversation(agentId, fromSummary ? { fromSummary } : undefined);
  if (!conv) return { history: [], memory: { summary: null, firstIndex: 0 } };
  return { history: conv.messages.map(deepFreeze), memory: { summary: conv.summary, firstIndex: conv.firstIndex } };
}
