/**
 * The argument layouts and encoders of the side stores' scripts (store/port.ts `SideStores`).
 * Each layout names the KEYS and ARGV of its script in order, as the
 * script's header does (store/lua/args/layout.ts).
 */
import { encoder, type ScriptLayout } from "./layout.ts";

/** store/lua/put_verdict.lua */
export const PUT_VERDICT = {
  script: "put_verdict",
  keys: ["verdict_list", "head", "verdicts"],
  argv: ["verdict_id", "entry", "record"],
} as const satisfies ScriptLayout;
export const encodePutVerdict = encoder(PUT_VERDICT);

/** store/lua/get_verdict.lua */
export const GET_VERDICT = {
  script: "get_verdict",
  keys: ["verdicts"],
  argv: ["verdict_id"],
} as const satisfies ScriptLayout;
export const encodeGetVerdict = encoder(GET_VERDICT);

/** store/lua/list_verdicts.lua */
export const LIST_VERDICTS = {
  script: "list_verdicts",
  keys: ["verdict_list", "verdicts"],
  argv: ["by_turn_flag", "turn_id", "by_status_flag", "status"],
} as const satisfies ScriptLayout;
export const encodeListVerdicts = encoder(LIST_VERDICTS);

/** store/lua/delivery.lua */
export const DELIVERY = {
  script: "delivery",
  keys: ["record"],
  argv: ["mode", "now_text", "target", "holder", "window_text", "hold_text", "response_arg"],
  optional: ["response_arg"],
} as const satisfies ScriptLayout;
export const encodeDelivery = encoder(DELIVERY);

/** store/lua/rate_limit.lua */
export const RATE_LIMIT = {
  script: "rate_limit",
  keys: [],
  argv: ["now_ms"],
  keysRest: "buckets",
  argvRest: "limits",
} as const satisfies ScriptLayout;
export const encodeRateLimit = encoder(RATE_LIMIT);

/** store/lua/target_lease.lua */
export const TARGET_LEASE = {
  script: "target_lease",
  keys: ["lease"],
  argv: ["mode", "holder", "now_text", "lease_ms"],
  optional: ["lease_ms"],
} as const satisfies ScriptLayout;
export const encodeTargetLease = encoder(TARGET_LEASE);

/** store/lua/definition_sets.lua */
export const DEFINITION_SETS = {
  script: "definition_sets",
  keys: ["sets"],
  argv: ["own", "now_text", "ttl_text"],
} as const satisfies ScriptLayout;
export const encodeDefinitionSets = encoder(DEFINITION_SETS);

/** store/lua/record_tool_method.lua */
export const RECORD_TOOL_METHOD = {
  script: "record_tool_method",
  keys: ["tools", "forms"],
  argv: ["role", "method", "form", "now_text", "calls_text"],
} as const satisfies ScriptLayout;
export const encodeRecordToolMethod = encoder(RECORD_TOOL_METHOD);

/** store/lua/get_tool_role.lua */
export const GET_TOOL_ROLE = {
  script: "get_tool_role",
  keys: ["tools"],
  argv: ["role"],
} as const satisfies ScriptLayout;
export const encodeGetToolRole = encoder(GET_TOOL_ROLE);

/** store/lua/list_tool_roles.lua */
export const LIST_TOOL_ROLES = {
  script: "list_tool_roles",
  keys: ["tools"],
  argv: [],
} as const satisfies ScriptLayout;
export const encodeListToolRoles = encoder(LIST_TOOL_ROLES);

/** store/lua/create_fork.lua */
export const CREATE_FORK = {
  script: "create_fork",
  keys: ["head", "msgs", "events", "calls", "deadlines", "inputs", "ready"],
  argv: ["prefix", "agent_id", "agent_id_json", "name_json", "target_json", "snapshot", "state", "turn_json", "turn_raw", "current_task", "input_json", "runnable", "now_str", "event_tail", "n_msg_text", "n_call_text"],
  keysRest: "long_keys",
  argvRest: "items",
} as const satisfies ScriptLayout;
export const encodeCreateFork = encoder(CREATE_FORK);

/** store/lua/record_fork.lua */
export const RECORD_FORK = {
  script: "record_fork",
  keys: ["head", "events"],
  argv: ["now_str", "event_tail"],
} as const satisfies ScriptLayout;
export const encodeRecordFork = encoder(RECORD_FORK);
