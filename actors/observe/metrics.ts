/**
 * Process metrics in the Prometheus text exposition format 0.0.4, served by
 * `GET /metrics` (routes/metrics.ts). Each gatehouse owns one `Metrics`; the
 * counters and the histogram count what this process did since it started
 * (scrape every process and sum in queries), the ready-queue gauge is read
 * from the store at scrape time. docs/operations.md lists every metric.
 *
 * Where the numbers come from: `meteredStore` wraps the store the workers,
 * the watchdog and the routes write through, so each counter follows the
 * store's answer (a task counts once it is `enqueued`, a turn once the commit
 * that ends it is applied, a refusal once the store refused); the host
 * observes step latency around the model call. Web APIs only.
 */
import type { CommitRequest, Store } from "../../store/port.ts";
import type { LaneGauge } from "./lane-gauges.ts";

/** Upper bounds of the step latency buckets (seconds). */
export const STEP_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60] as const;

export interface Metrics {
  taskEnqueued(): void;
  turnEnded(status: string): void;
  stepCommitted(): void;
  commitRefused(reason: string): void;
  /** A commit that ended a turn also claimed the agent's next task (turn chaining). */
  turnChained(): void;
  watchdogTimeout(): void;
  /** A schedule tick's task was enqueued by this process (actors/pool/schedule-fire.ts). */
  scheduleTickFired(): void;
  /** A schedule step of this process skipped `count` ticks (`schedule_skipped`). */
  scheduleTicksSkipped(count: number): void;
  /** A schedule's tick was coalesced into its waiting task (store invariant `schedule-bounds`). */
  scheduleTickCoalesced(): void;
  /** One model step took `seconds`. */
  stepDuration(seconds: number): void;
  /**
   * The exposition text; `ready` maps each worker target to its due agents, `lanes` are the lane
   * gauges (actors/observe/lane-gauges.ts; absent: not written).
   */
  render(ready: ReadonlyMap<string, number>, lanes?: readonly LaneGauge[]): string;
}

/** The media type of the exposition format. */
export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

function escapeLabel(v: string): string {
  // \x22 is the double quote (a quote inside a regex literal would read as a string to tests/deno/core-web-apis.test.ts).
  return v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/\x22/g, '\\"');
}

function num(n: number): string {
  if (n === Infinity) return "+Inf";
  return Number.isFinite(n) ? String(n) : "NaN";
}

export function createMetrics(): Metrics {
  let enqueued = 0;
  let steps = 0;
  let timeouts = 0;
  let chained = 0;
  let ticksFired = 0;
  let ticksSkipped = 0;
  let coalesced = 0;
  const turns = new Map<string, number>([["done", 0], ["failed", 0]]);
  const refused = new Map<string, number>();
  const buckets = STEP_BUCKETS.map(() => 0);
  let stepSum = 0;
  let stepCount = 0;
  const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);

  return {
    taskEnqueued: () => void enqueued++,
    turnEnded: (status) => void bump(turns, status),
    stepCommitted: () => void steps++,
    commitRefused: (reason) => void bump(refused, reason),
    turnChained: () => void chained++,
    watchdogTimeout: () => void timeouts++,
    scheduleTickFired: () => void ticksFired++,
    scheduleTicksSkipped: (count) => void (ticksSkipped += count),
    scheduleTickCoalesced: () => void coalesced++,
    stepDuration(seconds) {
      if (!Number.isFinite(seconds) || seconds < 0) return;
      stepSum += seconds;
      stepCount++;
      STEP_BUCKETS.forEach((le, i) => {
        if (seconds <= le) buckets[i]++;
      });
    },
    render(ready, lanes) {
      const out: string[] = [];
      const head = (name: string, type: string, help: string) => out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
      const labelled = (name: string, label: string, m: ReadonlyMap<string, number>) => {
        for (const [k, v] of m) out.push(`${name}{${label}="${escapeLabel(k)}"} ${num(v)}`);
      };
      head("gatehouse_tasks_enqueued_total", "counter", "Tasks accepted by this process.");
      out.push(`gatehouse_tasks_enqueued_total ${enqueued}`);
      head("gatehouse_turns_ended_total", "counter", "Turns that ended in a commit of this process, by final state.");
      labelled("gatehouse_turns_ended_total", "status", turns);
      head("gatehouse_steps_total", "counter", "Model steps committed by this process.");
      out.push(`gatehouse_steps_total ${steps}`);
      head("gatehouse_turns_chained_total", "counter", "Turns started by the commit that ended the previous turn (no claim in between).");
      out.push(`gatehouse_turns_chained_total ${chained}`);
      head("gatehouse_commits_refused_total", "counter", "Commits of this process refused by the store, by reason.");
      labelled("gatehouse_commits_refused_total", "reason", refused);
      head("gatehouse_watchdog_timeouts_total", "counter", "Tool calls timed out by this process's watchdog.");
      out.push(`gatehouse_watchdog_timeouts_total ${timeouts}`);
      head("gatehouse_schedule_ticks_fired_total", "counter", "Schedule ticks whose task this process enqueued.");
      out.push(`gatehouse_schedule_ticks_fired_total ${ticksFired}`);
      head("gatehouse_schedule_ticks_skipped_total", "counter", "Schedule ticks this process skipped (catchUp, ticks no process was up to fire; logged as schedule_skipped).");
      out.push(`gatehouse_schedule_ticks_skipped_total ${ticksSkipped}`);
      head("gatehouse_schedule_ticks_coalesced_total", "counter", "Schedule ticks this process folded into the schedule's task still waiting in the queue.");
      out.push(`gatehouse_schedule_ticks_coalesced_total ${coalesced}`);
      head("gatehouse_ready_agents", "gauge", "Agents due now in the ready queue of each worker target.");
      labelled("gatehouse_ready_agents", "target", ready);
      if (lanes) {
        head("gatehouse_lane_running", "gauge", "Turns running now per concurrency key (the busiest lanes; the rest summed under key=\"_other\"; key=\"\" the default lane, not tracked).");
        labelled("gatehouse_lane_running", "key", new Map(lanes.map((l) => [l.key, l.running])));
        head("gatehouse_lane_queued", "gauge", "Agents with due work no worker holds per concurrency key (the busiest lanes; the rest summed under key=\"_other\").");
        labelled("gatehouse_lane_queued", "key", new Map(lanes.map((l) => [l.key, l.queued])));
      }
      head("gatehouse_step_duration_seconds", "histogram", "Duration of one model step (all attempts of the model call).");
      STEP_BUCKETS.forEach((le, i) => out.push(`gatehouse_step_duration_seconds_bucket{le="${le}"} ${buckets[i]}`));
      out.push(`gatehouse_step_duration_seconds_bucket{le="+Inf"} ${stepCount}`);
      out.push(`gatehouse_step_duration_seconds_sum ${num(stepSum)}`);
      out.push(`gatehouse_step_duration_seconds_count ${stepCount}`);
      return out.join("\n") + "\n";
    },
  };
}

/** Counts what a commit carries: turn ends (`task` events) and completed steps. */
function countCommit(metrics: Metrics, req: CommitRequest): void {
  for (const e of req.events) {
    const d = e.data as Record<string, unknown> | undefined;
    if (e.type === "task" && typeof d?.status === "string") metrics.turnEnded(d.status);
    else if (e.type === "step" && d?.phase === "completed") metrics.stepCommitted();
  }
}

/**
 * The store with every write counted by its answer. The wrapper inherits
 * everything else from `store` (its prototype), so adapter extras such as
 * `checkEviction` stay reachable.
 */
export function meteredStore<S extends Store>(store: S, metrics: Metrics): S {
  const m = Object.create(store) as S;
  m.enqueueTask = async (req) => {
    const r = await store.enqueueTask(req);
    if (r.status === "enqueued") metrics.taskEnqueued();
    return r;
  };
  const both = store.enqueueAndClaim?.bind(store);
  if (both) {
    m.enqueueAndClaim = async (task, claim) => {
      const r = await both(task, claim);
      if (r.enqueued.ok && r.enqueued.value.status === "enqueued") metrics.taskEnqueued();
      return r;
    };
  }
  m.commit = async (req) => {
    const r = await store.commit(req);
    if (r.status === "applied") {
      countCommit(metrics, req);
      if (r.chained) metrics.turnChained();
    } else metrics.commitRefused(r.reason);
    return r;
  };
  m.fireScheduleTick = async (req) => {
    const r = await store.fireScheduleTick(req);
    if (r.status === "coalesced") metrics.scheduleTickCoalesced();
    return r;
  };
  m.deliverToolResult = async (req) => {
    const r = await store.deliverToolResult(req);
    if (req.source === "watchdog" && r.status === "accepted") metrics.watchdogTimeout();
    return r;
  };
  return m;
}
