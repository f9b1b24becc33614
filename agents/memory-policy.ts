/**
 * What an agent definition says about its stored history: the model's
 * memory (the last turns plus a rolling summary; applied by
 * actors/conversation/memory.ts) and its storage limits (applied by the store,
 * store/retention.ts). Checked at definition time.
 */
import type { Message } from "../common/message.ts";
import { firstUnknownKey, unknownKeyMessage } from "../common/known-keys.ts";

/** Produces the summary of the turns leaving the model's view. */
export type Summarizer = (req: {
  agentId: string;
  /** The summary so far (null: none yet). */
  previous: string | null;
  /** The messages leaving the view, oldest first. */
  messages: readonly Message[];
  signal: AbortSignal;
}) => Promise<string>;

/**
 * @example
 * defineAgent({
 *   name: "support", instructions: "Help.", model,
 *   memory: { keepTurns: 20, summarize: async ({ previous, messages }) => mySummary(previous, messages) },
 *   retention: { maxTurns: 100 },
 * });
 */
export interface MemoryPolicy {
  /** Turns shown verbatim (the current one included); at least 1. */
  keepTurns: number;
  /**
   * How the older turns are kept: `"truncate"` (default) drops them,
   * `"model"` asks the agent's model for a summary, a function is called
   * with the previous summary and the messages leaving the view.
   */
  summarize?: "truncate" | "model" | Summarizer;
}

/** Storage limits of one agent (store/retention.ts has the meaning and the defaults). */
export interface AgentRetention {
  maxEvents?: number;
  maxEventBytes?: number;
  maxTurns?: number;
  checkpointEvery?: number;
}

/** What is wrong with a policy or limits: the message and the key at fault (a path). */
export interface PolicyProblem {
  message: string;
  key: string;
}

/** The keys a memory policy takes. */
export const MEMORY_KEYS: readonly string[] = Object.keys({ keepTurns: true, summarize: true } satisfies Record<keyof MemoryPolicy, true>);

/** The keys retention limits take. */
export const RETENTION_KEYS: readonly string[] = Object.keys(
  { maxEvents: true, maxEventBytes: true, maxTurns: true, checkpointEvery: true } satisfies Record<keyof AgentRetention, true>,
);

/** Checks a policy; returns the problem or null. An unknown key is refused with a suggestion (common/known-keys.ts). */
export function checkMemoryPolicy(p: unknown): PolicyProblem | null {
  if (p === undefined) return null;
  const m = p as MemoryPolicy;
  if (!m || typeof m !== "object") return { message: "memory must be an object { keepTurns, summarize? }", key: "memory" };
  const unknown = firstUnknownKey(m, MEMORY_KEYS);
  if (unknown !== null) return { message: `memory has an ${unknownKeyMessage(unknown, MEMORY_KEYS)}`, key: `memory.${unknown}` };
  if (!Number.isSafeInteger(m.keepTurns) || m.keepTurns < 1) {
    return { message: `memory.keepTurns must be a positive integer, got ${String(m.keepTurns)}`, key: "memory.keepTurns" };
  }
  const s = m.summarize;
  if (s !== undefined && s !== "truncate" && s !== "model" && typeof s !== "function") {
    return { message: `memory.summarize must be "truncate", "model" or a function`, key: "memory.summarize" };
  }
  return null;
}

/** Checks retention limits; returns the problem or null. An unknown key is refused with a suggestion. */
export function checkRetention(r: unknown): PolicyProblem | null {
  if (r === undefined) return null;
  if (!r || typeof r !== "object") {
    return { message: "retention must be an object { maxEvents?, maxEventBytes?, maxTurns?, checkpointEvery? }", key: "retention" };
  }
  const unknown = firstUnknownKey(r, RETENTION_KEYS);
  if (unknown !== null) return { message: `retention has an ${unknownKeyMessage(unknown, RETENTION_KEYS)}`, key: `retention.${unknown}` };
  for (const [k, v] of Object.entries(r)) {
    if (v !== undefined && (!Number.isSafeInteger(v) || (v as number) < 1)) {
      return { message: `retention.${k} must be a positive integer, got ${String(v)}`, key: `retention.${k}` };
    }
  }
  return null;
}
