/**
 * The argument layouts and encoders of the commit and the claims (store/port.ts
 * `TurnProtocol`), on their tuned path: every other script's layout is in its
 * descriptor (store/script/operation.ts). Each layout names the KEYS and ARGV
 * of its script in order, as the script's header does (layout.ts).
 */
import { encoder, type ScriptLayout } from "./layout.ts";

/** store/lua/claim.lua */
export const CLAIM = {
  script: "claim",
  keys: ["head", "tasks", "mail", "inputs", "delayed"],
  argv: ["prefix", "agent_id", "worker_json", "lease_ms", "now_str", "limits_json"],
  optional: ["limits_json"],
  keysRest: "long_keys",
} as const satisfies ScriptLayout;
export const encodeClaim = encoder(CLAIM);

/** store/lua/claim_next.lua */
export const CLAIM_NEXT = {
  script: "claim_next",
  keys: ["ready"],
  argv: ["prefix", "worker_json", "lease_ms_text", "now_str", "upto_arg", "limits_json"],
  optional: ["upto_arg", "limits_json"],
  argvRest: "names",
} as const satisfies ScriptLayout;
export const encodeClaimNext = encoder(CLAIM_NEXT);

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


