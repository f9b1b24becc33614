/**
 * The argument layout and encoder of the approvals' script (store/port.ts `Approvals`),
 * named as the script's header does (store/lua/args/layout.ts).
 */
import { encoder, type ScriptLayout } from "./layout.ts";

/** store/lua/decide_approval.lua */
export const DECIDE_APPROVAL = {
  script: "decide_approval",
  keys: ["head", "calls", "mail", "events", "deadlines"],
  argv: ["prefix", "agent_id", "turn_json", "turn_id", "call_id", "decision", "now_str", "approval_tail", "resolution", "mail_tail", "event_tail", "result_tail"],
} as const satisfies ScriptLayout;
export const encodeDecideApproval = encoder(DECIDE_APPROVAL);
