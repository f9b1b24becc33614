/**
 * Idle cost of one process: `npm run bench:idle`.
 *
 * One gatehouse process with default settings (`startWorker()`: its default
 * worker loops and the watchdog loop) and nothing to do, on the memory store, on TCP
 * Redis and on Upstash (upstashStore through tests/helpers/upstash-bridge.ts), each
 * against a private redis-server. It idles `IDLE_SECONDS` (default 20) and
 * counts the store calls per second: calls of the port (a counting wrapper),
 * plus what the server saw: for TCP Redis `INFO commandstats` (script calls
 * and every other command), for Upstash the bridge's billed commands and HTTP
 * requests. Each figure is given over the whole idle time and over its second
 * half (the steady state a long idle process pays).
 *
 * `measureIdle()` is one row; `npm run bench` (bench/run.ts) calls it for the
 * defaults on TCP Redis and Upstash with a shorter idle time.
 *
 * Rows:
 * - `default`: createGatehouse() defaults (the backoff).
 * - `fixed 100 ms`: `idlePollMaxMs` = `pollMs` and `watchdogIdleMaxMs` =
 *   `watchdogIntervalMs` (no backoff; one loop still polls for the pool).
 * - `default + 1000 schedules` (TCP and Upstash): the defaults with 1,000
 *   recurring schedules registered (one yearly cron on each of 1,000 agent
 *   ids, none due while it idles). Their due times are members of the ready
 *   queue, so the idle loop's one earliest-due read covers them: the figure
 *   should equal `default`'s.
 * - `before`: with `IDLE_BEFORE_ROOT=<dir>` (a checkout of an earlier tree
 *   with node_modules), that tree's defaults, in the same run.
 *
 * Prints a table and writes bench/results/idle.md.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import process from "node:process";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Redis } from "ioredis";
import { commandStats, diffStats } from "./redis-info.ts";
import { startRedisServer } from "../tests/helpers/redis-server.ts";
import { startUpstashBridge, type UpstashBridge } from "../tests/helpers/upstash-bridge.ts";
import type { Store } from "../store/port.ts";
import { callCounting } from "../tests/helpers/call-counting.ts";
import { Cron } from "croner";

const SECONDS = Number(process.env.IDLE_SECONDS ?? 20);
/** `IDLE_KINDS=tcp` (comma-separated): only these stores; `IDLE_MODES=default`: only these settings. */
const KINDS = (process.env.IDLE_KINDS ?? "memory,tcp,upstash").split(",") as Kind[];
const MODES = process.env.IDLE_MODES?.split(",");
const BEFORE_ROOT = process.env.IDLE_BEFORE_ROOT;

export type Mod = typeof import("../mod.ts") & { redisStore: typeof import("../store/redis.ts").redisStore };

export async function load(root: string): Promise<Mod> {
  const mod = await import(pathToFileURL(`${root}/mod.ts`).href);
  const { redisStore } = await import(pathToFileURL(`${root}/store/redis.ts`).href);
  return { ...mod, redisStore } as Mod;
}
export type Kind = "memory" | "tcp" | "upstash";

export interface Row {
  tree: string;
  mode: string;
  kind: Kind;
  /** Port calls per second, whole run and second half. */
  calls: number;
  callsLate: number;
  /** Server-side commands per second (TCP: all Redis commands; Upstash: billed commands), whole run and second half. */
  server: number | null;
  serverLate: number | null;
  /** Upstash HTTP requests per second over the whole run. */
  requests: number | null;
  byMethod: Record<string, number>;
}


const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Commands that wait on the server (a blocked worker loop) rather than poll it. */
const BLOCKING = new Set(["blpop", "brpop", "blmove", "brpoplpush", "blmpop", "bzpopmin", "bzpopmax", "bzmpop", "xread", "xreadgroup", "wait"]);

export interface IdleMeasure extends Row {
  /** Second half only: store calls per second by method. */
  byMethodLate: Record<string, number>;
  /**
   * Second half, TCP only: script calls per second (each a store call that polls) and blocking commands per
   * second (BLPOP, XREAD …, each a loop that waits on the server).
   */
  scriptsLate: number | null;
  blockingLate: number | null;
}

/**
 * One process with `options` (createGatehouse's, on top of the defaults) and nothing to do: idles
 * `warmupSeconds`, then `seconds` more (the steady state), and counts what it asked of the store.
 * `info`: a client of the Redis that `redisUrl` and the bridge reach (TCP: commandstats).
 */
export async function measureIdle(opts: {
  mod: Mod;
  kind: Kind;
  options?: Record<string, unknown>;
  redisUrl: string;
  info: Redis;
  bridge: UpstashBridge;
  warmupSeconds: number;
  seconds: number;
  prefix: string;
  tree?: string;
  mode?: string;
  /** Recurring schedules registered before the process starts (a yearly cron each: none is due while it idles). */
  schedules?: number;
}): Promise<IdleMeasure> {
  const { mod, kind, redisUrl, info, bridge } = opts;
  const agent = mod.defineAgent({
    name: "idle",
    instructions: "never runs",
    model: mod.scriptedModel(() => ({ toolCalls: [{ name: "submit_result", args: { result: {} } }] })),
  });
  const inner: Store = kind === "memory"
    ? mod.memoryStore()
    : kind === "tcp"
    ? mod.redisStore({ url: redisUrl, prefix: opts.prefix })
    : mod.upstashStore({ url: bridge.url, token: bridge.token, prefix: opts.prefix });
  await registerSchedules(inner, opts.schedules ?? 0);
  const c = callCounting(inner);
  const g = mod.createGatehouse({ agents: [agent], store: c.store, ...opts.options } as Parameters<Mod["createGatehouse"]>[0]);
  bridge.resetStats();
  const s0 = await commandStats(info);
  g.startWorker();
  await sleep(opts.warmupSeconds * 1000);
  const midCalls = c.total();
  const midByMethod = { ...c.calls };
  const midBilled = bridge.stats.commands;
  const sMid = await commandStats(info);
  await sleep(opts.seconds * 1000);
  const endCalls = c.total();
  const endBilled = bridge.stats.commands;
  const requests = bridge.stats.requests;
  const s1 = await commandStats(info);
  await g.stopWorker();
  await inner.close();
  const whole = opts.warmupSeconds + opts.seconds;
  const late = diffStats(sMid, s1);
  const blocking = [...late.calls].filter(([k]) => BLOCKING.has(k)).reduce((a, [, v]) => a + v, 0);
  const byMethodLate: Record<string, number> = {};
  for (const [k, v] of Object.entries(c.calls)) {
    const d = v - (midByMethod[k] ?? 0);
    if (d > 0) byMethodLate[k] = d / opts.seconds;
  }
  return {
    tree: opts.tree ?? "this",
    mode: opts.mode ?? "default",
    kind,
    calls: endCalls / whole,
    callsLate: (endCalls - midCalls) / opts.seconds,
    server: kind === "tcp" ? diffStats(s0, s1).totalCalls / whole : kind === "upstash" ? endBilled / whole : null,
    serverLate: kind === "tcp" ? late.totalCalls / opts.seconds : kind === "upstash" ? (endBilled - midBilled) / opts.seconds : null,
    requests: kind === "upstash" ? requests / whole : null,
    byMethod: { ...c.calls },
    byMethodLate,
    scriptsLate: kind === "tcp" ? late.scriptCalls / opts.seconds : null,
    blockingLate: kind === "tcp" ? blocking / opts.seconds : null,
  };
}

/** `n` schedules of one agent each, ticking once a year (far from the idle window), written before the count starts. */
async function registerSchedules(store: Store, n: number): Promise<void> {
  const now = Date.now();
  const spec: Parameters<Store["putSchedule"]>[0]["spec"] = { input: "tick", cron: "0 0 1 1 *", catchUp: "last", anchor: now };
  const nextTick = new Cron(spec.cron!, { paused: true }).nextRun(new Date(now))!.getTime();
  for (let i = 0; i < n; i += 50) {
    await Promise.all(Array.from({ length: Math.min(50, n - i) }, (_, k) =>
      store.putSchedule({ agentId: `sched-${i + k}`, scheduleId: "yearly", agentName: "idle", workerTarget: "default", spec, nextTick, now })));
  }
}

async function main() {
  const redis = await startRedisServer();
  const bridge = await startUpstashBridge({ redisUrl: redis.url });
  const info = new Redis(redis.url);
  const trees: Array<{ tree: string; mod: Mod; modes: Array<{ mode: string; options: Record<string, unknown>; schedules?: number; kinds?: Kind[] }> }> = [];
  if (BEFORE_ROOT) {
    const mod = await load(BEFORE_ROOT);
    trees.push({ tree: "before", mod, modes: [{ mode: "default", options: {} }] });
  }
  trees.push({
    tree: "this",
    mod: await load(fileURLToPath(new URL("..", import.meta.url))),
    modes: [
      { mode: "default", options: {} },
      { mode: "fixed 100 ms", options: { pollMs: 100, idlePollMaxMs: 100, watchdogIntervalMs: 1_000, watchdogIdleMaxMs: 1_000 } },
      // Due times of schedules share the ready queue and its earliest-due read: 1,000 far-off ones add no call.
      { mode: "default + 1000 schedules", options: {}, schedules: 1_000, kinds: ["tcp", "upstash"] },
    ],
  });
  const rows: Row[] = [];
  let n = 0;
  try {
    for (const { tree, mod, modes } of trees) {
      for (const { mode, options, schedules, kinds } of modes.filter((m) => !MODES || MODES.includes(m.mode))) {
        for (const kind of KINDS.filter((k) => !kinds || kinds.includes(k))) {
          const row = await measureIdle({
            mod, kind, options, redisUrl: redis.url, info, bridge, warmupSeconds: SECONDS / 2, seconds: SECONDS / 2,
            prefix: `idle${++n}:`, tree, mode, schedules,
          });
          rows.push(row);
          console.log(JSON.stringify(row));
        }
      }
    }
  } finally {
    info.disconnect();
    await bridge.close();
    await redis.stop();
  }
  const f = (x: number | null) => (x === null ? "—" : x < 10 ? x.toFixed(2) : x.toFixed(1));
  const lines = [
    "# Idle cost of one process",
    "",
    `\`npm run bench:idle\` (bench/idle.ts), ${new Date().toISOString().slice(0, 10)}, ${os.cpus()[0]?.model.trim() ?? "?"} × ${os.cpus().length}, Node ${process.versions.node}, load ${os.loadavg().map((x) => x.toFixed(2)).join(" ")}; ${SECONDS} s idle per row, one process, default worker loops, watchdog on, no agents (\`+ 1000 schedules\`: 1,000 agent ids with one yearly schedule each, none due while it idles).`,
    "",
    "| tree | settings | store | store calls/s (whole run) | store calls/s (second half) | server commands/s (whole) | server commands/s (second half) | Upstash requests/s | calls by method |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...rows.map((r) =>
      `| ${r.tree} | ${r.mode} | ${r.kind} | ${f(r.calls)} | ${f(r.callsLate)} | ${f(r.server)} | ${f(r.serverLate)} | ${f(r.requests)} | ${Object.entries(r.byMethod).map(([k, v]) => `${k} ${v}`).join(", ")} |`
    ),
    "",
    ...(BEFORE_ROOT ? [`\`before\`: the defaults of the tree at IDLE_BEFORE_ROOT (${BEFORE_ROOT}), run in the same process.`, ""] : []),
    "Server commands: TCP Redis, every command `INFO commandstats` counted (script calls and what they run, INFO itself left out); Upstash, the commands the bridge ran as Upstash bills them.",
    "",
  ];
  const out = lines.join("\n");
  console.log(out);
  const dir = fileURLToPath(new URL("./results/", import.meta.url));
  mkdirSync(dir, { recursive: true });
  writeFileSync(`${dir}${process.env.IDLE_OUT ?? "idle.md"}`, out);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
