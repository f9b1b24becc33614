/**
 * A Redis Cluster failover under load: 3 masters with a replica each
 * (tests/helpers/redis-cluster.ts, one cluster per test), one gatehouse
 * instance (one process) running agents on every master, and the master
 * serving most of them SIGKILLed while their tools run (`cluster-node-timeout`
 * 2 s: the failover takes longer than ioredis follows `CLUSTERDOWN` and
 * redirections on its own, about 1.6 s). The replica takes over; meanwhile
 * that master's renewals and commits are refused or go unanswered. With a
 * 6 s lease the host's retries carry the claims through the failover; with a
 * 2 s lease (shorter than any failover here: 2 s of node timeout plus the
 * election) the claims lose their agents, and the next claims in the process
 * commit the kept results.
 *
 * The cluster is ready only once every replica streams its master's writes
 * (tests/helpers/redis-cluster.ts): a master killed right after a replica
 * loaded its snapshot, before the replica's first acknowledgement, would take
 * every write of the test with it, and the replica would take over empty (the
 * agents of that master missing, nothing for the runtime to do).
 *
 * Invariants checked:
 * - No in-process tool call runs twice in one living process: the host
 *   retries renewals and commits through the failover while its lease lasts
 *   (actors/claim/store-retry.ts), and a result whose commit did not get through
 *   is kept and committed by the next claim instead of running the tool
 *   again (actors/claim/kept-results.ts). Runs are counted in a separate
 *   redis-server, keyed by agent, turn and tool-call id.
 * - Every task ends (`done`), the tool that is not `retrySafe` included.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, type Gatehouse, scriptedModel } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { keySlot } from "../../store/key-slot.ts";
import { keySpace } from "../../store/keys.ts";
import { startRedisCluster, type RedisCluster } from "../helpers/redis-cluster.ts";
import { useRedisServer } from "../helpers/redis.ts";

const AGENTS = 24;
const TOOL_MS = 250;
/**
 * Every agent's state, compared whole: Bun's `toEqual` takes `[undefined, …]` for `[]`, so a
 * filtered list of the states that are not `done` let unreadable agents pass there.
 */
const ALL_DONE = Array.from({ length: AGENTS }, () => "done");

const counterServer = useRedisServer({}, 30_000);
let counter: Redis;

beforeAll(async () => {
  counter = new Redis(counterServer.url);
}, 30_000);
afterAll(async () => {
  counter?.disconnect();
}, 30_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts a cluster, enqueues one task per agent, kills the master serving most agents once 3 of
 * its agents run `charge`, waits for the failover and for every task to end (or 30 s).
 */
async function failover(leaseMs: number) {
  const cluster: RedisCluster = await startRedisCluster({ masters: 3, replicas: 1, nodeTimeoutMs: 2_000 });
  const prefix = `fo_${Math.random().toString(36).slice(2, 8)}`;
  /** Agents inside `charge` (the tool that is not retrySafe) right now. */
  const charging = new Set<string>();
  /** A tool that counts every run in the counter redis (not the cluster) under agent, turn and call id. */
  const counted = (name: string, retrySafe: boolean) =>
    defineTool({
      name,
      description: `${name}, counted`,
      parameters: z.object({}),
      retrySafe,
      execute: async (_args, ctx) => {
        if (name === "charge") charging.add(ctx.agentId);
        try {
          await counter.incr(`run:${prefix}:${ctx.agentId}:${ctx.turnId}:${ctx.toolCallId}:${name}`);
          await sleep(TOOL_MS);
          return { ran: name };
        } finally {
          charging.delete(ctx.agentId);
        }
      },
    });
  const agent = defineAgent({
    name: "payer",
    instructions: "charge, look up, submit",
    tools: [counted("charge", false), counted("lookup", true)],
    model: scriptedModel(({ step }) =>
      step === 1
        ? { toolCalls: [{ name: "charge", args: {} }] }
        : step === 2
        ? { toolCalls: [{ name: "lookup", args: {} }] }
        : { toolCalls: [{ name: "submit_result", args: { result: { ok: true } } }] }
    ),
  });
  const seen: Record<string, number> = {};
  const note = (msg: string) => void (seen[msg] = (seen[msg] ?? 0) + 1);
  const logger = { debug() {}, info: note, warn: note, error: note };
  const gh: Gatehouse = createGatehouse({
    agents: [agent], store: redisStore({ clusterNodes: cluster.nodes, prefix }), concurrency: AGENTS, pollMs: 20, leaseMs, logger,
  });
  const ids = Array.from({ length: AGENTS }, (_, i) => `payer-${i}`);
  try {
    for (const agentId of ids) {
      const res = await gh.fetch(new Request(`http://gh/v1/agents/${agentId}/tasks`, {
        method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ agent: "payer", input: {} }),
      }));
      expect(res.status).toBe(202);
    }
    // The master serving the most of these agents, killed while at least 3 of its agents run `charge`:
    // their results come back while the master is down, and their commits meet the failover.
    const ks = keySpace(prefix, { shards: 16 });
    const masters = await Promise.all(ids.map((id) => cluster.masterOf(keySlot(ks.agent(id).head))));
    const victim = masters.reduce((best, m) => masters.filter((x) => x === m).length > masters.filter((x) => x === best).length ? m : best);
    const onVictim = new Set(ids.filter((_, i) => masters[i] === victim));
    gh.startWorker();
    const startDeadline = Date.now() + 20_000;
    while ([...charging].filter((id) => onVictim.has(id)).length < Math.min(3, onVictim.size)) {
      if (Date.now() > startDeadline) throw new Error(`agents of the master to kill never ran charge (${[...charging]})`);
      await sleep(2);
    }
    await victim.kill("SIGKILL");
    await cluster.waitForFailover(victim, 20_000);

    const deadline = Date.now() + 30_000;
    // Each agent's state, `missing` (the store has no such agent) or the error of the read: a failure
    // tells an agent the cluster lost from one the client cannot reach.
    let states: string[] = [];
    while (Date.now() < deadline) {
      states = await Promise.all(ids.map(async (id) => {
        try {
          return (await gh.store.getAgent(id))?.state ?? "missing";
        } catch (err) {
          return `unreadable: ${(err as Error).message}`;
        }
      }));
      if (states.every((s) => s === "done")) break;
      await sleep(100);
    }
    const keys = await counter.keys(`run:${prefix}:*`);
    const counts = await Promise.all(keys.map(async (k) => [k, Number(await counter.get(k))] as const));
    const rerun = counts.filter(([, n]) => n > 1);
    console.log(
      `failover, lease ${leaseMs} ms: ${onVictim.size} of ${AGENTS} agents on the killed master; ${keys.length} calls ran; ` +
        `retried store calls ${seen.store_call_retried ?? 0}, kept results committed ${seen.tool_result_kept ?? 0}, ` +
        `refused commits ${seen.commit_refused ?? 0}, failed renewals ${seen["lease renewal failed"] ?? 0}, ` +
        `failed claims ${seen["claim failed"] ?? 0}; re-runs: ${JSON.stringify(rerun)}`,
    );
    return { rerun, states, calls: counts.length, onVictim: onVictim.size, seen };
  } finally {
    await gh.close();
    await cluster.stop();
  }
}

describe("Redis Cluster failover (3 masters, 3 replicas)", () => {
  it("a master SIGKILLed while tools run, 6 s lease: retries carry the claims through; no tool runs twice in the process, every task ends", async () => {
    const r = await failover(6_000);
    expect(r.rerun).toEqual([]);
    expect(r.states).toEqual(ALL_DONE);
    // Every agent's two calls ran (charge, lookup), and the failover was felt.
    expect(r.calls).toBeGreaterThanOrEqual(AGENTS * 2);
    expect(r.onVictim).toBeGreaterThan(0);
  }, 60_000);

  it("a master SIGKILLed while tools run, 2 s lease: the leases run out, the next claims commit the kept results; no tool runs twice", async () => {
    const r = await failover(2_000);
    expect(r.rerun).toEqual([]);
    expect(r.states).toEqual(ALL_DONE);
    expect(r.calls).toBeGreaterThanOrEqual(AGENTS * 2);
    // The agents of the killed master lost their leases with a result in hand.
    expect(r.seen.tool_result_kept ?? 0).toBeGreaterThan(0);
  }, 60_000);
});
