/**
 * The baseline: BullMQ's jobs per second on the same Redis server, at a given
 * worker concurrency. Jobs are added in bulk first, then one Worker processes
 * them; the clock runs from `worker.run()` to the last `completed` event.
 *
 * Two kinds of job:
 * - trivial (no `recordBytes`): the processor returns `{ ok: true }` and the
 *   job is removed when it completes (`removeOnComplete`/`removeOnFail`,
 *   BullMQ's lightest setting): nothing is kept.
 * - persisting (`recordBytes: n`): the processor returns a record whose JSON
 *   is `n` bytes, and completed jobs are kept (`removeOnComplete: false`), so
 *   BullMQ stores the record as the job's `returnvalue` in the job's hash,
 *   written by the same script call that completes the job and fetches the
 *   next (`moveToFinished`): no extra round trip. The benchmark passes the
 *   bytes one gatehouse step sends to Redis, measured in the same run, so
 *   both sides keep about as much per unit of work (bench/README.md).
 *
 * BullMQ is a dependency of the benchmark only (bench/package.json). It is
 * loaded by path at run time, so the project type-checks without it; the
 * few members used are typed here.
 */
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";
import process from "node:process";
import { type CommandStats, commandStats, diffStats, type RedisInfoClient, redisCpuSeconds } from "./redis-info.ts";

interface BullConnection {
  host: string;
  port: number;
  maxRetriesPerRequest: null;
}
interface BullQueue {
  addBulk(jobs: Array<{ name: string; data: unknown; opts?: Record<string, unknown> }>): Promise<unknown>;
  obliterate(opts?: { force?: boolean }): Promise<void>;
  getCompletedCount(): Promise<number>;
  getCompleted(start?: number, end?: number): Promise<Array<{ returnvalue: unknown }>>;
  close(): Promise<void>;
}
interface BullWorker {
  on(event: "completed" | "failed", fn: (...args: unknown[]) => void): void;
  waitUntilReady(): Promise<unknown>;
  run(): Promise<void>;
  close(force?: boolean): Promise<void>;
}
interface BullMQ {
  Queue: new (name: string, opts: { connection: BullConnection }) => BullQueue;
  Worker: new (
    name: string,
    processor: (job: unknown) => Promise<unknown>,
    opts: { connection: BullConnection; concurrency: number; autorun: boolean },
  ) => BullWorker;
}

export async function loadBullMQ(): Promise<BullMQ> {
  const require = createRequire(import.meta.url);
  return require("bullmq") as BullMQ;
}

export interface BullResult {
  concurrency: number;
  jobs: number;
  seconds: number;
  jobsPerSecond: number;
  /** Server-side commands per job (scripts count once, plus every command they call). */
  commandsPerJob: number;
  /** Script calls (EVALSHA/EVAL) per job. */
  scriptCallsPerJob: number;
  /** CPU of this process (BullMQ's worker and queue) per job, in µs. */
  nodeCpuUsPerJob: number;
  /** CPU of the Redis server per job, in µs. */
  redisCpuUsPerJob: number;
  /** Bytes sent to Redis per job while processing (INFO stats total_net_input_bytes; adding the jobs is not counted). */
  bytesInPerJob: number;
  /** The size of the record each job keeps (JSON bytes of its returnvalue), 0 for the trivial job. */
  recordBytes: number;
}

/** A JSON value whose encoding is exactly `bytes` long (at least 16): a record with one string field. */
export function recordOfSize(bytes: number): { record: string } {
  const overhead = JSON.stringify({ record: "" }).length;
  return { record: "r".repeat(Math.max(16, Math.round(bytes)) - overhead) };
}

export async function benchBullMQ(opts: {
  host: string;
  port: number;
  concurrency: number;
  jobs: number;
  info: RedisInfoClient;
  /** Keep a record of this many JSON bytes per job (the persisting job); absent: the trivial job. */
  recordBytes?: number;
}): Promise<BullResult> {
  const { Queue, Worker } = await loadBullMQ();
  const connection: BullConnection = { host: opts.host, port: opts.port, maxRetriesPerRequest: null };
  const persist = opts.recordBytes !== undefined;
  const record = persist ? recordOfSize(opts.recordBytes!) : { ok: true };
  const name = `bench-${persist ? "p" : "t"}${opts.concurrency}-${Date.now()}`;
  const queue = new Queue(name, { connection });
  const jobOpts = persist ? { removeOnComplete: false, removeOnFail: false } : { removeOnComplete: true, removeOnFail: true };
  const all = Array.from({ length: opts.jobs }, (_, i) => ({ name: "j", data: { i }, opts: jobOpts }));
  for (let k = 0; k < all.length; k += 1000) await queue.addBulk(all.slice(k, k + 1000));
  let done = 0;
  let finish: () => void = () => {};
  const finished = new Promise<void>((r) => (finish = r));
  // Each job returns its own copy, as a real processor builds its result.
  const worker = new Worker(name, async () => ({ ...record }), { connection, concurrency: opts.concurrency, autorun: false });
  const count = () => {
    if (++done === opts.jobs) finish();
  };
  worker.on("completed", count);
  worker.on("failed", count);
  await worker.waitUntilReady();
  const before: CommandStats = await commandStats(opts.info);
  const redisCpu0 = await redisCpuSeconds(opts.info);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  void worker.run();
  await finished;
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const redisCpu = await redisCpuSeconds(opts.info) - redisCpu0;
  const after = await commandStats(opts.info);
  const d = diffStats(before, after);
  await worker.close();
  if (persist) {
    // The records are really kept: every job completed, and its returnvalue is the record.
    const kept = await queue.getCompletedCount();
    const [one] = await queue.getCompleted(0, 0);
    if (kept !== opts.jobs || JSON.stringify(one?.returnvalue).length !== JSON.stringify(record).length) {
      throw new Error(`persisting BullMQ job: ${kept} of ${opts.jobs} completed jobs kept, returnvalue ${JSON.stringify(one?.returnvalue).slice(0, 40)}`);
    }
  }
  await queue.obliterate({ force: true });
  await queue.close();
  return {
    concurrency: opts.concurrency,
    jobs: opts.jobs,
    seconds,
    jobsPerSecond: opts.jobs / seconds,
    commandsPerJob: d.totalCalls / opts.jobs,
    scriptCallsPerJob: d.scriptCalls / opts.jobs,
    nodeCpuUsPerJob: (cpu.user + cpu.system) / opts.jobs,
    redisCpuUsPerJob: (redisCpu * 1e6) / opts.jobs,
    bytesInPerJob: d.netInputBytes / opts.jobs,
    recordBytes: persist ? JSON.stringify(record).length : 0,
  };
}
