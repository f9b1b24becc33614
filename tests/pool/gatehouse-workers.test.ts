/**
 * createWorkersHandler() outside workerd (Node and Deno), with a hand-made
 * execution context that collects `waitUntil` promises: what runs at module
 * scope, what a request drives after its response, the budget hand-back,
 * `scheduled`, the bounded SSE stream. tests/runtimes/workerd.int.test.ts runs the same
 * handler inside workerd.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, createWorkersHandler, defineAgent, defineTool, DefinitionError, memoryStore, scriptedModel } from "../../mod.ts";
import type { Store, WorkersExecutionContext } from "../../mod.ts";
import { countingStore } from "../../bench/counting-store.ts";
import { jsonRequest } from "../helpers/http.ts";

const post = (path: string, body: unknown = {}) => jsonRequest("POST", path, body, {}, "http://w");
const get = (path: string, headers: Record<string, string> = {}) => jsonRequest("GET", path, undefined, headers, "http://w");

function context() {
  const pending: Promise<unknown>[] = [];
  const ctx: WorkersExecutionContext = { waitUntil: (p) => void pending.push(p) };
  return { ctx, pending, settle: async () => void (await Promise.all(pending.splice(0))) };
}
const cron = { scheduledTime: 0, cron: "* * * * *" };

const work = defineTool({
  name: "work",
  description: "One unit of work",
  parameters: z.object({ n: z.number() }),
  execute: ({ n }) => ({ done: n }),
});
/** Five tool steps, then submit: 11 steps. */
const marathon = defineAgent({
  name: "marathon",
  instructions: "work five times",
  tools: [work],
  model: scriptedModel(({ step }) =>
    step <= 5 ? { toolCalls: [{ name: "work", args: { n: step } }] } : { toolCalls: [{ name: "submit_result", args: { result: { units: 5 } } }] }
  ),
});

async function state(h: { fetch: (r: Request, e: unknown, c: WorkersExecutionContext) => Promise<Response> }, env: object, id: string) {
  return ((await (await h.fetch(get(`/v1/agents/${id}`), env, context().ctx)).json()) as { state: string; output?: unknown });
}

describe("createWorkersHandler", () => {
  it("draws no id and builds no store at module scope; the first request does", async () => {
    let idCalls = 0;
    let stores = 0;
    const ids = { turnId: () => `turn_${++idCalls}`, workerId: () => `w_${++idCalls}` };
    const h = createWorkersHandler({ agents: [marathon], ids, store: () => (stores++, memoryStore()) });
    createGatehouse({ agents: [marathon], ids });
    expect({ idCalls, stores }).toEqual({ idCalls: 0, stores: 0 });
    const env = {};
    const { ctx, settle } = context();
    expect((await h.fetch(post("/v1/agents/a1/tasks", { agent: "marathon", input: "go" }), env, ctx)).status).toBe(202);
    await settle();
    expect(stores).toBe(1);
    expect(idCalls).toBeGreaterThan(0);
  });

  it("a task is answered first, then the woken agent runs in ctx.waitUntil", async () => {
    const store = memoryStore();
    const h = createWorkersHandler({ agents: [marathon], store: () => store, driveBudget: { steps: 11 } });
    const env = {};
    const { ctx, pending, settle } = context();
    const res = await h.fetch(post("/v1/agents/a2/tasks", { agent: "marathon", input: "go" }), env, ctx);
    expect(res.status).toBe(202);
    expect(pending).toHaveLength(1);
    await settle();
    expect(await state(h, env, "a2")).toMatchObject({ state: "done", output: { units: 5 } });
  });

  it("a request that rings no bell leaves nothing in waitUntil", async () => {
    const h = createWorkersHandler({ agents: [marathon], store: () => memoryStore() });
    const { ctx, pending } = context();
    expect((await h.fetch(get("/healthz"), {}, ctx)).status).toBe(200);
    expect((await h.fetch(post("/v1/agents/zz/tasks", { agent: "nobody", input: 1 }), {}, ctx)).status).toBe(400);
    expect(pending).toHaveLength(0);
  });

  it("a drive stops at its step budget with the agent handed back; scheduled finishes the turn across invocations", async () => {
    const store = memoryStore();
    const h = createWorkersHandler({ agents: [marathon], store: () => store, driveBudget: { steps: 2 }, scheduledDriveBudget: { steps: 3 } });
    const env = {};
    const { ctx, settle } = context();
    await h.fetch(post("/v1/agents/a3/tasks", { agent: "marathon", input: "go" }), env, ctx);
    await settle();
    const after = (await store.getAgent("a3"))!;
    expect(after.state).not.toBe("done");
    expect(after.leaseOwner).toBeNull();
    let runs = 0;
    while ((await store.getAgent("a3"))!.state !== "done" && runs < 10) {
      runs++;
      const c = context();
      await h.scheduled(cron, env, c.ctx);
      await c.settle();
    }
    expect(runs).toBe(3); // 11 steps: 2 in the request, then 3 per cron run
    expect(await state(h, env, "a3")).toMatchObject({ state: "done", output: { units: 5 } });
    const yields = (await store.readEvents("a3", 0, 1000)).filter((e) => e.type === "claim_yielded");
    expect(yields).toHaveLength(3);
  });

  it("each drive ends by writing the tool registry's batched calls: exact counts, no timer, two writes for the first turn", async () => {
    const counted = countingStore(memoryStore());
    const h = createWorkersHandler({ agents: [marathon], store: () => counted.store, driveBudget: { steps: 11 } });
    const env = {};
    for (const [turn, writes] of [[1, 2], [2, 3]]) {
      const { ctx, settle } = context();
      await h.fetch(post("/v1/agents/a9/tasks", { agent: "marathon", input: `go ${turn}` }), env, ctx);
      await settle();
      expect(await state(h, env, "a9")).toMatchObject({ state: "done" });
      // The first call of work at once and the rest at the drive's end; later drives only the batch.
      expect([counted.counts.calls.recordToolMethod, (await counted.store.getToolRole("work"))!.calls]).toEqual([writes, 5 * turn]);
    }
  });

  it("builds one gatehouse per env (resident actors survive between requests) and retries a store factory that failed", async () => {
    let calls = 0;
    const store = memoryStore();
    const h = createWorkersHandler({
      agents: [marathon],
      store: () => {
        if (++calls === 1) throw new Error("binding missing");
        return store;
      },
    });
    const env = {};
    const failed = await h.fetch(get("/healthz"), env, context().ctx);
    expect(failed.status).toBe(500);
    expect(failed.headers.get("content-type")).toContain("application/problem+json");
    expect(await failed.text()).not.toContain("binding missing");
    expect((await h.fetch(get("/healthz"), env, context().ctx)).status).toBe(200);
    expect((await h.fetch(get("/healthz"), env, context().ctx)).status).toBe(200);
    expect(calls).toBe(2);
  });

  it("refuses inline, bad budgets and bad SSE limits with a DefinitionError", () => {
    const store = () => memoryStore();
    expect(() => createWorkersHandler({ agents: [marathon], store, inline: true } as never)).toThrow(DefinitionError);
    expect(() => createWorkersHandler({ agents: [marathon], store, driveBudget: { steps: 0 } })).toThrow(DefinitionError);
    expect(() => createWorkersHandler({ agents: [marathon], store, scheduledDriveBudget: { ms: -1 } })).toThrow(DefinitionError);
    expect(() => createWorkersHandler({ agents: [marathon] } as never)).toThrow(DefinitionError);
    expect(() => createWorkersHandler({ agents: [marathon], store, sse: { maxReads: 0 } })).toThrow(/sse.maxReads/);
    expect(() => createGatehouse({ agents: [marathon], sse: { retryMs: -5 } })).toThrow(/sse.retryMs/);
  });

  it("an SSE stream ends after its read budget with retry:, and a reconnect with Last-Event-ID goes on from there", async () => {
    const inner = memoryStore();
    let reads = 0;
    const store: Store = Object.assign(Object.create(inner), {
      readEvents: (...a: Parameters<Store["readEvents"]>) => (reads++, inner.readEvents(...a)),
    });
    const h = createWorkersHandler({ agents: [marathon], store: () => store, sse: { pollMs: 1, maxReads: 5, retryMs: 250 } });
    const env = {};
    const c = context();
    await h.fetch(post("/v1/agents/s1/tasks", { agent: "marathon", input: "go" }), env, c.ctx);
    await c.settle();
    reads = 0;
    const res = await h.fetch(get("/v1/agents/s1/events", { accept: "text/event-stream" }), env, context().ctx);
    const text = await res.text(); // ends by itself
    expect(reads).toBe(5);
    expect(text.endsWith("retry: 250\n: reconnect\n\n")).toBe(true);
    const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(ids.length).toBeGreaterThan(0);
    const last = ids[ids.length - 1];
    const again = await (await h.fetch(get("/v1/agents/s1/events", { accept: "text/event-stream", "last-event-id": String(last) }), env, context().ctx)).text();
    const next = [...again.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(next.every((id) => id > last)).toBe(true);
    const all = await inner.readEvents("s1", 0, 10_000);
    expect([...ids, ...next]).toEqual(all.map((e) => e.id)); // gapless across the reconnect
  });
});
