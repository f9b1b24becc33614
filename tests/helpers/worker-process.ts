/**
 * A worker process for the fault tests: `createGatehouse({ agents, store,
 * leaseMs })` + `startWorker()` on a Redis store, running the fault agent
 * (tests/helpers/fault-agent.ts), until it is killed.
 *
 * Run with `node --import tsx tests/helpers/worker-process.ts`; the
 * configuration is the JSON in the environment variable GH_FAULT_WORKER
 * (`WorkerProcessConfig`).
 *
 * Contract with the parent (tests/helpers/processes.ts):
 * - stdout carries one JSON object per line: `{ "ready": true, ... }` once the
 *   worker loops run, then the runtime's log lines (`{ "level", "msg", ... }`).
 * - Every dispatch of the `work` tool is RPUSHed as JSON (`DispatchRecord`) to
 *   `sideKey` on `sideUrl` (plain TCP, also when the store under test speaks
 *   REST), and the RPUSH is acknowledged before the tool goes on, so what the
 *   list holds happened.
 * - SIGTERM stops the loops and exits 0; SIGKILL and SIGSTOP are what the
 *   tests are about.
 */
import process from "node:process";
import { Redis } from "ioredis";
import { createGatehouse } from "../../mod.ts";
import type { Logger, Store } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { type DispatchRecord, faultAgent } from "./fault-agent.ts";
import { delegationTeam, type TeamRecord } from "./delegation-team.ts";

export interface WorkerProcessConfig {
  name: string;
  /** The store under test; `prefix` keeps runs apart on one Redis. */
  store: { kind: "redis"; url: string; prefix: string } | { kind: "upstash"; url: string; token: string; prefix: string };
  sideUrl: string;
  sideKey: string;
  leaseMs: number;
  concurrency: number;
  pollMs?: number;
  modelMs?: number;
  toolMsCap?: number;
  /** Log level forwarded to stdout (default "info"). */
  logLevel?: "debug" | "info" | "warn" | "error";
  /** Declare the fault agent's `work` tool retrySafe. */
  retrySafe?: boolean;
  /** Run the delegation team (tests/helpers/delegation-team.ts) instead of the fault agent, with this pull interval (ms). */
  delegationPollMs?: number;
}

async function makeStore(cfg: WorkerProcessConfig["store"]): Promise<Store> {
  if (cfg.kind === "redis") return redisStore({ url: cfg.url, prefix: cfg.prefix });
  const { upstashStore } = await import("../../store/upstash.ts");
  return upstashStore({ url: cfg.url, token: cfg.token, prefix: cfg.prefix });
}

function lineLogger(name: string, level: NonNullable<WorkerProcessConfig["logLevel"]>): Logger {
  const order = ["debug", "info", "warn", "error"];
  const min = order.indexOf(level);
  const log = (lvl: string) => (msg: string, fields?: Record<string, unknown>) => {
    if (order.indexOf(lvl) < min) return;
    process.stdout.write(JSON.stringify({ level: lvl, worker: name, at: Date.now(), msg, ...fields }) + "\n");
  };
  return { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") };
}

async function main() {
  const raw = process.env.GH_FAULT_WORKER;
  if (!raw) throw new Error("GH_FAULT_WORKER (JSON WorkerProcessConfig) is not set");
  const cfg = JSON.parse(raw) as WorkerProcessConfig;
  // The side channel must outlive a Redis restart: queue while disconnected, never give up.
  const side = new Redis(cfg.sideUrl, { maxRetriesPerRequest: null, lazyConnect: false });
  side.on("error", () => {});
  const record = async (r: DispatchRecord | TeamRecord) => {
    await side.rpush(cfg.sideKey, JSON.stringify(r));
  };
  const logger = lineLogger(cfg.name, cfg.logLevel ?? "info");
  const gh = createGatehouse({
    agents: cfg.delegationPollMs !== undefined
      ? delegationTeam({ worker: cfg.name, pid: process.pid, record, modelMs: cfg.modelMs })
      : [faultAgent({ worker: cfg.name, pid: process.pid, record, modelMs: cfg.modelMs, toolMsCap: cfg.toolMsCap, retrySafe: cfg.retrySafe })],
    ...(cfg.delegationPollMs !== undefined ? { delegation: { pollMs: cfg.delegationPollMs } } : {}),
    store: await makeStore(cfg.store),
    leaseMs: cfg.leaseMs,
    concurrency: cfg.concurrency,
    pollMs: cfg.pollMs ?? 20,
    logger,
    watchdogIntervalMs: 200,
  });
  process.on("SIGTERM", () => {
    gh.close().finally(() => {
      side.disconnect();
      process.exit(0);
    });
  });
  process.on("unhandledRejection", (err) => logger.error("unhandled rejection", { error: String((err as Error)?.stack ?? err) }));
  gh.startWorker();
  process.stdout.write(JSON.stringify({ ready: true, worker: cfg.name, pid: process.pid }) + "\n");
}

main().catch((err) => {
  process.stderr.write(`worker-process failed: ${(err as Error)?.stack ?? err}\n`);
  process.exit(1);
});
