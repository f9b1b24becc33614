/**
 * Deletion, liveness and closing of the memory store (store/port.ts `Lifecycle`).
 * Each operation is a top-level function of the store's MemoryState;
 * store/memory.ts binds them to the store object.
 */
import type { Lifecycle } from "../port.ts";
import { int } from "./records.ts";
import type { MemoryState } from "./state.ts";
import { dropSchedules } from "./schedule-steps.ts";
import { releaseRun } from "./lanes.ts";

/** The result type of the port method `K`. */
type Ret<K extends keyof Lifecycle> = ReturnType<NonNullable<Lifecycle[K]>>;

export async function deleteAgent(s: MemoryState, agentId: string, now?: number): Ret<"deleteAgent"> {
  const { agents, ready, deadlines, deleted, atomic, w } = s;
  return atomic(() => {
    const a = agents.get(agentId);
    // An id with schedules and no head yet is an agent too (invariant `deletion`).
    const hadSchedules = dropSchedules(s, agentId);
    const at = now === undefined ? 0 : int(now, "now");
    if (!a) {
      if (hadSchedules) w.mapSet(deleted, agentId, at);
      return hadSchedules ? { status: "deleted" as const } : { status: "agent_not_found" as const };
    }
    // Writes: the agent's records, its slot, its bell, its deadlines; verdict records stay (invariant `deletion`), delivery records expire.
    releaseRun(s, a, at);
    w.mapDelete(agents, agentId);
    // The queue is replaced whole, so an undo keeps its order (claimNext breaks ties by insertion).
    const q = ready.get(a.head.workerTarget);
    if (q?.has(agentId)) w.mapSet(ready, a.head.workerTarget, new Map([...q].filter(([id]) => id !== agentId)));
    for (const k of [...deadlines.keys()]) if (k.startsWith(`${agentId}\n`)) w.mapDelete(deadlines, k);
    // The marker a delegation's dispatch reads (invariant `deletion-marker`).
    w.mapSet(deleted, agentId, at);
    return { status: "deleted" as const };
  });
}

export async function ping(_s: MemoryState): Ret<"ping"> {}

export async function close(_s: MemoryState): Ret<"close"> {}
