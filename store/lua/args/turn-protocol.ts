/**
 * The argument layouts and encoders of the turn protocol's scripts (store/port.ts `TurnProtocol`).
 * Each layout names the KEYS and ARGV of its script in order, as the
 * script's header does (store/lua/args/layout.ts).
 */
import { encoder, type ScriptLayout } from "./layout.ts";

/** store/lua/enqueue_task.lua */
export const ENQUEUE_TASK = {
  script: "enqueue_task",
  keys: ["head", "tasks", "idem", "events", "turns", "inputs", "deleted", "delayed"],
  argv: ["prefix", "agent_id", "agent_id_json", "name_json", "target_json", "turn_json", "has_key_flag", "idem_key", "entry", "event_tail", "now_str", "turn_raw", "input_json", "refuse_deleted", "run_at", "max_delayed"],
  keysRest: "long_keys",
} as const satisfies ScriptLayout;
export const encodeEnqueueTask = encoder(ENQUEUE_TASK);

/** store/lua/deliver_tool_result.lua */
export const DELIVER_TOOL_RESULT = {
  script: "deliver_tool_result",
  keys: ["head", "calls", "mail", "events", "deadlines"],
  argv: ["prefix", "agent_id", "turn_json", "turn_id", "call_id", "resolution", "mail_tail", "event_tail", "now_str", "source_flag"],
} as const satisfies ScriptLayout;
export const encodeDeliverToolResult = encoder(DELIVER_TOOL_RESULT);

/** store/lua/request_cancel.lua */
export const REQUEST_CANCEL = {
  script: "request_cancel",
  keys: ["head", "mail", "events", "turns", "tasks", "idem", "delayed"],
  argv: ["prefix", "agent_id", "now_str", "reason_json", "turn_raw", "turn_json"],
} as const satisfies ScriptLayout;
export const encodeRequestCancel = encoder(REQUEST_CANCEL);

/** store/lua/cancel_task.lua */
export const CANCEL_TASK = {
  script: "cancel_task",
  keys: ["head", "tasks", "events", "turns", "idem_hash", "ended", "delayed"],
  argv: ["turn_raw", "turn_json", "now_str", "event_tail"],
} as const satisfies ScriptLayout;
export const encodeCancelTask = encoder(CANCEL_TASK);

/** store/lua/claim.lua */
export const CLAIM = {
  script: "claim",
  keys: ["head", "tasks", "mail", "inputs", "delayed"],
  argv: ["prefix", "agent_id", "worker_json", "lease_ms", "now_str"],
  keysRest: "long_keys",
} as const satisfies ScriptLayout;
export const encodeClaim = encoder(CLAIM);

/** store/lua/claim_next.lua */
export const CLAIM_NEXT = {
  script: "claim_next",
  keys: ["ready"],
  argv: ["prefix", "worker_json", "lease_ms_text", "now_str", "upto_arg"],
  optional: ["upto_arg"],
  argvRest: "names",
} as const satisfies ScriptLayout;
export const encodeClaimNext = encoder(CLAIM_NEXT);

/** store/lua/renew_lease.lua */
export const RENEW_LEASE = {
  script: "renew_lease",
  keys: ["head"],
  argv: ["prefix", "agent_id", "worker_json", "epoch", "lease_ms_text", "now_text"],
} as const satisfies ScriptLayout;
export const encodeRenewLease = encoder(RENEW_LEASE);

/** store/lua/commit.lua */
export const COMMIT = {
  script: "commit",
  keys: ["head", "tasks_key", "mail_key", "msgs_key", "events_key", "calls_key", "deadlines_key", "turns_key", "ckpts_key", "ended_key", "inputs_key", "idem_key", "summary_key", "delayed_key"],
  argv: ["prefix", "agent_id", "worker_json", "epoch", "expected_version", "turn_json", "turn_id", "next_active", "snapshot", "state", "ack_text", "release", "lease_ms_text", "now_str", "n_rec_text", "n_res_text", "n_msg_text", "n_ev_text"],
  optional: ["tasks_key", "mail_key", "msgs_key", "events_key", "calls_key", "deadlines_key", "turns_key", "ckpts_key", "ended_key", "inputs_key", "idem_key", "summary_key", "delayed_key"],
  keysRest: "long_keys",
  argvRest: "tail",
} as const satisfies ScriptLayout;
export const encodeCommit = encoder(COMMIT);

/** store/lua/record_claim_failure.lua */
export const RECORD_CLAIM_FAILURE = {
  script: "record_claim_failure",
  keys: ["head", "tasks", "mail", "msgs", "events", "calls", "deadlines", "turns", "ended", "delayed"],
  argv: ["prefix", "agent_id", "worker_json", "epoch", "expected_version", "turn_json", "turn_raw", "error_json", "max_failures_text", "retry_base_ms", "now_str"],
  keysRest: "long_keys",
  argvRest: "turn_end",
} as const satisfies ScriptLayout;
export const encodeRecordClaimFailure = encoder(RECORD_CLAIM_FAILURE);

/** store/lua/reset_turn.lua */
export const RESET_TURN = {
  script: "reset_turn",
  keys: ["head", "tasks", "mail", "msgs", "events", "calls", "deadlines", "turns", "ended", "delayed"],
  argv: ["prefix", "agent_id", "expected_version", "turn_json", "turn_raw", "now_str"],
  keysRest: "long_keys",
  argvRest: "turn_end",
} as const satisfies ScriptLayout;
export const encodeResetTurn = encoder(RESET_TURN);

/** store/lua/due_tool_calls.lua */
export const DUE_TOOL_CALLS = {
  script: "due_tool_calls",
  keys: ["deadlines"],
  argv: ["now_str", "limit", "mode"],
  optional: ["mode"],
} as const satisfies ScriptLayout;
export const encodeDueToolCalls = encoder(DUE_TOOL_CALLS);

/** store/lua/skip_due_tool_call.lua */
export const SKIP_DUE_TOOL_CALL = {
  script: "skip_due_tool_call",
  keys: ["deadlines", "head", "events"],
  argv: ["member", "retry_at", "now_str", "turn_json", "event_tail"],
} as const satisfies ScriptLayout;
export const encodeSkipDueToolCall = encoder(SKIP_DUE_TOOL_CALL);

/** store/lua/next_ready_at.lua */
export const NEXT_READY_AT = {
  script: "next_ready_at",
  keys: ["ready"],
  argv: [],
} as const satisfies ScriptLayout;
export const encodeNextReadyAt = encoder(NEXT_READY_AT);

/** store/lua/ready_count.lua */
export const READY_COUNT = {
  script: "ready_count",
  keys: ["ready"],
  argv: ["now_str"],
} as const satisfies ScriptLayout;
export const encodeReadyCount = encoder(READY_COUNT);
