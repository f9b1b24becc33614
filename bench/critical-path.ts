/**
 * The critical path of one lone task at one agent: every store call from the POST of a task to the reply
 * of the commit that ends its turn, in order, with when it started and ended (ms after the POST's start)
 * and which ones overlapped (`npx tsx bench/critical-path.ts`; BENCH_FSYNC=everysec for the other policy).
 *
 * A private redis-server with the AOF on and `appendfsync always`, one gatehouse with default settings
 * served over real HTTP (bench/latency.ts's setup, one client), the benchmark agent (bench/agent.ts). The
 * first turns warm up; the table is the median start/end of each call across the measured turns, which
 * all make the same calls in the same order (checked: a turn whose sequence differs is reported).
 * BENCH_STRACE=1 also counts the fsyncs (fdatasync and fsync calls) of redis-server over the measured
 * turns with `strace -f -c -p <pid>` (needs strace and the right to trace), per turn.
 */
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import process from "node:process";
import { type ChildProcess, spawn } from "node:child_process";
import { Redis } from "ioredis";
import { serve } from "@hono/node-server";
import { createGatehouse } from "../mod.ts";
import { redisStore } from "../redis.ts";
import type { CommitRequest, Store } from "../store/port.ts";
import { startRedisServer } from "../tests/helpers/redis-server.ts";
import { benchAgent } from "./agent.ts";

const TURNS = Number(process.env.BENCH_TURNS ?? 60);
const WARMUP = 5;
const fsync = (process.env.BENCH_FSYNC ?? "always") as "always" | "everysec";

interface Call {
  name: string;
  t0: number;
  t1: number;
}

const now = () => performance.now();
let trace: Call[] = [];
let onEnd: (() => void) | null = null;

function tracing(inner: Store): Store {
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (typeof v !== "function" || prop === "close" || prop === "watchBells") return typeof v === "function" ? v.bind(target) : v;
      const name = String(prop);
      return async (...args: unknown[]) => {
        const call: Call = { name, t0: now(), t1: 0 };
        let res: unknown;
        try {
          res = await (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        } finally {
          call.t1 = now();
          const status = res && typeof res === "object" && "status" in res ? String((res as { status: unknown }).status) : "";
          if (name === "commit") {
            const req = args[0] as CommitRequest;
            const events = req.events.map((e) => (e as { type: string }).type).join(",");
            call.name = `commit[${events}]${req.release ? "+release" : ""}${(res as { chained?: unknown })?.chained ? "+chained" : ""}`;
            trace.push(call);
            if (req.turnId !== null && req.activeTurnId === null) onEnd?.();
          } else {
            call.name = `${name}${status ? ":" + status : ""}`;
            trace.push(call);
          }
        }
        return res;
      };
    },
  });
}

const redis = await startRedisServer({ appendonly: true, appendfsync: fsync });
const store = tracing(redisStore({ url: redis.url, prefix: "cp" }));
const { agent } = benchAgent();
const gh = createGatehouse({ agents: [agent], store });
// The moment the request reaches the app (the HTTP server's and client's parsing before it are not the app's).
let reached = 0;
const server = serve({ fetch: (req: Request) => ((reached = now()), gh.fetch(req)), port: 0, hostname: "127.0.0.1" });
await new Promise<void>((r) => server.once("listening", () => r()));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
gh.startWorker();

/** BENCH_STRACE=1: strace on redis-server, counting its fsyncs over the measured turns. */
async function traceFsyncs(): Promise<{ stop(): Promise<number> }> {
  const admin = new Redis(redis.url);
  const pid = /process_id:(\d+)/.exec(await admin.info("server"))![1];
  admin.disconnect();
  const st: ChildProcess = spawn("strace", ["-f", "-c", "-e", "trace=fdatasync,fsync", "-p", pid], { stdio: ["ignore", "ignore", "pipe"] });
  let out = "";
  st.stderr!.on("data", (d) => (out += String(d)));
  await new Promise((r) => setTimeout(r, 300));
  return {
    async stop() {
      const exited = new Promise((r) => st.once("exit", r));
      st.kill("SIGINT");
      await exited;
      // `strace -c` rows: % time, seconds, usecs/call, calls, [errors,] syscall.
      const count = (name: string) => Number(out.split("\n").map((l) => l.trim().split(/\s+/)).find((f) => f.at(-1) === name)?.[3] ?? 0);
      return count("fdatasync") + count("fsync");
    },
  };
}
let strace: { stop(): Promise<number> } | undefined;

const turns: Array<{ total: number; calls: Call[] }> = [];
for (let k = 0; k < TURNS + WARMUP; k++) {
  if (k === WARMUP && process.env.BENCH_STRACE === "1") strace = await traceFsyncs();
  trace = [];
  const ended = new Promise<void>((r) => (onEnd = r));
  const t0 = now();
  const res = await fetch(`${base}/v1/agents/cp-1/tasks`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ agent: "bench", input: `task ${k}` }),
  });
  const tPost = now();
  await res.json();
  await ended;
  const tEnd = now();
  // Let trailing calls (after the turn's end) land in this turn's trace too.
  await new Promise((r) => setTimeout(r, 20));
  if (k >= WARMUP) {
    const calls = trace.map((c) => ({ name: c.name, t0: c.t0 - t0, t1: c.t1 - t0 }));
    calls.unshift({ name: "(POST answered 202)", t0: 0, t1: tPost - t0 }, { name: "(request reached the app)", t0: reached - t0, t1: reached - t0 });
    turns.push({ total: tEnd - t0, calls });
  }
}
const fsyncs = await strace?.stop();
await gh.stopWorker();
await new Promise<void>((r) => server.close(() => r()));
await store.close();
await redis.stop();

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const key = (t: { calls: Call[] }) => t.calls.map((c) => c.name).join(" | ");
const groups = new Map<string, typeof turns>();
for (const t of turns) groups.set(key(t), [...(groups.get(key(t)) ?? []), t]);
const [, main] = [...groups.entries()].sort((a, b) => b[1].length - a[1].length)[0];
console.log(`appendfsync ${fsync}: ${turns.length} turns, task to done p50 ${median(turns.map((t) => t.total)).toFixed(2)} ms; ${main.length} share the sequence below (${groups.size} sequences)`);
if (fsyncs !== undefined) console.log(`redis-server fsyncs over the ${turns.length} measured turns: ${fsyncs} (${(fsyncs / turns.length).toFixed(2)} per turn)`);
console.log("| # | call | start ms | end ms | took ms |");
console.log("| ---: | --- | ---: | ---: | ---: |");
main[0].calls.forEach((c, i) => {
  const s = median(main.map((t) => t.calls[i].t0));
  const e = median(main.map((t) => t.calls[i].t1));
  const d = median(main.map((t) => t.calls[i].t1 - t.calls[i].t0));
  console.log(`| ${i} | ${c.name} | ${s.toFixed(2)} | ${e.toFixed(2)} | ${d.toFixed(2)} |`);
});
for (const [k, ts] of groups) if (ts !== main) console.log(`other sequence (${ts.length}): ${k}`);
