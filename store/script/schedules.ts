/**
 * Schedules of the script store (store/port.ts `Schedules`, invariants
 * `schedule-put` and `schedule-tick-once`): each operation one script on
 * the agent's keys and its home's ready queues (store/lua/*_schedule*.lua).
 * Each script is described here (store/script/operation.ts): its layout,
 * named as its header does, its reply words and their decoding.
 */
import { byField } from "../../common/by.ts";
import type { DeleteScheduleLog, FireScheduleTickRequest, FireScheduleTickResult, NextDueScheduleRequest, NextDueScheduleResult, PutScheduleRequest, PutScheduleResult, ScheduleRecord } from "../port.ts";
import type { InboxTask } from "../types.ts";
import { taskLaneFields } from "../lanes.ts";
import { checkAgentName, checkScheduleId, checkTarget, checkTurnId } from "../keys.ts";
import { inputBytes } from "../inputs.ts";
import { int, j, tail } from "./values.ts";
import { json, scriptOp } from "./operation.ts";
import { enqueueOf, type ScheduleReply, scheduleOf } from "./replies.ts";
import type { ScriptContext } from "./context.ts";
import { DEFAULTS } from "../../common/defaults.ts";
import { positiveBound } from "../keys.ts";

/** store/lua/put_schedule.lua */
export const PUT_SCHEDULE = scriptOp({
  script: "put_schedule",
  keys: ["head", "sched"],
  argv: ["prefix", "agent_id", "sched_id", "name_json", "target", "record_json", "input_json", "next_tick", "now_str", "max_schedules", "expect_rev"],
  words: ["created", "replaced", "definition_conflict", "schedule_limit", "stale"],
}, (word, payload): PutScheduleResult => {
  if (word === "stale") return { status: word };
  if (word === "schedule_limit") return { status: word, limit: Number(payload) };
  return word === "definition_conflict" ? { status: word, boundTo: json(payload) } : { status: word, schedule: scheduleOf(json(payload)) };
});

/** store/lua/get_schedules.lua */
export const GET_SCHEDULES = scriptOp({
  script: "get_schedules",
  keys: ["sched"],
  argv: ["sched_id"],
  optional: ["sched_id"],
  words: ["entry", "none", "list"],
}, (word, payload): ScheduleRecord | ScheduleRecord[] | null => {
  if (word === "list") return json<ScheduleReply[]>(payload).map(scheduleOf);
  return word === "entry" ? scheduleOf(json(payload)) : null;
});

/** store/lua/delete_schedule.lua */
export const DELETE_SCHEDULE = scriptOp({
  script: "delete_schedule",
  keys: ["sched", "head", "events"],
  argv: ["prefix", "agent_id", "sched_id", "now_str", "event_tail"],
  words: ["deleted", "absent"],
}, (word): { status: "deleted" } | { status: "schedule_not_found" } => word === "deleted" ? { status: word } : { status: "schedule_not_found" });

/** store/lua/fire_schedule.lua */
export const FIRE_SCHEDULE = scriptOp({
  script: "fire_schedule",
  keys: ["head", "tasks", "idem", "events", "turns", "inputs", "deleted", "sched", "delayed"],
  argv: [
    "prefix", "agent_id", "agent_id_json", "sched_id", "expect_tick", "expect_rev", "fire_tick", "next_tick",
    "turn_json", "idem_key", "entry", "event_tail", "now_str", "turn_raw", "max_queued",
  ],
  keysRest: "long_keys",
  // agent_deleted and too_many_delayed: answers of the enqueue it runs (includes/enqueue.lua) passed on.
  words: ["fired", "skipped", "coalesced", "stale", "absent", "agent_deleted", "too_many_delayed"],
}, (word, payload) => {
  if (word === "absent") return { status: "schedule_not_found" } as FireScheduleTickResult;
  if (word === "fired") return { status: word, enqueue: enqueueOf(payload) } as FireScheduleTickResult;
  if (word === "coalesced") return { status: word, ...json<object>(payload) } as FireScheduleTickResult;
  return { status: word, nextTick: json(payload) } as FireScheduleTickResult;
});

/** store/lua/due_schedule.lua */
export const DUE_SCHEDULE = scriptOp({
  script: "due_schedule",
  keys: ["ticks"],
  argv: ["prefix", "now_str"],
  argvRest: "names",
  words: ["schedule", "none"],
}, (word, payload): NextDueScheduleResult =>
  word === "schedule" ? { status: "schedule_due", schedule: scheduleOf(json(payload)) } : { status: "none", next: payload === "null" ? null : Number(payload) });

const tick = (t: number | null, what: string) => (t === null ? "null" : int(t, what));

export async function putSchedule(c: ScriptContext, req: PutScheduleRequest): Promise<PutScheduleResult> {
  const { keys, dropHints, run } = c;
  const k = keys.agent(req.agentId);
  checkScheduleId(req.scheduleId);
  checkTarget(req.workerTarget);
  dropHints(req.nextTick);
  const { input, ...spec } = req.spec;
  const record = { agentId: req.agentId, scheduleId: req.scheduleId, agentName: req.agentName, workerTarget: req.workerTarget, spec, updatedAt: req.now, ...byField(req.by) };
  return run(PUT_SCHEDULE, {
    head: k.head, sched: k.schedules,
    prefix: k.home.prefix, agent_id: req.agentId, sched_id: req.scheduleId, name_json: j(req.agentName), target: req.workerTarget,
    record_json: j(record), input_json: j(input ?? null), next_tick: tick(req.nextTick, "nextTick"), now_str: int(req.now, "now"),
    max_schedules: String(positiveBound(req.maxSchedules, "maxSchedules", DEFAULTS.maxSchedulesPerAgent)),
    expect_rev: req.expectRev === undefined ? "" : int(req.expectRev, "expectRev"),
  });
}

export async function getSchedule(c: ScriptContext, agentId: string, scheduleId: string): Promise<ScheduleRecord | null> {
  const { keys, run } = c;
  return run(GET_SCHEDULES, { sched: keys.agent(agentId).schedules, sched_id: checkScheduleId(scheduleId) }) as Promise<ScheduleRecord | null>;
}

export async function listSchedules(c: ScriptContext, agentId: string): Promise<ScheduleRecord[]> {
  const { keys, run } = c;
  return run(GET_SCHEDULES, { sched: keys.agent(agentId).schedules }) as Promise<ScheduleRecord[]>;
}

export async function deleteSchedule(
  c: ScriptContext, agentId: string, scheduleId: string, log?: DeleteScheduleLog,
): Promise<{ status: "deleted" } | { status: "schedule_not_found" }> {
  const { keys, run } = c;
  const k = keys.agent(agentId);
  checkScheduleId(scheduleId);
  return run(DELETE_SCHEDULE, {
    sched: k.schedules, head: k.head, events: k.events, prefix: k.home.prefix, agent_id: agentId, sched_id: scheduleId,
    now_str: log ? int(log.now, "now") : "",
    event_tail: log ? tail({ type: "schedule_deleted", data: { scheduleId, by: log.by } }) : "",
  });
}

export async function fireScheduleTick(c: ScriptContext, req: FireScheduleTickRequest): Promise<FireScheduleTickResult> {
  const { keys, longKeys, dropHints, run } = c;
  const k = keys.agent(req.agentId);
  checkScheduleId(req.scheduleId);
  checkTurnId(req.turnId);
  dropHints(Math.min(req.now, req.nextTick ?? req.now));
  const task: InboxTask = { turnId: req.turnId, options: req.options, enqueuedAt: req.now, idempotencyKey: req.idempotencyKey, ...taskLaneFields(req) };
  const r = await run(FIRE_SCHEDULE, {
    head: k.head, tasks: k.tasks, idem: k.idem, events: k.events, turns: k.turns, inputs: k.inputs, deleted: k.deleted, sched: k.schedules, delayed: k.delayed,
    long_keys: longKeys(k),
    prefix: k.home.prefix, agent_id: req.agentId, agent_id_json: j(req.agentId), sched_id: req.scheduleId,
    expect_tick: int(req.expectTick, "expectTick"), expect_rev: int(req.expectRev, "expectRev"),
    fire_tick: req.fireTick === null ? "" : int(req.fireTick, "fireTick"), next_tick: tick(req.nextTick, "nextTick"),
    turn_json: j(req.turnId), idem_key: req.idempotencyKey, entry: `${j(req.turnId)}\n${j(task)}`,
    event_tail: tail({ type: "task_enqueued", data: { turnId: req.turnId, options: req.options, inputBytes: inputBytes(req.input ?? null) } }),
    now_str: int(req.now, "now"), turn_raw: req.turnId, max_queued: String(positiveBound(req.maxQueued, "maxQueued", 1)),
  });
  return r.status === "fired" ? { ...r, nextTick: req.nextTick } : r;
}

/** The oldest due schedule of a target over every home's schedule index (invariant `schedule-index`); else the earliest tick after now. */
export async function nextDueSchedule(c: ScriptContext, req: NextDueScheduleRequest): Promise<NextDueScheduleResult> {
  const { shards, run } = c;
  const now = int(req.now, "now");
  const names = req.agentNames?.map((n) => j(checkAgentName(n)));
  checkTarget(req.workerTarget);
  let next: number | null = null;
  for (const s of shards) {
    const r = await run(DUE_SCHEDULE, { ticks: s.ticks(req.workerTarget), prefix: s.prefix, now_str: now, ...(names ? { names } : {}) });
    if (r.status === "schedule_due") return r;
    if (r.next !== null) next = Math.min(next ?? Infinity, r.next);
  }
  return { status: "none", next };
}
