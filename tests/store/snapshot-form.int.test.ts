/**
 * The stored form of the snapshot (store/snapshot-form.ts):
 * - every snapshot the agent machine reaches (every path of the machine's
 *   graph, tests/helpers/machine-paths.ts) is stored compact and reads back
 *   as the same JSON text, key order included, and shorter;
 * - any JSON value reads back as the same text (random values, and machine
 *   snapshots with a field changed, dropped, added or moved: those are
 *   stored whole);
 * - a snapshot stored whole (before the form) reads back as it is, a value
 *   with its own `"~"` key too;
 * - on the Redis adapter (TCP; the Upstash and Cluster adapters share the
 *   script store, tests/store/store-upstash.int.test.ts and
 *   tests/store/store-redis-cluster.int.test.ts run the conformance suite) the stored
 *   text is the compact form, and every reader (claim, a commit that chains
 *   the next task, getAgent, a checkpoint, a fork) serves the whole snapshot.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Redis from "ioredis";
import { compactSnapshot, expandSnapshot } from "../../store/snapshot-form.ts";
import { persistedOf } from "../../machines/persist.ts";
import { generatePaths, walk } from "../helpers/machine-paths.ts";
import { hostEventsFor } from "../helpers/host-paths.ts";
import { redisStore } from "../../redis.ts";
import { keySpace } from "../../store/keys.ts";
import { useRedisServer } from "../helpers/redis.ts";

const text = (v: unknown) => JSON.stringify(v);
/** The stored text read back, as a store does it (JSON both ways). */
const roundTrip = (v: unknown) => expandSnapshot(JSON.parse(text(compactSnapshot(v))));

/** Every persisted snapshot along every path of the machine's graph. */
function machineSnapshots(): unknown[] {
  const seen = new Set<string>();
  const out: unknown[] = [];
  for (const path of generatePaths(hostEventsFor)) {
    for (const s of walk(path).snaps) {
      const p = JSON.parse(text(persistedOf(s as never)));
      const t = text(p);
      if (!seen.has(t)) {
        seen.add(t);
        out.push(p);
      }
    }
  }
  return out;
}

describe("snapshot form", () => {
  const snaps = machineSnapshots();

  it("every snapshot the machine reaches is stored compact and reads back as the same text", () => {
    expect(snaps.length).toBeGreaterThan(20);
    let whole = 0;
    let stored = 0;
    for (const s of snaps) {
      const c = compactSnapshot(s) as Record<string, unknown>;
      expect(c["~"], text(s)).toBe(1);
      expect(text(roundTrip(s))).toBe(text(s));
      whole += text(s).length;
      stored += text(c).length;
    }
    console.log(`snapshot bytes over ${snaps.length} machine snapshots: whole ${whole}, stored ${stored}`);
    expect(stored).toBeLessThan(whole * 0.75);
  });

  it("the objects the host persists (undefined `output` and `error` included) read back as their JSON text", () => {
    let n = 0;
    for (const path of generatePaths(hostEventsFor)) {
      for (const s of walk(path).snaps) {
        const p = persistedOf(s as never);
        expect((compactSnapshot(p) as Record<string, unknown>)["~"]).toBe(1);
        expect(text(roundTrip(p))).toBe(text(p));
        n++;
      }
    }
    expect(n).toBeGreaterThan(100);
  });

  it("the snapshot is not changed by compacting it", () => {
    for (const s of snaps) {
      const before = text(s);
      compactSnapshot(s);
      expect(text(s)).toBe(before);
    }
  });

  it("any JSON value reads back as the same text", () => {
    fc.assert(fc.property(fc.jsonValue({ maxDepth: 4 }), (v) => {
      expect(text(roundTrip(v))).toBe(text(v));
    }), { numRuns: 500, seed: 20261128 });
  });

  it("a machine snapshot with a field changed, dropped, added or moved reads back as the same text", () => {
    type Obj = Record<string, unknown>;
    /** The objects of `s` (itself and nested), with a path to each. */
    const objects = (s: unknown): Obj[] => {
      const out: Obj[] = [];
      const visit = (v: unknown) => {
        if (v && typeof v === "object" && !Array.isArray(v)) {
          out.push(v as Obj);
          for (const x of Object.values(v)) visit(x);
        }
      };
      visit(s);
      return out;
    };
    const mutation = fc.record({
      snap: fc.nat(), obj: fc.nat(), key: fc.nat(), kind: fc.constantFrom("change", "drop", "add", "move", "tilde"),
      value: fc.jsonValue({ maxDepth: 2 }),
    });
    fc.assert(fc.property(mutation, (m) => {
      const s = structuredClone(snaps[m.snap % snaps.length]) as Obj;
      const objs = objects(s);
      const o = objs[m.obj % objs.length];
      const keys = Object.keys(o);
      const k = keys.length > 0 ? keys[m.key % keys.length] : "x";
      if (m.kind === "change") o[k] = m.value;
      else if (m.kind === "drop") delete o[k];
      else if (m.kind === "add") o[`extra${m.key % 3}`] = m.value;
      else if (m.kind === "tilde") o["~"] = m.value;
      else {
        const v = o[k];
        delete o[k];
        o[k] = v;
      }
      expect(text(roundTrip(s))).toBe(text(s));
    }), { numRuns: 1000, seed: 20261129 });
  });

  it("a snapshot stored whole reads back as it is; one with its own \"~\" key is stored escaped", () => {
    for (const s of snaps) expect(text(expandSnapshot(JSON.parse(text(s))))).toBe(text(s));
    for (const v of [null, 3, "x", [], {}, { value: "done" }, { "~": 2 }]) expect(text(expandSnapshot(v))).toBe(text(v));
    for (const v of [{ "~": 1, value: "x" }, { "~": 0, v: 1 }, { a: 1, "~": 1 }]) {
      expect(compactSnapshot(v)).toEqual({ "~": 0, v });
      expect(text(roundTrip(v))).toBe(text(v));
    }
  });
});

describe("snapshot form on the Redis adapter", () => {
  const server = useRedisServer();
  let raw: Redis;
  beforeAll(async () => {
    raw = new Redis(server.url);
  });
  afterAll(async () => {
    raw?.disconnect();
  });

  it("stores the compact text and serves the whole snapshot to every reader", async () => {
    const [first, second] = [snaps()[3], snaps()[7]];
    const store = redisStore({ url: server.url, prefix: "sf" });
    const k = keySpace("sf").agent("a1");
    const T0 = 1_700_000_000_000;
    for (const turnId of ["t1", "t2"]) {
      expect((await store.enqueueTask({ agentId: "a1", agentName: "x", workerTarget: "default", input: turnId, options: {}, turnId, now: T0 })).status).toBe("enqueued");
    }
    const c = await store.claimNext({ workerId: "w1", workerTarget: "default", leaseMs: 30_000, now: T0 + 1 });
    if (c.status !== "claimed") throw new Error(c.status);
    const base = {
      agentId: "a1", workerId: "w1", epoch: c.epoch, turnId: "t1", state: "running", ackMailThrough: 0, leaseMs: 30_000,
      recordToolCalls: [], resolveToolCalls: [], messages: [], events: [], release: null,
      retention: { maxEvents: 10_000, maxEventBytes: 1 << 22, maxTurns: 200, checkpointEvery: 1 },
    };
    const a = await store.commit({ ...base, expectedVersion: c.head.version, snapshot: first, activeTurnId: "t1", now: T0 + 2 } as never);
    expect(a.status).toBe("applied");
    const storedText = (await raw.get(`${k.head}:snapshot`))!;
    expect(storedText.startsWith('{"~":1,')).toBe(true);
    expect(storedText.length).toBeLessThan(text(first).length * 0.6);
    expect(text((await store.getAgent("a1"))!.snapshot)).toBe(text(first));

    // The commit that ends the turn chains the next task: its claim carries the whole snapshot.
    const b = await store.commit({
      ...base, expectedVersion: (a as { version: number }).version, snapshot: second, state: "done", activeTurnId: null,
      release: { runnableAt: null }, chainNextTask: true, now: T0 + 3, events: [{ type: "note", data: { n: 1 } }],
    } as never);
    if (b.status !== "applied" || !b.chained) throw new Error(`not chained: ${text(b)}`);
    expect(text(b.chained.head.snapshot)).toBe(text(second));
    // Turn t2 ends with a log limit of one event: the log is cut at the checkpoint of t1's end, whose snapshot a reader gets whole.
    const e = await store.commit({
      ...base, epoch: b.chained.epoch, turnId: "t2", expectedVersion: b.chained.head.version, snapshot: first, state: "done",
      activeTurnId: null, release: { runnableAt: null }, now: T0 + 4, events: [{ type: "note", data: { n: 2 } }],
      retention: { ...base.retention, maxEvents: 1 },
    } as never);
    expect(e.status).toBe("applied");
    const ckpts = await raw.lrange(k.ckpts, 0, -1);
    expect(ckpts.length).toBeGreaterThan(0);
    expect(ckpts.every((t) => t.includes('"snapshot":{"~":1,'))).toBe(true);
    const cp = await store.readCheckpoint("a1");
    expect(cp).not.toBeNull();
    expect(text(cp?.snapshot)).toBe(text(second));
    const fresh = redisStore({ url: server.url, prefix: "sf" });
    expect(text((await fresh.getAgent("a1"))!.snapshot)).toBe(text(first));

    // A fork stores the compact form too and serves it whole.
    const f = await store.createFork({
      agentId: "f1", agentName: "x", workerTarget: "default", snapshot: first, state: "running", activeTurnId: null,
      currentTask: null, runnableAt: null, now: T0 + 5, messages: [], toolCalls: [],
      event: { type: "forked", data: { from: "a1" } },
    } as never);
    expect(f.status).toBe("created");
    expect((await raw.get(`${keySpace("sf").agent("f1").head}:snapshot`))!.startsWith('{"~":1,')).toBe(true);
    expect(text((await store.getAgent("f1"))!.snapshot)).toBe(text(first));
    await store.close();
    await fresh.close();
  });

  let cached: unknown[] | undefined;
  const snaps = () => (cached ??= machineSnapshots());
});
