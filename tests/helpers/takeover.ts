/**
 * One takeover measurement, shared by tests/faults/faults-takeover.int.test.ts and
 * bench/takeover.ts: two worker processes on one Redis, a task whose first
 * tool call runs long, SIGKILL of the worker running it `killAfterMs` after
 * the call started, and the time from the kill to the surviving worker's
 * `lease_takeover` log line for that agent (its `at` is the claim time).
 *
 * The killed worker renewed its lease every `leaseMs / 3`, so the lease it
 * leaves runs out between 2/3 and 3/3 of a lease after the kill; the takeover
 * follows within one poll (`pollMs`).
 */
import { Redis } from "ioredis";
import { redisStore } from "../../redis.ts";
import { FAULT_AGENT, type DispatchRecord } from "./fault-agent.ts";
import { sleep, spawnWorker, waitFor, type WorkerHandle } from "./processes.ts";

export interface TakeoverRun {
  leaseMs: number;
  pollMs: number;
  /** Time from SIGKILL to the takeover claim (ms). */
  takeoverMs: number;
  /** The surviving worker's `lease_takeover` line. */
  line: Record<string, unknown>;
  /** Time from the takeover claim to the end of the turn (done). */
  finishMs: number;
  killedWorker: string;
}

export async function measureTakeover(opts: {
  redisUrl: string;
  leaseMs: number;
  pollMs?: number;
  /** Delay between the start of the long tool call and SIGKILL (default 0). */
  killAfterMs?: number;
  /** Duration of the long tool call (default 2 leases, so the kill lands mid-call). */
  toolMs?: number;
  label?: string;
}): Promise<TakeoverRun> {
  const pollMs = opts.pollMs ?? 100;
  const prefix = `takeover_${Date.now().toString(36)}_${Math.floor(Math.random() * 1e6).toString(36)}`;
  const sideKey = `${prefix}:dispatch`;
  const store = redisStore({ url: opts.redisUrl, prefix });
  const side = new Redis(opts.redisUrl);
  const workers: WorkerHandle[] = [];
  try {
    for (const name of ["wa", "wb"]) {
      workers.push(await spawnWorker({
        name, store: { kind: "redis", url: opts.redisUrl, prefix }, sideUrl: opts.redisUrl, sideKey,
        leaseMs: opts.leaseMs, concurrency: 1, pollMs, logLevel: "info",
      }));
    }
    await Promise.all(workers.map((w) => w.ready));
    const agentId = "agent-takeover";
    const turnId = `turn_${opts.label ?? "takeover"}`;
    const toolMs = opts.toolMs ?? opts.leaseMs * 2;
    const r = await store.enqueueTask({
      agentId, agentName: FAULT_AGENT, workerTarget: "default",
      input: { label: opts.label ?? "takeover", toolMs: [toolMs, 0, 0, 0], external: false },
      options: {}, turnId, now: Date.now(),
    });
    if (r.status !== "enqueued") throw new Error(`enqueue answered ${r.status}`);

    // The long call (step 1, index 0) has started on one of the workers.
    const started = await waitFor("the long tool call to start", async () => {
      const all = (await side.lrange(sideKey, 0, -1)).map((s) => JSON.parse(s) as DispatchRecord);
      return all.find((d) => d.phase === "start" && d.step === 1 && d.i === 0);
    }, 30_000, 10);
    if (opts.killAfterMs) await sleep(opts.killAfterMs);
    const victim = workers.find((w) => w.name === started.worker)!;
    const survivor = workers.find((w) => w !== victim)!;
    const killAt = Date.now();
    victim.signal("SIGKILL");
    await victim.exited;

    const line = await waitFor("the survivor's lease_takeover line", () =>
      survivor.lines.find((l) => l.msg === "lease_takeover" && l.agentId === agentId), opts.leaseMs * 3 + 10_000, 10);
    const takeoverAt = line.at as number;
    await waitFor("the turn to end", async () => (await store.getAgent(agentId))?.state === "done", toolMs + 30_000, 20);
    return {
      leaseMs: opts.leaseMs,
      pollMs,
      takeoverMs: takeoverAt - killAt,
      line,
      finishMs: Date.now() - takeoverAt,
      killedWorker: victim.name,
    };
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    side.disconnect();
    await store.close();
  }
}
