/**
 * redisStore on a real Redis Cluster: three redis-server masters in cluster
 * mode (tests/helpers/redis-cluster.ts), the sharded key layout (store/keys.ts,
 * docs/store.md "Standalone, Sentinel, Upstash, and Redis Cluster").
 *
 * The cluster itself enforces the layout's invariant: a script whose keys
 * span two slots fails (CROSSSLOT for declared keys, "do not hash to the
 * same slot" for keys it builds), so the whole conformance suite passing
 * here shows that every script call stays in one slot. The last test runs
 * two gatehouse instances on the cluster with agents on every master.
 */
import { Cluster } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, scriptedModel } from "../../mod.ts";
import { storeFromEnv } from "../../entry/store-from-env.ts";
import { redisStore } from "../../redis.ts";
import { keySlot } from "../../store/key-slot.ts";
import { keySpace } from "../../store/keys.ts";
import { scripts } from "../../store/lua/scripts.gen.ts";
import { sha1Hex } from "../../common/hex.ts";
import { startRedisCluster, type RedisCluster } from "../helpers/redis-cluster.ts";
import { liveChannelName } from "../../store/live.ts";
import { type RawRedis, redisStateReader } from "../helpers/store-state.ts";
import { delegationSuite } from "../helpers/delegation-suite.ts";
import { admissionConformance } from "./store-admission-conformance.ts";
import { storeConformance } from "./store-conformance.ts";

const SHARDS = 16;
let cluster: RedisCluster;
let client: Cluster;
let peer: Cluster;
let n = 0;
const freshPrefix = () => `c${++n}_${Math.random().toString(36).slice(2, 8)}`;
const raw: RawRedis = (c) => client.call(c[0], ...c.slice(1));

/** The master serving a key's slot, as `host:port`. */
function ownerOf(key: string): string {
  return (client.slots[keySlot(key)] as string[])[0];
}
function masterOf(key: string) {
  const addr = ownerOf(key);
  const node = client.nodes("master").find((m) => `${m.options.host}:${m.options.port}` === addr);
  if (!node) throw new Error(`no master serves ${key} (slot ${keySlot(key)})`);
  return node;
}
const nodeOf = (key: string): RawRedis => (c) => masterOf(key).call(c[0], ...c.slice(1));

beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3 });
  client = new Cluster(cluster.nodes, { enableAutoPipelining: false });
  peer = new Cluster(cluster.nodes, { enableAutoPipelining: false });
  await Promise.all([client.ping(), peer.ping()]);
}, 60_000);
afterAll(async () => {
  client?.disconnect();
  peer?.disconnect();
  await cluster?.stop();
});

/**
 * Every key under `prefix`, on every master, where the layout puts it: agent keys in their
 * agent's home, index members (bells, agents index, deadlines) in their agent's home, nothing
 * else. Redis 7 lets a script without a shebang touch a key of another slot on the same node,
 * so a script that built a key under the wrong home would pass unnoticed there; this audit,
 * run after every conformance test, catches what it wrote.
 */
async function auditLayout(prefix: string): Promise<string[]> {
  const ks = keySpace(prefix, { shards: SHARDS });
  const homes = new Set(ks.shards.map((s) => s.prefix));
  const wrong: string[] = [];
  const homeOk = (home: string, agentId: string, what: string) => {
    if (ks.homeOf(agentId).prefix !== home) wrong.push(`${what}: agent ${JSON.stringify(agentId)} belongs in ${ks.homeOf(agentId).prefix}`);
  };
  for (const node of client.nodes("master")) {
    let cursor = "0";
    do {
      const [next, keys] = await node.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
      for (const key of keys) {
        if (key === ks.layout) continue;
        // Deployment-wide keys (no agent, no home): each group in one slot (docs/store.md).
        if (key === ks.tools || key === ks.toolForms || key === ks.definitionSets) continue;
        if (key.startsWith(`${prefix}:{rl}:`) || key.startsWith(`${prefix}:lease:`) || key.startsWith(`${prefix}:dlv:`)) continue;
        // A concurrency key's count, in its own slot (store/script/key-slots.ts): reservations `<ready key>\n<nonce>`,
        // waiting lanes `<ready key>`, each ready key of a home.
        const ck = /^\{ck:.*\}:(running|waiting)$/s.exec(key.slice(prefix.length + 1));
        if (ck) {
          const members = ck[1] === "running" ? await node.zrange(key, 0, -1) : await node.smembers(key);
          for (const m of members) {
            const ready = m.split("\n")[0];
            if (![...homes].some((h) => ready.startsWith(`${h}:ready:`))) wrong.push(`${key}: ${JSON.stringify(m)} names no home's ready key`);
          }
          continue;
        }
        const m = /^(.*?:\{s:[0-9.]+\}):(.*)$/s.exec(key);
        if (!m || !homes.has(m[1])) {
          wrong.push(`${key}: not under a shard home`);
          continue;
        }
        const [, home, rest] = m;
        const agent = /^\{a:([^}]*)\}:/.exec(rest);
        if (agent) homeOk(home, agent[1], key);
        else if (/^ready:[^:]*:(lanes|nb)$/.test(rest)) {
          // A target's lane index and lane times (docs/store.md): members and fields are concurrency keys, not agents.
        } else if (rest.startsWith("ready:")) {
          // A schedule's due time is the member `<agentId>\n<scheduleId>`, in its agent's home.
          for (const member of await node.zrange(key, 0, -1)) homeOk(home, member.split("\n")[0], key);
        } else if (rest === "agents" || /^ck:.*:running$/s.test(rest)) {
          for (const member of await node.zrange(key, 0, -1)) homeOk(home, member, key);
        } else if (rest === "deadlines" || rest.startsWith("ticks:")) {
          for (const member of await node.zrange(key, 0, -1)) homeOk(home, member.split("\n")[0], key);
        } else if (rest !== "verdicts") {
          wrong.push(`${key}: unknown key`);
        }
      }
      cursor = next;
    } while (cursor !== "0");
  }
  return wrong;
}

storeConformance("redis cluster (3 masters)", async () => {
  const prefix = freshPrefix();
  return {
    store: redisStore({ client, prefix }),
    open: async () => redisStore({ client: peer, prefix }),
    state: redisStateReader(raw, keySpace(prefix, { shards: SHARDS }), nodeOf),
    cleanup: async () => expect(await auditLayout(prefix)).toEqual([]),
    idempotencyEntries: (agentId) => client.hlen(keySpace(prefix, { shards: SHARDS }).agent(agentId).idem),
    putRawToolEntry: async (role, entry) => void await client.hset(keySpace(prefix, { shards: SHARDS }).tools, role, JSON.stringify(entry)),
    cutEvents: async (agentId, through) => {
      const k = keySpace(prefix, { shards: SHARDS }).agent(agentId);
      await client.ltrim(k.events, through, -1);
      await client.hset(k.head, "eventsTrimmedThrough", String(through));
    },
  };
}, { sharded: true });

// Rate limits and target leases are deployment-wide (no home): a script over `{rl}` buckets or one lease stays in one slot.
admissionConformance("redis cluster (3 masters)", async () => {
  const prefix = freshPrefix();
  return {
    store: redisStore({ client, prefix }),
    open: async () => redisStore({ client: peer, prefix }),
    cleanup: async () => expect(await auditLayout(prefix)).toEqual([]),
  };
});

// Delegation through the host: parent and child are two agents, often of two shards, each written by its own one-slot calls.
delegationSuite("redis cluster (3 masters)", async () => {
  const prefix = freshPrefix();
  return { store: redisStore({ client, prefix }), cleanup: async () => expect(await auditLayout(prefix)).toEqual([]) };
});

const T0 = 1_700_000_000_000;

describe("redisStore on Redis Cluster", () => {
  it("computes each key's slot as the cluster does (CLUSTER KEYSLOT)", async () => {
    const ks = keySpace("gh", { shards: SHARDS });
    const samples = ["foo", "{user1000}.following", "a{}b", "{}{x}", "héllo", ...ks.shards.map((s) => `${s.prefix}:ready:default`), ks.agent("agent-é").head];
    for (const key of samples) expect(keySlot(key), key).toBe(Number(await client.call("CLUSTER", "KEYSLOT", key)));
  });

  it("keeps each deployment-wide group in one slot: the {rl} buckets, a lease, the registry's two hashes; one Redis keeps the registry's names", () => {
    const ks = keySpace("gh", { shards: SHARDS });
    expect(keySlot(ks.tools)).toBe(keySlot(ks.toolForms));
    expect([ks.tools, ks.toolForms]).toEqual(["gh:{tools}:registry", "gh:{tools}:forms"]);
    expect(keySlot(ks.rateLimit("t:abc"))).toBe(keySlot(ks.rateLimit(`a:agent-1`)));
    expect(ks.targetLease("svc1_x")).toBe("gh:lease:svc1_x");
    const one = keySpace("gh");
    expect([one.tools, one.toolForms, one.rateLimit("t:abc"), one.targetLease("svc1_x")]).toEqual(["gh:tools", "gh:tool_forms", "gh:{rl}:t:abc", "gh:lease:svc1_x"]);
  });

  it("spreads the 16 shards evenly over the three masters (5 or 6 each)", () => {
    const perMaster = new Map<string, number>();
    for (const s of keySpace("gh", { shards: SHARDS }).shards) {
      const owner = ownerOf(`${s.prefix}:x`);
      perMaster.set(owner, (perMaster.get(owner) ?? 0) + 1);
    }
    expect([...perMaster.values()].sort()).toEqual([5, 5, 6]);
    // Each tag lies near the middle of its sixteenth of the slots.
    keySpace("gh", { shards: SHARDS }).shards.forEach((s, i) => expect(Math.abs(keySlot(`${s.prefix}:x`) - (i + 0.5) * 1024)).toBeLessThanOrEqual(128));
  });

  it("keeps every key of an agent, and its shard's indexes, in one slot; agents land on every master", async () => {
    const prefix = freshPrefix();
    const store = redisStore({ client, prefix });
    const ks = keySpace(prefix, { shards: SHARDS });
    const ids = Array.from({ length: 24 }, (_, i) => `agent-${i}`);
    for (const agentId of ids) {
      await store.enqueueTask({ agentId, agentName: "calc", workerTarget: "default", input: 1, options: {}, turnId: `t_${agentId}`, now: T0, idempotencyKey: "k" });
      await store.putVerdict({ agentId, verdictId: `v_${agentId}`, turnId: `t_${agentId}`, status: "PASS", json: "{}" });
    }
    const masters = new Set<string>();
    for (const node of client.nodes("master")) {
      let cursor = "0";
      do {
        const [next, keys] = await node.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
        for (const key of keys.filter((k) => k !== ks.layout)) {
          const m = /^[^{]*\{(s:[0-9.]+)\}:(?:\{a:([^}]*)\}:)?/.exec(key);
          expect(m, key).not.toBeNull();
          if (m![2]) expect(ks.agent(m![2]).home.prefix, key).toBe(`${prefix}:{${m![1]}}`);
        }
        cursor = next;
      } while (cursor !== "0");
    }
    for (const agentId of ids) {
      const k = ks.agent(agentId);
      const slot = keySlot(k.head);
      for (const key of [k.tasks, k.idem, k.inputs, k.events, k.turns, k.verdicts, k.home.ready("default"), k.home.agents, k.home.verdicts]) {
        expect(keySlot(key), key).toBe(slot);
      }
      masters.add(ownerOf(k.head));
      expect(await store.getVerdict(`v_${agentId}`)).toBe("{}");
    }
    expect(masters.size).toBe(3);
    expect(await store.readyCount("default", T0)).toBe(ids.length);
    expect((await store.listAgents({ limit: 100 })).map((e) => e.agentId).sort()).toEqual([...ids].sort());
    // claimNext finds the bells of every shard, one agent per call, then answers empty.
    const claimed = new Set<string>();
    for (let i = 0; i < ids.length; i++) {
      const c = await store.claimNext({ workerTarget: "default", workerId: "w", leaseMs: 10_000, now: T0 + 1 });
      if (c.status !== "claimed") throw new Error(c.status);
      claimed.add(c.agentId);
    }
    expect(claimed.size).toBe(ids.length);
    expect(await store.claimNext({ workerTarget: "default", workerId: "w", leaseMs: 10_000, now: T0 + 1 })).toEqual({ status: "empty" });
    await store.close();
  });

  it("the cluster refuses a script whose declared keys span two slots, or that builds a key of another node (what the suite relies on)", async () => {
    const a = "{s:0}:x";
    const b = Array.from({ length: 200 }, (_, i) => `{o:${i}}:x`).find((k) => ownerOf(k) !== ownerOf(a))!;
    await expect(client.eval("return 1", 2, a, b)).rejects.toThrow(/CROSSSLOT/);
    await expect(client.eval("return redis.call('GET', ARGV[1])", 1, a, b)).rejects.toThrow(/non local|not.*local|same slot/i);
    // A built key of another slot on the same node is allowed (no shebang): auditLayout covers that case.
    const sameNode = Array.from({ length: 400 }, (_, i) => `{o:${i}}:x`).find((k) => ownerOf(k) === ownerOf(a) && keySlot(k) !== keySlot(a))!;
    expect(await client.eval("return redis.call('GET', ARGV[1])", 1, a, sameNode)).toBeNull();
  });

  it("the layout audit run after each conformance test finds a key written under the wrong home", async () => {
    const prefix = freshPrefix();
    const ks = keySpace(prefix, { shards: SHARDS });
    const store = redisStore({ client, prefix });
    await store.enqueueTask({ agentId: "a1", agentName: "calc", workerTarget: "default", input: 1, options: {}, turnId: "t1", now: T0 });
    expect(await auditLayout(prefix)).toEqual([]);
    const other = ks.shards.find((s) => s !== ks.agent("a1").home)!;
    await client.zadd(other.ready("default"), T0, "a1");
    await client.set(`${other.prefix}:{a:a1}:head`, "x");
    await client.set(`${prefix}:stray`, "x");
    expect(await auditLayout(prefix)).toHaveLength(3);
    await store.close();
  });

  it("falls back to EVAL on each node whose script cache was flushed", async () => {
    const prefix = freshPrefix();
    const store = redisStore({ client, prefix });
    const ids = Array.from({ length: 48 }, (_, i) => `f${i}`);
    expect(new Set(ids.map((id) => ownerOf(keySpace(prefix, { shards: SHARDS }).agent(id).head))).size).toBe(3);
    await Promise.all(client.nodes("master").map((m) => m.script("FLUSH")));
    for (const agentId of ids) expect(await store.getAgent(agentId)).toBeNull();
    const sha = await sha1Hex(scripts.get_agent);
    for (const m of client.nodes("master")) expect(await m.script("EXISTS", sha)).toEqual([1]);
    await store.close();
  });

  it("claimNext claims from its last read of the shards while it holds (one script call), and reads again after this store rang an older bell", async () => {
    const prefix = freshPrefix();
    const store = redisStore({ client, prefix });
    const ks = keySpace(prefix, { shards: SHARDS });
    const homes = Array.from({ length: 200 }, (_, i) => `h${i}`);
    const inShard = (n: number) => homes.find((id) => ks.homeOf(id) === ks.shards[n])!;
    const [u, w, v] = homes.filter((id) => ks.homeOf(id) === ks.shards[0]);
    const [y, z] = [inShard(1), inShard(2)];
    const enqueue = (agentId: string, now: number) =>
      store.enqueueTask({ agentId, agentName: "calc", workerTarget: "default", input: 1, options: {}, turnId: `t_${agentId}`, now });
    const claimNext = async () => {
      const c = await store.claimNext({ workerTarget: "default", workerId: "w", leaseMs: 10_000, now: T0 + 10 });
      return c.status === "claimed" ? c.agentId : c.status;
    };
    const scriptCalls = async () => {
      let n = 0;
      for (const m of client.nodes("master")) for (const [, c] of (await m.info("commandstats")).matchAll(/cmdstat_eval(?:sha)?:calls=(\d+)/g)) n += Number(c);
      return n;
    };
    await enqueue(u, T0 + 3);
    await enqueue(w, T0 + 4);
    await enqueue(v, T0 + 5);
    await enqueue(y, T0 + 6);
    expect(await claimNext()).toBe(u);
    const before = await scriptCalls();
    expect(await claimNext()).toBe(w);
    expect(await scriptCalls() - before).toBe(1);
    // An older bell rung by this store in a third shard: the last read no longer bounds it.
    await enqueue(u, T0 + 11); // a second task of u, younger than the read: the hint stays
    await enqueue(z, T0 + 1);
    expect(await claimNext()).toBe(z);
    expect(await claimNext()).toBe(v);
    expect(await claimNext()).toBe(y);
    expect(await claimNext()).toBe("empty");
    await store.close();
  });

  it("storeFromEnv opens a Cluster store from GATEHOUSE_REDIS_CLUSTER_NODES (seed nodes, comma-separated)", async () => {
    const prefix = freshPrefix();
    const store = await storeFromEnv({ GATEHOUSE_REDIS_CLUSTER_NODES: cluster.nodes.slice(0, 2).join(", "), GATEHOUSE_REDIS_PREFIX: prefix }, { redis: redisStore });
    await store.enqueueTask({ agentId: "a1", agentName: "x", workerTarget: "default", input: 1, options: {}, turnId: "t1", now: T0 });
    expect(await client.exists(keySpace(prefix, { shards: SHARDS }).agent("a1").head)).toBe(1);
    expect(await client.get(`${prefix}:layout`)).toBe(`shards=${SHARDS}`);
    await store.close();
  });

  it("keeps concurrencyLimits on the cluster's layout: createGatehouse accepts them, a key's count sits in its own slot", async () => {
    const prefix = freshPrefix();
    const store = redisStore({ client, prefix });
    expect(store.keepsConcurrencyLimits).toBe(true);
    const agent = defineAgent({ name: "x", instructions: "x", model: scriptedModel([{ text: "ok" }]) });
    expect(() => createGatehouse({ agents: [agent], store, concurrencyLimits: { "tenant:a": 1 } })).not.toThrow();
    // Agents of one key on every master; one runs at a time, its reservation in the slot of `{ck:tenant:a}`.
    const ks = keySpace(prefix, { shards: SHARDS });
    const ids: string[] = [];
    for (let i = 0; ids.length < 6 || new Set(ids.map((id) => ownerOf(ks.agent(id).head))).size < 3; i++) ids.push(`ck-${i}`);
    for (const agentId of ids) {
      await store.enqueueTask({ agentId, agentName: "x", workerTarget: "default", input: 1, options: {}, turnId: `t_${agentId}`, now: T0, concurrencyKey: "tenant:a" });
    }
    const limits = { "tenant:a": 1 };
    const c = await store.claimNext({ workerTarget: "default", workerId: "w1", leaseMs: 10_000, now: T0 + 1, concurrencyLimits: limits });
    expect(c.status).toBe("claimed");
    expect((await store.claimNext({ workerTarget: "default", workerId: "w2", leaseMs: 10_000, now: T0 + 2, concurrencyLimits: limits })).status).toBe("empty");
    expect(await client.zcard(ks.keySlot("tenant:a").running)).toBe(1);
    expect(await auditLayout(prefix)).toEqual([]);
    await store.close();
  });

  it("deleteAgent finds an agent's keys on the master of its slot, also as the first call of a new client", async () => {
    const prefix = freshPrefix();
    const ks = keySpace(prefix, { shards: SHARDS });
    // Agents on every master: SCAN on any other node than the agent's would find none of its keys.
    const ids = Array.from({ length: 12 }, (_, i) => `del-${i}`);
    const writer = redisStore({ client, prefix });
    for (const agentId of ids) {
      await writer.enqueueTask({ agentId, agentName: "x", workerTarget: "default", input: 1, options: {}, turnId: `t_${agentId}`, now: T0 });
    }
    expect(new Set(ids.map((id) => ownerOf(ks.agent(id).head))).size).toBe(3);
    for (const agentId of ids) {
      const fresh = redisStore({ clusterNodes: cluster.nodes.slice(0, 1), prefix });
      expect(await fresh.deleteAgent(agentId)).toEqual({ status: "deleted" });
      await fresh.close();
      expect(await client.exists(ks.agent(agentId).head, ks.agent(agentId).tasks)).toBe(0);
    }
    expect(await auditLayout(prefix)).toEqual([]);
  });

  it("one watch hears the bells of every shard on every master (PUBLISH reaches every node), and close() ends it", async () => {
    const prefix = freshPrefix();
    const ks = keySpace(prefix, { shards: SHARDS });
    const watcher = redisStore({ clusterNodes: cluster.nodes, prefix });
    const writer = redisStore({ client: peer, prefix });
    const heard: Array<{ target: string; at: number }> = [];
    let listening = false;
    const watch = watcher.watchBells!(["default"], { bell: (target, at) => heard.push({ target, at }), listening: (on) => (listening = on) });
    try {
      for (let t0 = Date.now(); !listening && Date.now() - t0 < 5_000;) await new Promise((r) => setTimeout(r, 10));
      expect(listening).toBe(true);
      // One agent per master.
      const byMaster = new Map<string, string>();
      for (let i = 0; byMaster.size < 3 && i < 1_000; i++) {
        const id = `bell-${i}`;
        const owner = ownerOf(ks.agent(id).home.ready("default"));
        if (!byMaster.has(owner)) byMaster.set(owner, id);
      }
      expect(byMaster.size).toBe(3);
      const now = Date.now();
      for (const [i, agentId] of [...byMaster.values()].entries()) {
        await writer.enqueueTask({ agentId, agentName: "a", workerTarget: "default", input: i, options: {}, turnId: `t${i}`, now });
      }
      for (let t0 = Date.now(); heard.length < 3 && Date.now() - t0 < 2_000;) await new Promise((r) => setTimeout(r, 10));
      expect(heard).toEqual([0, 1, 2].map(() => ({ target: "default", at: now })));
    } finally {
      await watch.close();
      await watcher.close();
    }
  });

  it("two gatehouse instances on the cluster finish every task, agents spread over every master", async () => {
    const prefix = freshPrefix();
    const runs = [0, 0];
    const agentFor = (i: number) =>
      defineAgent({
        name: "relay",
        instructions: "work twice, then submit",
        tools: [defineTool({ name: "work", description: "One unit", parameters: z.object({ n: z.number() }), execute: ({ n }) => (runs[i]++, { done: n }) })],
        model: scriptedModel(({ step }) =>
          step <= 2 ? { toolCalls: [{ name: "work", args: { n: step } }] } : { toolCalls: [{ name: "submit_result", args: { result: { ok: true } } }] }
        ),
      });
    const ghs = [0, 1].map((i) =>
      createGatehouse({ agents: [agentFor(i)], store: redisStore({ clusterNodes: cluster.nodes, prefix }), concurrency: 4, pollMs: 20 })
    );
    const ids = Array.from({ length: 60 }, (_, i) => `relay-${i}`);
    try {
      for (const [i, agentId] of ids.entries()) {
        const res = await ghs[i % 2].fetch(new Request(`http://gh/v1/agents/${agentId}/tasks`, {
          method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ agent: "relay", input: { i } }),
        }));
        expect(res.status).toBe(202);
      }
      for (const gh of ghs) gh.startWorker();
      const deadline = Date.now() + 60_000;
      let states: Array<string | undefined> = [];
      while (Date.now() < deadline) {
        states = await Promise.all(ids.map(async (id) => (await ghs[0].store.getAgent(id))?.state));
        if (states.every((s) => s === "done")) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(states.filter((s) => s !== "done")).toEqual([]);
      expect(new Set(ids.map((id) => ownerOf(keySpace(prefix, { shards: SHARDS }).agent(id).head))).size).toBe(3);
      // Both instances ran work; each agent's two tool calls ran once each (no turn ran twice).
      expect(runs[0]).toBeGreaterThan(0);
      expect(runs[1]).toBeGreaterThan(0);
      expect(runs[0] + runs[1]).toBe(ids.length * 2);
      expect(await ghs[0].store.readyCount("default", Date.now() + 60_000)).toBe(0);
    } finally {
      for (const gh of ghs) await gh.close();
    }
  }, 90_000);
});

describe("live channel on the cluster (store/redis-live.ts)", () => {
  it("each agent's channel carries its hash tag, and one subscriber hears agents on every master", async () => {
    const prefix = freshPrefix();
    const ks = keySpace(prefix, { shards: SHARDS });
    const reader = redisStore({ clusterNodes: cluster.nodes, prefix });
    const writer = redisStore({ client: peer, prefix });
    const byMaster = new Map<string, string>();
    for (let i = 0; byMaster.size < 3 && i < 1_000; i++) {
      const id = `live-${i}`;
      const owner = ownerOf(ks.agent(id).head);
      if (!byMaster.has(owner)) byMaster.set(owner, id);
    }
    const ids = [...byMaster.values()];
    expect(ids.length).toBe(3);
    for (const id of ids) expect(keySlot(liveChannelName(ks, id))).toBe(keySlot(ks.agent(id).head));
    const heard: Array<[string, unknown]> = [];
    const offs = ids.map((id) => reader.live!.subscribe(id, (m) => heard.push([id, m])));
    try {
      // The subscription is asynchronous: publish until every agent was heard once.
      const deadline = Date.now() + 10_000;
      while (new Set(heard.map(([id]) => id)).size < 3 && Date.now() < deadline) {
        for (const id of ids) writer.live!.publish(id, { type: "delta", turnId: "t1", step: 1, text: id });
        await new Promise((r) => setTimeout(r, 50));
      }
      for (const id of ids) expect(heard).toContainEqual([id, { type: "delta", turnId: "t1", step: 1, text: id }]);
      // Nothing crosses agents.
      for (const [id, m] of heard) expect((m as { text: string }).text).toBe(id);
    } finally {
      for (const off of offs) off();
      await reader.close();
      await writer.close();
    }
  }, 30_000);
});
