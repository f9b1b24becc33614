/**
 * The head hash keeps short values only (store/lua/includes/head.lua): the
 * snapshot, a long `currentTask` and a long `_recentTurns` live in their own
 * keys `<head>:<field>`, so the hash stays in Redis's compact encoding.
 * Against a real redis-server:
 * - the head of an agent run through the host, with generated turn ids, is
 *   `listpack` during a turn, after it and after five;
 * - a head written in the earlier layout (everything in the hash) loads, and
 *   the next writes move its long values out;
 * - a field that is not the mark is the value, even when a key exists (a
 *   worker of an older build wrote it last);
 * - a mark whose key is gone is refused before any write;
 * - deleting the agent removes the keys of its long values;
 * - a commit on one Redis sends its head key only; on the Cluster layout it
 *   declares every key it touches.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGatehouse } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { keySpace } from "../../store/keys.ts";
import { scriptStore } from "../../store/lua-store.ts";
import { expandSnapshot } from "../../store/snapshot-form.ts";
import type { CommitRequest } from "../../store/port.ts";
import { benchAgent } from "../../bench/agent.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { redisStateReader } from "../helpers/store-state.ts";

const server = useRedisServer();
let raw: Redis;
let n = 0;
const freshPrefix = () => `hl${++n}_${Math.random().toString(36).slice(2, 8)}`;
beforeAll(async () => {
  raw = new Redis(server.url);
});
afterAll(async () => {
  raw?.disconnect();
});

const T0 = 1_700_000_000_000;
const LEASE = 10_000;
const hex16 = () => Array.from({ length: 16 }, () => Math.floor(Math.random() * 16).toString(16)).join("");
const SNAPSHOT = { status: "active", value: "waiting-tools", context: { schemaVersion: 2, pad: "s".repeat(600) }, children: {} };

describe("head layout: long values apart, the hash compact", () => {
  it("the head of an agent run through the host is listpack during a turn, after it and after five", async () => {
    const prefix = freshPrefix();
    const store = redisStore({ url: server.url, prefix });
    const { agent } = benchAgent();
    const gh = createGatehouse({ agents: [agent], store, concurrency: 1, leaseMs: 30_000 });
    const k = keySpace(prefix).agent("a1");
    const encodings: string[] = [];
    for (let t = 0; t < 5; t++) {
      // Generated turn ids, as the routes make them: a task entry is then over 64 bytes.
      await store.enqueueTask({ agentId: "a1", agentName: "bench", workerTarget: "default", input: `task ${t}`, options: {}, turnId: `turn_${hex16()}`, now: Date.now() });
      if (t === 0) {
        const c = await store.claim({ agentId: "a1", workerId: "probe", leaseMs: 1, now: Date.now() });
        expect(c.status).toBe("claimed");
        encodings.push(`in turn: ${await raw.object("ENCODING", k.head)}`);
        await new Promise((r) => setTimeout(r, 5));
      }
      await gh.drain();
      encodings.push(`after turn ${t + 1}: ${await raw.object("ENCODING", k.head)}`);
    }
    const head = await store.getAgent("a1");
    expect(head?.state).toBe("done");
    expect((head?.snapshot as { value: string }).value).toBe("done");
    expect(encodings).toEqual(["in turn: listpack", ...[1, 2, 3, 4, 5].map((t) => `after turn ${t}: listpack`)]);
    // The snapshot is in its key; the hash holds the mark.
    expect(await raw.hget(k.head, "snapshot")).toBe("\0");
    // It is stored without its default fields (store/snapshot-form.ts).
    const stored = (await raw.get(`${k.head}:snapshot`))!;
    expect(stored.startsWith('{"~":1,')).toBe(true);
    expect(expandSnapshot(JSON.parse(stored))).toEqual(head?.snapshot);
    // Five keyless turns: the replay list of recent turns is over 64 bytes, in its key too.
    expect(await raw.hget(k.head, "_recentTurns")).toBe("\0");
    expect((await raw.get(`${k.head}:_recentTurns`))!.split("\n")).toHaveLength(5);
    // The finished turn's task key went with it.
    expect(await raw.hget(k.head, "currentTask")).toBe("null");
    expect(await raw.exists(`${k.head}:currentTask`)).toBe(0);
    console.log(
      `head layout: head ${await raw.memory("USAGE", k.head)} B (${await raw.object("ENCODING", k.head)}) + snapshot ${await raw.memory("USAGE", `${k.head}:snapshot`)} B after 5 turns`,
    );
    await gh.close();
  });

  it("a head written in the earlier layout loads, and the next writes move its long values out", async () => {
    const prefix = freshPrefix();
    const store = redisStore({ url: server.url, prefix });
    const k = keySpace(prefix).agent("old");
    const turnId = `turn_${hex16()}`;
    await store.enqueueTask({ agentId: "old", agentName: "calc", workerTarget: "default", input: "x", options: {}, turnId, now: T0 });
    const first = await store.claim({ agentId: "old", workerId: "w0", leaseMs: LEASE, now: T0 + 1 });
    if (first.status !== "claimed") throw new Error(first.status);
    const task = JSON.stringify(first.head.currentTask);
    // The earlier layout: every value in the hash, no other key.
    await raw.hset(k.head, "snapshot", JSON.stringify(SNAPSHOT), "currentTask", task, "leaseOwner", "null", "leaseUntil", "0", "runnableAt", String(T0 + 2));
    await raw.del(`${k.head}:snapshot`, `${k.head}:currentTask`);
    expect(await raw.object("ENCODING", k.head)).toBe("hashtable");

    expect((await store.getAgent("old"))?.snapshot).toEqual(SNAPSHOT);
    const c = await store.claim({ agentId: "old", workerId: "w1", leaseMs: LEASE, now: T0 + 3 });
    if (c.status !== "claimed") throw new Error(c.status);
    expect(c.head.snapshot).toEqual(SNAPSHOT);
    expect(c.head.currentTask).toEqual(first.head.currentTask);
    expect(c.task?.turnId).toBe(turnId);

    const next = { ...SNAPSHOT, value: "running" };
    const commit: CommitRequest = {
      agentId: "old", workerId: "w1", epoch: c.epoch, expectedVersion: c.head.version, turnId, snapshot: next, state: "running",
      activeTurnId: turnId, events: [], messages: [], recordToolCalls: [], resolveToolCalls: [], ackMailThrough: 0,
      release: null, leaseMs: LEASE, now: T0 + 4,
    };
    const applied = await store.commit(commit);
    if (applied.status !== "applied") throw new Error(applied.status);
    expect(await raw.hget(k.head, "snapshot")).toBe("\0");
    expect(expandSnapshot(JSON.parse((await raw.get(`${k.head}:snapshot`))!))).toEqual(next);
    expect((await store.getAgent("old"))?.snapshot).toEqual(next);
    // The task is still inline (claims write it only when they take a task).
    expect(await raw.hget(k.head, "currentTask")).toBe(task);

    // The turn ends: its task (inline in the hash) is read for the ended list, then cleared.
    const done = { ...SNAPSHOT, value: "done" };
    expect((await store.commit({ ...commit, expectedVersion: applied.version, snapshot: done, state: "done", activeTurnId: null, now: T0 + 6 })).status)
      .toBe("applied");
    const head = await store.getAgent("old");
    expect(head?.snapshot).toEqual(done);
    expect(head?.currentTask).toBeNull();
    expect(await store.getTurn("old", turnId)).toMatchObject({ status: "done" });
    await store.close();
  });

  it("a field that is not the mark is the value, even next to a key (an older build wrote it last)", async () => {
    const prefix = freshPrefix();
    const store = redisStore({ url: server.url, prefix });
    const k = keySpace(prefix).agent("mixed");
    const turnId = `turn_${hex16()}`;
    await store.enqueueTask({ agentId: "mixed", agentName: "calc", workerTarget: "default", input: "x", options: {}, turnId, now: T0 });
    const c = await store.claim({ agentId: "mixed", workerId: "w1", leaseMs: LEASE, now: T0 + 1 });
    if (c.status !== "claimed") throw new Error(c.status);
    const commit: CommitRequest = {
      agentId: "mixed", workerId: "w1", epoch: c.epoch, expectedVersion: 0, turnId, snapshot: SNAPSHOT, state: "waiting-tools",
      activeTurnId: turnId, events: [], messages: [], recordToolCalls: [], resolveToolCalls: [], ackMailThrough: 0,
      release: { runnableAt: T0 + 2 }, leaseMs: LEASE, now: T0 + 2,
    };
    expect((await store.commit(commit)).status).toBe("applied");
    expect(await raw.exists(`${k.head}:snapshot`)).toBe(1);
    const newer = { ...SNAPSHOT, value: "running" };
    await raw.hset(k.head, "snapshot", JSON.stringify(newer));
    expect((await store.getAgent("mixed"))?.snapshot).toEqual(newer);
    const again = await store.claim({ agentId: "mixed", workerId: "w2", leaseMs: LEASE, now: T0 + 3 });
    if (again.status !== "claimed") throw new Error(again.status);
    expect(again.head.snapshot).toEqual(newer);
    await store.close();
  });

  it("a mark whose key is gone is refused before any write", async () => {
    const prefix = freshPrefix();
    const store = redisStore({ url: server.url, prefix });
    const k = keySpace(prefix).agent("lost");
    const turnId = `turn_${hex16()}`;
    await store.enqueueTask({ agentId: "lost", agentName: "calc", workerTarget: "default", input: "x", options: {}, turnId, now: T0 });
    const c = await store.claim({ agentId: "lost", workerId: "w1", leaseMs: LEASE, now: T0 + 1 });
    if (c.status !== "claimed") throw new Error(c.status);
    const commit: CommitRequest = {
      agentId: "lost", workerId: "w1", epoch: c.epoch, expectedVersion: 0, turnId, snapshot: SNAPSHOT, state: "waiting-tools",
      activeTurnId: turnId, events: [], messages: [], recordToolCalls: [], resolveToolCalls: [], ackMailThrough: 0,
      release: { runnableAt: T0 + 2 }, leaseMs: LEASE, now: T0 + 2,
    };
    expect((await store.commit(commit)).status).toBe("applied");
    await raw.del(`${k.head}:snapshot`);
    const state = redisStateReader((cmd) => raw.call(cmd[0], ...cmd.slice(1)), prefix);
    const before = await state("lost");
    await expect(store.claim({ agentId: "lost", workerId: "w2", leaseMs: LEASE, now: T0 + 3 })).rejects.toThrow(/unreadable head field snapshot/);
    await expect(store.getAgent("lost")).rejects.toThrow(/unreadable head field snapshot/);
    expect(await state("lost")).toEqual(before);
    await store.close();
  });

  it("deleting the agent removes the keys of its long values", async () => {
    const prefix = freshPrefix();
    const store = redisStore({ url: server.url, prefix });
    const k = keySpace(prefix).agent("gone");
    const turnId = `turn_${hex16()}`;
    await store.enqueueTask({ agentId: "gone", agentName: "calc", workerTarget: "default", input: "x", options: {}, turnId, now: T0 });
    const c = await store.claim({ agentId: "gone", workerId: "w1", leaseMs: LEASE, now: T0 + 1 });
    if (c.status !== "claimed") throw new Error(c.status);
    expect((await store.commit({
      agentId: "gone", workerId: "w1", epoch: c.epoch, expectedVersion: 0, turnId, snapshot: SNAPSHOT, state: "waiting-tools",
      activeTurnId: turnId, events: [], messages: [], recordToolCalls: [], resolveToolCalls: [], ackMailThrough: 0,
      release: null, leaseMs: LEASE, now: T0 + 2,
    })).status).toBe("applied");
    expect(await raw.exists(`${k.head}:snapshot`, `${k.head}:currentTask`)).toBe(2);
    await store.deleteAgent("gone", T0 + 3);
    // Only the deletion marker stays (store/port.ts invariant `deletion-marker`).
    expect(await raw.keys(`${prefix}:{a:gone}*`)).toEqual([k.deleted]);
    expect(await raw.get(k.deleted)).toBe(String(T0 + 3));
    await store.close();
  });
});

describe("commit key arguments", () => {
  const commitKeys = async (shards?: number) => {
    let sent: string[] = [];
    const store = scriptStore({
      kind: "redis", keys: keySpace("p", shards === undefined ? {} : { shards }),
      run: (_name, k) => {
        sent = k;
        return Promise.resolve('applied {"version":1,"lastEventId":0,"messagesTrimmedThrough":0}');
      },
      checkEviction: () => Promise.resolve({ policy: null }), close: () => Promise.resolve(),
    });
    await store.commit({
      agentId: "a1", workerId: "w1", epoch: 1, expectedVersion: 0, turnId: "t1", snapshot: SNAPSHOT, state: "running", activeTurnId: "t1",
      events: [], messages: [], recordToolCalls: [], resolveToolCalls: [], ackMailThrough: 0, release: null, leaseMs: LEASE, now: T0,
    });
    return sent;
  };

  it("one Redis: the head key only (the script builds the others, so 12 key names fewer per commit)", async () => {
    expect(await commitKeys()).toEqual([keySpace("p").agent("a1").head]);
  });

  it("Redis Cluster layout: every key the commit touches is declared, the head's long values included", async () => {
    const k = keySpace("p", { shards: 4 }).agent("a1");
    expect(await commitKeys(4)).toEqual([
      k.head, k.tasks, k.mail, k.messages, k.events, k.calls("t1"), k.home.deadlines, k.turns, k.ckpts, k.ended, k.inputs, k.idem, k.summary, k.delayed,
      ...k.headLong,
    ]);
  });
});
