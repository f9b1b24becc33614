/**
 * The client of bench/user-path.ts: what a user's code does to run agent turns, the same on gatehouse and
 * on Restate, timed from its own side.
 *
 * - Throughput (`drive`): `concurrency` lanes; each takes the next agent, sends its turns one after the
 *   other and waits for the last one's answer, then takes the next agent. gatehouse: `POST
 *   /v1/agents/<id>/tasks` for each turn (202), the last with `Prefer: wait=60` (200 with the turn's end:
 *   gatehouse runs an agent's turns in order, so the last turn's end is the agent's). Restate: `POST
 *   /BenchAgent/<id>/turn/send` for each turn, the last a request-response call `/BenchAgent/<id>/turn`
 *   (Restate queues an object's calls in order). Every task is sent inside the measured window.
 * - Task to done (`closedLoop`): one turn at a time, a new agent every five turns; gatehouse `POST .../tasks`
 *   with `Prefer: wait=60`, Restate the request-response call; from the request's start to its answer.
 *
 * It runs in the bench process (gatehouse's app called with in-process `fetch`, so the client's CPU is
 * gatehouse's process's) or in a child process of its own (over a real socket; bench/user-path.ts forks
 * this file and reads the child's CPU per run). Child protocol (IPC): `{ type: "drive" | "closedLoop",
 * ...DriveOptions }` answered `{ type: "result", seconds, latencies, cpuUs }`.
 */
import { performance } from "node:perf_hooks";
import process from "node:process";
import { pathToFileURL } from "node:url";

export type System = "gatehouse" | "restate";
export type Send = (url: string, init: RequestInit) => Promise<Response>;

export interface DriveOptions {
  system: System;
  /** gatehouse: the app's base URL (any host for in-process fetch); Restate: the ingress. */
  base: string;
  /** Agent ids, run in this order. */
  keys: string[];
  turnsPerAgent: number;
  concurrency: number;
  /** Model steps per turn (Restate's endpoint reads it from the call; gatehouse's agent is defined with it). */
  steps: number;
  modelDelayMs: number;
}

const JSON_HEADERS = { "content-type": "application/json" };

async function answer(res: Response, what: string, status: number): Promise<Record<string, unknown>> {
  const text = await res.text();
  if (res.status !== status) throw new Error(`${what}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/** One turn sent; `wait`: answered when the turn (and so every turn of the agent sent before it) has ended. */
async function sendTurn(send: Send, o: DriveOptions, key: string, input: string, wait: boolean): Promise<void> {
  if (o.system === "gatehouse") {
    const res = await send(`${o.base}/v1/agents/${key}/tasks`, {
      method: "POST",
      headers: wait ? { ...JSON_HEADERS, prefer: "wait=60" } : JSON_HEADERS,
      body: JSON.stringify({ agent: "bench", input }),
    });
    const body = await answer(res, `POST ${key}/tasks`, wait ? 200 : 202);
    if (wait && body.status !== "done") throw new Error(`agent ${key}: turn ended ${JSON.stringify(body).slice(0, 300)}`);
    return;
  }
  const res = await send(`${o.base}/BenchAgent/${key}/turn${wait ? "" : "/send"}`, {
    method: "POST",
    headers: JSON_HEADERS,
    body: JSON.stringify({ input, modelDelayMs: o.modelDelayMs, steps: o.steps }),
  });
  const body = await answer(res, `Restate ${key}/turn`, wait ? 200 : 202);
  if (wait && body.result !== "ok") throw new Error(`agent ${key}: turn answered ${JSON.stringify(body).slice(0, 300)}`);
}

/** Throughput: `concurrency` lanes over the agents; resolves with the seconds from the first send to the last answer. */
export async function drive(send: Send, o: DriveOptions): Promise<number> {
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < o.keys.length; i = next++) {
      for (let t = 0; t < o.turnsPerAgent; t++) {
        await sendTurn(send, o, o.keys[i], `task ${t} of agent ${i}`, t === o.turnsPerAgent - 1);
      }
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: Math.min(o.concurrency, o.keys.length) }, lane));
  return (performance.now() - t0) / 1000;
}

/** Task to done, one turn at a time: the milliseconds of each turn, agent after agent (`turnsPerAgent` each). */
export async function closedLoop(send: Send, o: DriveOptions): Promise<number[]> {
  const ms: number[] = [];
  for (const key of o.keys) {
    for (let t = 0; t < o.turnsPerAgent; t++) {
      const t0 = performance.now();
      await sendTurn(send, o, key, `task ${t}`, true);
      ms.push(performance.now() - t0);
    }
  }
  return ms;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href && process.send) {
  const send: Send = (url, init) => fetch(url, init);
  process.on("message", async (m: DriveOptions & { type: "drive" | "closedLoop" }) => {
    try {
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const latencies = m.type === "drive" ? [] : await closedLoop(send, m);
      const seconds = m.type === "drive" ? await drive(send, m) : (performance.now() - t0) / 1000;
      const cpu = process.cpuUsage(cpu0);
      process.send!({ type: "result", seconds, latencies, cpuUs: cpu.user + cpu.system });
    } catch (err) {
      process.send!({ type: "error", error: String((err as Error)?.stack ?? err) });
    }
  });
  process.on("disconnect", () => process.exit(0));
  process.send({ type: "ready" });
}
