/**
 * A commit that leaves the turn running appended no turn's end, and its "log grew" notice says so
 * (`turnEnded: false`), and one that ends its turn names it (`endedTurn`; store/live.ts `LiveGrew`):
 * published by the commit script on Redis (store/lua/commit.lua) and by the worker elsewhere
 * (actors/claim/commit-buffer.ts). A request waiting for a turn's end (`Prefer: wait`,
 * routes/prefer-wait.ts) reads the log for the notices that may carry its own turn's end only, so a
 * turn of many steps, or turns queued before it, cost the waiter no read per commit; it still answers
 * with the turn's end.
 */
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, type Model, scriptedModel, type Store } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { memoryStore } from "../../store/memory.ts";
import type { LiveMessage } from "../../store/live.ts";
import { useRedisServer } from "../helpers/redis.ts";

const redis = useRedisServer({}, 60_000);

/** Four model steps (three `work` calls, then the result), each waiting a little, as a model call does. */
function agent() {
  const scripted = scriptedModel([
    ...[1, 2, 3].map((n) => ({ toolCalls: [{ name: "work", args: { n } }] })),
    { toolCalls: [{ name: "submit_result", args: { result: "ok" } }] },
  ]);
  const model: Model = {
    name: "paced",
    async generate(req) {
      await new Promise((r) => setTimeout(r, 30));
      return scripted.generate(req);
    },
  };
  const work = defineTool({ name: "work", description: "Returns its input.", parameters: z.object({ n: z.number() }), execute: ({ n }) => ({ n }) });
  return defineAgent({ name: "paced", instructions: "x", model, tools: [work] });
}

/** `store` with its `readEvents` calls counted. */
function countingReads(store: Store): { store: Store; reads: () => number } {
  let reads = 0;
  const wrapped = new Proxy(store, {
    get(target, key) {
      const v = Reflect.get(target, key, target) as unknown;
      if (key === "readEvents") {
        return (...args: Parameters<Store["readEvents"]>) => {
          reads++;
          return target.readEvents(...args);
        };
      }
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
  return { store: wrapped, reads: () => reads };
}

const STORES: Record<string, (prefix: string) => Store> = {
  memory: () => memoryStore(),
  redis: (prefix) => redisStore({ url: redis.url, prefix }),
};

const opened: Store[] = [];
afterAll(async () => {
  for (const s of opened) await s.close?.();
});

describe.each(Object.keys(STORES))("turnEnded: false on the notices of commits that leave the turn running (%s)", (name) => {
  it("every commit but a turn's last says turnEnded: false, the last names its turn; a request waiting for the second of two turns reads only for its own end", async () => {
    const inner = STORES[name]!(`pwr_${name}`);
    opened.push(inner);
    const { store, reads } = countingReads(inner);
    const heard: LiveMessage[] = [];
    const off = inner.live!.subscribe("a1", (m) => heard.push(m));
    await inner.live!.ready?.("a1");
    const gh = createGatehouse({ agents: [agent()], store });
    gh.startWorker();
    const post = (headers: Record<string, string>) =>
      gh.fetch(new Request("http://local/v1/agents/a1/tasks", {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ agent: "paced", input: "go" }),
      }));
    try {
      const first = await post({});
      expect(first.status).toBe(202);
      const firstTurn = (await first.json() as { turnId: string }).turnId;
      const res = await post({ prefer: "wait=30" });
      expect(res.status).toBe(200);
      const body = await res.json() as { status: string; output: unknown; turnId: string };
      expect(body).toMatchObject({ status: "done", output: "ok" });
      const head = (await inner.getAgent("a1"))!;
      for (let i = 0; i < 100 && !heard.some((m) => m.type === "grew" && m.lastEventId === head.lastEventId); i++) await new Promise((r) => setTimeout(r, 20));
      const fromCommits = heard.filter((m): m is Extract<LiveMessage, { type: "grew" }> => m.type === "grew" && typeof m.lastEventId === "number");
      // Each turn's start, its first three steps and the tool results committed on their own leave it running;
      // its fourth step ends it and names it.
      const ends = fromCommits.filter((m) => m.turnEnded !== false);
      expect(ends.map((m) => m.endedTurn)).toEqual([firstTurn, body.turnId]);
      expect(fromCommits.length).toBeGreaterThanOrEqual(10);
      expect(fromCommits.at(-1)!.lastEventId).toBe(head.lastEventId);
      // The reads when the wait began (at most two) and one on its own turn's end: none for the first turn's commits or end.
      expect(reads()).toBeLessThanOrEqual(3);
    } finally {
      off();
      await gh.stopWorker();
    }
  }, 60_000);
});
