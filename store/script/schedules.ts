/**
 * Schedules of the script store (store/port.ts `Schedules`, invariants
 * `schedule-put` and `schedule-tick-once`): each operation one script on
 * the agent's keys and its home's ready queues (store/lua/*_schedule*.lua).
 */
import type { FireScheduleTickRequest, FireScheduleTickResult, NextDueScheduleRequest, NextDueScheduleResult, PutScheduleRequest, PutScheduleResult, ScheduleRecord } from "../port.ts";
import type { InboxTask } from "../types.ts";
import { checkAgentName, checkScheduleId, checkTarget, checkTurnId } from "../keys.ts";
import { inputBytes } from "../inputs.ts";
import { int, j, tail } from "./values.ts";
import { encodeDeleteSchedule, encodeDueSchedule, encodeFireSchedule, encodeGetSchedules, encodePutSchedule } from "../lua/args/schedules.ts";
import type { ScriptContext } from "./context.ts";
import { DEFAULTS } from "../../common/defaults.ts";
import { positiveBound } from "../keys.ts";

const tick = (t: number | null, what: string) => (t === null ? "null" : int(t, what));

export async function putSchedule(c: ScriptContext, req: PutScheduleRequest): Promise<PutScheduleResult> {
  const { keys, dropHints, call } = c;
  const k = keys.agent(req.agentId);
  checkScheduleId(req.scheduleId);
  checkTarget(req.workerTarget);
  dropHints(req.nextTick);
  const { input, ...spec } = req.spec;
  const record = { agentId: req.agentId, scheduleId: req.scheduleId, agentName: req.agentName, workerTarget: req.workerTarget, spec, updatedAt: req.now };
  return call(encodePutSchedule({
    head: k.head, sched: k.schedules,
    prefix: k.home.prefix, agent_id: req.agentId, sched_id: req.scheduleId, name_json: j(req.agentName), target: req.workerTarget,
    record_json: j(record), input_json: j(input ?? null), next_tick: tick(req.nextTick, "nextTick"), now_str: int(req.now, "now"),
    max_schedules: String(positiveBound(req.maxSchedules, "maxSchedules", DEFAULTS.maxSchedulesPerAgent)),
  }));
}

export async function getSchedule(c: ScriptContext, agentId: string, scheduleId: string): Promise<ScheduleRecord | null> {
  const { keys, call } = c;
  return call(encodeGetSchedules({ sched: keys.agent(agentId).schedules, sched_id: checkScheduleId(scheduleId) }));
}

export async function listSchedules(c: ScriptContext, agentId: string): Promise<ScheduleRecord[]> {
  const { keys, call } = c;
  return call(encodeGetSchedules({ sched: keys.agent(agentId).schedules }));
}

export async function deleteSchedule(c: ScriptContext, agentId: string, scheduleId: string): Promise<{ status: "deleted" } | { status: "schedule_not_found" }> {
  const { keys, call } = c;
  const k = keys.agent(agentId);
  return call(encodeDeleteSchedule({ sched: k.schedules, prefix: k.home.prefix, agent_id: agentId, sched_id: checkScheduleId(scheduleId) }));
}

export async function fireScheduleTick(c: ScriptContext, req: FireScheduleTickRequest): Promise<FireScheduleTickResult> {
  const { keys, longKeys, dropHints, call } = c;
  const k = keys.agent(req.agentId);
  checkScheduleId(req.scheduleId);
  checkTurnId(req.turnId);
  dropHints(Math.min(req.now, req.nextTick ?? req.now));
  const task: InboxTask = { turnId: req.turnId, options: req.options, enqueuedAt: req.now, idempotencyKey: req.idempotencyKey };
  const r = await call<FireScheduleTickResult>(encodeFireSchedule({
    head: k.head, tasks: k.tasks, idem: k.idem, events: k.events, turns: k.turns, inputs: k.inputs, deleted: k.deleted, sched: k.schedules, delayed: k.delayed,
    long_keys: longKeys(k),
    prefix: k.home.prefix, agent_id: req.agentId, agent_id_json: j(req.agentId), sched_id: req.scheduleId,
    expect_tick: int(req.expectTick, "expectTick"), expect_rev: int(req.expectRev, "expectRev"),
    fire_tick: req.fireTick === null ? "" : int(req.fireTick, "fireTick"), next_tick: tick(req.nextTick, "nextTick"),
    turn_json: j(req.turnId), idem_key: req.idempotencyKey, entry: `${j(req.turnId)}\n${j(task)}`,
    event_tail: tail({ type: "task_enqueued", data: { turnId: req.turnId, options: req.options, inputBytes: inputBytes(req.input ?? null) } }),
    now_str: int(req.now, "now"), turn_raw: req.turnId, max_queued: String(positiveBound(req.maxQueued, "maxQueued", 1)),
  }));
  return r.status === "fired" ? { ...r, nextTick: req.nextTick } : r;
}

/** The oldest due schedule of a target over every home's schedule index (invariant `schedule-index`); else the earliest tick after now. */
export async function nextDueSchedule(c: ScriptContext, req: NextDueScheduleRequest): Promise<NextDueScheduleResult> {
  const { shards, call } = c;
  const now = int(req.now, "now");
  const names = req.agentNames?.map((n) => j(checkAgentName(n)));
  checkTarget(req.workerTarget);
  let next: number | null = null;
  for (const s of shards) {
    const r = await call<NextDueScheduleResult>(encodeDueSchedule({ ticks: s.ticks(req.workerTarget), prefix: s.prefix, now_str: now, ...(names ? { names } : {}) }));
    if (r.status === "schedule_due") return r;
    if (r.next !== null) next = Math.min(next ?? Infinity, r.next);
  }
  return { status: "none", next };
}
