/**
 * The resident agent cache: for recently run agents, the conversation and the
 * live XState actor, keyed by agent id and the snapshot version they belong
 * to. A hit saves reading the message list and restoring the snapshot on the
 * next claim (a `send` to a resident actor costs a fraction of restoring
 * the actor and persisting it; bench/README.md has the cost per step on a
 * hit and on a miss); a version mismatch is a miss, so an entry can never stand in for
 * newer state. Bounded (least recently used).
 *
 * Ownership: `take` hands the actor to one claim and removes it from the
 * entry, so a fenced claim that is still running can never share an actor
 * with the claim that replaced it; the claim gives it back with `put` only
 * when its last commit applied (actor state == committed state). Message
 * arrays are copied in and out for the same reason; the messages themselves
 * are frozen, so the copies are shallow. The used tool-call ids of the
 * messages (actors/conversation/tool-call-ids.ts) travel like the actor: `take` hands them
 * over, and only a `put` that passes them, with the very messages they were
 * kept for, stores them again.
 */
import type { AnyActorRef } from "xstate";
import type { Message } from "../../common/message.ts";
import type { ConversationMemory } from "./memory.ts";
import type { UsedToolCallIds } from "./tool-call-ids.ts";

export interface CachedAgent<A extends AnyActorRef = AnyActorRef> {
  messages: Message[];
  actor?: A;
  /** The summary and the index of `messages[0]` (actors/conversation/memory.ts). */
  memory?: ConversationMemory;
  /** The tool-call ids of exactly `messages`; now the caller's. */
  toolCallIds?: UsedToolCallIds;
}

export interface SnapshotCache {
  /**
   * The entry for exactly this version; its actor (if any) now belongs to the caller. With
   * `createdAt`, an entry of another incarnation of the id (deleted and created again, so its
   * versions count from 0 again) is a miss.
   */
  take(agentId: string, version: number, createdAt?: number): CachedAgent | undefined;
  /** Stores the conversation (and, at the end of a claim, the actor) of this version. */
  put(agentId: string, version: number, messages: Message[], actor?: AnyActorRef, extra?: { memory?: ConversationMemory; createdAt?: number; toolCallIds?: UsedToolCallIds }): void;
  delete(agentId: string): void;
}

const copyMemory = (m: ConversationMemory): ConversationMemory => ({ summary: m.summary ? { ...m.summary } : null, firstIndex: m.firstIndex });

export function lruCache(max = 1_000): SnapshotCache {
  const m = new Map<string, { version: number; messages: Message[]; actor?: AnyActorRef; memory?: ConversationMemory; createdAt?: number; toolCallIds?: UsedToolCallIds }>();
  const drop = (agentId: string) => {
    m.get(agentId)?.actor?.stop();
    m.delete(agentId);
  };
  return {
    take(agentId, version, createdAt) {
      const e = m.get(agentId);
      if (!e) return undefined;
      if (e.version !== version || (createdAt !== undefined && e.createdAt !== undefined && e.createdAt !== createdAt)) {
        drop(agentId);
        return undefined;
      }
      m.delete(agentId);
      const { actor, toolCallIds } = e;
      m.set(agentId, { ...e, actor: undefined, toolCallIds: undefined });
      return {
        messages: e.messages.slice(), ...(actor ? { actor } : {}), ...(e.memory ? { memory: copyMemory(e.memory) } : {}),
        ...(toolCallIds ? { toolCallIds } : {}),
      };
    },
    put(agentId, version, messages, actor, extra) {
      const memory = extra?.memory;
      const prev = m.get(agentId);
      if (prev?.actor && prev.actor !== actor) prev.actor.stop();
      m.delete(agentId);
      m.set(agentId, {
        version, messages: messages.slice(), ...(actor ? { actor } : {}), ...(memory ? { memory: copyMemory(memory) } : {}),
        ...(extra?.createdAt !== undefined ? { createdAt: extra.createdAt } : {}),
        ...(extra?.toolCallIds ? { toolCallIds: extra.toolCallIds } : {}),
      });
      if (m.size > max) drop(m.keys().next().value!);
    },
    delete: drop,
  };
}
