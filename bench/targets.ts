/**
 * The benchmark's targets: each row names a figure, the value it had before
 * the work on a lean and flat runtime began ("before", as first measured), the
 * target, the value measured in this run and whether the target is met. The
 * verdict is computed here from the measured values, never written by hand;
 * bench/run.ts measures the inputs and prints the table first.
 */

/** A figure measured over repetitions: the verdict is taken on the median; the range is shown. */
export interface Spread {
  median: number;
  min: number;
  max: number;
}

/** The measured values the targets are decided on (bench/run.ts fills them from one run). */
export interface TargetInputs {
  /** Store round trips per step, TCP adapter, 100 agents, work only (no polls of idle loops). */
  workRoundTripsTcp100: number;
  /** Billed Upstash commands per step at 100 agents (everything the bridge ran). */
  billedUpstash100: number;
  /** Worker CPU per step, TCP adapter, 100 agents (µs). */
  workerCpuUs100: Spread;
  /** Bytes to Redis per step, TCP adapter, 100 agents. */
  bytesToRedis100: number;
  /** Worker CPU per step at 1,400 messages ÷ at 7 messages. */
  historyRatio: number;
  /** Idle, default settings, steady state: store calls per second on Upstash and on TCP Redis. */
  idleUpstashCalls: number;
  idleTcpCalls: number;
  /** Idle on TCP, steady state: store calls per second of the worker loops that do not block (polls). */
  idleTcpLoopPolls: number;
  /** Idle on TCP, steady state: blocking commands per second (BLPOP, XREAD …). */
  idleTcpBlocking: number;
  /** The same three idle figures with 1,000 recurring schedules registered (none due while it idles). */
  idleSchedulesUpstashCalls: number;
  idleSchedulesTcpCalls: number;
  idleSchedulesTcpLoopPolls: number;
  /** Gatehouse TCP steps/s ÷ BullMQ jobs/s at 100 agents: persisting job, trivial job. */
  ratioPersisting100: Spread;
  ratioTrivial100: Spread;
  /**
   * Against Restate, both persisting every step (bench/restate.ts; gatehouse with the AOF and
   * `appendfsync always`), instant model: steps/s ÷ Restate's at 1, 10 and 100 agents, and task-to-done
   * p50 at one agent ÷ Restate's. A string says why a figure was not measured.
   */
  /**
   * The user's path against Restate (bench/user-path.ts pathTargetInputs): 5/4 turns POSTed over a socket inside the
   * window, `appendfsync always`: steps/s ratios (`ratio5x1`, `ratio5x10`, `ratio5x100`, `ratio5x100slow` with the
   * 50 ms model), task-to-done p50 ratio (`latency5`), store calls per step at 100 agents (`roundTrips5x100`), and
   * worker CPU per step of the queued 3/2 row at 100 agents (`queuedCpu3x100`), steps/s ÷ the model-bound limit
   * (`modelBound5`); `reason` or a string: not measured.
   */
  path: Record<string, Spread | number | string>;
}

export interface TargetRow {
  figure: string;
  before: string;
  target: string;
  measured: string;
  met: boolean;
}

const n = (x: number, d: number) => x.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });
/** The median, with the range when the repetitions differ. */
const spread = (s: Spread, d: number, unit = "") =>
  `${n(s.median, d)}${unit}` + (s.min !== s.max ? ` (${n(s.min, d)}–${n(s.max, d)}${unit})` : "");

/** The rows, in the order of the targets, each decided on the values measured. */
export function evaluateTargets(m: TargetInputs): TargetRow[] {
  return [
    {
      figure: "round trips per step, TCP, 100 agents, work only",
      before: "2.00",
      target: "≤ 1.05",
      measured: n(m.workRoundTripsTcp100, 2),
      met: m.workRoundTripsTcp100 <= 1.05,
    },
    {
      figure: "Upstash billed commands per step",
      before: "2.00",
      target: "≤ 1.05",
      measured: `${n(m.billedUpstash100, 2)} (100 agents)`,
      met: m.billedUpstash100 <= 1.05,
    },
    {
      figure: "worker CPU per step at 100 agents",
      before: "~160 µs",
      target: "≤ 80 µs",
      measured: spread(m.workerCpuUs100, 0, " µs"),
      met: m.workerCpuUs100.median <= 80,
    },
    {
      figure: "bytes to Redis per step",
      before: "3,900",
      target: "≤ 2,000",
      measured: `${n(m.bytesToRedis100, 0)} (TCP, 100 agents)`,
      met: m.bytesToRedis100 <= 2000,
    },
    {
      figure: "worker CPU per step at 1,400 messages ÷ at 7 messages",
      before: "~4-5x",
      target: "≤ 1.2x",
      measured: `${n(m.historyRatio, 2)}x`,
      met: m.historyRatio <= 1.2,
    },
    {
      figure: "idle store calls per second, one process, default settings",
      before: "~80",
      target: "≤ 1 (Upstash), 0 polling on TCP",
      measured: `Upstash ${n(m.idleUpstashCalls, 2)}; TCP ${n(m.idleTcpCalls, 2)}, of which worker-loop polls ${n(m.idleTcpLoopPolls, 2)}` +
        (m.idleTcpBlocking > 0 ? `, blocking waits ${n(m.idleTcpBlocking, 2)}` : ""),
      // "0 polling": no worker-loop call that does not block, in the steady state (the watchdog's passes are not polls of the loops).
      met: m.idleUpstashCalls <= 1 && m.idleTcpLoopPolls === 0,
    },
    {
      figure: "idle store calls per second, one process, 1,000 schedules registered",
      before: "not measured",
      target: "≤ 1 (Upstash), 0 polling on TCP",
      measured: `Upstash ${n(m.idleSchedulesUpstashCalls, 2)}; TCP ${n(m.idleSchedulesTcpCalls, 2)}, of which worker-loop polls ${n(m.idleSchedulesTcpLoopPolls, 2)}`,
      met: m.idleSchedulesUpstashCalls <= 1 && m.idleSchedulesTcpLoopPolls === 0,
    },
    {
      figure: "steps/s ÷ jobs/s of the same-size persisting BullMQ job, 100 agents",
      before: "not measured",
      target: "≥ 1.5",
      measured: spread(m.ratioPersisting100, 2),
      met: m.ratioPersisting100.median >= 1.5,
    },
    {
      figure: "steps/s ÷ trivial BullMQ jobs/s, 100 agents",
      before: "0.2-0.5",
      target: "reported, ≥ 0.7",
      measured: spread(m.ratioTrivial100, 2),
      met: m.ratioTrivial100.median >= 0.7,
    },
    ...pathRows(m.path),
  ];
}

/** The user's-path rows (bench/user-path.ts): each decided on the median, "not measured" with the reason. */
function pathRows(p: TargetInputs["path"]): TargetRow[] {
  const row = (figure: string, before: string, target: string, key: string, d: number, ok: (x: number) => boolean): TargetRow => {
    const v = p[key] ?? p.reason ?? "not run";
    if (typeof v === "string") return { figure, before, target, measured: `not measured: ${v}`, met: false };
    const x = typeof v === "number" ? v : v.median;
    return { figure, before, target, measured: typeof v === "number" ? n(v, d) : spread(v, d), met: ok(x) };
  };
  return [
    ...([1, 10, 100] as const).map((a) =>
      row(`steps/s ÷ Restate's, user's path (5/4 turn POSTed over a socket in the window, both fsync per step), instant model, ${a} agent${a === 1 ? "" : "s"}`,
        { 1: "1.44", 10: "1.85", 100: "1.49" }[a], "≥ 2.0", `ratio5x${a}`, 2, (x) => x >= 2.0)
    ),
    row("steps/s ÷ Restate's, user's path, 50 ms model, 100 agents", "1.05", "≥ 1.6", "ratio5x100slow", 2, (x) => x >= 1.6),
    row("task-to-done p50 at 1 agent ÷ Restate's, user's path (5/4, socket)", "0.71", "≤ 0.5", "latency5", 2, (x) => x <= 0.5),
    row("store round trips per step, user's path (5/4, socket), 100 agents", "1.40 (queued 3/2)", "≤ 1.1", "roundTrips5x100", 2, (x) => x <= 1.1),
    row("worker CPU per step at 100 agents, 3/2 queued, fsync always (µs)", "188", "≤ 120", "queuedCpu3x100", 0, (x) => x <= 120),
    row("steps/s ÷ the model-bound limit, 50 ms model, 100 agents (5/4, socket)", "not measured", "≥ 0.8", "modelBound5", 2, (x) => x >= 0.8),
  ];
}

/** The markdown table: figure | now | target | measured | met? */
export function targetsTable(rows: TargetRow[]): string[] {
  return [
    "| figure | now | target | measured | met? |",
    "| --- | --- | --- | --- | --- |",
    ...rows.map((r) => `| ${r.figure} | ${r.before} | ${r.target} | ${r.measured} | ${r.met ? "yes" : "no"} |`),
  ];
}
