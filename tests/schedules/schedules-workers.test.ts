/**
 * Schedules under createWorkersHandler (outside workerd, with a hand-made
 * execution context): the cron trigger (`scheduled`) fires the due ticks of
 * recurring schedules, each once, and drives the tasks they enqueued; an
 * invocation before the next tick fires nothing.
 */
import { describe, expect, it } from "vitest";
import { createWorkersHandler, defineAgent, memoryStore, scriptedModel } from "../../mod.ts";
import type { WorkersExecutionContext } from "../../mod.ts";
import { manualClock } from "../helpers/clock.ts";

const T0 = Date.UTC(2026, 0, 1);
const cron = { scheduledTime: 0, cron: "* * * * *" };

function context() {
  const pending: Promise<unknown>[] = [];
  const ctx: WorkersExecutionContext = { waitUntil: (p) => void pending.push(p) };
  return { ctx, settle: async () => void (await Promise.all(pending.splice(0))) };
}

describe("schedules on Workers", () => {
  it("scheduled() fires each due tick once and drives its task to the end", async () => {
    const clock = manualClock(T0);
    const store = memoryStore();
    const reporter = defineAgent({ name: "reporter", instructions: "", model: scriptedModel(() => ({ text: "done" })) });
    const h = createWorkersHandler({ agents: [reporter], store: () => store, clock });
    const env = {};
    const c = context();
    const put = await h.fetch(new Request("http://w/v1/agents/a1/schedules/m", {
      method: "PUT", headers: { "content-type": "application/json" },
      body: JSON.stringify({ agent: "reporter", input: "report", cron: "* * * * *" }),
    }), env, c.ctx);
    expect(put.status).toBe(201);
    await c.settle();
    await h.scheduled(cron, env, c.ctx);
    expect(await store.getAgent("a1")).toBeNull(); // nothing due yet
    clock.set(T0 + 60_000);
    await h.scheduled(cron, env, c.ctx);
    await h.scheduled(cron, env, c.ctx); // the same tick again: nothing more
    const head = await store.getAgent("a1");
    expect(head).toMatchObject({ state: "done", pendingTasks: 0 });
    const enqueued = (await store.readEvents("a1", 0, 1000)).filter((e) => e.type === "task_enqueued");
    expect(enqueued).toHaveLength(1);
    const sched = await store.getSchedule("a1", "m");
    expect(sched).toMatchObject({ nextTick: T0 + 120_000, lastFired: { tick: T0 + 60_000 } });
  });
});
