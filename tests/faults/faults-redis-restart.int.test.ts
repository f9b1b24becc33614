/**
 * Redis killed (SIGKILL) and restarted in the middle of a run, with the AOF
 * on and `appendfsync always`, while two worker processes run turns and the
 * test enqueues tasks and answers external calls the whole time.
 *
 * Invariants:
 * - workers reconnect on their own and finish: both processes are still
 *   alive at the end and every turn that exists ended done;
 * - nothing acknowledged is lost: every task whose enqueue was answered
 *   (`enqueued`, or `duplicate` for its idempotency key) before, during or
 *   after the outage is in the log and ends done, and every accepted tool
 *   result is in its turn's result;
 * - the run checks of tests/helpers/fault-checks.ts hold for every turn the
 *   log holds (also those whose enqueue answer was lost in the outage).
 */
import { afterAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { redisStore } from "../../redis.ts";
import type { Store } from "../../store/port.ts";
import { FAULT_AGENT, type DispatchRecord, type FaultTaskInput } from "../helpers/fault-agent.ts";
import { type AcceptedResult, answerExternalCalls, checkRun, type EnqueuedTurn, readAllEvents } from "../helpers/fault-checks.ts";
import { sleep, spawnWorker, waitFor, type WorkerHandle } from "../helpers/processes.ts";
import { useRedisServer } from "../helpers/redis.ts";

const LEASE_MS = 1_000;
const AGENTS = 6;

const redis = useRedisServer({ appendonly: true, appendfsync: "always" });
const workers: WorkerHandle[] = [];
afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
});

describe("faults: Redis restarted mid-run (AOF, appendfsync always)", () => {
  it("workers reconnect and finish, and every task acknowledged before, during or after the restart ends done", async () => {
    const prefix = `restart_${Date.now().toString(36)}`;
    const store: Store = redisStore({ url: redis.url, prefix });
    const side = new Redis(redis.url, { maxRetriesPerRequest: null });
    side.on("error", () => {}); // reconnects on its own; the outage is the point of the test
    const sideKey = `${prefix}:dispatch`;
    const agentIds = Array.from({ length: AGENTS }, (_, i) => `agent-${i}`);
    const acked = new Map<string, { agentId: string; label: string }>();
    const accepted = new Map<string, AcceptedResult>();
    const unanswered = new Map<string, AcceptedResult>(); // deliveries whose answer was lost; retried like a real client
    let failedEnqueues = 0;

    for (const name of ["w0", "w1"]) {
      workers.push(await spawnWorker({
        name, store: { kind: "redis", url: redis.url, prefix }, sideUrl: redis.url, sideKey,
        leaseMs: LEASE_MS, concurrency: 3, modelMs: 5, logLevel: "warn",
      }));
    }
    await Promise.all(workers.map((w) => w.ready));

    let running = true;
    let n = 0;
    const producer = (async () => {
      while (running) {
        const label = `t${++n}`;
        const agentId = agentIds[n % AGENTS];
        const input: FaultTaskInput = { label, toolMs: [20, 10, 20, 10], external: n % 3 === 0 };
        try {
          const r = await store.enqueueTask({
            agentId, agentName: FAULT_AGENT, workerTarget: "default", input, options: {}, idempotencyKey: label,
            turnId: `turn_${label}`, now: Date.now(),
          });
          if (r.status === "enqueued" || r.status === "duplicate") acked.set(r.turnId, { agentId, label });
        } catch {
          failedEnqueues++; // not acknowledged: the caller would retry with the same key
        }
        await sleep(40);
      }
    })();
    const answerer = (async () => {
      while (running) {
        await answerExternalCalls(store, agentIds, accepted, Date.now, unanswered).catch(() => 0);
        await sleep(30);
      }
    })();

    await sleep(1_500);
    const ackedBefore = acked.size;
    await redis.kill("SIGKILL");
    await sleep(400);
    await redis.start();
    await sleep(1_500);
    running = false;
    await Promise.all([producer, answerer]);
    expect(ackedBefore).toBeGreaterThan(10);

    await waitFor("every agent to finish its tasks", async () => {
      await answerExternalCalls(store, agentIds, accepted, Date.now, unanswered);
      for (const id of agentIds) {
        const h = await store.getAgent(id);
        if (!h || h.activeTurnId !== null || h.pendingTasks > 0) return false;
      }
      return true;
    }, 60_000, 100);

    // The log is the truth: every turn it holds is checked, and every acknowledged one must be there.
    const turns: EnqueuedTurn[] = [];
    for (const agentId of agentIds) {
      for (const e of await readAllEvents(store, agentId)) {
        if (e.type !== "task_enqueued") continue;
        // The input is stored once per turn; the event names the turn.
        const input = (await store.getTurn(agentId, e.turnId!))!.input as FaultTaskInput;
        turns.push({ agentId, turnId: e.turnId!, label: input.label, external: input.external });
      }
    }
    const inLog = new Set(turns.map((t) => t.turnId));
    const lost = [...acked.keys()].filter((t) => !inLog.has(t));
    expect(lost).toEqual([]);
    expect(new Set(turns.map((t) => t.label)).size).toBe(turns.length); // one turn per idempotency key

    const dispatches = (await side.lrange(sideKey, 0, -1)).map((s) => JSON.parse(s) as DispatchRecord);
    const { violations, stats } = await checkRun({ store, turns, accepted, dispatches });
    if (violations.length) for (const w of workers) console.error(w.name, w.stderr.join(""), JSON.stringify(w.lines.slice(-20)));
    expect(violations).toEqual([]);
    expect(stats.done).toBe(turns.length);
    expect(workers.every((w) => w.alive())).toBe(true);
    console.log(JSON.stringify({ acked: acked.size, ackedBefore, failedEnqueues, turns: turns.length, accepted: accepted.size }));
    await store.close();
    side.disconnect();
  }, 120_000);
});
