/**
 * `enqueueAndClaim` (store/port.ts invariant `enqueue-then-claim`) on one Redis: the pair is one
 * pipeline (one write, no EVALSHA sent alone), where `enqueueTask` and `claimNext` are two calls in
 * series. NOSCRIPT (SCRIPT FLUSH) is sent again and still answers both, in order. What the claim
 * takes on every adapter is checked by tests/store/store-conformance-enqueue-claim.ts.
 */
import { afterAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { redisStore } from "../../redis.ts";
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

describe("enqueueAndClaim on one Redis: one pipeline", () => {
  it("a lone task costs one pipeline of two EVALSHA and no call alone; enqueueTask and claimNext cost two calls", async () => {
    const { store, counts } = countedRedis("ec_rt");
    await store.checkEviction();
    // Both scripts cached first (a fresh server answers NOSCRIPT once: the case below).
    await store.enqueueTask(task("r0", "t0", 900));
    await store.claimNext(claimReq(900));
    Object.assign(counts, { pipelines: 0, piped: 0, evalsha: 0 });
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
