/**
 * The argument layouts and encoders of the schedule scripts (store/port.ts `Schedules`).
 * Each layout names the KEYS and ARGV of its script in order, as the
 * script's header does (store/lua/args/layout.ts).
 */
import { encoder, type ScriptLayout } from "./layout.ts";

/** store/lua/put_schedule.lua */
export const PUT_SCHEDULE = {
  script: "put_schedule",
  keys: ["head", "sched"],
  argv: ["prefix", "agent_id", "sched_id", "name_json", "target", "record_json", "input_json", "next_tick", "now_str", "max_schedules"],
} as const satisfies ScriptLayout;
export const encodePutSchedule = encoder(PUT_SCHEDULE);

/** store/lua/get_schedules.lua */
export const GET_SCHEDULES = {
  script: "get_schedules",
  keys: ["sched"],
  argv: ["sched_id"],
  optional: ["sched_id"],
} as const satisfies ScriptLayout;
export const encodeGetSchedules = encoder(GET_SCHEDULES);

/** store/lua/delete_schedule.lua */
export const DELETE_SCHEDULE = {
  script: "delete_schedule",
  keys: ["sched"],
  argv: ["prefix", "agent_id", "sched_id"],
} as const satisfies ScriptLayout;
export const encodeDeleteSchedule = encoder(DELETE_SCHEDULE);

/** store/lua/fire_schedule.lua */
export const FIRE_SCHEDULE = {
  script: "fire_schedule",
  keys: ["head", "tasks", "idem", "events", "turns", "inputs", "deleted", "sched", "delayed"],
  argv: [
    "prefix", "agent_id", "agent_id_json", "sched_id", "expect_tick", "expect_rev", "fire_tick", "next_tick",
    "turn_json", "idem_key", "entry", "event_tail", "now_str", "turn_raw", "max_queued",
  ],
  keysRest: "long_keys",
} as const satisfies ScriptLayout;
export const encodeFireSchedule = encoder(FIRE_SCHEDULE);

/** store/lua/due_schedule.lua */
export const DUE_SCHEDULE = {
  script: "due_schedule",
  keys: ["ticks"],
  argv: ["prefix", "now_str"],
  argvRest: "names",
} as const satisfies ScriptLayout;
export const encodeDueSchedule = encoder(DUE_SCHEDULE);
