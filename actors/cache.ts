/**
 * The resident history cache: the conversation of recently run agents, keyed
 * by agent id and the snapshot version it belongs to. A hit saves reading the
 * message list on the next claim; a version mismatch is a miss, so a cache
 * entry can never stand in for newer state. Bounded (least recently used).
 */
import type { Message } from "../store/types.ts";

export interface SnapshotCache {
  get(agentId: string, version: number): { messages: Message[] } | undefined;
  set(agentId: string, version: number, messages: Message[]): void;
  delete(agentId: string): void;
}

export function lruCache(max = 1_000): SnapshotCache {
  const m = new Map<string, { version: number; messages: Message[] }>();
  return {
    get(agentId, version) {
      const e = m.get(agentId);
      if (!e) return undefined;
      m.delete(agentId);
      if (e.version !== version) return undefined;
      m.set(agentId, e);
      return { messages: e.messages };
    },
    set(agentId, version, messages) {
      m.delete(agentId);
      m.set(agentId, { version, messages });
      if (m.size > max) m.delete(m.keys().next().value!);
    },
    delete(agentId) {
      m.delete(agentId);
    },
  };
}
