/**
 * The Upstash adapter when a REST response is lost after Redis ran the
 * script: the bridge (tests/helpers/upstash-bridge.ts) runs the command, then closes
 * the connection without answering, and @upstash/redis retries the request
 * (its `retry` option: 5 retries with exponential backoff on network errors),
 * so an already applied script runs a second time.
 *
 * Invariants:
 * - a tool result delivered twice this way is applied once: one
 *   `tool_result_received` event, one mail item, and the retry answers
 *   `duplicate` with the stored record (the caller learns it was taken);
 * - a commit replayed this way writes nothing twice: the store recognises
 *   its commit token and answers `applied` again, so the worker goes on
 *   without a conflict, and every turn ends with dense event ids, one
 *   tool_call event and one tool message per call;
 * - a replayed claim leaves the agent leased to nobody that runs it only
 *   until the lease expires; a replayed enqueue (same proposed turn id) adds
 *   no second task.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { createGatehouse, type Gatehouse } from "../../mod.ts";
import type { Message } from "../../mod.ts";
import { type ScriptName, scripts } from "../../store/lua/scripts.gen.ts";
import { sha1Hex } from "../../common/hex.ts";
import { upstashStore } from "../../store/upstash.ts";
import type { Store } from "../../store/port.ts";
import { FAULT_AGENT, type DispatchRecord, faultAgent, type FaultTaskInput } from "../helpers/fault-agent.ts";
import { type AcceptedResult, answerExternalCalls, checkRun, type EnqueuedTurn, readAllEvents } from "../helpers/fault-checks.ts";
import { sleep, waitFor } from "../helpers/processes.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { startUpstashBridge, type UpstashBridge } from "../helpers/upstash-bridge.ts";

const LEASE_MS = 500;

const redis = useRedisServer();
let bridge: UpstashBridge;
let admin: Redis;
const shas = new Map<string, ScriptName>();
const open: Gatehouse[] = [];

beforeAll(async () => {
  bridge = await startUpstashBridge({ redisUrl: redis.url });
  admin = new Redis(redis.url);
  // Load every script first, so a dropped EVALSHA is one that ran (not a NOSCRIPT answer).
  for (const [name, source] of Object.entries(scripts)) {
    const sha = await sha1Hex(source);
    shas.set(sha, name as ScriptName);
    expect(await admin.script("LOAD", source)).toBe(sha);
  }
});
afterAll(async () => {
  for (const gh of open) await gh.close();
  admin?.disconnect();
  await bridge?.close();
});

/** Matches a bridge request that runs the named script by EVALSHA. */
const runs = (name: ScriptName) => (cmds: string[][]) =>
  cmds.some((c) => c[0].toUpperCase() === "EVALSHA" && shas.get(c[1]) === name);

function setup(prefix: string) {
  const store: Store = upstashStore({ url: bridge.url, token: bridge.token, prefix });
  const dispatches: DispatchRecord[] = [];
  // What the workers' commits were answered (the runtime sees the store through this).
  const commitAnswers: string[] = [];
  const observed = new Proxy(store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (prop !== "commit") return v;
      return async (req: Parameters<Store["commit"]>[0]) => {
        const r = await target.commit(req);
        commitAnswers.push(r.status === "applied" ? "applied" : `conflict:${r.reason}`);
        return r;
      };
    },
  });
  const gh = createGatehouse({
    agents: [faultAgent({ worker: "local", pid: 0, record: async (r) => void dispatches.push(r) })],
    store: observed, leaseMs: LEASE_MS, concurrency: 2, pollMs: 20,
  });
  open.push(gh);
  const turns: EnqueuedTurn[] = [];
  const enqueue = async (agentId: string, label: string, external: boolean) => {
    const input: FaultTaskInput = { label, toolMs: [5, 5, 5, 5], external };
    const r = await store.enqueueTask({
      agentId, agentName: FAULT_AGENT, workerTarget: "default", input, options: {}, turnId: `turn_${label}`, now: Date.now(),
    });
    expect(r.status).toBe("enqueued");
    turns.push({ agentId, turnId: `turn_${label}`, label, external });
  };
  const allDone = async (agentIds: string[]) => {
    for (const id of agentIds) {
      const h = await store.getAgent(id);
      if (!h || h.activeTurnId !== null || h.pendingTasks > 0) return false;
    }
    return true;
  };
  return { store, gh, dispatches, turns, enqueue, allDone, commitAnswers };
}

/** Every tool call has exactly one tool message; no assistant message is repeated. */
function transcriptViolations(messages: Message[]): string[] {
  const v: string[] = [];
  const toolMsgs = new Map<string, number>();
  const asked = new Map<string, number>();
  for (const m of messages) {
    if (m.role === "tool" && m.toolCallId) toolMsgs.set(m.toolCallId, (toolMsgs.get(m.toolCallId) ?? 0) + 1);
    for (const c of m.toolCalls ?? []) asked.set(c.id, (asked.get(c.id) ?? 0) + 1);
  }
  for (const [id, n] of asked) {
    if (n !== 1) v.push(`call ${id} asked ${n} times`);
    if (toolMsgs.get(id) !== 1) v.push(`call ${id} has ${toolMsgs.get(id) ?? 0} tool messages`);
  }
  return v;
}

describe("faults: REST responses dropped after the script ran (Upstash adapter)", () => {
  it("a tool result whose response is dropped is applied once, and the client's retry answers duplicate with the stored record", async () => {
    const { store, gh, dispatches, turns, enqueue, allDone } = setup(`dropA_${Date.now().toString(36)}`);
    await enqueue("a1", "ext", true);
    gh.startWorker();
    const call = await waitFor("the external approve call", async () => {
      const h = await store.getAgent("a1");
      if (!h?.activeTurnId) return undefined;
      return (await store.getToolCalls("a1", h.activeTurnId)).find((c) => c.external && c.status === "pending");
    }, 10_000);
    const dropsBefore = bridge.stats.dropped;
    bridge.dropResponses(1, runs("deliver_tool_result"));
    const outcome = { ok: true as const, value: { approved: call.toolCallId } };
    const r = await store.deliverToolResult({
      agentId: "a1", turnId: call.turnId, toolCallId: call.toolCallId, outcome, afterExecution: "continue", source: "http", now: Date.now(),
    });
    expect(bridge.stats.dropped).toBe(dropsBefore + 1);
    expect(r.status).toBe("duplicate");
    expect(r.status === "duplicate" && r.record.outcome).toEqual(outcome);
    await waitFor("the turn to end", () => allDone(["a1"]), 15_000);

    const events = await readAllEvents(store, "a1");
    expect(events.filter((e) => e.type === "tool_result_received" && e.data.toolCallId === call.toolCallId)).toHaveLength(1);
    const mailApplied = events.filter((e) => e.type === "transition" && (e.data.event as { type: string; toolCallId?: string }).type === "TOOL_RESULT" &&
      (e.data.event as { toolCallId?: string }).toolCallId === call.toolCallId);
    expect(mailApplied).toHaveLength(1);
    const accepted = new Map<string, AcceptedResult>([[call.toolCallId, { agentId: "a1", turnId: call.turnId, toolCallId: call.toolCallId, value: outcome.value }]]);
    const { violations } = await checkRun({ store, turns, accepted, dispatches });
    expect(violations).toEqual([]);
    expect(transcriptViolations(await store.readMessages("a1"))).toEqual([]);
  }, 30_000);

  it("commits, claims and enqueues whose responses are dropped are replays: nothing is written twice and every turn ends done", async () => {
    const { store, gh, dispatches, turns, enqueue, allDone, commitAnswers } = setup(`dropB_${Date.now().toString(36)}`);
    const agentIds = ["b1", "b2", "b3"];
    const dropsBefore = bridge.stats.dropped;
    // A replayed enqueue carries the same proposed turn id: one task, one task_enqueued event.
    bridge.dropResponses(1, runs("enqueue_task"));
    await enqueue("b1", "b1-0", true);
    expect(bridge.stats.dropped).toBe(dropsBefore + 1);
    for (const id of agentIds) await enqueue(id, `${id}-1`, id !== "b3");
    await enqueue("b2", "b2-2", false);

    bridge.dropResponses(8, runs("commit"));
    bridge.dropResponses(2, runs("claim_next"));
    const accepted = new Map<string, AcceptedResult>();
    gh.startWorker();
    await waitFor("every turn to end", async () => {
      await answerExternalCalls(store, agentIds, accepted, Date.now);
      return allDone(agentIds);
    }, 60_000, 50);
    await sleep(50);
    expect(bridge.stats.dropped).toBe(dropsBefore + 1 + 8 + 2);

    const { violations, stats } = await checkRun({ store, turns, accepted, dispatches });
    expect(violations).toEqual([]);
    expect(stats.done).toBe(turns.length);
    // The replayed commits were recognised (answered applied), so no worker lost its claim over them.
    expect(commitAnswers.filter((a) => a !== "applied")).toEqual([]);
    expect(commitAnswers.length).toBeGreaterThanOrEqual(turns.length * 5);
    for (const id of agentIds) {
      expect(transcriptViolations(await store.readMessages(id))).toEqual([]);
      const events = await readAllEvents(store, id);
      const enqueued = events.filter((e) => e.type === "task_enqueued").map((e) => e.turnId);
      expect(enqueued).toEqual(turns.filter((t) => t.agentId === id).map((t) => t.turnId));
      // Each transition of the log is there once: a replayed commit would repeat a (turn, seq, event) run.
      const steps = events.filter((e) => e.type === "step" && e.data.phase === "completed").map((e) => `${e.turnId}/${e.data.step}`);
      expect(new Set(steps).size).toBe(steps.length);
    }
  }, 90_000);
});
