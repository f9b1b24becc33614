/**
 * Schedules inside workerd (through Miniflare), on a real Redis behind the
 * Upstash-compatible bridge: a schedule written over HTTP is fired by the
 * cron trigger (`scheduled`) once its tick is due, one task per tick, read
 * back by a Node-side upstashStore on the same prefix. Node only.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { upstashStore } from "../../mod.ts";
import { scheduleKey } from "../../common/schedule.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { startUpstashBridge, type UpstashBridge } from "../helpers/upstash-bridge.ts";
import { eventually, type RunningWorker, startWorker } from "../workerd/harness.ts";

const T = 60_000;
const redis = useRedisServer({}, T);
let bridge: UpstashBridge;
let w: RunningWorker;
beforeAll(async () => {
  bridge = await startUpstashBridge({ redisUrl: redis.url });
  w = await startWorker(new URL("../workerd/fixtures/worker.ts", import.meta.url).pathname, {
    bindings: { UPSTASH_REDIS_REST_URL: bridge.url, UPSTASH_REDIS_REST_TOKEN: bridge.token, GATEHOUSE_REDIS_PREFIX: "wds" },
    define: { GATEHOUSE_TEST: {} },
  });
}, T);
afterAll(async () => {
  await w?.dispose();
  await bridge?.close();
});

describe("workerd: schedules fired by the cron trigger", () => {
  it("PUT a schedule, then scheduled() after its tick enqueues that tick's task once (croner runs in workerd)", async () => {
    const put = await w.fetch("/v1/agents/sched-a/schedules/every", { method: "PUT", json: { agent: "summarizer", input: "Summarize gatehouse", everyMs: 1_000 } });
    expect(put.status).toBe(201);
    const view = (await put.json()) as { nextRunAtMs: number };
    const peek = upstashStore({ url: bridge.url, token: bridge.token, prefix: "wds" });
    await new Promise((r) => setTimeout(r, Math.max(0, view.nextRunAtMs - Date.now()) + 50));
    expect(await w.scheduled()).toMatchObject({ outcome: "ok" });
    const rec = await eventually("the tick fired", async () => {
      const r = await peek.getSchedule("sched-a", "every");
      return r?.lastFired ? r : undefined;
    });
    const fired = rec.lastFired!.tick;
    expect(fired).toBeGreaterThanOrEqual(view.nextRunAtMs);
    const enqueued = (await peek.readEvents("sched-a", 0, 1000)).filter((e) => e.type === "task_enqueued");
    expect(enqueued).toHaveLength(1);
    expect(await peek.enqueueTask({ agentId: "sched-a", agentName: "summarizer", workerTarget: "default", input: "x", options: {}, turnId: "probe", idempotencyKey: scheduleKey("every", fired), now: Date.now() }))
      .toEqual({ status: "duplicate", turnId: rec.lastFired!.turnId });
    expect((await w.fetch("/v1/agents/sched-a/schedules/every", { method: "DELETE" })).status).toBe(200);
  }, T);
});
