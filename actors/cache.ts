/**
 * The resident history cache: the conversation of recently run agents, keyed
 * by agent id and the snapshot version it belongs to. A hit saves reading the
 * message list on the next claim; a version mismatch is a miss, so a cache
 * entry can never stand in for newer state. Bounded (least recently used).
 *
 * Entries are copies, in and out: the claim that stores its history keeps
 * appending to its own array (messages it has not committed yet, or never
 * will, if it is fenced), and a claim that reads an entry appends to its
 * own. Sharing the array would let one claim's uncommitted messages show up
 * in the conversation of another claim of the same agent in this process.
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
      return { messages: e.messages.slice() };
    },
    set(agentId, version, messages) {
      m.delete(agentId);
      m.set(agentId, { version, messages: messages.slice() });
      if (m.size > max) m.delete(m.keys().next().value!);
    },
    delete(agentId) {
      m.delete(agentId);
    },
  };
}
