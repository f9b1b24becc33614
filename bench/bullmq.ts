/**
 * The baseline: BullMQ's jobs per second on the same Redis server, at a given
 * worker concurrency, with a trivial processor. Jobs are added in bulk first
 * (`removeOnComplete`/`removeOnFail`, BullMQ's lightest setting), then one
 * Worker processes them; the clock runs from `worker.run()` to the last
 * `completed` event.
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
}

export async function benchBullMQ(opts: {
  host: string;
  port: number;
  concurrency: number;
  jobs: number;
  info: RedisInfoClient;
}): Promise<BullResult> {
  const { Queue, Worker } = await loadBullMQ();
  const connection: BullConnection = { host: opts.host, port: opts.port, maxRetriesPerRequest: null };
  const name = `bench-${opts.concurrency}-${Date.now()}`;
  const queue = new Queue(name, { connection });
  const all = Array.from({ length: opts.jobs }, (_, i) => ({ name: "j", data: { i }, opts: { removeOnComplete: true, removeOnFail: true } }));
  for (let k = 0; k < all.length; k += 1000) await queue.addBulk(all.slice(k, k + 1000));
  let done = 0;
  let finish: () => void = () => {};
  const finished = new Promise<void>((r) => (finish = r));
  const worker = new Worker(name, async () => ({ ok: true }), { connection, concurrency: opts.concurrency, autorun: false });
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
  };
}
