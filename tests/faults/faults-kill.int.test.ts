/**
 * Worker processes killed with SIGKILL at 50 seeded points of running turns,
 * on the Redis (TCP) store with a short lease.
 *
 * Invariants (tests/helpers/fault-checks.ts lists them in full):
 * - a killed worker's agents are taken over by another worker once the lease
 *   expires, and every acknowledged task ends its turn exactly once, in done;
 * - no acknowledged tool result is lost;
 * - every logical tool call (agent, turn, step, index) is recorded once and
 *   dispatched under that one id, although a model step that was running
 *   when its worker died is asked again and proposes fresh ids.
 *
 * Three worker slots run at once. Seed k chooses a delay of 50-600 ms; once
 * the worker in slot k mod 3 is ready, it is killed after that delay and a
 * fresh worker is started in its place. A feeder keeps two unfinished tasks per
 * agent while the kills go on, and an "outside system" answers the external
 * `approve` calls throughout.
 */
import { afterAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { redisStore } from "../../redis.ts";
import type { Store } from "../../store/port.ts";
import { FAULT_AGENT, type DispatchRecord, type FaultTaskInput } from "../helpers/fault-agent.ts";
import { type AcceptedResult, answerExternalCalls, checkRun, type EnqueuedTurn } from "../helpers/fault-checks.ts";
import { seeded, sleep, spawnWorker, waitFor, type WorkerHandle } from "../helpers/processes.ts";
import { useRedisServer } from "../helpers/redis.ts";

const SEEDS = 50;
const SLOTS = 3;
const AGENTS = 8;
const LEASE_MS = 500;

const redis = useRedisServer();
const workers: WorkerHandle[] = [];
afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
});

describe("faults: SIGKILL of worker processes", () => {
  it("50 seeded kills mid-turn: agents are taken over after the lease, every task ends done, no acknowledged result is lost, no call is dispatched under two ids", async () => {
    await killRun({ seeds: SEEDS, retrySafe: false });
  }, 150_000);

  // The same with `work` retrySafe: its results ride with the next model step's commit, so kills also
  // land between a tool's return and that commit (the tool runs again under its recorded id).
  it("20 seeded kills with retry-safe tools: the same invariants hold when results ride with the model step's commit", async () => {
    await killRun({ seeds: 20, retrySafe: true });
  }, 120_000);
});

async function killRun(opts: { seeds: number; retrySafe: boolean }) {
  {
    const SEEDS = opts.seeds;
    const prefix = `kill_${opts.retrySafe ? "rs_" : ""}${Date.now().toString(36)}`;
    const store: Store = redisStore({ url: redis.url, prefix });
    const side = new Redis(redis.url);
    const sideKey = `${prefix}:dispatch`;
    const agentIds = Array.from({ length: AGENTS }, (_, i) => `agent-${i}`);
    const turns: EnqueuedTurn[] = [];
    const accepted = new Map<string, AcceptedResult>();
    const unanswered = new Map<string, AcceptedResult>(); // deliveries whose answer was lost; retried like a real client
    const rng = seeded(20240601);
    let n = 0;

    const enqueue = async (agentId: string) => {
      const label = `t${++n}`;
      const input: FaultTaskInput = {
        label,
        toolMs: [0, 0, 0, 0].map(() => Math.floor(rng() * 80)) as FaultTaskInput["toolMs"],
        external: rng() < 0.5,
      };
      const r = await store.enqueueTask({
        agentId, agentName: FAULT_AGENT, workerTarget: "default", input, options: {},
        turnId: `turn_${label}`, now: Date.now(),
      });
      if (r.status === "enqueued") turns.push({ agentId, turnId: r.turnId, label, external: input.external });
    };
    const topUp = async () => {
      for (const id of agentIds) {
        const h = await store.getAgent(id);
        const open = h ? h.pendingTasks + (h.activeTurnId ? 1 : 0) : 0;
        for (let k = open; k < 2; k++) await enqueue(id);
      }
    };
    const spawn = async (name: string) => {
      const w = await spawnWorker({
        name, store: { kind: "redis", url: redis.url, prefix }, sideUrl: redis.url, sideKey,
        leaseMs: LEASE_MS, concurrency: 2, modelMs: 5, logLevel: "warn", retrySafe: opts.retrySafe,
      });
      workers.push(w);
      return w;
    };

    await topUp();
    let answering = true;
    const answerer = (async () => {
      while (answering) {
        await answerExternalCalls(store, agentIds, accepted, Date.now, unanswered).catch(() => 0);
        await sleep(30);
      }
    })();

    const slots: WorkerHandle[] = await Promise.all(Array.from({ length: SLOTS }, (_, i) => spawn(`w${i}`)));
    const kills: Array<{ seed: number; worker: string; delay: number }> = [];
    for (let seed = 1; seed <= SEEDS; seed++) {
      const delay = 50 + Math.floor(seeded(seed)() * 550);
      const slot = seed % SLOTS;
      const w = slots[slot];
      await w.ready;
      await sleep(delay);
      w.signal("SIGKILL");
      await w.exited;
      kills.push({ seed, worker: w.name, delay });
      slots[slot] = await spawn(`w${slot}.${seed}`);
      await topUp();
    }

    // No more kills: the surviving workers finish every acknowledged task.
    await waitFor("every agent to finish its tasks", async () => {
      for (const id of agentIds) {
        const h = await store.getAgent(id);
        if (!h || h.activeTurnId !== null || h.pendingTasks > 0) return false;
      }
      return true;
    }, 60_000, 100);
    answering = false;
    await answerer;

    const dispatches = (await side.lrange(sideKey, 0, -1)).map((s) => JSON.parse(s) as DispatchRecord);
    const { violations, stats } = await checkRun({ store, turns, accepted, dispatches });
    const killedWorkers = new Set(kills.map((k) => k.worker));
    // Turns that a killed worker had started and another worker finished.
    const workersOf = new Map<string, Set<string>>();
    for (const d of dispatches) workersOf.set(d.turnId, (workersOf.get(d.turnId) ?? new Set()).add(d.worker));
    const takenOver = [...workersOf.values()].filter((ws) => ws.size > 1 && [...ws].some((w) => killedWorkers.has(w)));
    if (violations.length) {
      for (const w of workers) if (w.stderr.length) console.error(w.name, w.stderr.join(""));
    }
    expect(violations).toEqual([]);
    expect(kills).toHaveLength(SEEDS);
    expect(stats.done).toBe(turns.length);
    // The kills hit running turns, and other workers finished them.
    expect(takenOver.length).toBeGreaterThan(SEEDS / 5);
    expect(stats.workersPerTurnMax).toBeGreaterThan(1);
    expect(accepted.size).toBeGreaterThan(0);
    console.log(JSON.stringify({ kills: kills.length, takenOver: takenOver.length, accepted: accepted.size, ...stats }));

    await store.close();
    side.disconnect();
  }
}
