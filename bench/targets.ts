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
  restateSteps: Record<1 | 10 | 100, Spread | string>;
  restateLatencyP50: number | string;
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
    ...([1, 10, 100] as const).map((agents) => {
      const r = m.restateSteps[agents];
      return {
        figure: `steps/s ÷ Restate's, both fsync per step, instant model, ${agents} agent${agents === 1 ? "" : "s"}`,
        before: "not measured",
        target: "≥ 2.0",
        measured: typeof r === "string" ? `not measured: ${r}` : spread(r, 2),
        met: typeof r !== "string" && r.median >= 2.0,
      };
    }),
    {
      figure: "task-to-done p50 at 1 agent ÷ Restate's, both fsync per step",
      before: "not measured",
      target: "≤ 0.4",
      measured: typeof m.restateLatencyP50 === "string" ? `not measured: ${m.restateLatencyP50}` : n(m.restateLatencyP50, 2),
      met: typeof m.restateLatencyP50 !== "string" && m.restateLatencyP50 <= 0.4,
    },
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
