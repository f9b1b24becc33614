/**
 * The live channel (store/live.ts) of the Upstash adapter, over what the
 * Upstash REST API offers for pub/sub: `PUBLISH` as a command, and
 * `subscribe/<channel>`, a request whose response is an SSE stream of
 * `data: message,<channel>,<message>` lines (what @upstash/redis's
 * `subscribe()` sends and reads; entry/upstash-rest.ts serves the same).
 *
 * - Channel per agent: the same name as on TCP Redis (store/redis-live.ts).
 * - Each PUBLISH is one REST request (one billed command, one subrequest on
 *   Workers): deltas are joined per DELTA_BATCH_MS before they get here, and
 *   createWorkersHandler does not use this channel at all (in-process there).
 * - A process holds one streaming request per agent it has listeners for,
 *   opened on the first listener and aborted after the last left. A stream
 *   that ends is not reopened: readers fall back to their safety reads.
 * - A client without `subscribe` (a minimal client passed in) publishes only.
 */
import type { KeySpace } from "./keys.ts";
import { decodeLive, encodeLive, type LiveChannel, LiveListeners, liveChannelName } from "./live.ts";

/** What the channel needs of an @upstash/redis client. */
export interface UpstashLiveClient {
  exec<T>(args: [string, ...(string | number)[]]): Promise<T>;
  subscribe?: (channels: string[]) => {
    on(type: "message", listener: (m: { channel: string; message: unknown }) => void): void;
    unsubscribe(channels?: string[]): Promise<void>;
  };
}

export function upstashLive(client: UpstashLiveClient, keys: KeySpace): LiveChannel {
  const listeners = new LiveListeners();
  const subs = new Map<string, { unsubscribe(): Promise<void> }>();
  return {
    reach: "shared",
    // commit.lua publishes `grew` itself (store/lua/commit.lua, the end).
    grewOnCommit: true,
    publish(agentId, msg) {
      let channel: string;
      try {
        channel = liveChannelName(keys, agentId);
      } catch {
        return;
      }
      client.exec(["PUBLISH", channel, encodeLive(msg)]).catch(() => {});
    },
    subscribe(agentId, onMsg) {
      const channel = liveChannelName(keys, agentId);
      const off = listeners.add(agentId, onMsg, () => {
        if (typeof client.subscribe !== "function") return;
        const s = client.subscribe([channel]);
        s.on("message", ({ message }) => {
          const msg = decodeLive(typeof message === "string" ? message : JSON.stringify(message));
          if (msg) listeners.deliver(agentId, msg);
        });
        subs.set(channel, s);
      });
      return () => {
        off();
        const s = subs.get(channel);
        if (!listeners.has(agentId) && s) {
          subs.delete(channel);
          s.unsubscribe().catch(() => {});
        }
      };
    },
    async close() {
      await Promise.all([...subs.values()].map((s) => s.unsubscribe().catch(() => {})));
      subs.clear();
    },
  };
}
