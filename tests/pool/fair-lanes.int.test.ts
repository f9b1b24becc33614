/**
 * Fair lanes through the worker pool (store/port.ts invariant `fair-lanes`):
 * four loops busy with tenant A's backlog (40 tasks on 40 agents, key
 * "tenant:A"), then tenant B's one task (key "tenant:B"): B starts within one
 * round of the loops, not behind A's backlog as first-come-first-served
 * would have it. Turns are gated (each waits until the test releases it), so
 * the order of starts is the order of claims, with no timing in the verdict.
 * In-process, on the memory store and on a real redis-server.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createGatehouse, defineAgent, memoryStore, scriptedModel } from "../../mod.ts";
import type { Gatehouse, Store } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { useRedisServer } from "../helpers/redis.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A gated agent: each turn's first model step records its start and waits for the test's release. */
function gatedAgent() {
  const starts: string[] = [];
  const gates = new Map<string, () => void>();
  let opened = false;
  const agent = defineAgent({
    name: "gated",
    instructions: "wait for the gate",
    model: scriptedModel(async (ctx) => {
      if (ctx.step === 1 && !opened) {
        starts.push(ctx.agentId);
        await new Promise<void>((resolve) => gates.set(ctx.agentId, resolve));
      }
      return { toolCalls: [{ name: "submit_result", args: { result: { ok: true } } }] };
    }),
  });
  const release = (agentId: string) => {
    const open = gates.get(agentId);
    if (!open) throw new Error(`no gate open for ${agentId}`);
    gates.delete(agentId);
    open();
  };
  /** Opens every gate, now and later (the test's end). */
  const openAll = () => {
    opened = true;
    for (const id of [...gates.keys()]) release(id);
  };
  return { agent, starts, release, openAll };
}

async function waitFor(cond: () => boolean, what: string, limitMs = 30_000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > limitMs) throw new Error(`Cannot see ${what}: not within ${limitMs} ms`);
    await sleep(5);
  }
}

const redis = useRedisServer();
const open: Array<{ g: Gatehouse; store: Store }> = [];
afterEach(async () => {
  for (const { g, store } of open.splice(0)) {
    await g.stopWorker();
    await store.close();
  }
});

let n = 0;
const stores: Record<string, () => Store> = {
  memory: () => memoryStore(),
  redis: () => redisStore({ url: redis.url, prefix: `fair${++n}` }),
};

describe.each(Object.keys(stores))("fair lanes through the pool (%s)", (kind) => {
  it("four loops busy with tenant A's 40 tasks: tenant B's one task starts within one round", async () => {
    const store = stores[kind]();
    const { agent, starts, release, openAll } = gatedAgent();
    const g = createGatehouse({ agents: [agent], store, concurrency: 4, pollMs: 20 });
    open.push({ g, store });
    const enqueue = (agentId: string, key: string) =>
      store.enqueueTask({ agentId, agentName: "gated", workerTarget: "default", input: "go", options: {}, turnId: `turn_${agentId}`, now: Date.now(), concurrencyKey: key });
    for (let i = 0; i < 40; i++) await enqueue(`a${String(i).padStart(2, "0")}`, "tenant:A");
    g.startWorker();
    await waitFor(() => starts.length === 4, "four turns of A running");
    await enqueue("b1", "tenant:B");
    // Release the running turns one at a time, oldest first: each freed loop claims the next lane's agent.
    let released = 0;
    try {
      while (!starts.includes("b1") && released < 12) {
        const before = starts.length;
        release(starts[released++]);
        await waitFor(() => starts.length > before, "the freed loop start the next turn");
      }
    } finally {
      openAll();
    }
    const at = starts.indexOf("b1") - 4;
    // First-come-first-served would start b1 after A's other 36 tasks; a fair rotation after at most one more A.
    expect(at).toBeGreaterThanOrEqual(0);
    expect(at).toBeLessThan(4);
  }, 60_000);
});
