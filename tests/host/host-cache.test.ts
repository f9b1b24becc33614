/**
 * The resident-actor cache (actors/conversation/cache.ts) never serves an older version.
 *
 * Two workers with their own caches (two processes) share one store and take
 * turns on the same agent, so the cache of one still holds the version it
 * committed last while the other has moved the agent on. Each claim must
 * start from the committed state: the model sees the whole stored
 * conversation, the turn's output lands, and the snapshot is the one the log
 * replays to. A cache entry of the current version is used (no read of the
 * conversation); one of an older version is a miss.
 */
import { describe, expect, it } from "vitest";
import { lruCache } from "../../actors/conversation/cache.ts";
import { runClaim } from "../../actors/host/run-claim.ts";
import { defineAgent } from "../../agents/define.ts";
import { memoryStore } from "../../store/memory.ts";
import type { Store } from "../../store/port.ts";
import { manualClock } from "../helpers/clock.ts";
import { ctxOf, enqueue, head, hostDeps, recordingModel, replayLog } from "../helpers/host.ts";

describe("resident actor cache", () => {
  it("two workers alternating claims of one agent: a stale cache entry is never used, a current one is", async () => {
    const clock = manualClock();
    const inner = memoryStore();
    const reads: string[] = [];
    // Counts conversation reads: a claim that reads missed its cache.
    const store: Store = {
      ...inner,
      readConversation: (agentId) => {
        reads.push(agentId);
        return inner.readConversation(agentId);
      },
    };
    const model = recordingModel((req, i) => {
      const asked = req.messages.filter((m) => m.role === "user").map((m) => m.content);
      return { toolCalls: [{ name: "submit_result", args: { result: `answer ${i + 1} to ${asked.length} questions` } }] };
    });
    const agent = defineAgent({ name: "echo", instructions: "Answer.", model });
    const workers = {
      A: hostDeps(store, [agent], clock, { cache: lruCache() }),
      B: hostDeps(store, [agent], clock, { cache: lruCache() }),
    };

    // worker per turn, and whether its cache holds the current version (no read) or not.
    const plan: Array<["A" | "B", "first" | "hit" | "miss"]> = [
      ["A", "first"], // no conversation yet: nothing to read
      ["A", "hit"], // A committed the current version itself
      ["B", "miss"], // B has never seen the agent
      ["A", "miss"], // A's entry is two turns old: B moved the agent on
      ["A", "hit"],
      ["B", "miss"], // B's entry is from turn 3
    ];
    for (const [turn, [w, expected]] of plan.entries()) {
      clock.advance(1_000);
      await enqueue(store, clock, "c1", agent, `question ${turn + 1}`);
      const claim = await store.claim({ agentId: "c1", workerId: w, leaseMs: 30_000, now: clock.now() });
      if (claim.status !== "claimed") throw new Error(`turn ${turn + 1}: ${claim.status}`);
      const readsBefore = reads.length;
      const out = await runClaim(workers[w], claim, w);
      const readsAfterRun = reads.length;
      expect(out, `turn ${turn + 1}`).toMatchObject({ status: "released", state: "done" });

      // The model saw the whole committed conversation up to this turn's question (after the system prompt).
      const seen = model.requests.at(-1)!.messages;
      const stored = await inner.readMessages("c1");
      expect(seen.slice(1), `turn ${turn + 1}`).toEqual(stored.slice(0, seen.length - 1));
      expect(seen.filter((m) => m.role === "user").map((m) => m.content), `turn ${turn + 1}`)
        .toEqual(Array.from({ length: turn + 1 }, (_, k) => expect.stringContaining(`question ${k + 1}`)));
      expect((await ctxOf(store, "c1")).output).toBe(`answer ${turn + 1} to ${turn + 1} questions`);
      expect(await replayLog(store, "c1")).toEqual((await head(store, "c1")).snapshot);
      // Counted before this turn's checks read anything.
      expect(readsAfterRun - readsBefore, `turn ${turn + 1} by ${w}: conversation reads`).toBe(expected === "miss" ? 1 : 0);
    }
  });

  it("take() answers only for the exact version and drops (and stops) an entry of another one", () => {
    const cache = lruCache();
    let stopped = 0;
    const actor = { stop: () => void stopped++ } as never;
    cache.put("a1", 3, [{ role: "user", content: "hi" }], actor);
    expect(cache.take("a1", 4)).toBeUndefined();
    expect(stopped).toBe(1);
    // The entry is gone: the right version no longer finds it either.
    expect(cache.take("a1", 3)).toBeUndefined();
    cache.put("a1", 5, [{ role: "user", content: "hi" }]);
    expect(cache.take("a1", 5)).toEqual({ messages: [{ role: "user", content: "hi" }] });
  });

  it("an agent deleted and created again (versions count from 0 again) never gets the old entry", () => {
    const cache = lruCache();
    let stopped = 0;
    const actor = { stop: () => void stopped++ } as never;
    const memory = { summary: { content: "old", through: 2 }, firstIndex: 2 };
    cache.put("a1", 2, [{ role: "user", content: "old" }], actor, { memory, createdAt: 100 });
    expect(cache.take("a1", 2, 200)).toBeUndefined();
    expect(stopped).toBe(1);
    cache.put("a1", 2, [{ role: "user", content: "new" }], undefined, { memory, createdAt: 200 });
    const hit = cache.take("a1", 2, 200)!;
    expect(hit).toEqual({ messages: [{ role: "user", content: "new" }], memory });
    // The memory handed out is a copy: the claim's changes reach the cache only through put().
    hit.memory!.summary!.content = "changed";
    expect(cache.take("a1", 2, 200)!.memory).toEqual(memory);
  });
});
