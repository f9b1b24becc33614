/**
 * What an agent definition says about its stored history: the model's
 * memory (the last turns plus a rolling summary; applied by
 * actors/memory.ts) and its storage limits (applied by the store,
 * store/retention.ts). Checked at definition time.
 */
import type { Message } from "../common/message.ts";

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

/** Checks a policy; returns an error message or null. */
export function checkMemoryPolicy(p: unknown): string | null {
  if (p === undefined) return null;
  const m = p as MemoryPolicy;
  if (!m || typeof m !== "object") return "memory must be an object { keepTurns, summarize? }";
  if (!Number.isSafeInteger(m.keepTurns) || m.keepTurns < 1) return `memory.keepTurns must be a positive integer, got ${String(m.keepTurns)}`;
  const s = m.summarize;
  if (s !== undefined && s !== "truncate" && s !== "model" && typeof s !== "function") {
    return `memory.summarize must be "truncate", "model" or a function`;
  }
  return null;
}

/** Checks retention limits; returns an error message or null. */
export function checkRetention(r: unknown): string | null {
  if (r === undefined) return null;
  if (!r || typeof r !== "object") return "retention must be an object { maxEvents?, maxEventBytes?, maxTurns?, checkpointEvery? }";
  for (const [k, v] of Object.entries(r)) {
    if (!["maxEvents", "maxEventBytes", "maxTurns", "checkpointEvery"].includes(k)) return `retention.${k} is not a retention limit`;
    if (v !== undefined && (!Number.isSafeInteger(v) || (v as number) < 1)) return `retention.${k} must be a positive integer, got ${String(v)}`;
  }
  return null;
}
