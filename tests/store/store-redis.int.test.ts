import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keySpace, StoreInputError } from "../../store/keys.ts";
import { scripts } from "../../store/lua/scripts.gen.ts";
import type { CommitRequest } from "../../store/port.ts";
import { redisStore } from "../../redis.ts";
import { watchdogTick } from "../../actors/pool/watchdog.ts";
import { sha1Hex } from "../../common/hex.ts";
import { EvictionPolicyError } from "../../store/script-runner.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { storeConformance } from "./store-conformance.ts";
import { admissionConformance } from "./store-admission-conformance.ts";
import { redisStateReader } from "../helpers/store-state.ts";

const server = useRedisServer();
let raw: Redis;
let n = 0;
const rawCommand = (c: string[]) => raw.call(c[0], ...c.slice(1));
const freshPrefix = () => `t${++n}_${Math.random().toString(36).slice(2, 8)}`;
beforeAll(async () => {
  raw = new Redis(server.url);
});
afterAll(async () => {
  raw?.disconnect();
});

storeConformance("redis", async () => {
  const prefix = freshPrefix();
  return {
    store: redisStore({ url: server.url, prefix }),
    open: async () => redisStore({ url: server.url, prefix }),
    state: redisStateReader(rawCommand, prefix),
    cleanup: async () => {},
    idempotencyEntries: (agentId) => raw.hlen(keySpace(prefix).agent(agentId).idem),
    putRawToolEntry: async (role, entry) => void await raw.hset(keySpace(prefix).tools, role, JSON.stringify(entry)),
    cutEvents: async (agentId, through) => {
      const k = keySpace(prefix).agent(agentId);
      await raw.ltrim(k.events, through, -1);
      await raw.hset(k.head, "eventsTrimmedThrough", String(through));
    },
    scriptCalls: async () => scriptCallsOf(await raw.info("commandstats")),
  };
});

/** EVALSHA and EVAL calls in an `INFO commandstats` answer. */
function scriptCallsOf(info: string): number {
  let n = 0;
  for (const m of info.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)) n += Number(m[1]);
  return n;
}

admissionConformance("redis", async () => {
  const prefix = freshPrefix();
  return { store: redisStore({ url: server.url, prefix }), open: async () => redisStore({ url: server.url, prefix }), cleanup: async () => {} };
});

const T0 = 1_700_000_000_000;
const LEASE = 10_000;

/** One agent through a turn with a tool call, a result, a verdict: every kind of key exists afterwards. */
async function busyAgent(store: ReturnType<typeof redisStore>, agentId = "a1", release: CommitRequest["release"] = { runnableAt: null }) {
  await store.enqueueTask({ agentId, agentName: "calc", workerTarget: "default", input: "x", options: {}, turnId: `turn_${agentId}`, now: T0, idempotencyKey: "k" });
  const c = await store.claim({ agentId, workerId: "w1", leaseMs: LEASE, now: T0 + 1 });
  if (c.status !== "claimed") throw new Error(c.status);
  const commit: CommitRequest = {
    agentId, workerId: "w1", epoch: c.epoch, expectedVersion: 0, turnId: `turn_${agentId}`, snapshot: { value: "waiting-tools" },
    state: "waiting-tools", activeTurnId: `turn_${agentId}`, events: [{ type: "step", data: {} }], messages: [{ role: "user", content: "x" }],
    recordToolCalls: [{ turnId: `turn_${agentId}`, toolCallId: "c1", name: "ask", args: {}, external: true, deadline: T0 + 100 },
      { turnId: `turn_${agentId}`, toolCallId: "c2", name: "ask", args: {}, external: true, deadline: T0 + 100 }],
    resolveToolCalls: [], ackMailThrough: 0, release, leaseMs: LEASE, now: T0 + 2,
  };
  const r = await store.commit(commit);
  if (r.status !== "applied") throw new Error(r.status);
  await store.deliverToolResult({ agentId, turnId: `turn_${agentId}`, toolCallId: "c1", outcome: { ok: true, value: 1 }, afterExecution: "continue", source: "http", now: T0 + 3 });
  await store.putVerdict({ agentId, verdictId: `v_${agentId}`, turnId: `turn_${agentId}`, status: "PASS", json: "{}" });
  return { claim: c, commit };
}

describe("redisStore", () => {
  it("keeps every key of one agent under its hash tag and the indexes apart", async () => {
    const prefix = freshPrefix();
    const store = redisStore({ url: server.url, prefix });
    await busyAgent(store, "a1");
    await busyAgent(store, "b2");
    const keys = (await raw.keys(`${prefix}:*`)).sort();
    const indexes = keys.filter((k) => !k.includes("{a:"));
    expect(indexes).toEqual([`${prefix}:agents`, `${prefix}:deadlines`, `${prefix}:ready:default`, `${prefix}:verdicts`]);
    for (const id of ["a1", "b2"]) {
      const own = keys.filter((k) => k.includes(`{a:${id}}`));
      // head (its task apart: over 64 bytes), tasks are consumed (empty list is deleted), mail, msgs, events, idem, turns, inputs, calls, verdicts
      expect(own.map((k) => k.slice(`${prefix}:{a:${id}}:`.length)).sort()).toEqual(
        ["calls:turn_" + id, "events", "head", "head:currentTask", "idem", "inputs", "mail", "msgs", "turns", "verdicts"].sort(),
      );
      for (const k of own) expect(k.startsWith(`${prefix}:{a:${id}}:`)).toBe(true);
    }
    await store.close();
  });

  it("the state reader of the tests sees a write of any type under the agent's tag, a TTL, and the agent's index entries only", async () => {
    const prefix = freshPrefix();
    const store = redisStore({ url: server.url, prefix });
    const state = redisStateReader(rawCommand, prefix);
    await busyAgent(store, "a*");
    await busyAgent(store, "ab");
    const base = await state("a*");
    expect(Object.keys(base.records).sort()).toEqual(["calls:turn_a*", "events", "head", "head:currentTask", "idem", "inputs", "mail", "msgs", "turns", "verdicts"]);
    expect(base.deadlines).toEqual({ "turn_a*\nc2": T0 + 100 });
    expect(Object.keys(base.verdicts)).toEqual(["v_a*"]);
    expect(Object.keys(base.ready)).toEqual(["default"]);
    const tag = `${prefix}:{a:a*}:`;
    const writes: Array<[string, () => Promise<unknown>]> = [
      ["string", () => raw.set(`${tag}s`, "1")],
      ["set", () => raw.sadd(`${tag}set`, "x")],
      ["zset", () => raw.zadd(`${tag}z`, 1, "x")],
      ["stream", () => raw.xadd(`${tag}x`, "*", "f", "v")],
      ["hash field", () => raw.hset(`${tag}head`, "_x", "1")],
      ["list item", () => raw.rpush(`${tag}mail`, "m")],
      ["ttl", () => raw.pexpire(`${tag}events`, 100_000)],
      ["bell in another queue", () => raw.zadd(`${prefix}:ready:gpu`, 5, "a*")],
      ["deadline", () => raw.zadd(`${prefix}:deadlines`, 5, "a*\nt\nc")],
      ["verdict naming the agent", () => raw.hset(`${prefix}:verdicts`, "v9", JSON.stringify({ agentId: "a*" }))],
    ];
    let prev = base;
    for (const [what, write] of writes) {
      await write();
      const next = await state("a*");
      expect(next, what).not.toEqual(prev);
      prev = next;
    }
    // Another agent's records and index entries are not part of a*'s state, glob characters notwithstanding.
    const other = await state("ab");
    await raw.set(`${prefix}:{a:ab}:s`, "1");
    await raw.zadd(`${prefix}:deadlines`, 5, "ab\nt\nc");
    expect(await state("a*")).toEqual(prev);
    expect(await state("ab")).not.toEqual(other);
    await store.close();
  });

  it("refuses agent ids that would move the hash tag, and non-integer times, with StoreInputError", async () => {
    const store = redisStore({ url: server.url, prefix: freshPrefix() });
    for (const agentId of ["a{b", "a}b", "a\nb", "", ".", ".."]) {
      await expect(store.getAgent(agentId)).rejects.toBeInstanceOf(StoreInputError);
    }
    await expect(store.enqueueTask({ agentId: "a", agentName: "x", workerTarget: "Bad.Target", input: 1, options: {}, turnId: "t", now: T0 }))
      .rejects.toBeInstanceOf(StoreInputError);
    await expect(store.enqueueTask({ agentId: "a", agentName: "x", workerTarget: "default", input: 1, options: {}, turnId: "t\n1", now: T0 }))
      .rejects.toBeInstanceOf(StoreInputError);
    await expect(store.claim({ agentId: "a", workerId: "w", leaseMs: 1.5, now: T0 })).rejects.toBeInstanceOf(StoreInputError);
    expect(() => redisStore({ url: server.url, prefix: "a{b}" })).toThrow(StoreInputError);
    await store.close();
  });

  it("with `shards`, lays one Redis out like a Cluster (every key under a shard tag) and refuses another shard count for the prefix", async () => {
    const prefix = freshPrefix();
    const store = redisStore({ url: server.url, prefix, shards: 4 });
    const ks = keySpace(prefix, { shards: 4 });
    await busyAgent(store, "a1");
    await busyAgent(store, "b2");
    const keys = (await raw.keys(`${prefix}:*`)).sort();
    for (const k of keys.filter((k) => k !== `${prefix}:layout`)) expect(k.startsWith(`${prefix}:{s:`), k).toBe(true);
    for (const id of ["a1", "b2"]) {
      const home = ks.agent(id).home.prefix;
      expect(keys.filter((k) => k.includes(`{a:${id}}`)).every((k) => k.startsWith(`${home}:{a:${id}}:`))).toBe(true);
      expect(await raw.zscore(`${home}:agents`, id)).not.toBeNull();
    }
    expect(await raw.get(`${prefix}:layout`)).toBe("shards=4");
    expect(await store.getVerdict("v_b2")).toBe("{}");
    const other = redisStore({ url: server.url, prefix, shards: 8 });
    await expect(other.getAgent("a1")).rejects.toThrow(/laid out with shards=4/);
    await other.close();
    expect(() => redisStore({ url: server.url, prefix, shards: 0 })).toThrow(StoreInputError);
    expect(() => redisStore({ url: server.url, clusterNodes: ["127.0.0.1:1"] })).toThrow(StoreInputError);
    await store.close();
  });

  it("uses the SHA-1 Redis computes for each script", async () => {
    for (const source of Object.values(scripts)) {
      expect(await raw.script("LOAD", source)).toBe(await sha1Hex(source));
    }
  });

  it("falls back to EVAL when the script cache was flushed, and EVALSHA works again after", async () => {
    const store = redisStore({ url: server.url, prefix: freshPrefix() });
    await raw.script("FLUSH");
    const sha = await sha1Hex(scripts.get_agent);
    expect(await raw.script("EXISTS", sha)).toEqual([0]);
    expect(await store.getAgent("a1")).toBeNull();
    expect(await raw.script("EXISTS", sha)).toEqual([1]);
    await store.close();
  });

  it("a replayed enqueue (same turn id) answers enqueued and writes nothing", async () => {
    const store = redisStore({ url: server.url, prefix: freshPrefix() });
    const state = redisStateReader(rawCommand, store.prefix);
    const req = { agentId: "a1", agentName: "calc", workerTarget: "default", input: 1, options: {}, turnId: "turn_1", now: T0 };
    expect(await store.enqueueTask(req)).toEqual({ status: "enqueued", turnId: "turn_1" });
    const before = await state("a1");
    expect(await store.enqueueTask(req)).toEqual({ status: "enqueued", turnId: "turn_1" });
    expect(await state("a1")).toEqual(before);
    await store.close();
  });

  it("a replayed commit answers applied with the same numbers and writes nothing", async () => {
    const store = redisStore({ url: server.url, prefix: freshPrefix() });
    const { commit } = await busyAgent(store);
    const state = redisStateReader(rawCommand, store.prefix);
    const before = await state("a1");
    // busyAgent's commit was applied; a replay of it (a client resend) must not apply again.
    const again = await store.commit(commit);
    expect(again).toEqual({ status: "applied", version: 1, lastEventId: 2, messagesTrimmedThrough: 0 });
    expect(await state("a1")).toEqual(before);
    await store.close();
  });

  it("a replayed chaining commit answers the same chained claim and writes nothing", async () => {
    const store = redisStore({ url: server.url, prefix: freshPrefix() });
    const base = { agentId: "a1", agentName: "calc", workerTarget: "default", options: {}, now: T0 };
    await store.enqueueTask({ ...base, input: 1, turnId: "turn_1" });
    await store.enqueueTask({ ...base, input: { q: 2 }, turnId: "turn_2" });
    const c = await store.claim({ agentId: "a1", workerId: "w1", leaseMs: 30_000, now: T0 + 1 });
    if (c.status !== "claimed") throw new Error(c.status);
    const commit = {
      agentId: "a1", workerId: "w1", epoch: c.epoch, expectedVersion: c.head.version, turnId: "turn_1",
      snapshot: { value: "done" }, state: "done", activeTurnId: null, events: [], messages: [], recordToolCalls: [],
      resolveToolCalls: [], ackMailThrough: 0, release: { runnableAt: null }, leaseMs: 30_000, now: T0 + 2, chainNextTask: true,
    };
    const first = await store.commit(commit);
    if (first.status !== "applied" || !first.chained) throw new Error("expected a chained commit");
    expect(first.chained.task).toMatchObject({ turnId: "turn_2", input: { q: 2 } });
    const state = redisStateReader(rawCommand, store.prefix);
    const before = await state("a1");
    // The answer was lost and the client sends the commit again: the same claim comes back, nothing is written.
    expect(await store.commit(commit)).toEqual(first);
    expect(await state("a1")).toEqual(before);
    await store.close();
  });

  it("a replayed cancel answers accepted and writes nothing", async () => {
    const store = redisStore({ url: server.url, prefix: freshPrefix() });
    await busyAgent(store);
    const req = { agentId: "a1", reason: "stop", now: T0 + 10 };
    const accepted = { status: "accepted", turnId: "turn_a1" };
    expect(await store.requestCancel(req)).toEqual(accepted);
    const state = redisStateReader(rawCommand, store.prefix);
    const before = await state("a1");
    expect(await store.requestCancel(req)).toEqual(accepted);
    expect(await state("a1")).toEqual(before);
    expect((await store.getAgent("a1"))!.pendingMail).toBe(2); // the tool result and one cancel
    expect(await store.requestCancel({ ...req, now: T0 + 11 })).toEqual(accepted);
    expect((await store.getAgent("a1"))!.pendingMail).toBe(3);
    await store.close();
  });

  it("the watchdog skips records it cannot process (unknown agent, bad id, malformed member, unreadable head) and times out the rest", async () => {
    const prefix = freshPrefix();
    const store = redisStore({ url: server.url, prefix });
    await busyAgent(store, "a1"); // c1 resolved, c2 pending, deadline T0 + 100
    await busyAgent(store, "b2");
    // b2's head becomes unreadable: its delivery fails inside the script, before any write.
    await raw.hset(`${prefix}:{a:b2}:head`, "_mailSeq", "not a number");
    const deadlines = `${prefix}:deadlines`;
    // Records older than every real one, each of a kind the watchdog cannot time out.
    await raw.zadd(deadlines, T0 + 1, "ghost\nturn_x\nc1", T0 + 2, "{bad}\nturn_x\nc1", T0 + 3, "no-newlines",
      T0 + 4, "a1\nturn_a1\nc1", T0 + 5, "a1\nturn_none\nc9");
    const logger = { debug() {}, info() {}, warn() {}, error() {} };
    const tick = (now: number) => watchdogTick(store, { now: () => now }, 3, { retryMs: 60_000, logger });
    const results = [await tick(T0 + 200), await tick(T0 + 201), await tick(T0 + 202)];
    // Tick 1 (3 due): ghost (unknown agent), {bad} (not a key: throws, pushed back); the malformed member is dropped.
    // Tick 2: a1/c1 (already resolved), a1/turn_none (unknown call), a1/c2 (times out).
    // Tick 3: b2/c2 (unreadable head: throws, pushed back). Every tick made progress past the bad records.
    expect(results).toEqual([
      { timedOut: 0, alreadyResolved: 0, turnFinished: 1, skipped: 2 },
      { timedOut: 1, alreadyResolved: 1, turnFinished: 1, skipped: 2 },
      { timedOut: 0, alreadyResolved: 0, turnFinished: 0, skipped: 1 },
    ]);
    expect(await tick(T0 + 203)).toEqual({ timedOut: 0, alreadyResolved: 0, turnFinished: 0, skipped: 0 });
    const left = await raw.zrange(deadlines, 0, -1, "WITHSCORES");
    expect(left).toEqual(["{bad}\nturn_x\nc1", String(T0 + 200 + 60_000), "b2\nturn_b2\nc2", String(T0 + 202 + 60_000)]);
    const skipped = (await store.readEvents("a1", 0, 100)).filter((e) => e.type === "watchdog_skipped");
    expect(skipped.map((e) => e.data.reason)).toEqual(["already_resolved", "unknown_call"]);
    const b2 = (await store.readEvents("b2", 0, 100)).filter((e) => e.type === "watchdog_skipped");
    expect(b2.map((e) => e.data.reason)).toEqual([expect.stringMatching(/^error: .*unreadable head/)]);
    expect((await store.getToolCalls("a1", "turn_a1")).find((c) => c.toolCallId === "c2")?.outcome).toMatchObject({ ok: false, error: { type: "timeout" } });
    await store.close();
  });

  it("a script that finds an unreadable head number fails before its first write; claimNext moves such an agent's bell back", async () => {
    const prefix = freshPrefix();
    const store = redisStore({ url: server.url, prefix });
    await store.enqueueTask({ agentId: "bad", agentName: "calc", workerTarget: "default", input: "x", options: {}, turnId: "turn_bad", now: T0 });
    await store.enqueueTask({ agentId: "bad", agentName: "calc", workerTarget: "default", input: "y", options: {}, turnId: "turn_bad2", now: T0 });
    await store.enqueueTask({ agentId: "good", agentName: "calc", workerTarget: "default", input: "z", options: {}, turnId: "turn_good", now: T0 + 1 });
    await raw.hset(`${prefix}:{a:bad}:head`, "lastEventId", "garbage", "epoch", "x");
    const dump = async () => {
      const out: Record<string, unknown> = {};
      for (const k of (await raw.keys(`${prefix}:*`)).sort()) {
        const t = await raw.type(k);
        out[k] = t === "hash" ? await raw.hgetall(k) : t === "list" ? await raw.lrange(k, 0, -1) : await raw.zrange(k, 0, -1, "WITHSCORES");
      }
      return out;
    };
    const before = await dump();
    const fails = [
      () => store.enqueueTask({ agentId: "bad", agentName: "calc", workerTarget: "default", input: "w", options: {}, turnId: "turn_bad3", now: T0 + 2 }),
      () => store.cancelTask({ agentId: "bad", turnId: "turn_bad2", reason: "x", now: T0 + 2 }),
      () => store.claim({ agentId: "bad", workerId: "w1", leaseMs: LEASE, now: T0 + 2 }),
    ];
    for (const f of fails) await expect(f()).rejects.toThrow(/unreadable head field/);
    expect(await dump()).toEqual(before);
    // claimNext skips it (its bell moves back by a lease) and claims the good agent behind it.
    const c = await store.claimNext({ workerTarget: "default", workerId: "w1", leaseMs: LEASE, now: T0 + 3 });
    expect(c.status === "claimed" && c.agentId).toBe("good");
    expect(Number(await raw.zscore(`${prefix}:ready:default`, "bad"))).toBe(T0 + 3 + LEASE);
    await store.close();
  });

  it("refuses an evicting maxmemory-policy unless eviction is allowed", async () => {
    await raw.config("SET", "maxmemory-policy", "allkeys-lru");
    try {
      const strict = redisStore({ url: server.url, prefix: freshPrefix() });
      await expect(strict.checkEviction()).rejects.toBeInstanceOf(EvictionPolicyError);
      await expect(strict.getAgent("a1")).rejects.toThrow(/maxmemory-policy "allkeys-lru"/);
      await strict.close();
      const lax = redisStore({ url: server.url, prefix: freshPrefix(), allowEviction: true });
      expect(await lax.checkEviction()).toEqual({ policy: "allkeys-lru" });
      expect(await lax.getAgent("a1")).toBeNull();
      await lax.close();
      await raw.config("SET", "maxmemory-policy", "volatile-ttl");
      await expect(redisStore({ url: server.url, prefix: freshPrefix() }).checkEviction()).rejects.toBeInstanceOf(EvictionPolicyError);
    } finally {
      await raw.config("SET", "maxmemory-policy", "noeviction");
    }
    expect(await redisStore({ url: server.url, prefix: freshPrefix() }).checkEviction()).toEqual({ policy: "noeviction" });
  });

  it("runs each operation as one script call (one round trip)", async () => {
    const store = redisStore({ url: server.url, prefix: freshPrefix() });
    await store.checkEviction();
    // Warm the script cache: a first EVALSHA answers NOSCRIPT and is followed by EVAL.
    await busyAgent(store);
    await store.claimNext({ workerTarget: "default", workerId: "w8", leaseMs: LEASE, now: T0 });
    await store.getAgent("a1");
    const calls = async () => {
      const info = await raw.info("commandstats");
      const count = (name: string) => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
      return count("evalsha") + count("eval");
    };
    const before = await calls();
    await busyAgent(store, "b1"); // enqueue, claim, commit, deliver, putVerdict
    await store.claimNext({ workerTarget: "default", workerId: "w9", leaseMs: LEASE, now: T0 + 50 });
    await store.getAgent("b1");
    // The raw client's INFO is not counted; every store call is exactly one EVALSHA.
    expect((await calls()) - before).toBe(7);
    await store.close();
  });

  it("keeps the head small: history goes to the lists, the head does not grow with steps", async () => {
    const store = redisStore({ url: server.url, prefix: freshPrefix() });
    const { claim } = await busyAgent(store, "a1", null);
    const headKey = `${store.prefix}:{a:a1}:head`;
    const snapshot = { value: "running", context: { turnId: "turn_a1", steps: 0, pad: "x".repeat(800) } };
    let version = 1;
    const sizes: number[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await store.commit({
        agentId: "a1", workerId: "w1", epoch: claim.epoch, expectedVersion: version, turnId: "turn_a1",
        snapshot: { ...snapshot, context: { ...snapshot.context, steps: i % 10 } }, state: "running", activeTurnId: "turn_a1",
        events: [{ type: "transition", data: { from: "running", to: "running", i } }, { type: "step", data: { phase: "completed", i } }],
        messages: [{ role: "assistant", content: "m".repeat(500) }], recordToolCalls: [], resolveToolCalls: [], ackMailThrough: 0,
        release: null, leaseMs: LEASE, now: T0 + 10 + i,
      });
      if (r.status !== "applied") throw new Error(r.status);
      version = r.version;
      sizes.push(Number(await raw.memory("USAGE", headKey)));
    }
    // Same-size snapshot every step: the head stays the same size while the lists grow.
    expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThan(64);
    expect(await raw.llen(`${store.prefix}:{a:a1}:msgs`)).toBe(21);
    expect(await raw.llen(`${store.prefix}:{a:a1}:events`)).toBe(3 + 40);
    await store.close();
  });
});
