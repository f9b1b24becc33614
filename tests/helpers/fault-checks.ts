/**
 * What the fault tests check after a run of the fault agent, whatever was
 * done to the workers or to Redis in between. `checkRun` returns the list of
 * violations (empty when the run kept every invariant), so a failing test
 * prints all of them at once:
 *
 * - every acknowledged task (its enqueue answered `enqueued`) ended its turn
 *   exactly once (one `task` event) in `done`, and the agent holds no active
 *   turn, no pending task and no pending mail;
 * - every acknowledged tool result (delivery answered `accepted`) is in the
 *   turn's submitted result, and was received exactly once;
 * - every logical tool call (agent, turn, step, index) was recorded once and
 *   dispatched under that one id, whatever number of workers ran the turn;
 * - the event log has dense ids and no duplicate tool_call or
 *   tool_result_received for a call.
 */
import type { Store, StoredEvent } from "../../mod.ts";
import type { DispatchRecord, SubmittedCall } from "./fault-agent.ts";

export interface EnqueuedTurn {
  agentId: string;
  turnId: string;
  label: string;
  external: boolean;
}

export interface AcceptedResult {
  agentId: string;
  turnId: string;
  toolCallId: string;
  value: unknown;
}

export async function readAllEvents(store: Store, agentId: string): Promise<StoredEvent[]> {
  const out: StoredEvent[] = [];
  for (;;) {
    const page = await store.readEvents(agentId, out.length, 500);
    out.push(...page);
    if (page.length < 500) return out;
  }
}

/**
 * One pass of an outside system answering external `approve` calls: every
 * pending external call of every agent's active turn gets `{ approved: id }`.
 * Accepted deliveries are added to `accepted` (keyed by toolCallId).
 *
 * Like a real client, it retries a delivery whose answer it never got (the
 * store may have applied it just before the connection died): `unanswered`
 * keeps those, and a retry answered `duplicate` (the same value, already
 * resolved) acknowledges the first delivery.
 */
export async function answerExternalCalls(
  store: Store,
  agentIds: string[],
  accepted: Map<string, AcceptedResult>,
  now: () => number,
  unanswered: Map<string, AcceptedResult> = new Map(),
): Promise<number> {
  let n = 0;
  const deliver = async (a: AcceptedResult) => {
    unanswered.set(a.toolCallId, a);
    const r = await store.deliverToolResult({
      agentId: a.agentId, turnId: a.turnId, toolCallId: a.toolCallId, outcome: { ok: true, value: a.value },
      afterExecution: "continue", source: "http", now: now(),
    });
    unanswered.delete(a.toolCallId);
    if (r.status === "accepted" || r.status === "duplicate") {
      accepted.set(a.toolCallId, a);
      n++;
    }
  };
  for (const a of [...unanswered.values()]) await deliver(a);
  for (const agentId of agentIds) {
    const head = await store.getAgent(agentId);
    if (!head?.activeTurnId) continue;
    const turnId = head.activeTurnId;
    for (const c of await store.getToolCalls(agentId, turnId)) {
      if (!c.external || c.status !== "pending" || accepted.has(c.toolCallId)) continue;
      await deliver({ agentId, turnId, toolCallId: c.toolCallId, value: { approved: c.toolCallId } });
    }
  }
  return n;
}

export interface RunStats {
  turns: number;
  done: number;
  failed: number;
  dispatches: number;
  redispatches: number;
  abortedDispatches: number;
  workersPerTurnMax: number;
}

export async function checkRun(opts: {
  store: Store;
  turns: EnqueuedTurn[];
  accepted: Map<string, AcceptedResult>;
  dispatches: DispatchRecord[];
}): Promise<{ violations: string[]; stats: RunStats }> {
  const { store, turns, accepted, dispatches } = opts;
  const v: string[] = [];
  const stats: RunStats = { turns: turns.length, done: 0, failed: 0, dispatches: 0, redispatches: 0, abortedDispatches: 0, workersPerTurnMax: 0 };
  const agentIds = [...new Set(turns.map((t) => t.agentId))];
  const events = new Map<string, StoredEvent[]>();
  for (const agentId of agentIds) {
    const head = await store.getAgent(agentId);
    if (!head) {
      v.push(`${agentId}: no head`);
      continue;
    }
    if (head.activeTurnId !== null) v.push(`${agentId}: still in turn ${head.activeTurnId} (state ${head.state})`);
    if (head.pendingTasks !== 0) v.push(`${agentId}: ${head.pendingTasks} tasks still queued`);
    if (head.pendingMail !== 0) v.push(`${agentId}: ${head.pendingMail} mail items not acknowledged`);
    if (!["done", "failed"].includes(head.state)) v.push(`${agentId}: ends in state ${head.state}`);
    const evs = await readAllEvents(store, agentId);
    events.set(agentId, evs);
    evs.forEach((e, k) => {
      if (e.id !== k + 1) v.push(`${agentId}: event #${k} has id ${e.id} (ids must be dense)`);
    });
    const toolCallEvents = new Map<string, number>();
    const received = new Map<string, number>();
    for (const e of evs) {
      const id = e.data.toolCallId as string | undefined;
      if (e.type === "tool_call" && id) toolCallEvents.set(id, (toolCallEvents.get(id) ?? 0) + 1);
      if (e.type === "tool_result_received" && id) received.set(`${e.turnId}/${id}`, (received.get(`${e.turnId}/${id}`) ?? 0) + 1);
    }
    for (const [id, n] of toolCallEvents) if (n !== 1) v.push(`${agentId}: ${n} tool_call events for ${id}`);
    for (const [id, n] of received) if (n !== 1) v.push(`${agentId}: ${n} tool_result_received events for ${id}`);
  }

  const startsByCall = new Map<string, Set<string>>();
  const workersByTurn = new Map<string, Set<string>>();
  for (const d of dispatches) {
    if (d.phase === "aborted") stats.abortedDispatches++;
    if (d.phase !== "start") continue;
    stats.dispatches++;
    const key = `${d.agentId}/${d.turnId}/${d.step}.${d.i}`;
    let ids = startsByCall.get(key);
    if (!ids) startsByCall.set(key, (ids = new Set()));
    if (ids.has(d.toolCallId)) stats.redispatches++;
    ids.add(d.toolCallId);
    let ws = workersByTurn.get(d.turnId);
    if (!ws) workersByTurn.set(d.turnId, (ws = new Set()));
    ws.add(d.worker);
  }
  for (const [key, ids] of startsByCall) {
    if (ids.size !== 1) v.push(`logical call ${key} dispatched under ${ids.size} ids: ${[...ids].join(", ")}`);
  }
  stats.workersPerTurnMax = Math.max(0, ...[...workersByTurn.values()].map((s) => s.size));

  const submittedIds = new Set<string>();
  for (const t of turns) {
    const evs = events.get(t.agentId) ?? [];
    const ends = evs.filter((e) => e.type === "task" && e.data.turnId === t.turnId);
    if (ends.length !== 1) {
      v.push(`${t.agentId}/${t.turnId} (${t.label}): ${ends.length} task events`);
      continue;
    }
    const status = ends[0].data.status;
    if (status === "failed") stats.failed++;
    if (status !== "done") {
      v.push(`${t.agentId}/${t.turnId} (${t.label}): ended ${String(status)}: ${JSON.stringify(ends[0].data.error)}`);
      continue;
    }
    stats.done++;
    const out = ends[0].data.deliverable as { label: string; calls: SubmittedCall[] };
    if (out?.label !== t.label) v.push(`${t.turnId}: deliverable label ${out?.label} != ${t.label}`);
    const want = t.external ? ["1.0", "1.1", "2.0", "2.1", "3.0"] : ["1.0", "1.1", "2.0", "3.0"];
    const got = (out?.calls ?? []).map((c) => `${c.step}.${c.i}`).sort();
    if (JSON.stringify(got) !== JSON.stringify(want)) v.push(`${t.turnId}: calls ${got.join(",")} != ${want.join(",")}`);
    const records = await store.getToolCalls(t.agentId, t.turnId);
    const recordsByLogical = new Map<string, number>();
    for (const r of records) {
      const a = r.args as { step: number; i: number };
      const k = `${a.step}.${a.i}`;
      recordsByLogical.set(k, (recordsByLogical.get(k) ?? 0) + 1);
      if (r.status !== "resolved") v.push(`${t.turnId}/${r.toolCallId}: record still ${r.status}`);
    }
    for (const [k, n] of recordsByLogical) if (n !== 1) v.push(`${t.turnId}: logical call ${k} recorded ${n} times`);
    for (const c of out?.calls ?? []) {
      submittedIds.add(c.id);
      if (c.name === "work") {
        if (!c.content.includes(`"k":"${c.step}.${c.i}"`)) v.push(`${t.turnId}/${c.id}: work result lost: ${c.content}`);
        const ids = startsByCall.get(`${t.agentId}/${t.turnId}/${c.step}.${c.i}`);
        if (ids && !ids.has(c.id)) v.push(`${t.turnId}/${c.id}: dispatched as ${[...ids].join(",")} but the transcript says ${c.id}`);
      }
      if (c.name === "approve") {
        const a = accepted.get(c.id);
        if (!a) v.push(`${t.turnId}/${c.id}: approve answered without an accepted delivery: ${c.content}`);
        else if (c.content !== JSON.stringify(a.value)) v.push(`${t.turnId}/${c.id}: approve result ${c.content} != delivered ${JSON.stringify(a.value)}`);
      }
    }
  }
  const known = new Set(turns.map((t) => t.turnId));
  for (const a of accepted.values()) {
    if (!known.has(a.turnId)) v.push(`accepted result ${a.toolCallId} of unknown turn ${a.turnId}`);
    else if (!submittedIds.has(a.toolCallId)) v.push(`accepted result ${a.toolCallId} (turn ${a.turnId}) is missing from the turn's result`);
  }
  return { violations: v, stats };
}
