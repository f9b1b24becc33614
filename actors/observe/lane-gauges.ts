/**
 * The lane gauges of `/metrics` (`gatehouse_lane_running`, `gatehouse_lane_queued`;
 * store/port.ts invariants `concurrency-keys`, `fair-lanes`), from the store's
 * `concurrencyUsage` of each worker target, read at scrape time.
 *
 * Cardinality is bounded: at most `n` lanes are reported one by one (the
 * busiest by running + queued, the key breaking ties), every other lane is
 * summed into one series with `key="_other"` (present, zeros included, when
 * the store reports any lane beyond `n`). A key present under several
 * worker targets is one lane here (its counts summed). The default lane
 * (tasks without a key) is `key=""`; its running turns are not tracked by the
 * store (0). So a scrape writes at most 2 * (n + 1) lane series, whatever
 * the number of keys.
 */
import type { ConcurrencyUsage } from "../../store/port.ts";
import { OTHER_LANES_KEY } from "../../common/concurrency.ts";

export interface LaneGauge {
  key: string;
  running: number;
  queued: number;
}

/** The series to write: the busiest `n` lanes, then `_other` when any lane was left out. */
export function laneGauges(usages: readonly ConcurrencyUsage[], n: number): LaneGauge[] {
  const byKey = new Map<string, LaneGauge>();
  const other = { key: OTHER_LANES_KEY, running: 0, queued: 0 };
  let others = 0;
  for (const u of usages) {
    for (const l of u.lanes) {
      const g = byKey.get(l.key) ?? { key: l.key, running: 0, queued: 0 };
      g.running += l.running;
      g.queued += l.queued;
      byKey.set(l.key, g);
    }
    others += u.others.lanes;
    other.running += u.others.running;
    other.queued += u.others.queued;
  }
  const sorted = [...byKey.values()].sort((a, b) => b.running + b.queued - (a.running + a.queued) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  for (const g of sorted.slice(n)) {
    others++;
    other.running += g.running;
    other.queued += g.queued;
  }
  return others > 0 ? [...sorted.slice(0, n), other] : sorted.slice(0, n);
}
