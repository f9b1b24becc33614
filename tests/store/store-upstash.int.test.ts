import { Redis } from "@upstash/redis";
import { Redis as CloudflareRedis } from "@upstash/redis/cloudflare";
import { Redis as TcpRedis } from "ioredis";
import { scripts } from "../../store/lua/scripts.gen.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CommitRequest } from "../../store/port.ts";
import { upstashStore } from "../../store/upstash.ts";
import { keySpace } from "../../store/keys.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { storeConformance } from "./store-conformance.ts";
import { admissionConformance } from "./store-admission-conformance.ts";
import { redisStateReader } from "../helpers/store-state.ts";
import { startUpstashBridge, type UpstashBridge } from "../helpers/upstash-bridge.ts";

const server = useRedisServer();
let bridge: UpstashBridge;
/** A TCP client on the server behind the bridge: the state reader sees the keys as stored. */
let tcp: TcpRedis;
let n = 0;
const freshPrefix = () => `u${++n}_${Math.random().toString(36).slice(2, 8)}`;
beforeAll(async () => {
  bridge = await startUpstashBridge({ redisUrl: server.url });
  tcp = new TcpRedis(server.url);
});
afterAll(async () => {
  tcp?.disconnect();
  await bridge?.close();
});

storeConformance("upstash", async () => {
  const prefix = freshPrefix();
  const raw = new TcpRedis(server.url);
  return {
    store: upstashStore({ url: bridge.url, token: bridge.token, prefix }),
    open: async () => upstashStore({ url: bridge.url, token: bridge.token, prefix }),
    state: redisStateReader((c) => tcp.call(c[0], ...c.slice(1)), prefix),
    cleanup: async () => raw.disconnect(),
    idempotencyEntries: (agentId) => raw.hlen(keySpace(prefix).agent(agentId).idem),
    putRawToolEntry: async (role, entry) => void await raw.hset(keySpace(prefix).tools, role, JSON.stringify(entry)),
    cutEvents: async (agentId, through) => {
      const k = keySpace(prefix).agent(agentId);
      await raw.ltrim(k.events, through, -1);
      await raw.hset(k.head, "eventsTrimmedThrough", String(through));
    },
    scriptCalls: async () => (bridge.stats.byName.get("EVALSHA") ?? 0) + (bridge.stats.byName.get("EVAL") ?? 0),
  };
});

admissionConformance("upstash", async () => {
  const prefix = freshPrefix();
  return {
    store: upstashStore({ url: bridge.url, token: bridge.token, prefix }),
    open: async () => upstashStore({ url: bridge.url, token: bridge.token, prefix }),
    cleanup: async () => {},
  };
});

const T0 = 1_700_000_000_000;
const LEASE = 10_000;
const isScript = (cmds: string[][]) => cmds.some((c) => /^eval/i.test(c[0]));

describe("upstashStore", () => {
  it("retried applied commands (response lost after the script ran) cause no duplicate effects", async () => {
    const prefix = freshPrefix();
    const store = upstashStore({ url: bridge.url, token: bridge.token, prefix });
    // Load every script so the dropped request is the one that applied (not a NOSCRIPT answer).
    for (const source of Object.values(scripts)) await tcp.script("LOAD", source);
    const dropped = bridge.stats.dropped;

    bridge.dropResponses(1, isScript);
    expect(await store.enqueueTask({ agentId: "a1", agentName: "calc", workerTarget: "default", input: 1, options: {}, turnId: "turn_1", now: T0 }))
      .toEqual({ status: "enqueued", turnId: "turn_1" });
    expect((await store.getAgent("a1"))!.pendingTasks).toBe(1);

    const c = await store.claim({ agentId: "a1", workerId: "w1", leaseMs: LEASE, now: T0 + 1 });
    if (c.status !== "claimed") throw new Error(c.status);
    const commit: CommitRequest = {
      agentId: "a1", workerId: "w1", epoch: c.epoch, expectedVersion: 0, turnId: "turn_1", snapshot: { value: "waiting-tools" },
      state: "waiting-tools", activeTurnId: "turn_1", events: [{ type: "step", data: { phase: "started" } }],
      messages: [{ role: "user", content: "1" }],
      recordToolCalls: [{ turnId: "turn_1", toolCallId: "c1", name: "ask", args: {}, external: true, deadline: T0 + 100 }],
      resolveToolCalls: [], ackMailThrough: 0, release: { runnableAt: null }, leaseMs: LEASE, now: T0 + 2,
    };
    bridge.dropResponses(1, isScript);
    expect(await store.commit(commit)).toEqual({ status: "applied", version: 1, lastEventId: 2, messagesTrimmedThrough: 0 });
    expect(await store.readMessages("a1")).toHaveLength(1);

    bridge.dropResponses(1, isScript);
    const d = await store.deliverToolResult({ agentId: "a1", turnId: "turn_1", toolCallId: "c1", outcome: { ok: true, value: 2 }, afterExecution: "continue", source: "http", now: T0 + 3 });
    // The retry finds the call resolved by the lost first attempt: same record, nothing new.
    expect(d.status).toBe("duplicate");
    expect((d as { record: { outcome: unknown } }).record.outcome).toEqual({ ok: true, value: 2 });

    bridge.dropResponses(1, isScript);
    expect(await store.requestCancel({ agentId: "a1", reason: "stop", now: T0 + 4 })).toEqual({ status: "accepted", turnId: "turn_1" });

    const head = await store.getAgent("a1");
    expect(head!.pendingMail).toBe(2);
    expect(head!.lastEventId).toBe(4); // task_enqueued, step, tool_result_received, cancel_requested

    // A queued task cancelled by a lost first attempt: the retry answers cancelled (already) and writes nothing more.
    await store.enqueueTask({ agentId: "a1", agentName: "calc", workerTarget: "default", input: "later", options: {}, turnId: "turn_2", now: T0 + 5 });
    bridge.dropResponses(1, isScript);
    expect(await store.cancelTask({ agentId: "a1", turnId: "turn_2", reason: "no", now: T0 + 6 })).toEqual({ status: "cancelled", already: true });
    const after = await store.getAgent("a1");
    expect(after!.pendingTasks).toBe(0);
    expect(after!.lastEventId).toBe(6); // + task_enqueued, task_cancelled
    expect(bridge.stats.dropped - dropped).toBe(5);

    // The same calls without lost responses leave exactly the same stored state: the retries wrote nothing.
    const refPrefix = freshPrefix();
    const ref = upstashStore({ url: bridge.url, token: bridge.token, prefix: refPrefix });
    await ref.enqueueTask({ agentId: "a1", agentName: "calc", workerTarget: "default", input: 1, options: {}, turnId: "turn_1", now: T0 });
    await ref.claim({ agentId: "a1", workerId: "w1", leaseMs: LEASE, now: T0 + 1 });
    await ref.commit(commit);
    await ref.deliverToolResult({ agentId: "a1", turnId: "turn_1", toolCallId: "c1", outcome: { ok: true, value: 2 }, afterExecution: "continue", source: "http", now: T0 + 3 });
    await ref.requestCancel({ agentId: "a1", reason: "stop", now: T0 + 4 });
    await ref.enqueueTask({ agentId: "a1", agentName: "calc", workerTarget: "default", input: "later", options: {}, turnId: "turn_2", now: T0 + 5 });
    await ref.cancelTask({ agentId: "a1", turnId: "turn_2", reason: "no", now: T0 + 6 });
    const raw = (c: string[]) => tcp.call(c[0], ...c.slice(1));
    expect(await redisStateReader(raw, prefix)("a1")).toEqual(await redisStateReader(raw, refPrefix)("a1"));
  });

  it("every operation is one billed command", async () => {
    const store = upstashStore({ url: bridge.url, token: bridge.token, prefix: freshPrefix() });
    const ops = async (agentId: string) => {
      await store.enqueueTask({ agentId, agentName: "calc", workerTarget: "default", input: 1, options: {}, turnId: `t_${agentId}`, now: T0 });
      const c = await store.claimNext({ workerTarget: "default", workerId: "w1", leaseMs: LEASE, now: T0 + 1 });
      if (c.status !== "claimed") throw new Error(c.status);
      await store.commit({
        agentId, workerId: "w1", epoch: c.epoch, expectedVersion: 0, turnId: `t_${agentId}`, snapshot: {}, state: "done",
        activeTurnId: null, events: [{ type: "task", data: {} }], messages: [{ role: "assistant", content: "ok" }],
        recordToolCalls: [], resolveToolCalls: [], ackMailThrough: 0, release: { runnableAt: null }, leaseMs: LEASE, now: T0 + 2,
      });
      await store.getAgent(agentId);
    };
    await ops("warm");
    bridge.resetStats();
    await ops("a1");
    expect(bridge.stats.commands).toBe(4);
    expect(bridge.stats.byName.get("EVALSHA")).toBe(4);
  });

  it("sees the same values through a client with automatic deserialization on", async () => {
    const prefix = freshPrefix();
    const plain = upstashStore({ url: bridge.url, token: bridge.token, prefix });
    const parsing = upstashStore(new Redis({ url: bridge.url, token: bridge.token, enableTelemetry: false }));
    const mixed = upstashStore({ redis: new Redis({ url: bridge.url, token: bridge.token, enableTelemetry: false }), prefix });
    // Strings that look like JSON must stay strings.
    const input = { a: "123", b: "true", c: "{\"x\":1}", d: "null", e: "ü" };
    await plain.enqueueTask({ agentId: "a1", agentName: "calc", workerTarget: "default", input, options: {}, turnId: "turn_1", now: T0 });
    expect(await mixed.getAgent("a1")).toEqual(await plain.getAgent("a1"));
    const c = await mixed.claim({ agentId: "a1", workerId: "w1", leaseMs: LEASE, now: T0 + 1 });
    expect(c.status === "claimed" && c.task!.input).toEqual(input);
    await plain.putVerdict({ agentId: "a1", verdictId: "v1", turnId: "turn_1", status: "PASS", json: "123" });
    expect(await mixed.getVerdict("v1")).toBe("123");
    expect(await mixed.listVerdicts("a1", {})).toEqual(["123"]);
    expect(await parsing.getAgent("a1")).toBeNull(); // default prefix: another key space
  });

  it("accepts a client from @upstash/redis/cloudflare (another Redis class than the default entry's)", async () => {
    const prefix = freshPrefix();
    const cf = new CloudflareRedis({ url: bridge.url, token: bridge.token, enableTelemetry: false });
    expect(cf instanceof Redis).toBe(false);
    const direct = upstashStore(cf);
    const wrapped = upstashStore({ redis: cf, prefix });
    const plain = upstashStore({ url: bridge.url, token: bridge.token, prefix });
    await wrapped.enqueueTask({ agentId: "a1", agentName: "calc", workerTarget: "default", input: "hi", options: {}, turnId: "turn_1", now: T0 });
    expect(await plain.getAgent("a1")).toEqual(await wrapped.getAgent("a1"));
    expect((await plain.getAgent("a1"))?.agentName).toBe("calc");
    expect(await direct.getAgent("a1")).toBeNull(); // default prefix: another key space
    expect(() => upstashStore({ redis: {} as never })).toThrow(/@upstash\/redis client/);
  });

  it("surfaces a refused token as an error", async () => {
    const store = upstashStore({ url: bridge.url, token: "wrong", prefix: freshPrefix(), retries: 0 });
    await expect(store.getAgent("a1")).rejects.toThrow(/Unauthorized/);
  });
});
