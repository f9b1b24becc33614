/**
 * Lanes, running sets and limits of the memory store (store/port.ts
 * invariants `concurrency-keys`, `fair-lanes`, `priorities`). Mirrors
 * store/lua/includes/lanes.lua and the lane part of includes/keys.lua: the
 * memory store derives an agent's lane from its records (the active turn's
 * task, else the first queued task) where the scripts keep it in the head
 * field `_ck`; every bell stays in the one ready map of its target, a lane's
 * place being max(not-before, its earliest bell) as the scripts' lanes zset
 * scores it. Every write goes through the journal.
 */
import type { ConcurrencyLimits } from "../port.ts";
import { limitOf, type LaneRow } from "../lanes.ts";
import { type AgentRecords, laneOf } from "./records.ts";

export { laneOf };
import type { MemoryState } from "./state.ts";


const nbKey = (target: string, lane: string) => `${target}\n${lane}`;

/** When key `key` is at its limit at `now`: the earliest lease end under it; else null. Prunes the leases that ran out. */
export function laneFull(s: MemoryState, key: string, limits: ConcurrencyLimits | undefined, now: number): number | null {
  const n = limitOf(limits, key);
  if (n === undefined) return null;
  const run = s.running.get(key);
  if (!run) return null;
  for (const [id, until] of [...run]) if (until <= now) s.w.mapDelete(run, id);
  if (run.size < n) return null;
  return Math.min(...run.values());
}

/** Parks lane `lane` of `target` until `until` (invariant `concurrency-keys`). */
export function parkLane(s: MemoryState, target: string, lane: string, until: number) {
  s.w.mapSet(s.laneNb, nbKey(target, lane), until);
}

/** Marks a lane served at `now` (invariant `fair-lanes`). */
export function serveLane(s: MemoryState, target: string, lane: string, now: number) {
  s.w.mapSet(s.laneNb, nbKey(target, lane), now);
}

/** A lane's not-before (last served, or parked until); absent: never. */
export function laneNotBefore(s: MemoryState, target: string, lane: string): number {
  return s.laneNb.get(nbKey(target, lane)) ?? -Infinity;
}

/** Records a lease taken under `lane` ("" : not counted). */
export function runUnder(s: MemoryState, a: AgentRecords, lane: string, until: number) {
  const id = a.head.agentId;
  const old = s.runKeys.get(id);
  if (old !== undefined && old !== lane) {
    const set = s.running.get(old);
    if (set) s.w.mapDelete(set, id);
  }
  if (lane === "") {
    s.w.mapDelete(s.runKeys, id);
    return;
  }
  let set = s.running.get(lane);
  if (!set) s.w.mapSet(s.running, lane, (set = new Map()));
  s.w.mapSet(set, id, until);
  s.w.mapSet(s.runKeys, id, lane);
}

/** Releases the agent's slot; its key's lane of the agent's target, parked, rings now. */
export function releaseRun(s: MemoryState, a: AgentRecords, now: number) {
  const id = a.head.agentId;
  const key = s.runKeys.get(id);
  if (key === undefined) return;
  const set = s.running.get(key);
  if (set) s.w.mapDelete(set, id);
  s.w.mapDelete(s.runKeys, id);
  const k = nbKey(a.head.workerTarget, key);
  const nb = s.laneNb.get(k);
  if (nb !== undefined && nb > now) s.w.mapSet(s.laneNb, k, now);
}

/** A renewed lease keeps its slot until its new end. */
export function renewRun(s: MemoryState, a: AgentRecords, until: number) {
  const key = s.runKeys.get(a.head.agentId);
  const set = key === undefined ? undefined : s.running.get(key);
  if (set?.has(a.head.agentId)) s.w.mapSet(set, a.head.agentId, until);
}

/** The due lanes of a target's bells, least recently served first (keyed lanes before the default lane at an equal place). */
export function dueLanes(s: MemoryState, q: Map<string, number>, target: string, now: number): Array<{ lane: string; bells: string[] }> {
  const by = new Map<string, Array<[string, number]>>();
  for (const [id, at] of q) {
    const a = id.includes("\n") ? undefined : s.agents.get(id);
    const lane = a ? laneOf(a).lane : "";
    let l = by.get(lane);
    if (!l) by.set(lane, (l = []));
    l.push([id, at]);
  }
  const out: Array<{ lane: string; bells: string[]; place: number }> = [];
  for (const [lane, bells] of by) {
    const first = Math.min(...bells.map(([, at]) => at));
    // Only the default lane's not-before matters when keyed lanes are due; a parked lane is placed at its lease end.
    const place = Math.max(first, laneNotBefore(s, target, lane));
    if (first > now || place > now) continue;
    const due = bells.filter(([, at]) => at <= now).sort((x, y) => x[1] - y[1]).map(([id]) => id);
    out.push({ lane, bells: due, place });
  }
  return out.sort((x, y) => x.place - y.place || (x.lane === "" ? 1 : 0) - (y.lane === "" ? 1 : 0) || (x.lane < y.lane ? -1 : 1));
}

/** The earliest time a bell of the target is due, lanes' places and parking counted (`nextReadyAt`). */
export function nextLaneAt(s: MemoryState, q: Map<string, number>, target: string): number | null {
  const firsts = new Map<string, number>();
  for (const [id, at] of q) {
    const a = id.includes("\n") ? undefined : s.agents.get(id);
    const lane = a ? laneOf(a).lane : "";
    firsts.set(lane, Math.min(firsts.get(lane) ?? Infinity, at));
  }
  let best: number | null = null;
  for (const [lane, first] of firsts) {
    // The default lane is never parked: its place is its earliest bell, as next_ready_at.lua reads it.
    const at = lane === "" ? first : Math.max(first, laneNotBefore(s, target, lane));
    if (best === null || at < best) best = at;
  }
  return best;
}

/** The per-lane rows of `concurrencyUsage` for a target. */
export function laneRows(s: MemoryState, target: string, now: number, keys?: readonly string[]): LaneRow[] {
  const q = s.ready.get(target) ?? new Map<string, number>();
  const rows = new Map<string, LaneRow>();
  const row = (lane: string) => {
    let r = rows.get(lane);
    if (!r) {
      const nb = laneNotBefore(s, target, lane);
      const running = lane === "" ? 0 : [...(s.running.get(lane)?.values() ?? [])].filter((u) => u > now).length;
      rows.set(lane, (r = { key: lane, running, queued: 0, parkedUntil: lane !== "" && nb > now ? nb : 0 }));
    }
    return r;
  };
  row("");
  for (const [id, at] of q) {
    const a = id.includes("\n") ? undefined : s.agents.get(id);
    const r = row(a ? laneOf(a).lane : "");
    if (at <= now) r.queued++;
  }
  return keys ? keys.map(row) : [...rows.values()];
}
