/**
 * redisStore, as the package's `./redis` entry opens it (redis.ts: `afterBurst`
 * is `process.nextTick`), writes the script calls of one burst of microtasks
 * in one socket write (store/redis.ts `writeBurst`). Against a real redis-server:
 * - calls issued in the same burst leave in one `writev`, and each gets its
 *   own answer, in the order issued (the same answers as calls written one
 *   by one);
 * - a burst is written before the next turn of the event loop (a
 *   `setImmediate` queued after the calls finds the socket empty), so no call
 *   waits for a later turn;
 * - a call issued in a later burst is written in a write of its own;
 * - without `afterBurst` (store/redis.ts alone) every call is written on its own.
 */
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { redisStore } from "../../redis.ts";
import { redisStore as bareRedisStore } from "../../store/redis.ts";
import { useRedisServer } from "../helpers/redis.ts";

const server = useRedisServer();

const T0 = 1_700_000_000_000;

type Writes = { writev: number; write: number; chunks: number };

/** Counts the socket's writes (one `_write` or `_writev` is one system call's worth). */
function countWrites(client: Redis): Writes {
  const s = client.stream as unknown as {
    _write: (...a: unknown[]) => unknown;
    _writev: (chunks: unknown[], cb: unknown) => unknown;
  };
  const counts: Writes = { writev: 0, write: 0, chunks: 0 };
  const write = s._write.bind(s);
  const writev = s._writev.bind(s);
  // A runtime whose `_writev` hands its chunks to `_write` (Bun) makes one write, not more: only outer calls count.
  let inWritev = false;
  s._write = (...a: unknown[]) => (inWritev || (counts.write++, counts.chunks++), write(...a));
  s._writev = (chunks: unknown[], cb: unknown) => {
    counts.writev++, counts.chunks += chunks.length;
    inWritev = true;
    try {
      return writev(chunks, cb);
    } finally {
      inWritev = false;
    }
  };
  return counts;
}

async function readyClient(): Promise<Redis> {
  const client = new Redis(server.url, { enableAutoPipelining: false });
  await client.ping();
  return client;
}

const enqueue = (store: ReturnType<typeof redisStore>, i: number, idempotencyKey?: string, turn = i) =>
  store.enqueueTask({
    agentId: `a${i}`, agentName: "bench", workerTarget: "default", input: `task ${i}`, options: {}, turnId: `t${turn}`, now: T0,
    ...(idempotencyKey ? { idempotencyKey } : {}),
  });
/** The script's SHA is computed and the script loaded in Redis: a first call's digest and NOSCRIPT fallback add turns and writes. */
const warm = (store: ReturnType<typeof redisStore>) => enqueue(store, 999);

describe("redisStore: one write per burst of calls", () => {
  it("writes the calls of one burst in one writev, each answered in order", async () => {
    const client = await readyClient();
    const store = redisStore({ client, prefix: "wb1" });
    await warm(store);
    const counts = countWrites(client);
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => enqueue(store, i)));
    expect(answers).toEqual(Array.from({ length: 10 }, (_, i) => ({ status: "enqueued", turnId: `t${i}` })));
    expect(counts).toEqual({ writev: 1, write: 0, chunks: 10 });
    // Each call did its own work: every agent has its task.
    const heads = await Promise.all(Array.from({ length: 10 }, (_, i) => store.getAgent(`a${i}`)));
    expect(heads.map((h) => h?.currentTask?.turnId ?? h?.agentId)).toHaveLength(10);
    for (const [i, h] of heads.entries()) expect(h?.agentId).toBe(`a${i}`);
    await store.close();
    client.disconnect();
  });

  it("gives the same answers as calls written one at a time", async () => {
    const client = await readyClient();
    const burst = redisStore({ client, prefix: "wb2" });
    const single = redisStore({ client, prefix: "wb3" });
    await Promise.all([warm(burst), warm(single)]);
    // The last three repeat the idempotency keys of the first three under new turn ids: answered with the first ones.
    const inBurst = await Promise.all(Array.from({ length: 6 }, (_, i) => enqueue(burst, i % 3, `k${i % 3}`, i)));
    const oneByOne = [];
    for (let i = 0; i < 6; i++) oneByOne.push(await enqueue(single, i % 3, `k${i % 3}`, i));
    expect(inBurst).toEqual(oneByOne);
    expect(inBurst.map((a) => "turnId" in a ? a.turnId : a.status)).toEqual(["t0", "t1", "t2", "t0", "t1", "t2"]);
    client.disconnect();
  });

  it("writes a burst before the next turn of the event loop; a later burst writes on its own", async () => {
    const client = await readyClient();
    const store = redisStore({ client, prefix: "wb4" });
    await warm(store);
    const counts = countWrites(client);
    const first = Promise.all([enqueue(store, 1), enqueue(store, 2)]);
    const atNextTurn = await new Promise<{ chunks: number; pending: number }>((resolve) =>
      setImmediate(() => resolve({ chunks: counts.chunks, pending: client.stream.writableLength }))
    );
    expect(atNextTurn).toEqual({ chunks: 2, pending: 0 });
    await first;
    await enqueue(store, 3);
    expect(counts).toEqual({ writev: 1, write: 1, chunks: 3 });
    client.disconnect();
  });

  it("writes each call on its own without afterBurst", async () => {
    const client = await readyClient();
    const store = bareRedisStore({ client, prefix: "wb5" });
    await warm(store);
    const counts = countWrites(client);
    expect(await Promise.all([enqueue(store, 1), enqueue(store, 2)])).toHaveLength(2);
    expect(counts).toEqual({ writev: 0, write: 2, chunks: 2 });
    client.disconnect();
  });
});
