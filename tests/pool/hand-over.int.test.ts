/**
 * The worker pool's hand-over (actors/pool/pool.ts header; store/port.ts invariant
 * `enqueue-then-claim`), through the tasks route, on the memory store and one Redis: a lone task
 * with a free local loop costs one `enqueueAndClaim` (before: `enqueueTask`, then the woken loop's
 * `claimNext`, two calls in series) and the claim it brought is run to the turn's end. No free loop,
 * a draining pool, a delayed task: the plain enqueue, as before. A duplicate claims nothing new. A
 * claim refused (the agent leased elsewhere, its key at its limit) leaves the bell: the pool takes
 * the agent at the lease end, or when the key's slot frees. A process that dies after the pipeline (its claim never run) leaves the task stored and
 * leased: another process runs it once the lease ends.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createGatehouse, defineAgent, type Model, scriptedModel, type Store } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { memoryStore } from "../../store/memory.ts";
import type { EnqueueAndClaimResult } from "../../store/port.ts";
import { useRedisServer } from "../helpers/redis.ts";

const redis = useRedisServer({}, 60_000);

const agent = () => defineAgent({ name: "h", instructions: "x", model: scriptedModel([{ toolCalls: [{ name: "submit_result", args: { result: "ok" } }] }]) });

/** `store` with its calls recorded as `name` or `name:status` (`enqueueAndClaim:<enqueue>/<claim>`). */
function recording(store: Store): { store: Store; calls: string[] } {
  const calls: string[] = [];
  const wrapped = new Proxy(store, {
    get(target, key) {
      const v = Reflect.get(target, key, target) as unknown;
      if (typeof v !== "function" || key === "close" || key === "watchBells") return typeof v === "function" ? v.bind(target) : v;
      return async (...args: unknown[]) => {
        const r = await (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        if (key === "enqueueAndClaim") {
          const { enqueued, claim } = r as EnqueueAndClaimResult;
          calls.push(`enqueueAndClaim:${enqueued.ok ? enqueued.value.status : "error"}/${claim.ok ? claim.value.status : "error"}`);
        } else {
          const status = r && typeof r === "object" && "status" in r ? `:${String((r as { status: unknown }).status)}` : "";
          calls.push(`${String(key)}${status}`);
        }
        return r;
      };
    },
  });
  return { store: wrapped, calls };
}

const STORES: Record<string, (prefix: string) => Store> = {
  memory: () => memoryStore(),
  redis: (prefix) => redisStore({ url: redis.url, prefix }),
};
const opened: Store[] = [];
afterAll(async () => {
  for (const s of opened) await s.close();
});

const post = (gh: { fetch(r: Request): Promise<Response> }, agentId: string, body: Record<string, unknown> = {}) =>
  gh.fetch(new Request(`http://local/v1/agents/${agentId}/tasks`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ agent: "h", input: "go", ...body }),
  }));

async function done(store: Store, agentId: string, turnId: string, ms = 10_000): Promise<string | undefined> {
  const until = Date.now() + ms;
  for (;;) {
    const t = await store.getTurn(agentId, turnId);
    if (t?.status === "done" || Date.now() > until) return t?.status;
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Lets the loops of a started pool park (the first polls, the others park at once). */
const settle = () => new Promise((r) => setTimeout(r, 60));

describe.each(Object.keys(STORES))("the hand-over (%s)", (name) => {
  const open = (p: string) => {
    const s = STORES[name]!(`ho_${name}_${p}`);
    opened.push(s);
    return s;
  };

  it("a lone task with a free local loop: one enqueueAndClaim, no enqueueTask, no claim of its own; the handed claim runs the turn to done", async () => {
    const { store, calls } = recording(open("lone"));
    const gh = createGatehouse({ agents: [agent()], store, concurrency: 4, pollMs: 50 });
    gh.startWorker();
    await settle();
    calls.length = 0;
    const res = await post(gh, "a1");
    expect(res.status).toBe(202);
    const { turnId } = await res.json() as { turnId: string };
    expect(await done(store, "a1", turnId)).toBe("done");
    await gh.stopWorker();
    expect(calls.filter((c) => c.startsWith("enqueue"))).toEqual(["enqueueAndClaim:enqueued/claimed"]);
    // The turn's claim came with the enqueue: no loop claimed on its own.
    expect(calls.filter((c) => c === "claimNext:claimed" || c.startsWith("claim:"))).toEqual([]);
    expect(calls.indexOf("enqueueAndClaim:enqueued/claimed")).toBeLessThan(calls.findIndex((c) => c.startsWith("commit")));
  });

  it("no free loop (one loop, the sentinel): enqueueTask, then the woken loop's claimNext, as before", async () => {
    const { store, calls } = recording(open("one"));
    const gh = createGatehouse({ agents: [agent()], store, concurrency: 1, pollMs: 50 });
    gh.startWorker();
    await settle();
    calls.length = 0;
    const { turnId } = await (await post(gh, "a2")).json() as { turnId: string };
    expect(await done(store, "a2", turnId)).toBe("done");
    await gh.stopWorker();
    expect(calls.filter((c) => c.startsWith("enqueue"))).toEqual(["enqueueTask:enqueued"]);
    expect(calls.filter((c) => c === "claimNext:claimed")).toHaveLength(1);
  });

  it("a draining pool takes no hand-over: the task is enqueued alone and another process runs it", async () => {
    const inner = open("drain");
    const { store, calls } = recording(inner);
    const gh = createGatehouse({ agents: [agent()], store, concurrency: 4, pollMs: 50 });
    gh.startWorker();
    await settle();
    await gh.drainWorker();
    calls.length = 0;
    const res = await post(gh, "a3");
    expect(res.status).toBe(202);
    const { turnId } = await res.json() as { turnId: string };
    expect(calls).toEqual(["enqueueTask:enqueued"]);
    expect((await inner.getTurn("a3", turnId))?.status).toBe("queued");
    const other = createGatehouse({ agents: [agent()], store: inner, concurrency: 2, pollMs: 50 });
    other.startWorker();
    expect(await done(inner, "a3", turnId)).toBe("done");
    await other.stopWorker();
  });

  it("a delayed task is enqueued alone (no hand-over) and runs when due", async () => {
    const { store, calls } = recording(open("delayed"));
    const gh = createGatehouse({ agents: [agent()], store, concurrency: 4, pollMs: 50 });
    gh.startWorker();
    await settle();
    calls.length = 0;
    const { turnId } = await (await post(gh, "a4", { delayMs: 150 })).json() as { turnId: string };
    expect(calls.filter((c) => c.startsWith("enqueue"))).toEqual(["enqueueTask:enqueued"]);
    expect(await done(store, "a4", turnId)).toBe("done");
    await gh.stopWorker();
  });

  it("a duplicate POST (same idempotency key) enqueues nothing and claims nothing new", async () => {
    const { store, calls } = recording(open("dup"));
    const gh = createGatehouse({ agents: [agent()], store, concurrency: 4, pollMs: 50 });
    gh.startWorker();
    await settle();
    const first = await (await post(gh, "a5", { idempotencyKey: "k1" })).json() as { turnId: string };
    expect(await done(store, "a5", first.turnId)).toBe("done");
    await settle();
    const epoch = (await store.getAgent("a5"))!.epoch;
    calls.length = 0;
    const again = await (await post(gh, "a5", { idempotencyKey: "k1" })).json() as { turnId: string; duplicate: boolean };
    expect(again).toMatchObject({ turnId: first.turnId, duplicate: true });
    await settle();
    await gh.stopWorker();
    expect(calls.filter((c) => c.startsWith("enqueue"))).toEqual(["enqueueAndClaim:duplicate/empty"]);
    const head = (await store.getAgent("a5"))!;
    expect([head.epoch, head.pendingTasks, head.activeTurnId]).toEqual([epoch, 0, null]);
  });

  it("a claim refused (the agent leased elsewhere) leaves the bell: the pool takes the agent at the lease end and runs both tasks", async () => {
    const { store, calls } = recording(open("leased"));
    const now = Date.now();
    await store.enqueueTask({ agentId: "a6", agentName: "h", workerTarget: "default", input: "first", options: {}, turnId: "t-first", now });
    const held = await store.claim({ agentId: "a6", workerId: "elsewhere", leaseMs: 400, now });
    expect(held.status).toBe("claimed");
    const gh = createGatehouse({ agents: [agent()], store, concurrency: 4, pollMs: 50 });
    gh.startWorker();
    await settle();
    calls.length = 0;
    const { turnId } = await (await post(gh, "a6")).json() as { turnId: string };
    expect(calls.filter((c) => c.startsWith("enqueue"))).toEqual(["enqueueAndClaim:enqueued/empty"]);
    expect(await done(store, "a6", "t-first")).toBe("done");
    expect(await done(store, "a6", turnId)).toBe("done");
    await gh.stopWorker();
  });

  it("a concurrency key at its limit: the handed claim takes nothing, the lane rings at the release and the task runs then", async () => {
    const { store, calls } = recording(open("limit"));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const submit = { toolCalls: [{ name: "submit_result", args: { result: "ok" } }] };
    const model: Model = {
      name: "gated",
      async generate(req) {
        if (req.agentId === "held") await gate;
        return structuredClone(submit);
      },
    };
    const gated = defineAgent({ name: "h", instructions: "x", model });
    const gh = createGatehouse({ agents: [gated], store, concurrency: 4, pollMs: 50, concurrencyLimits: { k: 1 } });
    gh.startWorker();
    await settle();
    const first = await (await post(gh, "held", { concurrencyKey: "k" })).json() as { turnId: string };
    for (let i = 0; i < 200 && (await store.getAgent("held"))?.leaseOwner == null; i++) await new Promise((r) => setTimeout(r, 10));
    calls.length = 0;
    const { turnId } = await (await post(gh, "waits", { concurrencyKey: "k" })).json() as { turnId: string };
    expect(calls.filter((c) => c.startsWith("enqueue"))).toEqual(["enqueueAndClaim:enqueued/empty"]);
    expect((await store.getTurn("waits", turnId))?.status).toBe("queued");
    release();
    expect(await done(store, "held", first.turnId)).toBe("done");
    expect(await done(store, "waits", turnId)).toBe("done");
    await gh.stopWorker();
  });

  it("a process that dies after the pipeline (its claim never run): the task is stored, another process runs it after the lease", async () => {
    const inner = open("crash");
    // The dying process: its pipeline went out (task stored, agent leased to its loop), then nothing ran the claim.
    const dying = new Proxy(inner, {
      get(target, key) {
        const v = Reflect.get(target, key, target) as unknown;
        if (key === "enqueueAndClaim") {
          return async (...args: Parameters<NonNullable<Store["enqueueAndClaim"]>>) => {
            const r = await target.enqueueAndClaim!(...args);
            expect(r.claim.ok && r.claim.value.status).toBe("claimed");
            return { enqueued: r.enqueued, claim: { ok: false, error: new Error("the process died") } };
          };
        }
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    const a = createGatehouse({ agents: [agent()], store: dying, concurrency: 4, pollMs: 50, leaseMs: 400 });
    a.startWorker();
    await settle();
    const res = await post(a, "a7");
    expect(res.status).toBe(202);
    const { turnId } = await res.json() as { turnId: string };
    await a.stopWorker();
    const head = (await inner.getAgent("a7"))!;
    expect(head.activeTurnId).toBe(turnId);
    expect(head.leaseOwner).not.toBeNull();
    const b = createGatehouse({ agents: [agent()], store: inner, concurrency: 2, pollMs: 50 });
    b.startWorker();
    expect(await done(inner, "a7", turnId)).toBe("done");
    await b.stopWorker();
  });
});
