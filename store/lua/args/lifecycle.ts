/**
 * The argument layouts and encoders of the lifecycle scripts (store/port.ts `Lifecycle`).
 * Each layout names the KEYS and ARGV of its script in order, as the
 * script's header does (store/lua/args/layout.ts).
 */
import { encoder, type ScriptLayout } from "./layout.ts";

/** store/lua/delete_agent.lua */
export const DELETE_AGENT = {
  script: "delete_agent",
  keys: ["head", "turns", "deadlines", "agents_idx", "deleted"],
  argv: ["prefix", "agent_id", "now_str"],
  keysRest: "own_keys",
} as const satisfies ScriptLayout;
export const encodeDeleteAgent = encoder(DELETE_AGENT);

/** store/lua/ping.lua */
export const PING = {
  script: "ping",
  keys: [],
  argv: [],
} as const satisfies ScriptLayout;
export const encodePing = encoder(PING);
