/**
 * `enqueueAndClaim` (store/port.ts invariant `enqueue-then-claim`) on the memory store and one Redis:
 * the enqueue, then the claim, each answered on its own. On Redis the pair is one pipeline (one write,
 * no EVALSHA sent alone), where `enqueueTask` and `claimNext` are two calls in series. The claim takes
 * only what `claimNext` takes: nothing for a delayed task, an agent leased elsewhere or a duplicate, and
 * then the bell stays for another worker. NOSCRIPT (SCRIPT FLUSH) is sent again and still answers both.
 */
import { afterAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { redisStore } from "../../redis.ts";
import { memoryStore } from "../../store/memory.ts";
import { enqueueThenClaim } from "../../store/enqueue-claim.ts";
import type { ClaimNextRequest, EnqueueTaskRequest, Store } from "../../store/port.ts";
import { useRedisServer } from "../helpers/redis.ts";

const redis = useRedisServer({}, 60_000);
const clients: Redis[] = [];
const stores: Store[] = [];
afterAll(async () => {
  for (const s of stores) await s.close();
  for (const c of clients) c.disconnect();
});

/** A Redis store over a client whose pipelines and lone EVALSHAs are counted. */
function countedRedis(prefix: string) {
  const client = new Redis(redis.url, { enableAutoPipelining: false });
  clients.push(client);
  const counts = { pipelines: 0, piped: 0, evalsha: 0 };
  const evalsha = client.evalsha.bind(client);
  (client as unknown as { evalsha: unknown }).evalsha = (...args: Parameters<typeof evalsha>) => {
    counts.evalsha++;
    return evalsha(...args);
  };
  const pipeline = client.pipeline.bind(client);
  (client as unknown as { pipeline: unknown }).pipeline = () => {
    counts.pipelines++;
    const p = pipeline();
    const add = p.evalsha.bind(p);
    (p as unknown as { evalsha: unknown }).evalsha = (...args: Parameters<typeof add>) => {
      counts.piped++;
      return add(...args);
    };
    return p;
  };
  const store = redisStore({ client, prefix });
  stores.push(store);
  return { store, counts, client };
}

const task = (agentId: string, turnId: string, now: number, extra: Partial<EnqueueTaskRequest> = {}): EnqueueTaskRequest => ({
  agentId, agentName: "a", workerTarget: "default", input: "go", options: {}, turnId, now, ...extra,
});
const claimReq = (now: number, workerId = "w/0"): ClaimNextRequest => ({ workerTarget: "default", workerId, leaseMs: 10_000, now, agentNames: ["a"] });

const STORES: Record<string, (prefix: string) => Store> = {
  memory: () => memoryStore(),
  redis: (prefix) => countedRedis(prefix).store,
};

describe.each(Object.keys(STORES))("enqueueAndClaim (%s)", (name) => {
  const open = (p: string) => STORES[name]!(`ec_${name}_${p}`);

  it("a lone task: enqueued, then claimed by the same step's claim with its task", async () => {
    const store = open("lone");
    const r = await store.enqueueAndClaim!(task("x1", "t1", 1_000), claimReq(1_000));
    expect(r.enqueued).toEqual({ ok: true, value: { status: "enqueued", turnId: "t1" } });
    expect(r.claim.ok && r.claim.value.status).toBe("claimed");
    if (!r.claim.ok || r.claim.value.status !== "claimed") return;
    expect(r.claim.value.agentId).toBe("x1");
    expect(r.claim.value.task?.turnId).toBe("t1");
    expect((await store.getAgent("x1"))?.leaseOwner).toBe("w/0");
  });

  it("a delayed task: enqueued, the claim takes nothing, the bell stays at runAt", async () => {
    const store = open("delayed");
    const r = await store.enqueueAndClaim!(task("x2", "t2", 1_000, { runAt: 5_000 }), claimReq(1_000));
    expect(r.enqueued.ok && r.enqueued.value.status).toBe("enqueued");
    expect(r.claim).toEqual({ ok: true, value: { status: "empty" } });
    expect(await store.nextReadyAt("default")).toBe(5_000);
    const later = await store.claimNext(claimReq(5_000, "w/1"));
    expect(later.status === "claimed" && later.task?.turnId).toBe("t2");
  });

  it("an agent leased elsewhere: enqueued, the claim takes nothing, another worker takes it at the lease end", async () => {
    const store = open("leased");
    await store.enqueueTask(task("x3", "t3a", 1_000));
    const first = await store.claimNext({ ...claimReq(1_000, "elsewhere"), leaseMs: 500 });
    expect(first.status).toBe("claimed");
    const r = await store.enqueueAndClaim!(task("x3", "t3b", 1_100), claimReq(1_100));
    expect(r.enqueued.ok && r.enqueued.value.status).toBe("enqueued");
    expect(r.claim).toEqual({ ok: true, value: { status: "empty" } });
    expect((await store.getAgent("x3"))?.leaseOwner).toBe("elsewhere");
    // The bell waits for the lease end; then another worker takes the agent over.
    expect(await store.nextReadyAt("default")).toBe(1_500);
    const taken = await store.claimNext(claimReq(1_600, "w/2"));
    expect(taken.status === "claimed" && taken.previousLease?.workerId).toBe("elsewhere");
  });

  it("a duplicate (same idempotency key) enqueues nothing and its claim takes nothing new", async () => {
    const store = open("dup");
    const a = await store.enqueueAndClaim!(task("x4", "t4", 1_000, { idempotencyKey: "k" }), claimReq(1_000));
    expect(a.claim.ok && a.claim.value.status).toBe("claimed");
    const epoch = (await store.getAgent("x4"))!.epoch;
    const b = await store.enqueueAndClaim!(task("x4", "t4-again", 1_100, { idempotencyKey: "k" }), claimReq(1_100, "w/1"));
    expect(b.enqueued).toEqual({ ok: true, value: { status: "duplicate", turnId: "t4" } });
    expect(b.claim).toEqual({ ok: true, value: { status: "empty" } });
    const head = (await store.getAgent("x4"))!;
    expect([head.epoch, head.leaseOwner, head.pendingTasks]).toEqual([epoch, "w/0", 0]);
  });

  it("the claim follows claimNext's order: a task due earlier (another agent) is taken first, the new one stays due", async () => {
    const store = open("order");
    await store.enqueueTask(task("x5", "t5", 900));
    const r = await store.enqueueAndClaim!(task("x6", "t6", 1_000), claimReq(1_000));
    expect(r.claim.ok && r.claim.value.status === "claimed" && r.claim.value.agentId).toBe("x5");
    const next = await store.claimNext(claimReq(1_000, "w/1"));
    expect(next.status === "claimed" && next.agentId).toBe("x6");
  });

  it("bad input of the claim is its own error: the enqueue still answers", async () => {
    const store = open("bad");
    const r = await store.enqueueAndClaim!(task("x7", "t7", 1_000), { ...claimReq(1_000), agentNames: ["a,b"] });
    expect(r.enqueued.ok && r.enqueued.value.status).toBe("enqueued");
    expect(r.claim.ok).toBe(false);
    expect((await store.getAgent("x7"))?.pendingTasks).toBe(1);
  });

  it("answers as enqueueTask then claimNext, one after the other, do", async () => {
    const [a, b] = [open("same1"), open("same2")];
    const one = await a.enqueueAndClaim!(task("x8", "t8", 1_000), claimReq(1_000));
    const two = await enqueueThenClaim(b, task("x8", "t8", 1_000), claimReq(1_000));
    expect(one).toEqual(two);
  });
});

describe("enqueueAndClaim on one Redis: one pipeline", () => {
  it("a lone task costs one pipeline of two EVALSHA and no call alone; enqueueTask and claimNext cost two calls", async () => {
    const { store, counts } = countedRedis("ec_rt");
    await store.checkEviction();
    await store.enqueueAndClaim!(task("r1", "t1", 1_000), claimReq(1_000));
    expect(counts).toEqual({ pipelines: 1, piped: 2, evalsha: 0 });
    await store.enqueueTask(task("r2", "t2", 1_000));
    await store.claimNext(claimReq(1_000, "w/1"));
    expect(counts).toEqual({ pipelines: 1, piped: 2, evalsha: 2 });
  });

  it("after SCRIPT FLUSH both scripts are sent again in order: the task is enqueued and claimed", async () => {
    const { store, client } = countedRedis("ec_flush");
    await store.checkEviction();
    await client.script("FLUSH");
    const r = await store.enqueueAndClaim!(task("f1", "t1", 1_000), claimReq(1_000));
    expect(r.enqueued.ok && r.enqueued.value.status).toBe("enqueued");
    expect(r.claim.ok && r.claim.value.status === "claimed" && r.claim.value.task?.turnId).toBe("t1");
  });

  it("after a SCRIPT FLUSH that left the claim cached, an empty claim made before the enqueue is made again after it", async () => {
    const { store, client } = countedRedis("ec_late");
    await store.checkEviction();
    await client.script("FLUSH");
    // Load claim_next only: the pipeline's enqueue answers NOSCRIPT, its claim runs (before the enqueue) and finds nothing.
    await store.claimNext(claimReq(900));
    const r = await store.enqueueAndClaim!(task("l1", "t1", 1_000), claimReq(1_000));
    expect(r.enqueued.ok && r.enqueued.value.status).toBe("enqueued");
    expect(r.claim.ok && r.claim.value.status === "claimed" && r.claim.value.task?.turnId).toBe("t1");
  });
});
