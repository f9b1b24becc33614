/**
 * The live channel (store/live.ts) of the TCP Redis adapter: Redis pub/sub.
 *
 * - Channel per agent: `<h>:{a:<agentId>}:live`, the agent's keys' hash tag,
 *   so on a Cluster it names the agent's slot. Messages go out with plain
 *   PUBLISH, which a Cluster forwards to every node: one subscribed
 *   connection hears every agent wherever its slot lives (as the bells do,
 *   store/redis.ts).
 * - Publishing uses the store's own client (PUBLISH is not a write: nothing
 *   is stored, no key changes); its reply is not awaited by the caller and a
 *   failure is dropped (live messages are best effort).
 * - Subscribing opens one duplicate connection of the client, on the first
 *   subscription, and SUBSCRIBEs an agent's channel while this process has at
 *   least one listener for it, UNSUBSCRIBEs after the last one left. ioredis
 *   subscribes again after a reconnect; what was published meanwhile is lost
 *   (readers read the store once per safety interval).
 */
import { Cluster, type Redis } from "ioredis";
import type { KeySpace } from "./keys.ts";
import { decodeLive, encodeLive, type LiveChannel, LiveListeners, liveChannelName } from "./live.ts";

export function redisLive(client: Redis | Cluster, keys: KeySpace): LiveChannel {
  const listeners = new LiveListeners();
  const agentOf = new Map<string, string>();
  let sub: Redis | Cluster | null = null;
  let closed = false;
  const connection = (): Redis | Cluster => {
    if (sub) return sub;
    const s: Redis | Cluster = client instanceof Cluster
      ? client.duplicate(undefined, { lazyConnect: false })
      : client.duplicate({ lazyConnect: false, enableOfflineQueue: true });
    s.on("error", () => {});
    s.on("message", (channel: string, raw: string) => {
      const agentId = agentOf.get(channel);
      const msg = agentId === undefined ? null : decodeLive(raw);
      if (agentId !== undefined && msg) listeners.deliver(agentId, msg);
    });
    sub = s;
    return s;
  };
  /** Per channel: the SUBSCRIBE in flight or acknowledged (a failed one resolves too: the reader polls). */
  const subscribed = new Map<string, Promise<void>>();
  return {
    reach: "shared",
    // commit.lua publishes `grew` itself (store/lua/commit.lua, the end).
    grewOnCommit: true,
    publish(agentId, msg) {
      if (closed) return;
      let channel: string;
      try {
        channel = liveChannelName(keys, agentId);
      } catch {
        return; // not an agent id: nobody can listen to it
      }
      client.publish(channel, encodeLive(msg)).catch(() => {});
    },
    subscribe(agentId, onMsg) {
      const channel = liveChannelName(keys, agentId);
      const off = listeners.add(agentId, onMsg, () => {
        if (closed) return;
        agentOf.set(channel, agentId);
        subscribed.set(channel, connection().subscribe(channel).then(() => {}, () => {}));
      });
      return () => {
        off();
        if (!listeners.has(agentId) && agentOf.delete(channel) && sub && !closed) {
          subscribed.delete(channel);
          sub.unsubscribe(channel).catch(() => {});
        }
      };
    },
    ready(agentId) {
      return subscribed.get(liveChannelName(keys, agentId)) ?? Promise.resolve();
    },
    async close() {
      closed = true;
      sub?.disconnect();
      sub = null;
    },
  };
}
