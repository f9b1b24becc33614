/**
 * The tool registry off the step path, on a real redis-server: a gatehouse
 * runs several turns whose steps call a successful in-process tool, with a
 * counting wrapper around its store (bench/counting-store.ts). Only the
 * first call of the method is written during the run (one
 * `recordToolMethod`); every later step's store calls are the step's own
 * (claims and commits). After `close()` the registry's `calls` equals the
 * number of successful calls.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { countingStore } from "../../bench/counting-store.ts";
import { buildGatehouse } from "../../gatehouse.ts";
import { defineAgent, defineTool } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { useRedisServer } from "../helpers/redis.ts";

const server = useRedisServer();

const TURNS = 4;
/** Model steps per turn that call the tool (then one step submits). */
const TOOL_STEPS = 3;

describe("tool registry writes on Redis", () => {
  it("writes the method's first call only; later steps make no registry call; calls are exact after close", async () => {
    const counted = countingStore(redisStore({ url: server.url, prefix: "regw" }));
    /** Store calls by method between one model step and the next. */
    const perStep: Array<Record<string, number>> = [];
    let last: Record<string, number> = {};
    const mark = () => {
      const now = { ...counted.counts.calls };
      perStep.push(Object.fromEntries(Object.entries(now).map(([k, v]) => [k, v - (last[k] ?? 0)]).filter(([, v]) => v !== 0)));
      last = now;
    };
    const work = defineTool({ name: "work", role: "worker", description: "Work", parameters: z.object({ n: z.number() }), execute: ({ n }) => ({ n }) });
    const agent = defineAgent({
      name: "w",
      instructions: "Work.",
      knownTools: false,
      model: {
        name: "scripted",
        generate(req) {
          mark();
          const turn = req.messages.slice(req.messages.findLastIndex((m) => m.role === "user"));
          const done = turn.filter((m) => m.role === "tool").length;
          return Promise.resolve(
            done < TOOL_STEPS ? { toolCalls: [{ name: "work", args: { n: done } }] } : { toolCalls: [{ name: "submit_result", args: { result: "ok" } }] },
          );
        },
      },
      tools: [work],
    });
    // A flush interval longer than the test: only the first call and close() write.
    const { gatehouse: gh } = buildGatehouse({ agents: [agent], store: counted.store }, { registryFlushMs: 600_000 });
    const post = (body: unknown) =>
      gh.app.request("/v1/agents/r1/tasks", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    try {
      for (let t = 0; t < TURNS; t++) {
        expect((await post({ agent: "w", input: `task ${t}` })).status).toBe(202);
        await gh.drain();
        expect((await gh.store.getAgent("r1"))!.state).toBe("done");
      }
      mark();
      // Steps: perStep[0] is what came before the first model call; perStep[i] what step i-1 caused up to the next.
      const steps = perStep.slice(1);
      expect(steps).toHaveLength(TURNS * (TOOL_STEPS + 1));
      const registryWrites = steps.map((s) => s.recordToolMethod ?? 0);
      expect(registryWrites[0]).toBe(1); // the first call of work: written at once
      expect(registryWrites.slice(1)).toEqual(new Array(steps.length - 1).fill(0));
      for (const s of steps.slice(1)) {
        // Every store call of a later step is the step's own: commits (and the claim of the next turn).
        expect(Object.keys(s).filter((k) => !["commit", "claimNext", "claim", "nextReadyAt", "getAgent", "enqueueTask"].includes(k))).toEqual([]);
      }
      expect((await gh.store.getToolRole("worker"))!.calls).toBe(1);
    } finally {
      await gh.close();
    }
    // close() wrote the batch: one more call, carrying every later call.
    expect(counted.counts.calls.recordToolMethod).toBe(2);
    const check = redisStore({ url: server.url, prefix: "regw" });
    try {
      expect(await check.getToolRole("worker")).toMatchObject({ methods: ["work"], calls: TURNS * TOOL_STEPS });
    } finally {
      await check.close();
    }
  }, 30_000);
});
