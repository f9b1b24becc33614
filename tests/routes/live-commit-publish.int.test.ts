/**
 * On TCP Redis and Upstash the commit script itself publishes the agent's
 * "log grew" notice (store/lua/commit.lua), so waking readers costs the
 * worker no command of its own (on Upstash, nothing more billed): a
 * subscriber on the agent's live channel hears `grew` with the commit's
 * lastEventId, and the channel tells the worker not to publish again.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, scriptedModel } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { upstashStore } from "../../store/upstash.ts";
import { keySpace } from "../../store/keys.ts";
import { liveChannelName } from "../../store/live.ts";
import type { Store } from "../../store/port.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { startUpstashBridge, type UpstashBridge } from "../helpers/upstash-bridge.ts";

const redis = useRedisServer({}, 60_000);
let bridge: UpstashBridge;
beforeAll(async () => {
  bridge = await startUpstashBridge({ redisUrl: redis.url });
}, 60_000);
afterAll(async () => {
  await bridge?.close();
});

/** A turn of two steps: a tool call (its result committed on its own), then the answer. */
const agent = defineAgent({
  name: "echo",
  instructions: "Answer.",
  model: scriptedModel([
    { toolCalls: [{ name: "note", args: {} }] },
    { toolCalls: [{ name: "submit_result", args: { result: "ok" } }] },
  ]),
  tools: [defineTool({ name: "note", description: "Notes", parameters: z.object({}), execute: () => "noted" })],
});

const STORES: Record<string, (prefix: string) => Store> = {
  redis: (prefix) => redisStore({ url: redis.url, prefix }),
  upstash: (prefix) => upstashStore({ url: bridge.url, token: bridge.token, prefix }),
};

describe.each(Object.keys(STORES))("the commit script publishes grew (%s)", (name) => {
  it("a subscriber hears every commit's lastEventId; the worker's channel says it need not publish", async () => {
    const prefix = `lcp_${name}`;
    const store = STORES[name]!(prefix);
    expect(store.live?.grewOnCommit).toBe(true);
    const sub = new Redis(redis.url);
    const heard: Array<{ type: string; lastEventId?: number }> = [];
    await sub.subscribe(liveChannelName(keySpace(prefix), "a1"));
    sub.on("message", (_channel, message) => heard.push(JSON.parse(message)));
    const gh = createGatehouse({ agents: [agent], store });
    try {
      const res = await gh.fetch(new Request("http://local/v1/agents/a1/tasks", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ agent: "echo", input: "hi" }),
      }));
      expect(res.status).toBe(202);
      await gh.drain();
      const head = await store.getAgent("a1");
      expect(head?.state).toBe("done");
      for (let i = 0; i < 100 && !heard.some((m) => m.lastEventId === head!.lastEventId); i++) await new Promise((r) => setTimeout(r, 20));
      // The turn's commits (its steps and the tool's result) each published their own lastEventId, in order.
      const fromCommits = heard.filter((m) => m.type === "grew" && typeof m.lastEventId === "number").map((m) => m.lastEventId!);
      expect(fromCommits.length).toBeGreaterThanOrEqual(3);
      expect(fromCommits.at(-1)).toBe(head!.lastEventId);
      expect([...fromCommits].sort((a, b) => a - b)).toEqual(fromCommits);
      // The first step and the tool's result leave the turn running (no turn's end in them: `turnEnded: false`); the step that ends it says nothing.
      const ended = heard.filter((m) => m.type === "grew" && typeof m.lastEventId === "number").map((m) => (m as { turnEnded?: boolean }).turnEnded);
      expect(ended.slice(0, -1).every((e) => e === false)).toBe(true);
      expect(ended.at(-1)).toBeUndefined();
    } finally {
      await gh.close();
      sub.disconnect();
    }
  }, 60_000);
});
