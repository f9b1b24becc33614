/**
 * A worker process for tests/schedules/schedules-processes.int.test.ts: `createGatehouse`
 * + `startWorker()` on a Redis store with one agent definition (`reporter`,
 * answers "ok"), until it is killed. Configuration: the JSON in
 * GH_SCHEDULE_WORKER (`ScheduleWorkerConfig`).
 *
 * `crash` makes the process SIGKILL itself at its `crashAt`-th call of
 * `fireScheduleTick` (the tick is planned, the step not yet answered):
 * `before` the call is sent, `inside` right after it is sent (it may or may
 * not reach Redis), `after` Redis answered it. Each fire's answer is printed
 * as a line `{ "fire": status, "tick": ms }` before it is returned.
 *
 * Contract with the parent (tests/helpers/processes.ts `spawnScript`): one
 * JSON object per stdout line, `{ "ready": true }` once the loops run.
 */
import process from "node:process";
import { createGatehouse, defineAgent, scriptedModel } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import type { Store } from "../../store/port.ts";

export interface ScheduleWorkerConfig {
  name: string;
  url: string;
  prefix: string;
  crash?: "before" | "inside" | "after";
  crashAt?: number;
}

function withCrash(store: Store, cfg: ScheduleWorkerConfig): Store {
  let calls = 0;
  const kill = () => process.kill(process.pid, "SIGKILL");
  const fire: Store["fireScheduleTick"] = async (req) => {
    calls++;
    const crashing = cfg.crash !== undefined && calls === (cfg.crashAt ?? 1);
    if (crashing && cfg.crash === "before") kill();
    const pending = store.fireScheduleTick(req);
    if (crashing && cfg.crash === "inside") setImmediate(kill);
    const r = await pending;
    if (crashing && cfg.crash === "after") kill();
    process.stdout.write(JSON.stringify({ fire: r.status, tick: req.fireTick, worker: cfg.name }) + "\n");
    return r;
  };
  return new Proxy(store, { get: (t, p) => (p === "fireScheduleTick" ? fire : Reflect.get(t, p)) });
}

async function main() {
  const raw = process.env.GH_SCHEDULE_WORKER;
  if (!raw) throw new Error("GH_SCHEDULE_WORKER (JSON ScheduleWorkerConfig) is not set");
  const cfg = JSON.parse(raw) as ScheduleWorkerConfig;
  const store = withCrash(redisStore({ url: cfg.url, prefix: cfg.prefix }), cfg);
  const gh = createGatehouse({
    agents: [defineAgent({ name: "reporter", instructions: "", model: scriptedModel(() => ({ text: "ok" })) })],
    store,
    leaseMs: 2_000,
    concurrency: 2,
    pollMs: 20,
  });
  process.on("SIGTERM", () => void gh.close().finally(() => process.exit(0)));
  gh.startWorker();
  process.stdout.write(JSON.stringify({ ready: true, worker: cfg.name, pid: process.pid }) + "\n");
}

main().catch((err) => {
  process.stderr.write(`schedule-worker failed: ${(err as Error)?.stack ?? err}\n`);
  process.exit(1);
});
