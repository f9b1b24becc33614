/**
 * Small tools for driving the actor host in tests: enqueue through the store,
 * read the log and the snapshot, models that record what they were asked,
 * stores that count or hold back commits, and promises opened by hand.
 */
import type { AgentDefinition, AnyAgent } from "../../agents/define.ts";
import { lruCache, type SnapshotCache } from "../../actors/conversation/cache.ts";
import { keptResults } from "../../actors/claim/kept-results.ts";
import type { HostDeps } from "../../actors/claim/context.ts";
import { type Clock, silentLogger } from "../../actors/runtime.ts";
import { initialTransition, transition } from "xstate";
import { agentMachine } from "../../machines/agent.ts";
import type { AgentContext } from "../../machines/types.ts";
import type { Model, ModelRequest, ModelResponse } from "../../models/types.ts";
import type { CommitRequest, CommitResult, Store } from "../../store/port.ts";
import type { StoredEvent } from "../../common/events.ts";
import type { Message } from "../../common/message.ts";
import type { AgentHead, TaskOptions } from "../../store/types.ts";

export interface Deferred<T> {
  promise: Promise<T>;
  resolve(v: T): void;
  reject(e: unknown): void;
  readonly settled: boolean;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  let settled = false;
  const promise = new Promise<T>((res, rej) => {
    resolve = (v) => {
      settled = true;
      res(v);
    };
    reject = (e) => {
      settled = true;
      rej(e);
    };
  });
  return {
    promise,
    resolve,
    reject,
    get settled() {
      return settled;
    },
  };
}

let turnSeq = 0;

/** Enqueues a task straight into the store (as the tasks route does) and returns its turn id. */
export async function enqueue(
  store: Store,
  clock: Clock,
  agentId: string,
  agent: AnyAgent | AgentDefinition<any>,
  input: unknown,
  opts: { idempotencyKey?: string; options?: TaskOptions } = {},
): Promise<{ status: string; turnId: string }> {
  const r = await store.enqueueTask({
    agentId,
    agentName: agent.name,
    workerTarget: agent.workerTarget,
    input,
    options: opts.options ?? {},
    ...(opts.idempotencyKey !== undefined ? { idempotencyKey: opts.idempotencyKey } : {}),
    turnId: `turn_${++turnSeq}`,
    now: clock.now(),
  });
  if (r.status === "definition_conflict") throw new Error(`agent id ${agentId} is bound to ${r.boundTo}`);
  if (r.status === "agent_deleted") throw new Error(`agent id ${agentId} was deleted`);
  if (r.status === "too_many_delayed") throw new Error(`agent id ${agentId} holds ${r.limit} delayed tasks`);
  return r;
}

export async function head(store: Store, agentId: string): Promise<AgentHead> {
  const h = await store.getAgent(agentId);
  if (!h) throw new Error(`no agent ${agentId}`);
  return h;
}

export async function ctxOf(store: Store, agentId: string): Promise<AgentContext> {
  const h = await head(store, agentId);
  return (h.snapshot as { context: AgentContext }).context;
}

export async function eventsOf(store: Store, agentId: string, type?: string): Promise<StoredEvent[]> {
  const all = await store.readEvents(agentId, 0, 100_000);
  return type ? all.filter((e) => e.type === type) : all;
}

/** The machine events of the agent's `transition` log entries, in order. */
export async function transitionsOf(store: Store, agentId: string): Promise<Array<{ from: string; to: string; event: any }>> {
  return (await eventsOf(store, agentId, "transition")).map((e) => e.data as { from: string; to: string; event: any });
}

/**
 * Replays the agent's logged machine events from the initial snapshot with the
 * pure transition function and returns the persisted snapshot it arrives at.
 */
export async function replayLog(store: Store, agentId: string): Promise<unknown> {
  let [s] = initialTransition(agentMachine);
  for (const t of await transitionsOf(store, agentId)) {
    const before = s;
    [s] = transition(agentMachine, s, t.event);
    if (s === before) throw new Error(`logged event ${t.event.type} changed nothing on replay (from ${t.from})`);
    if (s.value !== t.to) throw new Error(`logged ${t.from} -> ${t.to} replays to ${String(s.value)}`);
  }
  return JSON.parse(JSON.stringify(agentMachine.getPersistedSnapshot(s)));
}

export const toolMessages = (msgs: Message[], toolCallId: string) => msgs.filter((m) => m.role === "tool" && m.toolCallId === toolCallId);

/** A model that answers with `respond` and keeps every request it received (a deep copy). */
export function recordingModel(
  respond: (req: ModelRequest, index: number) => ModelResponse | Promise<ModelResponse>,
): Model & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = [];
  return {
    name: "recording",
    requests,
    async generate(req) {
      const { signal, onChunk, ...rest } = req;
      requests.push({ ...structuredClone(rest), signal, ...(onChunk ? { onChunk } : {}) });
      const res = await respond(req, requests.length - 1);
      if (res.text && onChunk) for (const piece of res.text.match(/\S+\s*|\s+/g) ?? []) onChunk(piece);
      return structuredClone(res);
    },
  };
}

export interface CommitLogEntry {
  workerId: string;
  epoch: number;
  status: CommitResult["status"];
  reason?: string;
}

/**
 * Wraps a store: every commit is logged with its result; `hold(workerId)`
 * makes that worker's next commit wait until the returned deferred is
 * resolved (with a result to return instead, or `null` to let it through).
 */
export function observedStore(inner: Store): Store & {
  commits: CommitLogEntry[];
  hold(workerId: string, skip?: number): { started: Promise<void>; release: Deferred<CommitResult | null> };
} {
  const commits: CommitLogEntry[] = [];
  const holds = new Map<string, { skip: number; started: Deferred<void>; release: Deferred<CommitResult | null> }>();
  return {
    ...inner,
    commits,
    hold(workerId, skip = 0) {
      const h = { skip, started: deferred<void>(), release: deferred<CommitResult | null>() };
      holds.set(workerId, h);
      return { started: h.started.promise, release: h.release };
    },
    async commit(req: CommitRequest): Promise<CommitResult> {
      const h = holds.get(req.workerId);
      if (h) {
        if (h.skip > 0) h.skip--;
        else {
          holds.delete(req.workerId);
          h.started.resolve();
          const instead = await h.release.promise;
          if (instead) {
            commits.push({ workerId: req.workerId, epoch: req.epoch, status: instead.status, reason: "held" });
            return instead;
          }
        }
      }
      const r = await inner.commit(req);
      commits.push({ workerId: req.workerId, epoch: req.epoch, status: r.status, ...(r.status === "conflict" ? { reason: r.reason } : {}) });
      return r;
    },
  };
}

/** The host's entry point, for drivers outside tests (bench/history-cost.ts) that may only reach the actors through here. */
export { runClaim } from "../../actors/host/run-claim.ts";

/** Host dependencies like createGatehouse() builds them, for calling runClaim() directly. */
export function hostDeps(store: Store, agents: AnyAgent[], clock: Clock, over: Partial<HostDeps> & { cache?: SnapshotCache } = {}): HostDeps {
  return {
    store,
    agents: new Map(agents.map((a) => [a.name, a])),
    clock,
    logger: silentLogger,
    cache: lruCache(),
    keptResults: keptResults(),
    leaseMs: 30_000,
    externalToolTimeoutMs: 600_000,
    toolTimeoutMs: 60_000,
    verifierBackoffMs: 1_000,
    ...over,
  };
}

/** Waits (real time, polling) until `cond` holds; fails after `ms`. */
export async function until(cond: () => boolean | Promise<boolean>, ms = 2_000, what = "condition"): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}
