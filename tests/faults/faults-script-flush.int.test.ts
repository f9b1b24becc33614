/**
 * SCRIPT FLUSH while workers run, on both Redis adapters: Redis forgets
 * every cached script, the next EVALSHA answers NOSCRIPT, and the store falls
 * back to EVAL with the full source (which caches it again).
 *
 * Invariants: the run finishes as if nothing happened (every task ends done,
 * the run checks of tests/helpers/fault-checks.ts hold), and the fallback
 * was really taken (Redis counted EVAL calls during the run).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { createGatehouse, type Gatehouse } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { upstashStore } from "../../store/upstash.ts";
import type { Store } from "../../store/port.ts";
import { FAULT_AGENT, type DispatchRecord, faultAgent, type FaultTaskInput } from "../helpers/fault-agent.ts";
import { type AcceptedResult, answerExternalCalls, checkRun, type EnqueuedTurn } from "../helpers/fault-checks.ts";
import { sleep, waitFor } from "../helpers/processes.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { startUpstashBridge, type UpstashBridge } from "../helpers/upstash-bridge.ts";

const redis = useRedisServer();
let bridge: UpstashBridge;
let admin: Redis;
const open: Gatehouse[] = [];

beforeAll(async () => {
  bridge = await startUpstashBridge({ redisUrl: redis.url });
  admin = new Redis(redis.url);
});
afterAll(async () => {
  for (const gh of open) await gh.close();
  admin?.disconnect();
  await bridge?.close();
});

async function evalCalls(): Promise<number> {
  const info = await admin.info("commandstats");
  return Number(/^cmdstat_eval:calls=(\d+)/m.exec(info)?.[1] ?? 0);
}

describe("faults: SCRIPT FLUSH during a run", () => {
  for (const kind of ["redis", "upstash"] as const) {
    it(`${kind}: work continues through repeated SCRIPT FLUSH (EVALSHA falls back to EVAL) and every task ends done`, async () => {
      const prefix = `flush_${kind}_${Date.now().toString(36)}`;
      const store: Store = kind === "redis"
        ? redisStore({ url: redis.url, prefix })
        : upstashStore({ url: bridge.url, token: bridge.token, prefix });
      const dispatches: DispatchRecord[] = [];
      const gh = createGatehouse({
        agents: [faultAgent({ worker: kind, pid: 0, record: async (r) => void dispatches.push(r) })],
        store, leaseMs: 2_000, concurrency: 4, pollMs: 20,
      });
      open.push(gh);
      const agentIds = ["f1", "f2", "f3", "f4"];
      const turns: EnqueuedTurn[] = [];
      for (let k = 0; k < 3; k++) {
        for (const agentId of agentIds) {
          const label = `${agentId}-${k}`;
          const input: FaultTaskInput = { label, toolMs: [30, 10, 30, 10], external: k === 1 };
          const r = await store.enqueueTask({
            agentId, agentName: FAULT_AGENT, workerTarget: "default", input, options: {}, turnId: `turn_${label}`, now: Date.now(),
          });
          expect(r.status).toBe("enqueued");
          turns.push({ agentId, turnId: `turn_${label}`, label, external: input.external });
        }
      }
      const evalsBefore = await evalCalls();
      let flushes = 0;
      let flushing = true;
      const flusher = (async () => {
        while (flushing) {
          await admin.script("FLUSH");
          flushes++;
          await sleep(10);
        }
      })();
      const accepted = new Map<string, AcceptedResult>();
      gh.startWorker();
      await waitFor("every turn to end", async () => {
        await answerExternalCalls(store, agentIds, accepted, Date.now);
        for (const id of agentIds) {
          const h = await store.getAgent(id);
          if (!h || h.activeTurnId !== null || h.pendingTasks > 0) return false;
        }
        return true;
      }, 60_000, 50);
      flushing = false;
      await flusher;

      const { violations, stats } = await checkRun({ store, turns, accepted, dispatches });
      expect(violations).toEqual([]);
      expect(stats.done).toBe(turns.length);
      expect(flushes).toBeGreaterThan(5);
      // The fallback ran: scripts were sent in full after the cache was flushed.
      expect(await evalCalls()).toBeGreaterThan(evalsBefore + 5);
      await gh.stopWorker();
    }, 90_000);
  }
});
