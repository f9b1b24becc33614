/**
 * The store conformance suite: one test per invariant of store/port.ts, plus
 * the concurrency properties the product relies on. Every adapter runs it
 * unchanged:
 *
 * @example
 * storeConformance("memory", async () => ({ store: memoryStore(), cleanup: async () => {} }));
 *
 * `make()` is called once per test and must return an empty store (a fresh
 * key prefix is enough). `open()`, when given, opens another client on the
 * same data; the concurrency tests spread their calls over several clients
 * with it. Every store it returns is closed by the test; `cleanup()` runs
 * after that. `state` reads the whole stored state of one agent
 * (tests/helpers/store-state.ts): every operation that must write nothing is
 * checked by comparing it before and after, so a write before a refusal
 * (to tasks, tool calls, mail, deadlines, bells, verdicts) fails the test.
 */
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { watchdogTick } from "../../actors/pool/watchdog.ts";
import type {
  ClaimFailureRequest,
  ClaimFailureResult,
  ClaimResult,
  CommitRequest,
  DeliverToolResultRequest,
  EnqueueTaskRequest,
  Store,
  TurnEnd,
} from "../../store/port.ts";
import type { NewEvent } from "../../common/events.ts";
import { compactEvents } from "../../common/event-form.ts";
import type { Message } from "../../common/message.ts";
import type { Outcome } from "../../common/outcome.ts";
import type { MailItem, ToolCallRecord } from "../../store/types.ts";
import { NOTHING, omitHeadFields, type StateReader, statesOf, withIndexes } from "../helpers/store-state.ts";
import { toolRegistryConformance } from "./store-conformance-registry.ts";
import { approvalsConformance } from "./store-conformance-approvals.ts";
import { cancelResultsConformance } from "./store-conformance-cancel-results.ts";
import { scheduleConformance } from "./store-conformance-schedules.ts";
import { concurrencyConformance } from "./store-conformance-concurrency.ts";
import { textConformance } from "./store-conformance-text.ts";
import { enqueueClaimConformance } from "./store-conformance-enqueue-claim.ts";

export interface ConformanceHandle {
  store: Store;
  cleanup(): Promise<void>;
  /** Opens another client on the same data (optional). */
  open?(): Promise<Store>;
  /** Reads the whole stored state of one agent of this store. */
  state: StateReader;
  /** How many idempotency entries the store keeps for an agent (invariant `idempotency-entry-with-key`; read from the adapter's internals). */
  idempotencyEntries(agentId: string): Promise<number>;
  /** Stores a tool registry entry as given, bypassing the port (entries written by older versions; invariant `tool-registry`). */
  putRawToolEntry?(role: string, entry: unknown): Promise<void>;
  /** Drops an agent's events with id <= `through` and records them as trimmed, bypassing retention (which never cuts within a commit); the log must be untrimmed before. */
  cutEvents?(agentId: string, through: number): Promise<void>;
  /** Script calls the backing store has served so far (script stores: EVALSHA and EVAL); absent: not counted. */
  scriptCalls?(): Promise<number>;
}

const T0 = 1_700_000_000_000;
const LEASE = 10_000;
const TARGET = "default";

type Claimed = Extract<ClaimResult, { status: "claimed" }>;

export function storeConformance(name: string, make: () => Promise<ConformanceHandle>, opts: { sharded?: boolean } = {}): void {
  const sharded = opts.sharded === true;
  describe(`store conformance: ${name}`, () => {
    let h: ConformanceHandle;
    let store: Store;
    let extra: Store[] = [];
    let turnSeq = 0;

    beforeEach(async () => {
      h = await make();
      store = h.store;
      extra = [];
      turnSeq = 0;
    });
    afterEach(async () => {
      for (const s of extra) await s.close();
      await store.close();
      await h.cleanup();
    });

    /** `n` clients on the same data (the main store plus opened peers when the adapter can). */
    async function clients(n: number): Promise<Store[]> {
      const out = [store];
      if (h.open) {
        for (let i = 1; i < n; i++) {
          const s = await h.open();
          extra.push(s);
          out.push(s);
        }
      }
      return out;
    }

    toolRegistryConformance(() => ({ store, clients, putRawToolEntry: h.putRawToolEntry }));
    approvalsConformance(() => ({ store, clients, state: h.state }));
    cancelResultsConformance(() => ({ store, state: h.state }));
    scheduleConformance(() => ({ store, clients, state: h.state }));
    concurrencyConformance(() => ({ store, clients, sharded }), sharded);
    textConformance(() => ({ store }));
    enqueueClaimConformance(() => ({ store }));

    const freshTurn = () => `turn_${++turnSeq}`;

    /** The whole stored state of the given agents (default a1), for before/after comparisons. */
    const states = (...agentIds: string[]) => statesOf(h.state, agentIds.length > 0 ? agentIds : ["a1"]);

    async function enqueue(over: Partial<EnqueueTaskRequest> = {}) {
      const req: EnqueueTaskRequest = {
        agentId: "a1",
        agentName: "calc",
        workerTarget: TARGET,
        input: { q: "1+2" },
        options: {},
        turnId: freshTurn(),
        now: T0,
        ...over,
      };
      const r = await store.enqueueTask(req);
      return { req, r };
    }

    async function claimOk(agentId = "a1", workerId = "w1", now = T0, leaseMs = LEASE, s = store): Promise<Claimed> {
      const c = await s.claim({ agentId, workerId, leaseMs, now });
      if (c.status !== "claimed") throw new Error(`expected claimed, got ${JSON.stringify(c)}`);
      return c;
    }

    /** A commit of the claim `c` that changes nothing but the version, unless overridden. */
    function commitOf(c: Claimed, workerId: string, over: Partial<CommitRequest> = {}): CommitRequest {
      return {
        agentId: c.agentId,
        workerId,
        epoch: c.epoch,
        expectedVersion: c.head.version,
        turnId: c.head.activeTurnId,
        snapshot: { value: "running", n: 1 },
        state: "running",
        activeTurnId: c.head.activeTurnId,
        events: [],
        messages: [],
        recordToolCalls: [],
        resolveToolCalls: [],
        ackMailThrough: 0,
        release: null,
        leaseMs: LEASE,
        now: T0 + 1,
        ...over,
      };
    }

    function toolCall(turnId: string, toolCallId: string, deadline: number, external = true) {
      return { turnId, toolCallId, name: "ask", args: { q: toolCallId }, external, deadline };
    }

    /** Claims a1's first task and records external tool calls with the given deadlines. */
    async function withPendingCalls(deadlines: Record<string, number>) {
      const { req } = await enqueue();
      const c = await claimOk();
      const rec = Object.entries(deadlines).map(([id, d]) => toolCall(req.turnId, id, d));
      const r = await store.commit(commitOf(c, "w1", { recordToolCalls: rec, state: "waiting-tools" }));
      expect(r.status).toBe("applied");
      return { turnId: req.turnId, claim: c, version: (r as { version: number }).version };
    }

    const ok: Outcome = { ok: true, value: "yes" };
    const timeout: Outcome = { ok: false, error: { type: "timeout", message: "late", retryable: true } };

    async function allEvents(agentId = "a1") {
      return store.readEvents(agentId, 0, 10_000);
    }

    // ---------------------------------------------------------------- enqueue

    describe("enqueueTask", () => {
      it("creates the agent head bound to the definition with one pending task", async () => {
        expect(await store.getAgent("a1")).toBeNull();
        const { req, r } = await enqueue();
        expect(r).toEqual({ status: "enqueued", turnId: req.turnId });
        const head = await store.getAgent("a1");
        expect(head).toEqual({
          agentId: "a1",
          agentName: "calc",
          workerTarget: TARGET,
          createdAt: T0,
          updatedAt: T0,
          activeTurnId: null,
          currentTask: null,
          epoch: 0,
          version: 0,
          snapshot: null,
          state: "idle",
          leaseOwner: null,
          leaseUntil: 0,
          runnableAt: null,
          pendingTasks: 1,
          pendingMail: 0,
          messageCount: 0,
          lastEventId: 1,
          eventsTrimmedThrough: 0,
          messagesTrimmedThrough: 0,
        });
      });

      it("stores the input once: task_enqueued carries the turn id, options and inputBytes; getTurn and the claim carry the input", async () => {
        const input = { q: "x", n: [1, 2], s: "é\"" };
        const { req } = await enqueue({ input, options: { verifyMaxAttempts: 2 } });
        const ev = await allEvents();
        expect(ev).toEqual([
          {
            id: 1,
            at: T0,
            turnId: req.turnId,
            type: "task_enqueued",
            data: { turnId: req.turnId, options: { verifyMaxAttempts: 2 }, inputBytes: new TextEncoder().encode(JSON.stringify(input)).byteLength },
          },
        ]);
        expect(await store.getTurn("a1", req.turnId)).toEqual({ turnId: req.turnId, status: "queued", input });
        const c = await claimOk();
        expect(c.task).toEqual({ turnId: req.turnId, input, options: { verifyMaxAttempts: 2 }, enqueuedAt: T0 });
      });

      it("hands a task's spend limits and delegation link back with every claim of its turn, as given", async () => {
        const options = {
          budget: { maxTokensPerTurn: 100, maxCostPerTurn: 0.25 },
          delegation: { parentAgentId: "p:1", parentAgentName: "lead", toolName: "helper", parentTurnId: "turn_p", toolCallId: "call_1", depth: 2 },
        };
        const { req } = await enqueue({ input: "x", options });
        const c = await claimOk();
        expect(c.task).toEqual({ turnId: req.turnId, input: "x", options, enqueuedAt: T0 });
        // A later claim of the same turn (a takeover) carries the task again.
        const again = await store.claim({ agentId: "a1", workerId: "w2", leaseMs: LEASE, now: T0 + LEASE + 1 });
        expect(again.status === "claimed" && again.task).toEqual({ turnId: req.turnId, input: "x", options, enqueuedAt: T0 });
      });

      it("readMessages answers a stored input reference with the turn's input as the content (text as is, objects as JSON)", async () => {
        const text = await enqueue({ input: "plain \"text\" / é" });
        const obj = await enqueue({ input: { q: "a/b", n: [], o: {} }, now: T0 + 1 });
        const c = await claimOk();
        const r = await store.commit(commitOf(c, "w1", {
          messages: [
            { role: "user", content: "", inputOf: text.req.turnId },
            { role: "assistant", content: "ok" },
            { role: "user", content: "", inputOf: obj.req.turnId },
            { role: "user", content: "", inputOf: "turn_unknown" },
          ],
        }));
        expect(r.status).toBe("applied");
        expect(await store.readMessages("a1")).toEqual([
          { role: "user", content: "plain \"text\" / é" },
          { role: "assistant", content: "ok" },
          { role: "user", content: JSON.stringify({ q: "a/b", n: [], o: {} }) },
          { role: "user", content: "" },
        ]);
        expect(await store.readMessages("a1", 2)).toEqual([
          { role: "user", content: JSON.stringify({ q: "a/b", n: [], o: {} }) },
          { role: "user", content: "" },
        ]);
      });

      it("answers duplicate with the first turn id for a repeated idempotency key and adds nothing", async () => {
        const first = await enqueue({ idempotencyKey: "k1" });
        const before = await states();
        const second = await enqueue({ idempotencyKey: "k1", now: T0 + 5 });
        expect(second.r).toEqual({ status: "duplicate", turnId: first.req.turnId });
        expect(await states()).toEqual(before);
      });

      it("keeps an idempotency entry only for tasks that carry a key", async () => {
        for (let i = 0; i < 5; i++) await enqueue();
        expect(await h.idempotencyEntries("a1")).toBe(0);
        await enqueue({ idempotencyKey: "k1" });
        await enqueue({ idempotencyKey: "k1" });
        await enqueue();
        expect(await h.idempotencyEntries("a1")).toBe(1);
        expect((await store.getAgent("a1"))!.pendingTasks).toBe(7);
      });

      it("keeps idempotency keys per agent", async () => {
        await enqueue({ idempotencyKey: "k1" });
        const other = await enqueue({ agentId: "a2", idempotencyKey: "k1" });
        expect(other.r).toEqual({ status: "enqueued", turnId: other.req.turnId });
      });

      it("refuses a task for another definition with definition_conflict and writes nothing", async () => {
        await enqueue();
        const before = await states();
        const { r } = await enqueue({ agentName: "other", idempotencyKey: "k2", workerTarget: "other" });
        expect(r).toEqual({ status: "definition_conflict", boundTo: "calc" });
        expect(await states()).toEqual(before);
        // The key of the refused task was not recorded.
        const again = await enqueue({ idempotencyKey: "k2" });
        expect(again.r.status).toBe("enqueued");
      });

      it("rings the bell of the agent's worker target at `now`", async () => {
        expect(await store.nextReadyAt(TARGET)).toBeNull();
        await enqueue({ now: T0 + 7 });
        expect(await store.nextReadyAt(TARGET)).toBe(T0 + 7);
        expect(await store.nextReadyAt("other")).toBeNull();
      });

      it("stores the task input and options as given and hands them out at claim", async () => {
        const { req } = await enqueue({ input: { text: "héllo \"quoted\" \n line", list: [null, true, 1.5] }, options: { verifyMaxAttempts: 3 }, idempotencyKey: "key-1" });
        const c = await claimOk();
        expect(c.task).toEqual({
          turnId: req.turnId,
          input: { text: "héllo \"quoted\" \n line", list: [null, true, 1.5] },
          options: { verifyMaxAttempts: 3 },
          enqueuedAt: T0,
          idempotencyKey: "key-1",
        });
      });
    });

    // ---------------------------------------------------------------- claim

    describe("claim", () => {
      it("answers agent_not_found for an unknown agent", async () => {
        expect(await store.claim({ agentId: "nobody", workerId: "w1", leaseMs: LEASE, now: T0 })).toEqual({ status: "agent_not_found" });
        expect(await states("nobody")).toEqual({ nobody: NOTHING });
      });

      it("takes the oldest task, increments epoch and leases the agent until now + leaseMs", async () => {
        const first = await enqueue();
        await enqueue({ now: T0 + 1 });
        const c = await claimOk("a1", "w1", T0 + 2);
        expect(c.agentId).toBe("a1");
        expect(c.epoch).toBe(1);
        expect(c.task!.turnId).toBe(first.req.turnId);
        expect(c.mail).toEqual([]);
        expect(c.head.activeTurnId).toBe(first.req.turnId);
        // The task is handed out with its input; the head keeps it without (the input is stored once).
        expect(c.task).toEqual({ ...c.head.currentTask, input: { q: "1+2" } });
        expect(c.head.currentTask).not.toHaveProperty("input");
        expect(c.head.epoch).toBe(1);
        expect(c.head.leaseOwner).toBe("w1");
        expect(c.head.leaseUntil).toBe(T0 + 2 + LEASE);
        expect(c.head.pendingTasks).toBe(1);
        expect(await store.getAgent("a1")).toEqual(c.head);
      });

      it("sets the ready score to the lease end (visibility timeout)", async () => {
        await enqueue();
        await claimOk("a1", "w1", T0 + 3);
        expect(await store.nextReadyAt(TARGET)).toBe(T0 + 3 + LEASE);
      });

      it("answers busy with the lease end while another worker holds the agent", async () => {
        await enqueue();
        await claimOk("a1", "w1", T0);
        const before = await states();
        const c = await store.claim({ agentId: "a1", workerId: "w2", leaseMs: LEASE, now: T0 + LEASE - 1 });
        expect(c).toEqual({ status: "busy", agentId: "a1", leaseUntil: T0 + LEASE });
        expect(await states()).toEqual(before);
      });

      it("names the lease it took over: none for a free agent, the expired holder's otherwise", async () => {
        await enqueue();
        const first = await claimOk("a1", "w1", T0 + 1);
        expect(first.previousLease).toBeNull();
        // w1 dies holding the lease; after it runs out, w2 takes over.
        const second = await claimOk("a1", "w2", T0 + 1 + LEASE + 5);
        expect(second.previousLease).toEqual({ workerId: "w1", leaseUntil: T0 + 1 + LEASE, updatedAt: T0 + 1 });
        expect(second.head.leaseOwner).toBe("w2");
        // A released lease is no takeover.
        const applied = await store.commit(commitOf(second, "w2", { release: { runnableAt: T0 + LEASE * 3 }, now: T0 + 2 + LEASE }));
        expect(applied.status).toBe("applied");
        const third = await claimOk("a1", "w3", T0 + LEASE * 3);
        expect(third.previousLease).toBeNull();
      });

      it("counts the due bells of a worker target (the ready-queue depth)", async () => {
        expect(await store.readyCount(TARGET, T0)).toBe(0);
        await enqueue({ agentId: "a1", now: T0 });
        await enqueue({ agentId: "a2", now: T0 + 10 });
        expect(await store.readyCount(TARGET, T0 + 5)).toBe(1);
        expect(await store.readyCount(TARGET, T0 + 10)).toBe(2);
        expect(await store.readyCount("other", T0 + 10)).toBe(0);
        // A claimed agent's bell moves to its lease end: not due now.
        await claimOk("a1", "w1", T0 + 10);
        expect(await store.readyCount(TARGET, T0 + 10)).toBe(1);
        expect(await store.readyCount(TARGET, T0 + 10 + LEASE)).toBe(2);
      });

      it("answers empty when nothing is claimable, changes nothing and drops the bell", async () => {
        await enqueue();
        const c = await claimOk();
        await store.commit(commitOf(c, "w1", { release: { runnableAt: null } }));
        // A second task rings, but it is not claimable while the first turn is active.
        await enqueue({ now: T0 + 4 });
        expect(await store.nextReadyAt(TARGET)).toBe(T0 + 4);
        const before = await states();
        const e = await store.claim({ agentId: "a1", workerId: "w2", leaseMs: LEASE, now: T0 + 5 });
        expect(e).toEqual({ status: "empty", agentId: "a1" });
        // The only write: the bell is gone.
        expect(await states()).toEqual({ a1: withIndexes(before.a1, { ready: {} }) });
        expect(await store.nextReadyAt(TARGET)).toBeNull();
      });

      it("leaves a second task queued while a turn is active and hands it out once the turn ended", async () => {
        const first = await enqueue();
        const second = await enqueue({ now: T0 + 1 });
        const c = await claimOk();
        expect(c.task!.turnId).toBe(first.req.turnId);
        const r = await store.commit(commitOf(c, "w1", { release: { runnableAt: null } }));
        expect(r.status).toBe("applied");
        expect((await store.claim({ agentId: "a1", workerId: "w1", leaseMs: LEASE, now: T0 + 2 })).status).toBe("empty");
        // A cancel brings the first turn back to a worker, which ends it.
        await store.requestCancel({ agentId: "a1", reason: "stop", now: T0 + 4 });
        const c3 = await claimOk("a1", "w2", T0 + 5);
        expect(c3.task!.turnId).toBe(first.req.turnId);
        const end = await store.commit(commitOf(c3, "w2", {
          now: T0 + 6, state: "cancelled", activeTurnId: null, ackMailThrough: c3.mail[0].seq, release: { runnableAt: null },
        }));
        expect(end.status).toBe("applied");
        const head = await store.getAgent("a1");
        expect(head!.activeTurnId).toBeNull();
        expect(head!.currentTask).toBeNull();
        // The waiting task makes the agent claimable again at once.
        expect(await store.nextReadyAt(TARGET)).toBe(T0 + 6);
        const c4 = await claimOk("a1", "w3", T0 + 7);
        expect(c4.task!.turnId).toBe(second.req.turnId);
        expect(c4.head.pendingTasks).toBe(0);
      });

      it("increments epoch on every successful claim", async () => {
        await enqueue();
        const c1 = await claimOk("a1", "w1", T0);
        // w1 dies; the lease runs out and w2 takes over the same turn.
        const c2 = await claimOk("a1", "w2", T0 + LEASE);
        expect([c1.epoch, c2.epoch]).toEqual([1, 2]);
        const r = await store.commit(commitOf(c2, "w2", { now: T0 + LEASE + 1, release: { runnableAt: T0 + LEASE + 2 } }));
        expect(r.status).toBe("applied");
        const c3 = await claimOk("a1", "w3", T0 + LEASE + 2);
        expect(c3.epoch).toBe(3);
      });

      it("lets another worker claim after the lease expired, and fences the old worker's commit without writing", async () => {
        await enqueue();
        const c1 = await claimOk("a1", "w1", T0);
        const c2 = await claimOk("a1", "w2", T0 + LEASE);
        expect(c2.task).toEqual(c1.task);
        const before = await states();
        const stale = await store.commit(commitOf(c1, "w1", {
          now: T0 + LEASE + 1,
          events: [{ type: "step", data: { phase: "started" } }],
          messages: [{ role: "assistant", content: "late" }],
          recordToolCalls: [toolCall(c1.task!.turnId, "call_1", T0 + 99)],
          ackMailThrough: 99,
          release: { runnableAt: null },
        }));
        expect(stale).toEqual({ status: "conflict", reason: "fenced" });
        expect(await states()).toEqual(before);
      });
    });

    // ---------------------------------------------------------------- claimNext

    describe("claimNext", () => {
      it("claims the agent whose bell is oldest first", async () => {
        await enqueue({ agentId: "late", now: T0 + 5 });
        await enqueue({ agentId: "early", now: T0 + 1 });
        await enqueue({ agentId: "middle", now: T0 + 3 });
        const order: string[] = [];
        for (let i = 0; i < 3; i++) {
          const c = await store.claimNext({ workerTarget: TARGET, workerId: `w${i}`, leaseMs: LEASE, now: T0 + 10 });
          expect(c.status).toBe("claimed");
          order.push((c as Claimed).agentId);
        }
        expect(order).toEqual(["early", "middle", "late"]);
        expect(await store.claimNext({ workerTarget: TARGET, workerId: "w9", leaseMs: LEASE, now: T0 + 10 })).toEqual({ status: "empty" });
      });

      it("with agentNames claims only agents of those names and leaves the others due, untouched (invariant `definition-sets`)", async () => {
        for (let i = 0; i < 25; i++) await enqueue({ agentId: `f${String(i).padStart(2, "0")}`, agentName: "other", now: T0 + 1 });
        await enqueue({ agentId: "mine", agentName: "calc", now: T0 + 2 });
        await enqueue({ agentId: "later", agentName: "calc", now: T0 + 50 });
        const before = await h.state("f00");
        const c = await store.claimNext({ workerTarget: TARGET, workerId: "w1", leaseMs: LEASE, now: T0 + 10, agentNames: ["calc"] });
        expect(c.status).toBe("claimed");
        expect((c as Claimed).agentId).toBe("mine");
        const none = await store.claimNext({ workerTarget: TARGET, workerId: "w1", leaseMs: LEASE, now: T0 + 10, agentNames: ["calc", "x"] });
        expect(none.status).toBe("empty");
        expect((none as { foreign?: number }).foreign).toBeGreaterThan(0);
        // The left agents are exactly as they were, their bells still due: a worker that has "other" takes them.
        expect(await h.state("f00")).toEqual(before);
        expect(await store.nextReadyAt(TARGET)).toBe(T0 + 1);
        const other = await store.claimNext({ workerTarget: TARGET, workerId: "w2", leaseMs: LEASE, now: T0 + 10, agentNames: ["other"] });
        expect((other as Claimed).head.agentName).toBe("other");
        // Without agentNames any agent is claimed.
        const any = await store.claimNext({ workerTarget: TARGET, workerId: "w3", leaseMs: LEASE, now: T0 + 10 });
        expect((any as Claimed).head.agentName).toBe("other");
        await expect(store.claimNext({ workerTarget: TARGET, workerId: "w1", leaseMs: LEASE, now: T0 + 10, agentNames: ["a,b"] })).rejects.toThrow(/agent name/);
      });

      it("with agentVersions leaves an agent whose turn is pinned to a version it lacks, untouched; the pin holds for its turn only (invariant `turn-versions`)", async () => {
        await enqueue({ agentId: "p", agentName: "calc", now: T0 + 1 });
        const c = await claimOk("p", "w1", T0 + 2);
        const turnId = c.task!.turnId;
        // The turn's start pins it to "1"; the lease is handed back with the turn still active.
        const pinned = await store.commit(commitOf(c, "w1", { now: T0 + 3, turnVersion: { turnId, version: "1" }, release: { runnableAt: T0 + 3 } }));
        expect(pinned.status).toBe("applied");
        const held = await h.state("p");
        const v2 = { agentNames: ["calc"], agentVersions: { calc: ["2"] } };
        const left = await store.claimNext({ workerTarget: TARGET, workerId: "w2", leaseMs: LEASE, now: T0 + 10, ...v2 });
        expect(left).toEqual({ status: "empty", foreign: 1 });
        expect(await h.state("p")).toEqual(held);
        expect(await store.nextReadyAt(TARGET)).toBe(T0 + 3);
        // A name without listed versions, or a caller that lists "1", claims it.
        const again = await store.claimNext({ workerTarget: TARGET, workerId: "w3", leaseMs: LEASE, now: T0 + 10, agentNames: ["calc"], agentVersions: { calc: ["2", "1"] } });
        expect(again.status).toBe("claimed");
        const head = (again as Claimed).head;
        expect([head.turnVersion, head.versionTurn, head.activeTurnId]).toEqual(["1", turnId, turnId]);
        // The turn ends: the pin no longer holds, and the next turn is claimed by a caller with "2" only.
        const ended = await store.commit(commitOf(again as Claimed, "w3", { now: T0 + 11, state: "done", activeTurnId: null, release: { runnableAt: null } }));
        expect(ended.status).toBe("applied");
        await enqueue({ agentId: "p", agentName: "calc", now: T0 + 12 });
        const next = await store.claimNext({ workerTarget: TARGET, workerId: "w2", leaseMs: LEASE, now: T0 + 20, ...v2 });
        expect((next as Claimed).agentId).toBe("p");
        await expect(store.commit(commitOf(next as Claimed, "w2", { now: T0 + 21, turnVersion: { turnId, version: "bad version" } }))).rejects.toThrow(/version/);
      });

      it("announceDefinitionSet carries versions and formats, and withdraw removes the set (invariants `definition-sets`, `turn-versions`)", async () => {
        await store.announceDefinitionSet({ agents: ["a"], versions: { a: ["2", "1"] }, formats: ["wire.1", "snapshot.1"], now: T0, ttlMs: 1_000 });
        expect(await store.announceDefinitionSet({ agents: ["a"], now: T0 + 1, ttlMs: 1_000 })).toEqual({
          others: [{ agents: ["a"], versions: { a: ["2", "1"] }, formats: ["snapshot.1", "wire.1"], seenAt: T0 }],
        });
        await store.announceDefinitionSet({ agents: ["a"], versions: { a: ["2", "1"] }, formats: ["wire.1", "snapshot.1"], now: T0 + 2, ttlMs: 1_000, withdraw: true });
        expect(await store.announceDefinitionSet({ agents: ["a"], now: T0 + 3, ttlMs: 1_000 })).toEqual({ others: [] });
      });

      it("announceDefinitionSet records a set and answers the others still within their ttl (invariant `definition-sets`)", async () => {
        expect(await store.announceDefinitionSet({ agents: ["b", "a"], now: T0, ttlMs: 1_000 })).toEqual({ others: [] });
        expect(await store.announceDefinitionSet({ agents: ["a", "b"], now: T0 + 10, ttlMs: 1_000 })).toEqual({ others: [] });
        expect(await store.announceDefinitionSet({ agents: ["c"], now: T0 + 20, ttlMs: 1_000 })).toEqual({ others: [{ agents: ["a", "b"], seenAt: T0 + 10 }] });
        // "a,b" was last seen at T0 + 10: past its ttl it is dropped.
        expect(await store.announceDefinitionSet({ agents: ["c"], now: T0 + 1_011, ttlMs: 1_000 })).toEqual({ others: [] });
        expect(await store.announceDefinitionSet({ agents: ["a", "b"], now: T0 + 1_012, ttlMs: 1_000 })).toEqual({ others: [{ agents: ["c"], seenAt: T0 + 1_011 }] });
      });

      it("skips agents held by another worker and claims the next due one", async () => {
        await enqueue({ agentId: "held", now: T0 });
        await claimOk("held", "w1", T0 + 2);
        // Another task rings `held` again (score = now) while it is leased: its bell is the oldest.
        await enqueue({ agentId: "held", now: T0 + 3 });
        await enqueue({ agentId: "free", now: T0 + 4 });
        const c = await store.claimNext({ workerTarget: TARGET, workerId: "w2", leaseMs: LEASE, now: T0 + 5 });
        expect(c.status).toBe("claimed");
        expect((c as Claimed).agentId).toBe("free");
        // The skipped bell was moved to the holder's lease end.
        expect(await store.nextReadyAt(TARGET)).toBe(T0 + 2 + LEASE);
      });

      it("skips bells with nothing behind them and drops them", async () => {
        await enqueue({ agentId: "idle", now: T0 });
        const c = await claimOk("idle", "w1", T0 + 1);
        await store.commit(commitOf(c, "w1", { now: T0 + 2, release: { runnableAt: null } }));
        await enqueue({ agentId: "work", now: T0 + 6 });
        // `idle` has an active turn, so its new task is not claimable: the older bell rings for nothing.
        await enqueue({ agentId: "idle", now: T0 + 5 });
        const n = await store.claimNext({ workerTarget: TARGET, workerId: "w2", leaseMs: LEASE, now: T0 + 7 });
        expect(n.status).toBe("claimed");
        expect((n as Claimed).agentId).toBe("work");
        expect(await store.nextReadyAt(TARGET)).toBe(T0 + 7 + LEASE);
        expect((await store.getAgent("idle"))!.epoch).toBe(1);
      });

      it("answers empty when no bell is due yet and keeps future bells", async () => {
        await enqueue({ now: T0 });
        const c = await claimOk("a1", "w1", T0 + 1);
        await store.commit(commitOf(c, "w1", { now: T0 + 2, release: { runnableAt: T0 + 100 } }));
        expect(await store.claimNext({ workerTarget: TARGET, workerId: "w2", leaseMs: LEASE, now: T0 + 99 })).toEqual({ status: "empty" });
        expect(await store.nextReadyAt(TARGET)).toBe(T0 + 100);
        const n = await store.claimNext({ workerTarget: TARGET, workerId: "w2", leaseMs: LEASE, now: T0 + 100 });
        expect(n.status).toBe("claimed");
      });

      it("claims only agents of its own worker target", async () => {
        await enqueue({ agentId: "b1", workerTarget: "gpu", now: T0 });
        expect(await store.claimNext({ workerTarget: TARGET, workerId: "w1", leaseMs: LEASE, now: T0 + 1 })).toEqual({ status: "empty" });
        const c = await store.claimNext({ workerTarget: "gpu", workerId: "w1", leaseMs: LEASE, now: T0 + 1 });
        expect((c as Claimed).agentId).toBe("b1");
        expect(c.status).toBe("claimed");
      });

      it("offers the agent of a dead worker again when its lease expires", async () => {
        await enqueue();
        const c1 = await store.claimNext({ workerTarget: TARGET, workerId: "w1", leaseMs: LEASE, now: T0 });
        expect(c1.status).toBe("claimed");
        expect(await store.claimNext({ workerTarget: TARGET, workerId: "w2", leaseMs: LEASE, now: T0 + LEASE - 1 })).toEqual({ status: "empty" });
        const c2 = await store.claimNext({ workerTarget: TARGET, workerId: "w2", leaseMs: LEASE, now: T0 + LEASE });
        expect(c2.status).toBe("claimed");
        expect((c2 as Claimed).epoch).toBe(2);
        expect((c2 as Claimed).task).toEqual((c1 as Claimed).task);
      });
    });

    // ---------------------------------------------------------------- commit

    describe("commit", () => {
      it("applies: stores the snapshot, bumps version, appends events and messages", async () => {
        const { req } = await enqueue();
        const c = await claimOk();
        const messages: Message[] = [
          { role: "user", content: "1+2" },
          { role: "assistant", content: "", toolCalls: [{ id: "c1", name: "add", args: { a: 1 } }] },
          { role: "tool", content: "3", toolCallId: "c1", name: "add" },
        ];
        const events: NewEvent[] = [
          { type: "transition", data: { from: "idle", to: "running", event: { type: "TASK_STARTED" } } },
          { type: "step", data: { phase: "started", nested: { deep: [1, "two", null] } } },
        ];
        const snapshot = { value: "running", context: { turnId: req.turnId, text: "ünïcode ✓ \u2028" } };
        const r = await store.commit(commitOf(c, "w1", { snapshot, state: "running", messages, events, now: T0 + 20 }));
        expect(r).toEqual({ status: "applied", version: 1, lastEventId: 3, messagesTrimmedThrough: 0 });
        const head = await store.getAgent("a1");
        expect(head!.snapshot).toEqual(snapshot);
        expect(head!.state).toBe("running");
        expect(head!.version).toBe(1);
        expect(head!.updatedAt).toBe(T0 + 20);
        expect(head!.messageCount).toBe(3);
        expect(head!.lastEventId).toBe(3);
        expect(await store.readMessages("a1")).toEqual(messages);
        expect((await allEvents()).slice(1)).toEqual([
          { id: 2, at: T0 + 20, turnId: req.turnId, ...events[0] },
          { id: 3, at: T0 + 20, turnId: req.turnId, ...events[1] },
        ]);
      });

      it("keeps the lease without release: lease and ready score move to now + leaseMs", async () => {
        await enqueue();
        const c = await claimOk();
        await store.commit(commitOf(c, "w1", { now: T0 + 50 }));
        const head = await store.getAgent("a1");
        expect(head!.leaseOwner).toBe("w1");
        expect(head!.leaseUntil).toBe(T0 + 50 + LEASE);
        expect(await store.nextReadyAt(TARGET)).toBe(T0 + 50 + LEASE);
        expect((await store.claim({ agentId: "a1", workerId: "w2", leaseMs: LEASE, now: T0 + 51 })).status).toBe("busy");
      });

      it("refuses a version mismatch with conflict version and writes nothing", async () => {
        await enqueue();
        const c = await claimOk();
        expect((await store.commit(commitOf(c, "w1"))).status).toBe("applied");
        const before = await states();
        const r = await store.commit(commitOf(c, "w1", {
          now: T0 + 2, events: [{ type: "x", data: {} }], messages: [{ role: "user", content: "m" }],
          recordToolCalls: [toolCall(c.task!.turnId, "call_v", T0 + 99)], activeTurnId: null, release: { runnableAt: T0 + 3 },
        }));
        expect(r).toEqual({ status: "conflict", reason: "version" });
        expect(await states()).toEqual(before);
      });

      it("refuses a turn mismatch with conflict turn and writes nothing", async () => {
        await enqueue();
        const c = await claimOk();
        const before = await states();
        // A commit of another turn, recording tool calls of that turn: nothing of it may land.
        const r = await store.commit(commitOf(c, "w1", {
          turnId: "turn_other", events: [{ type: "x", data: {} }], messages: [{ role: "user", content: "m" }],
          recordToolCalls: [toolCall("turn_other", "call_1", T0 + 99), toolCall("turn_other", "call_2", T0 + 98)],
        }));
        expect(r).toEqual({ status: "conflict", reason: "turn" });
        expect(await states()).toEqual(before);
      });

      it("fences a commit of another worker id, and one made after the lease ran out", async () => {
        await enqueue();
        const c = await claimOk("a1", "w1", T0);
        const before = await states();
        const writes = { events: [{ type: "x", data: {} }], recordToolCalls: [toolCall(c.task!.turnId, "call_1", T0 + 99)] };
        expect(await store.commit(commitOf(c, "w2", writes))).toEqual({ status: "conflict", reason: "fenced" });
        expect(await store.commit(commitOf(c, "w1", { ...writes, now: T0 + LEASE }))).toEqual({ status: "conflict", reason: "fenced" });
        expect(await states()).toEqual(before);
      });

      it("fences a commit whose epoch is stale", async () => {
        await enqueue();
        const c = await claimOk("a1", "w1", T0);
        const before = await states();
        expect(await store.commit(commitOf(c, "w1", { epoch: c.epoch - 1, messages: [{ role: "user", content: "m" }] })))
          .toEqual({ status: "conflict", reason: "fenced" });
        expect(await states()).toEqual(before);
      });

      it("answers agent_not_found for an unknown agent", async () => {
        const r = await store.commit({
          agentId: "nobody", workerId: "w1", epoch: 1, expectedVersion: 0, turnId: null, snapshot: {}, state: "idle",
          activeTurnId: null, events: [], messages: [], recordToolCalls: [], resolveToolCalls: [], ackMailThrough: 0,
          release: null, leaseMs: LEASE, now: T0,
        });
        expect(r).toEqual({ status: "conflict", reason: "agent_not_found" });
        expect(await states("nobody")).toEqual({ nobody: NOTHING });
      });

      it("ends the turn: activeTurnId and currentTask become null and the lease is released", async () => {
        await enqueue();
        const c = await claimOk();
        const r = await store.commit(commitOf(c, "w1", { state: "done", activeTurnId: null, release: { runnableAt: null }, now: T0 + 9 }));
        expect(r.status).toBe("applied");
        const head = await store.getAgent("a1");
        expect(head!.activeTurnId).toBeNull();
        expect(head!.currentTask).toBeNull();
        expect(head!.leaseOwner).toBeNull();
        expect(head!.leaseUntil).toBe(0);
        expect(head!.runnableAt).toBeNull();
        expect(await store.nextReadyAt(TARGET)).toBeNull();
        expect((await store.claim({ agentId: "a1", workerId: "w2", leaseMs: LEASE, now: T0 + 10 })).status).toBe("empty");
      });

      it("keeps the task in currentTask until the turn ends", async () => {
        await enqueue();
        const c = await claimOk();
        await store.commit(commitOf(c, "w1", { state: "waiting-tools", release: { runnableAt: null } }));
        const { input, ...stored } = c.task!;
        expect(input).toEqual({ q: "1+2" });
        expect((await store.getAgent("a1"))!.currentTask).toEqual(stored);
        await store.requestCancel({ agentId: "a1", reason: "r", now: T0 + 2 });
        const c2 = await claimOk("a1", "w2", T0 + 3);
        expect(c2.task).toEqual(c.task);
        await store.commit(commitOf(c2, "w2", { now: T0 + 4, state: "cancelled", activeTurnId: null, ackMailThrough: c2.mail[0].seq }));
        expect((await store.getAgent("a1"))!.currentTask).toBeNull();
      });

      it("release with runnableAt: not claimable before it, claimable from it on", async () => {
        await enqueue();
        const c = await claimOk();
        await store.commit(commitOf(c, "w1", { state: "verifying", release: { runnableAt: T0 + 500 }, now: T0 + 10 }));
        const head = await store.getAgent("a1");
        expect(head!.runnableAt).toBe(T0 + 500);
        expect(await store.nextReadyAt(TARGET)).toBe(T0 + 500);
        expect((await store.claim({ agentId: "a1", workerId: "w2", leaseMs: LEASE, now: T0 + 499 })).status).toBe("empty");
        // The empty claim kept the future bell.
        expect(await store.nextReadyAt(TARGET)).toBe(T0 + 500);
        const c2 = await claimOk("a1", "w2", T0 + 500);
        expect(c2.head.runnableAt).toBe(T0 + 500);
        expect(c2.epoch).toBe(2);
      });

      it("release rings again when mail arrived during the claim", async () => {
        const { turnId, claim, version } = await withPendingCalls({ call_1: T0 + 60_000 });
        const d = await store.deliverToolResult({ agentId: "a1", turnId, toolCallId: "call_1", outcome: ok, afterExecution: "continue", source: "http", now: T0 + 5 });
        expect(d.status).toBe("accepted");
        // The worker still holds the lease and did not see the mail; it releases without acknowledging.
        const r = await store.commit(commitOf(claim, "w1", { expectedVersion: version, now: T0 + 6, release: { runnableAt: null } }));
        expect(r.status).toBe("applied");
        expect(await store.nextReadyAt(TARGET)).toBe(T0 + 6);
        const c2 = await store.claimNext({ workerTarget: TARGET, workerId: "w2", leaseMs: LEASE, now: T0 + 7 });
        expect(c2.status).toBe("claimed");
        expect((c2 as Claimed).mail.map((m) => m.kind)).toEqual(["tool_result"]);
      });
    });

    describe("turn start (invariant `turn-start`)", () => {
      it("a claim that takes a task stores its turn's state as running and nothing else of the start", async () => {
        const { req } = await enqueue();
        const before = (await store.getAgent("a1"))!;
        expect(before.state).toBe("idle");
        const c = await claimOk();
        const head = (await store.getAgent("a1"))!;
        expect(c.head).toEqual(head);
        expect(head).toMatchObject({ state: "running", activeTurnId: req.turnId, version: before.version, lastEventId: before.lastEventId, messageCount: 0 });
        expect(head.snapshot).toEqual(before.snapshot);
        expect(await store.readMessages("a1")).toEqual([]);
        // The first commit stores the start's snapshot, state, events and messages as given.
        const snapshot = { value: "waiting-tools", context: { turnId: req.turnId } };
        const r = await store.commit(commitOf(c, "w1", { snapshot, state: "waiting-tools", now: T0 + 5, events: [{ type: "transition", data: { to: "running" } }] }));
        expect(r.status).toBe("applied");
        expect((await store.getAgent("a1"))!).toMatchObject({ state: "waiting-tools", snapshot, version: before.version + 1 });
      });

      it("a claim that continues a turn, and a claim whose worker stored nothing, leave the state as the head holds it", async () => {
        const { req } = await enqueue();
        const c1 = await claimOk("a1", "w1", T0);
        // The first claimant dies before its first commit: the next claim finds the turn running, nothing else stored.
        const c2 = await claimOk("a1", "w2", T0 + LEASE + 1);
        expect(c2.head).toMatchObject({ state: "running", activeTurnId: req.turnId, version: c1.head.version, snapshot: c1.head.snapshot });
        expect(c2.task?.turnId).toBe(req.turnId);
        const r = await store.commit(commitOf(c2, "w2", { state: "waiting-tools", now: T0 + LEASE + 2, release: { runnableAt: T0 + LEASE + 3 } }));
        expect(r.status).toBe("applied");
        const c3 = await claimOk("a1", "w3", T0 + LEASE + 3);
        expect(c3.head.state).toBe("waiting-tools");
      });
    });

    describe("turn chaining (invariant `turn-chaining`)", () => {
      it("a commit that ends the turn takes the next task as a claim would: same records, lease kept, epoch + 1", async () => {
        const first = await enqueue({ idempotencyKey: "k1" });
        const second = await enqueue({ now: T0 + 1, input: { q: "2+3" }, options: { verifyMaxAttempts: 2 } });
        const c = await claimOk();
        const r = await store.commit(commitOf(c, "w1", {
          state: "done", activeTurnId: null, release: { runnableAt: null }, now: T0 + 9, chainNextTask: true,
          events: [{ type: "task", data: { turnId: first.req.turnId } }],
        }));
        expect(r.status).toBe("applied");
        const chained = (r as Extract<typeof r, { status: "applied" }>).chained!;
        expect(chained).toBeDefined();
        expect(chained.status).toBe("claimed");
        expect(chained.epoch).toBe(c.epoch + 1);
        expect(chained.mail).toEqual([]);
        expect(chained.previousLease).toBeNull();
        expect(chained.task!.turnId).toBe(second.req.turnId);
        expect(chained.task!.input).toEqual({ q: "2+3" });
        expect(chained.task!.options).toEqual({ verifyMaxAttempts: 2 });
        const head = (await store.getAgent("a1"))!;
        expect(chained.head).toEqual(head);
        expect(head.activeTurnId).toBe(second.req.turnId);
        expect(head.leaseOwner).toBe("w1");
        expect(head.leaseUntil).toBe(T0 + 9 + LEASE);
        expect(head.pendingTasks).toBe(0);
        expect(head.version).toBe(c.head.version + 1);
        // The commit stored the ended turn's snapshot; the chained turn reads `running` from this claim on (invariant `turn-start`).
        expect(head.state).toBe("running");
        // The ended turn is recorded as with any ending commit.
        expect((await store.getTurn("a1", first.req.turnId))?.status).toBe("done");
        // Visibility timeout as after a claim; nobody else can claim it.
        expect(await store.nextReadyAt(TARGET)).toBe(T0 + 9 + LEASE);
        expect((await store.claim({ agentId: "a1", workerId: "w2", leaseMs: LEASE, now: T0 + 10 })).status).toBe("busy");
        // The chained claim works like any claim: its commits are fenced by the new epoch.
        expect((await store.commit(commitOf(c, "w1", { expectedVersion: head.version, turnId: second.req.turnId, activeTurnId: second.req.turnId, now: T0 + 10 }))).status)
          .toBe("conflict");
        const next = await store.commit(commitOf(chained, "w1", { now: T0 + 11, state: "done", activeTurnId: null, release: { runnableAt: null }, chainNextTask: true }));
        expect(next.status).toBe("applied");
        // Nothing queued: the last commit releases as asked.
        expect((next as { chained?: unknown }).chained).toBeUndefined();
        const after = (await store.getAgent("a1"))!;
        expect(after.activeTurnId).toBeNull();
        expect(after.leaseOwner).toBeNull();
        expect(await store.nextReadyAt(TARGET)).toBeNull();
      });

      it("does not chain while mail is pending, nor without the flag, nor when the commit keeps the turn or the lease", async () => {
        // Mail pending after the acknowledgement: release and ring, the next claim takes mail and task.
        const a = await enqueue();
        await enqueue({ now: T0 + 1 });
        const c = await claimOk();
        await store.requestCancel({ agentId: "a1", turnId: a.req.turnId, reason: "late", now: T0 + 2 });
        const r = await store.commit(commitOf(c, "w1", { state: "done", activeTurnId: null, release: { runnableAt: null }, now: T0 + 3, chainNextTask: true }));
        expect(r.status).toBe("applied");
        expect((r as { chained?: unknown }).chained).toBeUndefined();
        expect((await store.getAgent("a1"))!.leaseOwner).toBeNull();
        expect(await store.nextReadyAt(TARGET)).toBe(T0 + 3);
        // Without the flag.
        const b = await enqueue({ agentId: "b1" });
        await enqueue({ agentId: "b1", now: T0 + 1 });
        const cb = await claimOk("b1");
        const rb = await store.commit(commitOf(cb, "w1", { state: "done", activeTurnId: null, release: { runnableAt: null }, now: T0 + 3 }));
        expect((rb as { chained?: unknown }).chained).toBeUndefined();
        expect((await store.getAgent("b1"))!.activeTurnId).toBeNull();
        expect(b.req.turnId).toBe(cb.task!.turnId);
        // A commit that does not end the turn, or keeps the lease, never chains.
        await enqueue({ agentId: "c1" });
        await enqueue({ agentId: "c1", now: T0 + 1 });
        const cc = await claimOk("c1");
        const mid = await store.commit(commitOf(cc, "w1", { state: "verifying", release: { runnableAt: T0 + 4 }, now: T0 + 3, chainNextTask: true }));
        expect((mid as { chained?: unknown }).chained).toBeUndefined();
        const cc2 = await claimOk("c1", "w1", T0 + 4);
        expect(cc2.task!.turnId).toBe(cc.task!.turnId);
        const keep = await store.commit(commitOf(cc2, "w1", { state: "done", activeTurnId: null, release: null, now: T0 + 5, chainNextTask: true }));
        expect((keep as { chained?: unknown }).chained).toBeUndefined();
        expect((await store.getAgent("c1"))!.pendingTasks).toBe(1);
      });

      it("a refused chaining commit writes nothing and leaves the task queued", async () => {
        await enqueue();
        const second = await enqueue({ now: T0 + 1 });
        const c = await claimOk();
        const before = await states();
        const r = await store.commit(commitOf(c, "w1", { expectedVersion: c.head.version + 5, state: "done", activeTurnId: null, release: { runnableAt: null }, chainNextTask: true }));
        expect(r).toEqual({ status: "conflict", reason: "version" });
        expect(await states()).toEqual(before);
        const late = await store.commit(commitOf(c, "w1", { now: T0 + LEASE + 1, state: "done", activeTurnId: null, release: { runnableAt: null }, chainNextTask: true }));
        expect(late).toEqual({ status: "conflict", reason: "fenced" });
        expect(await states()).toEqual(before);
        // The lease ran out: another worker claims the first turn again, then the second follows.
        const c2 = await claimOk("a1", "w2", T0 + LEASE + 2);
        const end = await store.commit(commitOf(c2, "w2", { now: T0 + LEASE + 3, state: "done", activeTurnId: null, release: { runnableAt: null }, chainNextTask: true }));
        expect((end as { chained?: { task: { turnId: string } } }).chained?.task.turnId).toBe(second.req.turnId);
      });
    });

    // ---------------------------------------------------------------- delayed tasks

    describe("delayed tasks (invariant `delayed-tasks`)", () => {
      const ended = (c: Claimed, now: number, over: Partial<CommitRequest> = {}) =>
        store.commit(commitOf(c, "w1", { now, state: "done", snapshot: { value: "done" }, activeTurnId: null, release: { runnableAt: null }, ...over }));

      it("is not claimed before runAt, by claim or claimNext; its bell is runAt; it is claimed at runAt", async () => {
        const { req, r } = await enqueue({ runAt: T0 + 5_000 });
        expect(r).toEqual({ status: "enqueued", turnId: req.turnId });
        expect((await store.getAgent("a1"))!.pendingTasks).toBe(1);
        expect(await store.nextReadyAt(TARGET)).toBe(T0 + 5_000);
        expect(await store.readyCount(TARGET, T0 + 4_999)).toBe(0);
        expect(await store.getTurn("a1", req.turnId)).toEqual({ turnId: req.turnId, status: "queued", input: { q: "1+2" }, runAt: T0 + 5_000 });
        expect(await store.claimNext({ workerTarget: TARGET, workerId: "w1", leaseMs: LEASE, now: T0 + 4_999 })).toEqual({ status: "empty" });
        const early = await store.claim({ agentId: "a1", workerId: "w1", leaseMs: LEASE, now: T0 + 4_999 });
        expect(early.status).toBe("empty");
        // The empty claim keeps the bell at runAt (it does not drop it).
        expect(await store.nextReadyAt(TARGET)).toBe(T0 + 5_000);
        expect((await store.getAgent("a1"))!.activeTurnId).toBeNull();
        const c = await store.claimNext({ workerTarget: TARGET, workerId: "w1", leaseMs: LEASE, now: T0 + 5_000 });
        expect(c.status).toBe("claimed");
        const task = (c as Claimed).task!;
        expect(task.turnId).toBe(req.turnId);
        expect(task.runAt).toBe(T0 + 5_000);
        expect(task.enqueuedAt).toBe(T0);
        expect(await store.getTurn("a1", req.turnId)).toMatchObject({ status: "active", runAt: T0 + 5_000 });
        expect(await store.listQueuedTasks("a1", 10)).toEqual([]);
      });

      it("a runAt at or before now is stored as now: due at once", async () => {
        const { req } = await enqueue({ runAt: T0 - 60_000 });
        expect(await store.getTurn("a1", req.turnId)).toMatchObject({ status: "queued", runAt: T0 });
        expect(await store.nextReadyAt(TARGET)).toBe(T0);
        expect((await claimOk()).task!.turnId).toBe(req.turnId);
      });

      it("order rule: tasks start in join order (runAt for a delayed task), ties by enqueue order; an immediate task never waits behind one not due", async () => {
        const d200 = (await enqueue({ runAt: T0 + 200 })).req.turnId;
        const d100a = (await enqueue({ runAt: T0 + 100, now: T0 + 1 })).req.turnId;
        const d100b = (await enqueue({ runAt: T0 + 100, now: T0 + 2 })).req.turnId;
        const now1 = (await enqueue({ now: T0 + 3 })).req.turnId;
        expect((await store.listQueuedTasks("a1", 10)).map((t) => t.turnId)).toEqual([now1, d100a, d100b, d200]);
        expect(await store.listQueuedTasks("a1", 2)).toEqual([
          { turnId: now1, enqueuedAt: T0 + 3 },
          { turnId: d100a, enqueuedAt: T0 + 1, runAt: T0 + 100 },
        ]);
        // Immediate tasks enqueued after some delayed ones came due join behind those, ahead of the rest.
        const now2 = (await enqueue({ now: T0 + 150 })).req.turnId;
        expect((await store.listQueuedTasks("a1", 10)).map((t) => t.turnId)).toEqual([now1, d100a, d100b, now2, d200]);
        expect((await store.getAgent("a1"))!.pendingTasks).toBe(5);
        const order: string[] = [];
        let now = T0 + 150;
        for (let i = 0; i < 5; i++) {
          const c = await store.claimNext({ workerTarget: TARGET, workerId: "w1", leaseMs: LEASE, now });
          if (c.status !== "claimed") {
            // Only the last one waits: d200, not due before T0 + 200; the bell says so.
            expect(await store.nextReadyAt(TARGET)).toBe(T0 + 200);
            now = T0 + 200;
            i--;
            continue;
          }
          order.push(c.task!.turnId);
          expect((await ended(c, now + 1)).status).toBe("applied");
          now += 2;
        }
        expect(order).toEqual([now1, d100a, d100b, now2, d200]);
        expect(await store.listQueuedTasks("a1", 10)).toEqual([]);
      });

      it("a turn ending before the next task is due releases and moves the bell to its runAt; a chaining commit takes it only once due", async () => {
        await enqueue();
        const later = (await enqueue({ runAt: T0 + 1_000, now: T0 + 1 })).req.turnId;
        const c = await claimOk();
        const r = await ended(c, T0 + 5, { chainNextTask: true });
        expect(r.status).toBe("applied");
        expect((r as { chained?: unknown }).chained).toBeUndefined();
        const head = (await store.getAgent("a1"))!;
        expect(head.leaseOwner).toBeNull();
        expect(head.activeTurnId).toBeNull();
        expect(await store.nextReadyAt(TARGET)).toBe(T0 + 1_000);
        // Another turn (an immediate task) runs meanwhile; ending it at runAt chains the delayed one.
        const now2 = (await enqueue({ now: T0 + 10 })).req.turnId;
        const c2 = await claimOk("a1", "w1", T0 + 10);
        expect(c2.task!.turnId).toBe(now2);
        const r2 = await ended(c2, T0 + 1_000, { chainNextTask: true });
        expect((r2 as { chained?: { task: { turnId: string } } }).chained?.task.turnId).toBe(later);
      });

      it("a turn ended without the machine moves the bell to the next delayed task's runAt", async () => {
        await enqueue();
        await enqueue({ runAt: T0 + 1_000, now: T0 + 1 });
        const c = await claimOk();
        const end: TurnEnd = { snapshot: { value: "failed" }, state: "failed", events: [], messages: [] };
        expect((await store.resetTurn({ agentId: "a1", expectedVersion: c.head.version, turnId: c.head.activeTurnId!, end, now: T0 + 5 })).status).toBe("reset");
        expect(await store.nextReadyAt(TARGET)).toBe(T0 + 1_000);
        expect((await store.claim({ agentId: "a1", workerId: "w1", leaseMs: LEASE, now: T0 + 999 })).status).toBe("empty");
        expect((await claimOk("a1", "w1", T0 + 1_000)).head.pendingTasks).toBe(0);
      });

      it("an earlier bell stays: a delayed task enqueued behind a busy agent does not move its bell later", async () => {
        await enqueue();
        await claimOk();
        await enqueue({ runAt: T0 + LEASE * 10, now: T0 + 1 });
        expect(await store.nextReadyAt(TARGET)).toBe(T0 + LEASE);
      });

      it("cancelTask removes a delayed task: it is never claimed, the turn reads cancelled, its bell rings for nothing and goes", async () => {
        const { req } = await enqueue({ runAt: T0 + 1_000, idempotencyKey: "k1" });
        expect(await store.cancelTask({ agentId: "a1", turnId: req.turnId, reason: "no", now: T0 + 1 })).toEqual({ status: "cancelled", already: false });
        expect(await store.listQueuedTasks("a1", 10)).toEqual([]);
        expect((await store.claimNext({ workerTarget: TARGET, workerId: "w1", leaseMs: LEASE, now: T0 + 2_000 })).status).toBe("empty");
        expect(await store.nextReadyAt(TARGET)).toBeNull();
        expect(await store.getTurn("a1", req.turnId)).toMatchObject({ status: "cancelled" });
        expect((await store.getTurn("a1", req.turnId))!.runAt).toBeUndefined();
        // Its idempotency key keeps answering it.
        expect((await enqueue({ runAt: T0 + 5_000, idempotencyKey: "k1", now: T0 + 3 })).r).toEqual({ status: "duplicate", turnId: req.turnId });
        expect((await store.getAgent("a1"))!.pendingTasks).toBe(0);
      });

      it("an idempotency duplicate of a delayed task enqueues nothing and answers the first turn (whose runAt getTurn reads)", async () => {
        const first = await enqueue({ runAt: T0 + 1_000, idempotencyKey: "k1" });
        const before = await states();
        const dup = await enqueue({ runAt: T0 + 9_000, idempotencyKey: "k1", now: T0 + 1 });
        expect(dup.r).toEqual({ status: "duplicate", turnId: first.req.turnId });
        expect(await states()).toEqual(before);
        expect((await store.getTurn("a1", first.req.turnId))!.runAt).toBe(T0 + 1_000);
      });

      it("bound: an agent holds at most maxDelayedTasks tasks not yet due; one more is refused (too_many_delayed) and writes nothing", async () => {
        const max = { maxDelayedTasks: 3 };
        const first = await enqueue({ runAt: T0 + 3_000, idempotencyKey: "d0", ...max });
        for (const at of [T0 + 1_000, T0 + 2_000]) expect((await enqueue({ runAt: at, ...max })).r.status).toBe("enqueued");
        const before = await states();
        const bell = await store.nextReadyAt(TARGET);
        expect((await enqueue({ runAt: T0 + 500, ...max })).r).toEqual({ status: "too_many_delayed", limit: 3 });
        expect((await enqueue({ runAt: T0 + 500, idempotencyKey: "fresh", ...max })).r).toEqual({ status: "too_many_delayed", limit: 3 });
        expect(await states()).toEqual(before);
        expect(await store.nextReadyAt(TARGET)).toBe(bell);
        // A duplicate answers its turn; an immediate task and one due at once are not delayed: all pass.
        expect((await enqueue({ runAt: T0 + 9_000, idempotencyKey: "d0", ...max })).r).toEqual({ status: "duplicate", turnId: first.req.turnId });
        expect((await enqueue(max)).r.status).toBe("enqueued");
        expect((await enqueue({ runAt: T0 - 1, ...max })).r.status).toBe("enqueued");
        // Once one is due it no longer counts: room for one more, not two.
        expect((await enqueue({ runAt: T0 + 5_000, now: T0 + 1_000, ...max })).r.status).toBe("enqueued");
        expect((await enqueue({ runAt: T0 + 5_000, now: T0 + 1_000, ...max })).r.status).toBe("too_many_delayed");
        expect((await store.getAgent("a1"))!.pendingTasks).toBe(6);
        // A bound of 0 refuses every delayed task; a bound that is not a whole number is bad input.
        expect((await enqueue({ runAt: T0 + 9_000, now: T0 + 1_000, maxDelayedTasks: 0 })).r.status).toBe("too_many_delayed");
        await expect(enqueue({ runAt: T0 + 9_000, now: T0 + 1_000, maxDelayedTasks: 1.5 })).rejects.toThrow();
        // Queue order is unchanged by the refusals.
        expect((await store.listQueuedTasks("a1", 10)).map((t) => t.runAt ?? null)).toEqual([null, T0, T0 + 1_000, T0 + 2_000, T0 + 3_000, T0 + 5_000]);
      });

      it("listQueuedTasks answers [] for an unknown agent or a limit of 0; a runAt that is not an integer is refused and writes nothing", async () => {
        expect(await store.listQueuedTasks("nobody", 10)).toEqual([]);
        await enqueue({ runAt: T0 + 5 });
        expect(await store.listQueuedTasks("a1", 0)).toEqual([]);
        const before = await states();
        await expect(enqueue({ runAt: T0 + 0.5, now: T0 + 1 })).rejects.toThrow();
        expect(await states()).toEqual(before);
      });

      it("random enqueues (immediate or delayed) and claims: every task starts in join order, ties by enqueue order, never before its runAt", async () => {
        type Op = { kind: "enqueue"; gap: number; delay: number | null } | { kind: "claim"; gap: number };
        const opArb: fc.Arbitrary<Op> = fc.oneof(
          fc.record({ kind: fc.constant("enqueue" as const), gap: fc.nat(5), delay: fc.option(fc.integer({ min: -20, max: 60 }), { nil: null }) }),
          fc.record({ kind: fc.constant("claim" as const), gap: fc.nat(25) }),
        );
        let run = 0;
        await fc.assert(
          fc.asyncProperty(fc.array(opArb, { minLength: 4, maxLength: 24 }), async (ops) => {
            // A worker target and an agent of its own per run: bells of earlier runs stay out of the way.
            const target = `prop${++run}`;
            const agentId = `p${run}`;
            const queue: Array<{ turnId: string; join: number; seq: number; runAt?: number }> = [];
            let now = T0;
            let seq = 0;
            for (const op of ops) {
              now += op.gap;
              if (op.kind === "enqueue") {
                const runAt = op.delay === null ? undefined : now + op.delay;
                const { req } = await enqueue({ agentId, workerTarget: target, now, ...(runAt !== undefined ? { runAt } : {}) });
                const stored = runAt === undefined ? undefined : Math.max(runAt, now);
                queue.push({ turnId: req.turnId, join: stored ?? now, seq: ++seq, ...(stored !== undefined ? { runAt: stored } : {}) });
                continue;
              }
              // The model: the first task by (join, seq) starts when its join time has come.
              queue.sort((x, y) => x.join - y.join || x.seq - y.seq);
              const due = queue.length > 0 && queue[0].join <= now ? queue[0] : null;
              const c = await store.claimNext({ workerTarget: target, workerId: "w1", leaseMs: LEASE, now });
              if (due === null) {
                expect(c.status).toBe("empty");
                continue;
              }
              expect(c.status).toBe("claimed");
              const claimed = c as Claimed;
              expect(claimed.task!.turnId).toBe(due.turnId);
              expect(claimed.task!.runAt).toBe(due.runAt);
              expect(now).toBeGreaterThanOrEqual(due.runAt ?? now);
              queue.shift();
              expect((await store.commit(commitOf(claimed, "w1", { now, state: "done", snapshot: { value: "done" }, activeTurnId: null, release: { runnableAt: null } }))).status).toBe("applied");
            }
            expect((await store.listQueuedTasks(agentId, 100)).map((t) => t.turnId)).toEqual(
              queue.sort((x, y) => x.join - y.join || x.seq - y.seq).map((t) => t.turnId),
            );
          }),
          { numRuns: 25, seed: 20261128 },
        );
      });
    });

    // ---------------------------------------------------------------- renewLease

    describe("renewLease", () => {
      it("extends the lease of the current holder and moves the ready score with it", async () => {
        await enqueue();
        const c = await claimOk("a1", "w1", T0);
        const r = await store.renewLease({ agentId: "a1", workerId: "w1", epoch: c.epoch, leaseMs: LEASE, now: T0 + 100 });
        expect(r).toEqual({ status: "renewed", leaseUntil: T0 + 100 + LEASE });
        expect((await store.getAgent("a1"))!.leaseUntil).toBe(T0 + 100 + LEASE);
        expect(await store.nextReadyAt(TARGET)).toBe(T0 + 100 + LEASE);
      });

      it("answers lost for another worker, a stale epoch, an expired lease or an unknown agent", async () => {
        await enqueue();
        const c = await claimOk("a1", "w1", T0);
        const before = await states("a1", "zz");
        expect(await store.renewLease({ agentId: "a1", workerId: "w2", epoch: c.epoch, leaseMs: LEASE, now: T0 + 1 })).toEqual({ status: "lost" });
        expect(await store.renewLease({ agentId: "a1", workerId: "w1", epoch: c.epoch + 1, leaseMs: LEASE, now: T0 + 1 })).toEqual({ status: "lost" });
        expect(await store.renewLease({ agentId: "a1", workerId: "w1", epoch: c.epoch, leaseMs: LEASE, now: T0 + LEASE })).toEqual({ status: "lost" });
        expect(await store.renewLease({ agentId: "zz", workerId: "w1", epoch: 1, leaseMs: LEASE, now: T0 })).toEqual({ status: "lost" });
        expect(await states("a1", "zz")).toEqual(before);
      });
    });

    // ---------------------------------------------------------------- mail

    describe("mail", () => {
      it("keeps mail until a commit acknowledges it: a crash after claim loses neither mail nor task", async () => {
        const { turnId, claim, version } = await withPendingCalls({ call_1: T0 + 60_000 });
        await store.commit(commitOf(claim, "w1", { expectedVersion: version, now: T0 + 2, release: { runnableAt: null } }));
        await store.deliverToolResult({ agentId: "a1", turnId, toolCallId: "call_1", outcome: ok, afterExecution: "continue", source: "http", now: T0 + 3 });
        const c1 = await claimOk("a1", "w1", T0 + 4);
        expect(c1.mail).toHaveLength(1);
        // w1 dies here. After the lease, w2 gets the same task and the same mail.
        const c2 = await claimOk("a1", "w2", T0 + 4 + LEASE);
        expect(c2.mail).toEqual(c1.mail);
        expect(c2.task).toEqual(c1.task);
        expect(c2.head.pendingMail).toBe(1);
        const r = await store.commit(commitOf(c2, "w2", { now: T0 + 5 + LEASE, ackMailThrough: c2.mail[0].seq }));
        expect(r.status).toBe("applied");
        expect((await store.getAgent("a1"))!.pendingMail).toBe(0);
      });

      it("acknowledges only mail with seq <= ackMailThrough", async () => {
        const { req } = await enqueue();
        const c = await claimOk();
        await store.commit(commitOf(c, "w1", { release: { runnableAt: null } }));
        for (let i = 0; i < 3; i++) {
          expect(await store.requestCancel({ agentId: "a1", reason: `r${i}`, now: T0 + 10 + i })).toEqual({ status: "accepted", turnId: req.turnId });
        }
        const c2 = await claimOk("a1", "w2", T0 + 20);
        expect(c2.mail.map((m) => (m as Extract<MailItem, { kind: "cancel" }>).reason)).toEqual(["r0", "r1", "r2"]);
        const seqs = c2.mail.map((m) => m.seq);
        expect(seqs[0] < seqs[1] && seqs[1] < seqs[2]).toBe(true);
        await store.commit(commitOf(c2, "w2", { now: T0 + 21, ackMailThrough: seqs[1], release: { runnableAt: null } }));
        expect((await store.getAgent("a1"))!.pendingMail).toBe(1);
        // The unacknowledged mail rang the bell again.
        const c3 = await claimOk("a1", "w3", T0 + 22);
        expect(c3.mail).toEqual([c2.mail[2]]);
      });

      it("requestCancel: agent_not_found, not_active between turns, accepted with mail, event and bell", async () => {
        expect(await store.requestCancel({ agentId: "a1", reason: "x", now: T0 })).toEqual({ status: "agent_not_found" });
        expect(await states()).toEqual({ a1: NOTHING });
        const { req } = await enqueue();
        const before = await states();
        expect(await store.requestCancel({ agentId: "a1", reason: "x", now: T0 + 1 })).toEqual({ status: "not_active" });
        expect(await states()).toEqual(before);
        const c = await claimOk();
        await store.commit(commitOf(c, "w1", { now: T0 + 2, release: { runnableAt: null } }));
        expect(await store.nextReadyAt(TARGET)).toBeNull();
        expect(await store.requestCancel({ agentId: "a1", reason: "user asked", now: T0 + 3 })).toEqual({ status: "accepted", turnId: req.turnId });
        expect(await store.nextReadyAt(TARGET)).toBe(T0 + 3);
        const head = await store.getAgent("a1");
        expect(head!.pendingMail).toBe(1);
        const ev = await allEvents();
        expect(ev[ev.length - 1]).toEqual({ id: head!.lastEventId, at: T0 + 3, turnId: req.turnId, type: "cancel_requested", data: { reason: "user asked", turnId: req.turnId } });
        const c2 = await claimOk("a1", "w1", T0 + 4);
        expect(c2.mail).toEqual([{ kind: "cancel", seq: c2.mail[0].seq, at: T0 + 3, reason: "user asked", turnId: req.turnId }]);
      });
    });

    // ---------------------------------------------------------------- turns and cancels

    describe("cancels aimed at a turn", () => {
      /** Two tasks: the first claimed (active), the second queued. */
      async function activeAndQueued() {
        const first = await enqueue({ idempotencyKey: "k1" });
        const second = await enqueue({ idempotencyKey: "k2", now: T0 + 1 });
        const c = await claimOk("a1", "w1", T0 + 2);
        return { t1: first.req.turnId, t2: second.req.turnId, c };
      }
      /** Ends the active turn of claim `c` in `state`, releasing the lease. */
      async function endTurn(c: Claimed, state = "done", now = T0 + 5) {
        const r = await store.commit(commitOf(c, "w1", { now, state, snapshot: { value: state }, activeTurnId: null, release: { runnableAt: null } }));
        expect(r.status).toBe("applied");
      }

      it("getTurn: queued, active, then done or failed once the turn ended; null when unknown", async () => {
        const { t1, t2, c } = await activeAndQueued();
        expect(await store.getTurn("a1", t1)).toEqual({ turnId: t1, status: "active", input: { q: "1+2" } });
        expect(await store.getTurn("a1", t2)).toEqual({ turnId: t2, status: "queued", input: { q: "1+2" } });
        expect(await store.getTurn("a1", "turn_unknown")).toBeNull();
        expect(await store.getTurn("nobody", t1)).toBeNull();
        await endTurn(c, "failed");
        expect(await store.getTurn("a1", t1)).toMatchObject({ turnId: t1, status: "failed" });
        const c2 = await claimOk("a1", "w1", T0 + 6);
        expect(c2.head.activeTurnId).toBe(t2);
        await endTurn(c2, "done", T0 + 7);
        expect(await store.getTurn("a1", t2)).toMatchObject({ turnId: t2, status: "done" });
      });

      it("a cancel without turnId is fixed to the turn active when accepted, in its mail and event", async () => {
        const { t1 } = await activeAndQueued();
        expect(await store.requestCancel({ agentId: "a1", reason: "stop", now: T0 + 3 })).toEqual({ status: "accepted", turnId: t1 });
        const ev = (await allEvents()).at(-1)!;
        expect(ev).toMatchObject({ type: "cancel_requested", turnId: t1, data: { reason: "stop", turnId: t1 } });
      });

      it("a cancel naming a turn: accepted while it is active; turn_not_started while queued; turn_not_found when unknown", async () => {
        const { t1, t2 } = await activeAndQueued();
        const before = await states("a1", "nobody");
        expect(await store.requestCancel({ agentId: "a1", turnId: t2, reason: "x", now: T0 + 3 })).toEqual({ status: "turn_not_started" });
        expect(await store.requestCancel({ agentId: "a1", turnId: "turn_zz", reason: "x", now: T0 + 3 })).toEqual({ status: "turn_not_found" });
        expect(await store.requestCancel({ agentId: "nobody", turnId: t1, reason: "x", now: T0 + 3 })).toEqual({ status: "agent_not_found" });
        expect(await states("a1", "nobody")).toEqual(before);
        expect(await store.requestCancel({ agentId: "a1", turnId: t1, reason: "x", now: T0 + 3 })).toEqual({ status: "accepted", turnId: t1 });
        const c = await claimOk("a1", "w2", T0 + LEASE + 10);
        expect(c.mail).toEqual([{ kind: "cancel", seq: c.mail[0].seq, at: T0 + 3, reason: "x", turnId: t1 }]);
      });

      it("a cancel naming a turn that ended answers turn_finished and writes nothing, also while the next turn runs", async () => {
        const { t1, c } = await activeAndQueued();
        await endTurn(c);
        const c2 = await claimOk("a1", "w1", T0 + 6);
        const before = await states();
        expect(await store.requestCancel({ agentId: "a1", turnId: t1, reason: "late", now: T0 + 7 })).toEqual({ status: "turn_finished" });
        expect(await states()).toEqual(before);
        expect(c2.mail).toEqual([]);
      });

      it("cancelTask removes a queued task: turn cancelled, event logged, idempotency key still answers it, never claimed", async () => {
        const { t2, c } = await activeAndQueued();
        expect(await store.cancelTask({ agentId: "a1", turnId: t2, reason: "not needed", now: T0 + 3 })).toEqual({ status: "cancelled", already: false });
        const head = await store.getAgent("a1");
        expect(head!.pendingTasks).toBe(0);
        expect(await store.getTurn("a1", t2)).toEqual({ turnId: t2, status: "cancelled", input: { q: "1+2" } });
        expect((await allEvents()).at(-1)).toEqual({
          id: head!.lastEventId, at: T0 + 3, turnId: t2, type: "task_cancelled", data: { turnId: t2, reason: "not needed" },
        });
        expect((await enqueue({ idempotencyKey: "k2", now: T0 + 4 })).r).toEqual({ status: "duplicate", turnId: t2 });
        // Again: answered cancelled, nothing written.
        const before = await states();
        expect(await store.cancelTask({ agentId: "a1", turnId: t2, reason: "again", now: T0 + 4 })).toEqual({ status: "cancelled", already: true });
        // A cancel naming it is turn_finished; the turn after the active one finds no task.
        expect(await store.requestCancel({ agentId: "a1", turnId: t2, reason: "x", now: T0 + 4 })).toEqual({ status: "turn_finished" });
        expect(await states()).toEqual(before);
        await endTurn(c);
        const after = await store.claim({ agentId: "a1", workerId: "w1", leaseMs: LEASE, now: T0 + 6 });
        expect(after.status).toBe("empty");
        expect((await store.getAgent("a1"))!.activeTurnId).toBeNull();
      });

      it("cancelTask answers turn_started for the active turn, turn_finished once ended, turn_not_found and agent_not_found", async () => {
        const { t1, c } = await activeAndQueued();
        const before = await states("a1", "nobody");
        expect(await store.cancelTask({ agentId: "a1", turnId: t1, reason: "x", now: T0 + 3 })).toEqual({ status: "turn_started" });
        expect(await store.cancelTask({ agentId: "a1", turnId: "turn_zz", reason: "x", now: T0 + 3 })).toEqual({ status: "turn_not_found" });
        expect(await store.cancelTask({ agentId: "nobody", turnId: t1, reason: "x", now: T0 + 3 })).toEqual({ status: "agent_not_found" });
        expect(await states("a1", "nobody")).toEqual(before);
        await endTurn(c);
        const ended = await states();
        expect(await store.cancelTask({ agentId: "a1", turnId: t1, reason: "x", now: T0 + 6 })).toEqual({ status: "turn_finished" });
        expect(await states()).toEqual(ended);
      });

      it("cancelTask takes the named task out of the middle of the queue; the others run in order", async () => {
        const { c } = await activeAndQueued();
        const t3 = (await enqueue({ now: T0 + 3 })).req.turnId;
        const t4 = (await enqueue({ now: T0 + 3 })).req.turnId;
        expect((await store.cancelTask({ agentId: "a1", turnId: t3, reason: "x", now: T0 + 4 })).status).toBe("cancelled");
        expect((await store.getAgent("a1"))!.pendingTasks).toBe(2);
        await endTurn(c);
        const c2 = await claimOk("a1", "w1", T0 + 6);
        await endTurn(c2, "done", T0 + 7);
        const c3 = await claimOk("a1", "w1", T0 + 8);
        expect(c3.head.activeTurnId).toBe(t4);
      });
    });

    // ---------------------------------------------------------------- all or nothing

    describe("all or nothing", () => {
      /** The whole stored state of agent a1, for before/after comparisons. */
      const visible = (_turnId?: string) => states();
      const unserialisable = () => ({ deep: { toJSON() {
        throw new Error("cannot serialise");
      } } });

      it("a task whose input cannot be serialised is refused and leaves nothing: no key, no event id, no task", async () => {
        await enqueue({ idempotencyKey: "k0" });
        const before = await visible();
        await expect(enqueue({ input: unserialisable(), idempotencyKey: "k1" })).rejects.toThrow();
        await expect(enqueue({ input: { n: 1n }, idempotencyKey: "k1" })).rejects.toThrow();
        expect(await visible()).toEqual(before);
        // The key is free and the next event id is 2: pages read on without a gap.
        const next = await enqueue({ idempotencyKey: "k1" });
        expect(next.r.status).toBe("enqueued");
        expect((await allEvents()).map((e) => e.id)).toEqual([1, 2]);
      });

      it("a tool result that cannot be serialised is refused: the call stays pending and due, a valid retry is accepted", async () => {
        const { turnId } = await withPendingCalls({ c1: T0 + 100 });
        const before = await visible(turnId);
        await expect(store.deliverToolResult({
          agentId: "a1", turnId, toolCallId: "c1", outcome: { ok: true, value: unserialisable() }, afterExecution: "continue", source: "http", now: T0 + 5,
        })).rejects.toThrow();
        expect(await visible(turnId)).toEqual(before);
        const retry = await store.deliverToolResult({ agentId: "a1", turnId, toolCallId: "c1", outcome: ok, afterExecution: "continue", source: "http", now: T0 + 6 });
        expect(retry.status).toBe("accepted");
      });

      it("a commit whose snapshot or event cannot be serialised is refused and writes nothing", async () => {
        const { turnId, claim, version } = await withPendingCalls({ c1: T0 + 100 });
        const before = await visible(turnId);
        await expect(store.commit(commitOf(claim, "w1", { expectedVersion: version, now: T0 + 5, snapshot: unserialisable(), events: [{ type: "step", data: {} }] })))
          .rejects.toThrow();
        await expect(store.commit(commitOf(claim, "w1", { expectedVersion: version, now: T0 + 5, events: [{ type: "step", data: unserialisable() }], messages: [{ role: "user", content: "x" }] })))
          .rejects.toThrow();
        expect(await visible(turnId)).toEqual(before);
        expect((await store.commit(commitOf(claim, "w1", { expectedVersion: version, now: T0 + 6 }))).status).toBe("applied");
      });
    });

    // ---------------------------------------------------------------- tool calls

    describe("tool calls", () => {
      it("records tool calls as pending before dispatch", async () => {
        const { turnId } = await withPendingCalls({ call_1: T0 + 100, call_2: T0 + 200 });
        const calls = (await store.getToolCalls("a1", turnId)).sort((x, y) => x.toolCallId.localeCompare(y.toolCallId));
        expect(calls).toEqual([
          { agentId: "a1", turnId, toolCallId: "call_1", name: "ask", args: { q: "call_1" }, external: true, deadline: T0 + 100, recordedAt: T0 + 1, status: "pending" },
          { agentId: "a1", turnId, toolCallId: "call_2", name: "ask", args: { q: "call_2" }, external: true, deadline: T0 + 200, recordedAt: T0 + 1, status: "pending" },
        ]);
        expect(await store.getToolCalls("a1", "turn_none")).toEqual([]);
        expect(await store.getToolCalls("nobody", turnId)).toEqual([]);
      });

      it("dueToolCalls lists pending calls whose deadline passed, oldest first, up to limit", async () => {
        const { turnId } = await withPendingCalls({ late: T0 + 300, first: T0 + 100, second: T0 + 200 });
        expect(await store.dueToolCalls(T0 + 99, 10)).toEqual([]);
        expect(await store.dueToolCalls(T0 + 200, 10)).toEqual([
          { agentId: "a1", turnId, toolCallId: "first" },
          { agentId: "a1", turnId, toolCallId: "second" },
        ]);
        expect(await store.dueToolCalls(T0 + 1_000, 1)).toEqual([{ agentId: "a1", turnId, toolCallId: "first" }]);
      });

      it("the first delivery wins: resolves the call, enqueues mail, logs tool_result_received and rings", async () => {
        const { turnId, claim, version } = await withPendingCalls({ call_1: T0 + 100 });
        await store.commit(commitOf(claim, "w1", { expectedVersion: version, now: T0 + 2, release: { runnableAt: null } }));
        const d = await store.deliverToolResult({ agentId: "a1", turnId, toolCallId: "call_1", outcome: ok, afterExecution: "terminate", source: "http", now: T0 + 10 });
        const record: ToolCallRecord = {
          agentId: "a1", turnId, toolCallId: "call_1", name: "ask", args: { q: "call_1" }, external: true, deadline: T0 + 100,
          recordedAt: T0 + 1, status: "resolved", outcome: ok, afterExecution: "terminate", source: "http", resolvedAt: T0 + 10,
          // Invariant `contract-validation`: a result delivered without a contract check is recorded as "not applied".
          contractValidation: { applied: false, passed: true, mismatch: null, expectedKeys: [], actualKeys: [] },
        };
        expect(d).toEqual({ status: "accepted", record });
        expect(await store.getToolCalls("a1", turnId)).toEqual([record]);
        expect(await store.dueToolCalls(T0 + 1_000, 10)).toEqual([]);
        expect(await store.nextReadyAt(TARGET)).toBe(T0 + 10);
        const ev = await allEvents();
        expect(ev[ev.length - 1]).toMatchObject({ at: T0 + 10, turnId, type: "tool_result_received", data: { toolCallId: "call_1", ok: true, source: "http", afterExecution: "terminate" } });
        const c = await claimOk("a1", "w2", T0 + 11);
        expect(c.mail).toEqual([{ kind: "tool_result", seq: c.mail[0].seq, at: T0 + 10, turnId, toolCallId: "call_1", outcome: ok, afterExecution: "terminate", source: "http" }]);
      });

      it("an outcome stored with the older `retriable` spelling is read back as `retryable`", async () => {
        const { turnId } = await withPendingCalls({ call_1: T0 + 100 });
        const legacy = { ok: false, error: { type: "timeout", message: "late", retriable: true } } as unknown as Outcome;
        const d = await store.deliverToolResult({ agentId: "a1", turnId, toolCallId: "call_1", outcome: legacy, afterExecution: "continue", source: "http", now: T0 + 10 });
        expect(d.status).toBe("accepted");
        const [rec] = await store.getToolCalls("a1", turnId);
        expect(rec.outcome).toEqual(timeout);
      });

      /** What a refused delivery must leave as it was: the turn's calls and the agent's whole stored state (tests/helpers/store-state.ts). */
      async function recordsOf(turnId: string, agentId = "a1") {
        return { calls: await store.getToolCalls(agentId, turnId), whole: await states(agentId) };
      }
      const deliver = (turnId: string, toolCallId: string, outcome: Outcome, over: Partial<DeliverToolResultRequest> = {}) =>
        store.deliverToolResult({ agentId: "a1", turnId, toolCallId, outcome, afterExecution: "continue", source: "http", now: T0 + 10, ...over });

      it("the same result again answers duplicate with the stored record and changes nothing", async () => {
        const { turnId } = await withPendingCalls({ call_1: T0 + 100 });
        const value = { answer: { n: 1, list: [1, 2] }, note: "x" };
        const first = await deliver(turnId, "call_1", { ok: true, value }, { afterExecution: "terminate" });
        expect(first.status).toBe("accepted");
        const before = await recordsOf(turnId);
        // Same value with its keys in another order: canonical JSON compares equal.
        const again = await deliver(turnId, "call_1", { value: { note: "x", answer: { list: [1, 2], n: 1 } }, ok: true }, { afterExecution: "terminate", now: T0 + 20 });
        expect(again).toEqual({ status: "duplicate", record: (first as { record: ToolCallRecord }).record });
        expect(await recordsOf(turnId)).toEqual(before);
      });

      it("another result answers already_resolved with resolvedBy result and the stored record, and changes nothing", async () => {
        const { turnId } = await withPendingCalls({ call_1: T0 + 100 });
        const first = await deliver(turnId, "call_1", ok);
        const record = (first as { record: ToolCallRecord }).record;
        const before = await recordsOf(turnId);
        const others: Array<[Outcome, "continue" | "terminate"]> = [
          [{ ok: true, value: "no" }, "continue"],
          [ok, "terminate"],
          [timeout, "continue"],
        ];
        for (const [outcome, afterExecution] of others) {
          expect(await deliver(turnId, "call_1", outcome, { afterExecution, now: T0 + 20 })).toEqual({ status: "already_resolved", record, resolvedBy: "result" });
        }
        expect(await recordsOf(turnId)).toEqual(before);
      });

      it("any result after the watchdog's timeout answers already_resolved with resolvedBy timeout, and changes nothing", async () => {
        const { turnId } = await withPendingCalls({ call_1: T0 + 100 });
        expect((await watchdogTick(store, { now: () => T0 + 100 })).timedOut).toBe(1);
        const [record] = await store.getToolCalls("a1", turnId);
        expect(record).toMatchObject({ status: "resolved", source: "watchdog" });
        const before = await recordsOf(turnId);
        // Even a result equal to the timeout's own outcome: the client's result was not what resolved the call.
        for (const outcome of [ok, record.outcome!]) {
          expect(await deliver(turnId, "call_1", outcome, { now: T0 + 200 })).toEqual({ status: "already_resolved", record, resolvedBy: "timeout" });
        }
        expect(await recordsOf(turnId)).toEqual(before);
        // A second watchdog pass finds nothing due and counts nothing.
        expect(await watchdogTick(store, { now: () => T0 + 300 })).toEqual({ timedOut: 0, alreadyResolved: 0, turnFinished: 0, skipped: 0 });
      });

      it("a result for an in-process call answers not_external and changes nothing, pending or resolved", async () => {
        const { req } = await enqueue();
        const c = await claimOk();
        const r = await store.commit(commitOf(c, "w1", {
          state: "waiting-tools",
          recordToolCalls: [toolCall(req.turnId, "call_in", T0 + 100, false), toolCall(req.turnId, "call_in2", T0 + 100, false)],
        }));
        expect(r.status).toBe("applied");
        const before = await recordsOf(req.turnId);
        for (const afterExecution of ["continue", "terminate"] as const) {
          expect(await deliver(req.turnId, "call_in", ok, { afterExecution })).toEqual({ status: "not_external" });
        }
        expect(await recordsOf(req.turnId)).toEqual(before);
        // The tool's own result, applied by the worker's commit, is the one that counts.
        const own = await store.commit(commitOf(c, "w1", {
          expectedVersion: (r as { version: number }).version, now: T0 + 5,
          resolveToolCalls: [{ toolCallId: "call_in", outcome: { ok: true, value: "own" }, afterExecution: "continue" }],
        }));
        expect(own.status).toBe("applied");
        const resolved = await recordsOf(req.turnId);
        expect(await deliver(req.turnId, "call_in", { ok: true, value: "own" }, { now: T0 + 6 })).toEqual({ status: "not_external" });
        expect(await recordsOf(req.turnId)).toEqual(resolved);
        expect(resolved.calls.find((x) => x.toolCallId === "call_in")).toMatchObject({ source: "inline", outcome: { ok: true, value: "own" } });
      });

      it("a result for a delegated call answers delegated_call unless its child (or the watchdog) delivers it, and changes nothing", async () => {
        const { req } = await enqueue();
        const c = await claimOk();
        const r = await store.commit(commitOf(c, "w1", {
          state: "waiting-tools",
          recordToolCalls: [{ ...toolCall(req.turnId, "call_child", T0 + 100), delegated: true }, toolCall(req.turnId, "call_ext", T0 + 100)],
        }));
        expect(r.status).toBe("applied");
        const before = await recordsOf(req.turnId);
        for (const source of ["http", "inline"] as const) {
          expect(await deliver(req.turnId, "call_child", ok, { source })).toEqual({ status: "delegated_call" });
        }
        expect(await recordsOf(req.turnId)).toEqual(before);
        // A plain external call next to it still takes results from outside.
        expect((await deliver(req.turnId, "call_ext", ok)).status).toBe("accepted");
        // The child's own delivery resolves it; an outside result after it is still refused.
        const child = await deliver(req.turnId, "call_child", { ok: true, value: { facts: [] } }, { source: "delegation", now: T0 + 11 });
        expect(child).toMatchObject({ status: "accepted", record: { delegated: true, source: "delegation" } });
        const resolved = await recordsOf(req.turnId);
        expect(await deliver(req.turnId, "call_child", { ok: true, value: { facts: [] } }, { now: T0 + 12 })).toEqual({ status: "delegated_call" });
        expect(await recordsOf(req.turnId)).toEqual(resolved);
      });

      it("the watchdog still times out an in-process call whose tool never answered", async () => {
        const { req } = await enqueue();
        const c = await claimOk();
        await store.commit(commitOf(c, "w1", { state: "waiting-tools", recordToolCalls: [toolCall(req.turnId, "call_in", T0 + 100, false)], release: { runnableAt: null } }));
        expect(await watchdogTick(store, { now: () => T0 + 100 })).toEqual({ timedOut: 1, alreadyResolved: 0, turnFinished: 0, skipped: 0 });
        const [rec] = await store.getToolCalls("a1", req.turnId);
        expect(rec).toMatchObject({ status: "resolved", source: "watchdog", external: false, outcome: { ok: false, error: { type: "timeout" } } });
        const c2 = await claimOk("a1", "w2", T0 + 101);
        expect(c2.mail).toEqual([expect.objectContaining({ kind: "tool_result", toolCallId: "call_in", source: "watchdog" })]);
      });

      it("answers agent_not_found and unknown_call", async () => {
        expect((await store.deliverToolResult({ agentId: "zz", turnId: "t", toolCallId: "c", outcome: ok, afterExecution: "continue", source: "http", now: T0 })).status).toBe("agent_not_found");
        expect(await states("zz")).toEqual({ zz: NOTHING });
        const { turnId } = await withPendingCalls({ call_1: T0 + 100 });
        const before = await states();
        expect((await store.deliverToolResult({ agentId: "a1", turnId, toolCallId: "nope", outcome: ok, afterExecution: "continue", source: "http", now: T0 })).status).toBe("unknown_call");
        expect((await store.deliverToolResult({ agentId: "a1", turnId: "turn_x", toolCallId: "call_1", outcome: ok, afterExecution: "continue", source: "http", now: T0 })).status).toBe("unknown_call");
        expect(await states()).toEqual(before);
      });

      it("answers turn_finished for a pending call of a turn that ended, which is no longer due", async () => {
        const { turnId, claim, version } = await withPendingCalls({ call_1: T0 + 100 });
        const end = await store.commit(commitOf(claim, "w1", { expectedVersion: version, now: T0 + 2, state: "failed", activeTurnId: null, release: { runnableAt: null } }));
        expect(end.status).toBe("applied");
        expect(await store.dueToolCalls(T0 + 1_000, 10)).toEqual([]);
        const before = await states();
        expect((await store.deliverToolResult({ agentId: "a1", turnId, toolCallId: "call_1", outcome: ok, afterExecution: "continue", source: "http", now: T0 + 3 })).status).toBe("turn_finished");
        expect(await states()).toEqual(before);
      });

      it("skipDueToolCall moves a due record or takes it out of the index, logging watchdog_skipped; absent changes nothing", async () => {
        const { turnId } = await withPendingCalls({ c1: T0 + 100, c2: T0 + 101 });
        expect(await store.skipDueToolCall({ agentId: "a1", turnId, toolCallId: "c1", retryAt: T0 + 5_000, reason: "error: x", now: T0 + 200 }))
          .toEqual({ status: "skipped" });
        expect(await store.dueToolCalls(T0 + 200, 10)).toEqual([{ agentId: "a1", turnId, toolCallId: "c2" }]);
        expect(await store.dueToolCalls(T0 + 5_000, 10)).toEqual([
          { agentId: "a1", turnId, toolCallId: "c2" },
          { agentId: "a1", turnId, toolCallId: "c1" },
        ]);
        expect(await store.skipDueToolCall({ agentId: "a1", turnId, toolCallId: "c2", retryAt: null, reason: "unknown_call", now: T0 + 201 }))
          .toEqual({ status: "skipped" });
        expect(await store.dueToolCalls(T0 + 5_000, 10)).toEqual([{ agentId: "a1", turnId, toolCallId: "c1" }]);
        const ev = (await allEvents()).slice(-2);
        expect(ev.map((e) => [e.type, e.turnId, e.data])).toEqual([
          ["watchdog_skipped", turnId, { toolCallId: "c1", reason: "error: x", retryAt: T0 + 5_000 }],
          ["watchdog_skipped", turnId, { toolCallId: "c2", reason: "unknown_call", retryAt: null }],
        ]);
        const before = await states("a1", "nobody");
        expect(await store.skipDueToolCall({ agentId: "a1", turnId, toolCallId: "c2", retryAt: null, reason: "again", now: T0 + 202 }))
          .toEqual({ status: "absent" });
        expect(await store.skipDueToolCall({ agentId: "nobody", turnId, toolCallId: "c9", retryAt: null, reason: "x", now: T0 + 202 }))
          .toEqual({ status: "absent" });
        expect(await states("a1", "nobody")).toEqual(before);
      });

      it("the watchdog: a record whose delivery throws is pushed back and skipped; it never holds up the others", async () => {
        const { turnId } = await withPendingCalls({ p1: T0 + 10, p2: T0 + 11, g1: T0 + 20, g2: T0 + 21, g3: T0 + 22 });
        // A store whose delivery throws for the poison calls (unreadable data, a failing script).
        const poisoned = new Proxy(store, {
          get(target, prop, recv) {
            if (prop === "deliverToolResult") {
              return (req: Parameters<Store["deliverToolResult"]>[0]) => {
                if (req.toolCallId.startsWith("p")) return Promise.reject(new Error("cannot read record"));
                return target.deliverToolResult(req);
              };
            }
            const v = Reflect.get(target, prop, recv);
            return typeof v === "function" ? v.bind(target) : v;
          },
        });
        const ticks = [];
        for (let i = 0; i < 3; i++) ticks.push(await watchdogTick(poisoned, { now: () => T0 + 100 + i }, 2, { retryMs: 60_000 }));
        expect(ticks).toEqual([
          { timedOut: 0, alreadyResolved: 0, turnFinished: 0, skipped: 2 },
          { timedOut: 2, alreadyResolved: 0, turnFinished: 0, skipped: 0 },
          { timedOut: 1, alreadyResolved: 0, turnFinished: 0, skipped: 0 },
        ]);
        const resolved = (await store.getToolCalls("a1", turnId)).filter((c) => c.status === "resolved").map((c) => c.toolCallId).sort();
        expect(resolved).toEqual(["g1", "g2", "g3"]);
        // The poison records come back after the backoff, behind nothing.
        expect((await store.dueToolCalls(T0 + 100 + 60_000, 10)).map((d) => d.toolCallId)).toEqual(["p1", "p2"]);
        const skipped = (await allEvents()).filter((e) => e.type === "watchdog_skipped");
        expect(skipped.map((e) => e.data.toolCallId)).toEqual(["p1", "p2"]);
        expect(skipped[0].data.reason).toBe("error: cannot read record");
        // Once readable, they time out like any other.
        expect(await watchdogTick(store, { now: () => T0 + 100 + 60_000 })).toMatchObject({ timedOut: 2, skipped: 0 });
      });

      it("the watchdog: a failing skip does not stop the pass either", async () => {
        await withPendingCalls({ p1: T0 + 10, g1: T0 + 20 });
        const broken = new Proxy(store, {
          get(target, prop, recv) {
            if (prop === "deliverToolResult") {
              return (req: Parameters<Store["deliverToolResult"]>[0]) =>
                req.toolCallId === "p1" ? Promise.reject(new Error("boom")) : target.deliverToolResult(req);
            }
            if (prop === "skipDueToolCall") return () => Promise.reject(new Error("store down"));
            const v = Reflect.get(target, prop, recv);
            return typeof v === "function" ? v.bind(target) : v;
          },
        });
        expect(await watchdogTick(broken, { now: () => T0 + 100 })).toEqual({ timedOut: 1, alreadyResolved: 0, turnFinished: 0, skipped: 0 });
      });

      it("resolveToolCalls in a commit resolves in-process calls with source inline", async () => {
        const { turnId, claim, version } = await withPendingCalls({ call_1: T0 + 100 });
        const r = await store.commit(commitOf(claim, "w1", {
          expectedVersion: version, now: T0 + 5,
          resolveToolCalls: [{ toolCallId: "call_1", outcome: { ok: true, value: 3 }, afterExecution: "continue" }],
        }));
        expect(r.status).toBe("applied");
        const [rec] = await store.getToolCalls("a1", turnId);
        expect(rec).toMatchObject({ status: "resolved", outcome: { ok: true, value: 3 }, afterExecution: "continue", source: "inline", resolvedAt: T0 + 5 });
        expect(await store.dueToolCalls(T0 + 1_000, 10)).toEqual([]);
        expect((await store.deliverToolResult({ agentId: "a1", turnId, toolCallId: "call_1", outcome: { ok: true, value: 3 }, afterExecution: "continue", source: "http", now: T0 + 6 })).status).toBe("duplicate");
        expect(await store.deliverToolResult({ agentId: "a1", turnId, toolCallId: "call_1", outcome: ok, afterExecution: "continue", source: "http", now: T0 + 6 })).toEqual({ status: "already_resolved", record: rec, resolvedBy: "result" });
      });

      it("a commit with stopAtCancel is refused with cancel_pending while a cancel of the turn waits, and gives the agent back (invariant `firm-cancels`)", async () => {
        const { turnId, claim, version } = await withPendingCalls({ call_1: T0 + 100 });
        // Without a cancel it applies as any commit.
        const first = await store.commit(commitOf(claim, "w1", { expectedVersion: version, now: T0 + 2, stopAtCancel: true }));
        expect(first.status).toBe("applied");
        const v1 = (first as { version: number }).version;
        expect(await store.requestCancel({ agentId: "a1", reason: "stop", now: T0 + 3 })).toEqual({ status: "accepted", turnId });
        const before = (await states()).a1;
        const r = await store.commit(commitOf(claim, "w1", {
          expectedVersion: v1, now: T0 + 4, stopAtCancel: true,
          events: [{ type: "step", data: {} }], messages: [{ role: "assistant", content: "done" }], activeTurnId: null, state: "done",
        }));
        expect(r).toEqual({ status: "conflict", reason: "cancel_pending" });
        // Nothing of the commit landed; the only writes are the released lease and the bell rung at now.
        const after = (await states()).a1;
        const lease = ["leaseOwner", "leaseUntil"];
        expect(omitHeadFields(after, lease)).toEqual(withIndexes(omitHeadFields(before, lease), { ready: { [TARGET]: T0 + 4 } }));
        // The next claim takes the cancel; its commit acknowledging it applies, stopAtCancel or not.
        const c2 = await claimOk("a1", "w2", T0 + 5);
        const cancel = c2.mail.find((m) => m.kind === "cancel")!;
        expect(cancel).toMatchObject({ kind: "cancel", turnId });
        const done = await store.commit(commitOf(c2, "w2", { now: T0 + 6, stopAtCancel: true, ackMailThrough: cancel.seq }));
        expect(done.status).toBe("applied");
        const v2 = (done as { version: number }).version;
        // Acknowledged: later commits of the turn apply again.
        expect((await store.commit(commitOf(c2, "w2", { expectedVersion: v2, now: T0 + 7, stopAtCancel: true }))).status).toBe("applied");
      });

      it("a commit without stopAtCancel applies while a cancel waits; a cancel of another turn never stops a commit", async () => {
        const { turnId, claim, version } = await withPendingCalls({ call_1: T0 + 100 });
        expect(await store.requestCancel({ agentId: "a1", reason: "stop", now: T0 + 3 })).toEqual({ status: "accepted", turnId });
        const r = await store.commit(commitOf(claim, "w1", { expectedVersion: version, now: T0 + 4, activeTurnId: null, state: "done", release: { runnableAt: null } }));
        expect(r.status).toBe("applied");
        // The next turn: the old cancel (still unacknowledged mail) is aimed at the ended turn.
        await enqueue({ now: T0 + 5 });
        const c2 = await claimOk("a1", "w1", T0 + 6);
        expect(c2.head.activeTurnId).not.toBe(turnId);
        expect((await store.commit(commitOf(c2, "w1", { now: T0 + 7, stopAtCancel: true }))).status).toBe("applied");
      });

      it("refuses a commit resolving a call the watchdog resolved first with tool_call_resolved, and gives the agent back", async () => {
        const { turnId, claim, version } = await withPendingCalls({ call_1: T0 + 100 });
        const tick = await watchdogTick(store, { now: () => T0 + 100 });
        expect(tick.timedOut).toBe(1);
        const before = (await states()).a1;
        const r = await store.commit(commitOf(claim, "w1", {
          expectedVersion: version, now: T0 + 101,
          events: [{ type: "tool_result", data: {} }],
          messages: [{ role: "tool", content: "3", toolCallId: "call_1" }],
          recordToolCalls: [toolCall(turnId, "call_2", T0 + 500)],
          resolveToolCalls: [{ toolCallId: "call_1", outcome: { ok: true, value: 3 }, afterExecution: "continue" }],
          ackMailThrough: 99, activeTurnId: null,
        }));
        expect(r).toEqual({ status: "conflict", reason: "tool_call_resolved" });
        // Nothing of the commit landed; the only writes are the released lease and the bell rung at now.
        const after = (await states()).a1;
        const lease = ["leaseOwner", "leaseUntil"];
        expect(omitHeadFields(after, lease)).toEqual(withIndexes(omitHeadFields(before, lease), { ready: { [TARGET]: T0 + 101 } }));
        const head = await store.getAgent("a1");
        expect([head!.leaseOwner, head!.leaseUntil]).toEqual([null, 0]);
        const [rec] = await store.getToolCalls("a1", turnId);
        expect(rec).toMatchObject({ status: "resolved", source: "watchdog", outcome: { ok: false, error: { type: "timeout" } } });
        // The lease was released so another worker picks up the timeout mail at once.
        const c2 = await claimOk("a1", "w2", T0 + 102);
        expect(c2.mail.map((m) => m.kind)).toEqual(["tool_result"]);
      });
    });

    // ---------------------------------------------------------------- events and messages

    describe("events and messages", () => {
      it("event ids are dense per agent and readEvents(after, limit) pages through them", async () => {
        await enqueue();
        const c = await claimOk();
        const events = Array.from({ length: 7 }, (_, i) => ({ type: "step", data: { i } }));
        const r = await store.commit(commitOf(c, "w1", { events }));
        expect(r).toEqual({ status: "applied", version: 1, lastEventId: 8, messagesTrimmedThrough: 0 });
        await enqueue({ agentId: "other" });
        const all = await allEvents();
        expect(all.map((e) => e.id)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
        const pages: number[][] = [];
        for (let after = 0; ; ) {
          const page = await store.readEvents("a1", after, 3);
          if (page.length === 0) break;
          pages.push(page.map((e) => e.id));
          after = page[page.length - 1].id;
        }
        expect(pages).toEqual([[1, 2, 3], [4, 5, 6], [7, 8]]);
        expect((await store.readEvents("a1", 2, 2)).map((e) => e.data)).toEqual([{ i: 1 }, { i: 2 }]);
        expect(await store.readEvents("a1", 8, 10)).toEqual([]);
        expect(await store.readEvents("nobody", 0, 10)).toEqual([]);
        expect((await store.readEvents("other", 0, 10)).map((e) => e.id)).toEqual([1]);
      });

      it("served-events: events naming a transition by ref are served expanded, whatever the page's bounds and budget", async () => {
        await enqueue();
        const c = await claimOk();
        const args = { q: "a question long enough" };
        const outcome = { ok: true, value: { answer: "an answer long enough" } };
        const text = "the step's text, streamed in two pieces";
        const call = { id: "c1", name: "ask", args, external: false, deadline: T0 + 5 };
        const written: NewEvent[] = [
          { type: "step", data: { phase: "planning", step: 1, text } },
          { type: "chunk", data: { step: 1, text: text.slice(0, 20) } },
          { type: "chunk", data: { step: 1, text: text.slice(20) } },
          { type: "tool_call", data: { step: 1, toolCallId: "c1", name: "ask", args, external: false, deadline: T0 + 5 } },
          { type: "transition", data: { seq: 1, from: "running", to: "waiting-tools", event: { type: "MODEL_STEP", at: T0, text, toolCalls: [call], usage: { inputTokens: 1, outputTokens: 2 }, cost: 0 } } },
          { type: "tool_result", data: { toolCallId: "c1", name: "ask", ok: true, outcome, afterExecution: "continue" } },
          { type: "transition", data: { seq: 2, from: "waiting-tools", to: "running", event: { type: "TOOL_RESULT", at: T0, toolCallId: "c1", outcome, afterExecution: "continue" } } },
        ];
        const compact = compactEvents(written);
        expect(compact.filter((e) => typeof e.data.ref === "number")).toHaveLength(5);
        await store.commit(commitOf(c, "w1", { events: compact }));
        const served = await store.readEvents("a1", 0, 100);
        // After the enqueue's own event.
        expect(served.slice(1).map((e) => JSON.stringify({ type: e.type, data: e.data }))).toEqual(written.map((e) => JSON.stringify(e)));
        const sizes = served.map((e) => new TextEncoder().encode(JSON.stringify(e)).byteLength);
        for (let after = 0; after < served.length; after++) {
          for (let limit = 1; after + limit <= served.length; limit++) {
            expect(await store.readEvents("a1", after, limit), `after ${after}, limit ${limit}`).toEqual(served.slice(after, after + limit));
          }
          // A budget of served bytes: exactly the events that fit, the first always.
          const fit = sizes[after] + (sizes[after + 1] ?? 0);
          expect((await store.readEvents("a1", after, 100, fit)).map((e) => e.id)).toEqual(served.slice(after, after + 2).map((e) => e.id));
          expect((await store.readEvents("a1", after, 100, fit - 1)).map((e) => e.id)).toEqual([served[after].id]);
        }
      });

      it("served-events: a page cut within a commit and the transitions it names are one store call", async () => {
        await enqueue();
        const c = await claimOk();
        const args = { q: "a question long enough" };
        const text = "the step's text, long enough to be stored once";
        const call = { id: "c1", name: "ask", args, external: false, deadline: T0 + 5 };
        const written: NewEvent[] = [
          { type: "step", data: { phase: "planning", step: 1, text } },
          { type: "tool_call", data: { step: 1, toolCallId: "c1", name: "ask", args, external: false, deadline: T0 + 5 } },
          { type: "transition", data: { seq: 1, from: "running", to: "waiting-tools", event: { type: "MODEL_STEP", at: T0, text, toolCalls: [call], usage: { inputTokens: 1, outputTokens: 2 }, cost: 0 } } },
        ];
        await store.commit(commitOf(c, "w1", { events: compactEvents(written) }));
        const whole = (await store.readEvents("a1", 0, 100)).slice(1);
        expect(whole.map((e) => JSON.stringify({ type: e.type, data: e.data }))).toEqual(written.map((e) => JSON.stringify(e)));
        if (!h.scriptCalls) return;
        const before = await h.scriptCalls();
        // Ids 2 and 3 name the MODEL_STEP (id 4), past the page's end: by limit, then by budget.
        expect(await store.readEvents("a1", 1, 2)).toEqual(whole.slice(0, 2));
        expect(await store.readEvents("a1", 2, 100, 1)).toEqual(whole.slice(1, 2));
        expect(await h.scriptCalls() - before).toBe(2);
      });

      it("served-events: a compact event whose transition the store does not hold is served as trimmed, never compact", async () => {
        if (!h.cutEvents) return;
        await enqueue();
        const c = await claimOk();
        const args = { q: "a question long enough" };
        const outcome = { ok: true, value: { answer: "an answer long enough" } };
        const usage = { inputTokens: 1, outputTokens: 2 };
        const call = { id: "c1", name: "ask", args, external: false, deadline: T0 + 5 };
        const written: NewEvent[] = [
          { type: "tool_call", data: { step: 1, toolCallId: "c1", name: "ask", args, external: false, deadline: T0 + 5 } },
          { type: "transition", data: { seq: 1, from: "running", to: "waiting-tools", event: { type: "MODEL_STEP", at: T0, text: null, toolCalls: [call], usage, cost: 0 } } },
          { type: "step", data: { phase: "completed", step: 1, model: "m", llmUsage: usage, llmResponseCost: 0, toolCallIds: ["c1"] } },
          { type: "tool_result", data: { toolCallId: "c1", name: "ask", ok: true, outcome, afterExecution: "continue" } },
          { type: "transition", data: { seq: 2, from: "waiting-tools", to: "running", event: { type: "TOOL_RESULT", at: T0, toolCallId: "c1", outcome, afterExecution: "continue" } } },
          { type: "step", data: { phase: "started", step: 2 } },
        ];
        const compact = compactEvents(written);
        // Ids 2..7; the completed step (id 4) names the MODEL_STEP before it (id 3).
        expect(compact.map((e) => e.data.ref)).toEqual([1, undefined, -1, 1, undefined, undefined]);
        await store.commit(commitOf(c, "w1", { events: compact }));
        const whole = (await store.readEvents("a1", 0, 100)).slice(1);
        // The log cut within the commit, after the MODEL_STEP.
        await h.cutEvents("a1", 3);
        const anyCompact = (page: Array<{ type: string; data: unknown }>) => page.map((e) => JSON.stringify(e.data)).some((d) => d.includes('"ref":'));
        const reads: Array<[number, number, number | undefined, number[]]> = [
          [0, 100, undefined, [5, 6, 7]], [0, 1, undefined, [5]], [3, 2, undefined, [5]], [4, 100, undefined, [5, 6, 7]],
          [0, 100, 0, [5]], [0, 100, 1e9, [5, 6, 7]], [5, 100, undefined, [6, 7]],
        ];
        for (const [after, limit, maxBytes, ids] of reads) {
          const page = await store.readEvents("a1", after, limit, maxBytes);
          expect(page.map((e) => e.id), `after ${after}, limit ${limit}, maxBytes ${maxBytes}`).toEqual(ids);
          expect(anyCompact(page)).toBe(false);
          expect(page).toEqual(whole.filter((e) => ids.includes(e.id)));
        }
      });

      it("readEvents stops a page at the byte budget, but always returns the first event", async () => {
        await enqueue();
        const c = await claimOk();
        const events = [1_000, 10, 10, 5_000, 10].map((n, i) => ({ type: "step", data: { i, pad: "é".repeat(n) } }));
        await store.commit(commitOf(c, "w1", { events }));
        const all = await allEvents();
        const size = (e: unknown) => new TextEncoder().encode(JSON.stringify(e)).byteLength;
        const sizes = all.map(size);
        // Budget = events 2..4 exactly: three events; one byte less: two.
        expect((await store.readEvents("a1", 1, 100, sizes[1] + sizes[2] + sizes[3])).map((e) => e.id)).toEqual([2, 3, 4]);
        expect((await store.readEvents("a1", 1, 100, sizes[1] + sizes[2] + sizes[3] - 1)).map((e) => e.id)).toEqual([2, 3]);
        // An event larger than the budget comes alone.
        expect((await store.readEvents("a1", 4, 100, 10)).map((e) => e.id)).toEqual([5]);
        expect((await store.readEvents("a1", 0, 100, 0)).map((e) => e.id)).toEqual([1]);
        // The count limit still applies, and a large budget changes nothing.
        expect((await store.readEvents("a1", 0, 2, 1e9)).map((e) => e.id)).toEqual([1, 2]);
        expect(await store.readEvents("a1", 0, 100, 1e9)).toEqual(all);
        expect(await store.readEvents("a1", 6, 100, 10)).toEqual([]);
        // Paging by budget visits every event once.
        const seen: number[] = [];
        for (let after = 0; ; ) {
          const page = await store.readEvents("a1", after, 100, 3_000);
          if (page.length === 0) break;
          seen.push(...page.map((e) => e.id));
          after = page.at(-1)!.id;
        }
        expect(seen).toEqual(all.map((e) => e.id));
      });

      it("messages are appended across commits and read from an index", async () => {
        await enqueue();
        const c = await claimOk();
        const r1 = await store.commit(commitOf(c, "w1", { messages: [{ role: "user", content: "a" }, { role: "assistant", content: "b" }] }));
        const r2 = await store.commit(commitOf(c, "w1", { expectedVersion: (r1 as { version: number }).version, now: T0 + 2, messages: [{ role: "user", content: "c" }] }));
        expect(r2.status).toBe("applied");
        expect((await store.readMessages("a1")).map((m) => m.content)).toEqual(["a", "b", "c"]);
        expect((await store.readMessages("a1", 1)).map((m) => m.content)).toEqual(["b", "c"]);
        expect(await store.readMessages("a1", 3)).toEqual([]);
        expect(await store.readMessages("nobody")).toEqual([]);
        expect((await store.getAgent("a1"))!.messageCount).toBe(3);
      });

      it("commit events carry the turn id of the commit, also when the commit ends the turn", async () => {
        const { req } = await enqueue();
        const c = await claimOk();
        await store.commit(commitOf(c, "w1", { events: [{ type: "a", data: {} }], state: "done", activeTurnId: null }));
        const last = (await allEvents()).at(-1)!;
        expect(last.turnId).toBe(req.turnId);
      });
    });

    // ---------------------------------------------------------------- verdicts

    describe("verdicts", () => {
      const v = (id: string, turnId: string, status: string) => ({ agentId: "a1", verdictId: id, turnId, status, json: JSON.stringify({ verdictId: id, turnId, status }) });

      it("writes a verdict once: a second write answers exists and leaves the record as it was", async () => {
        await enqueue();
        expect(await store.putVerdict(v("verdict_1", "t1", "PASS"))).toEqual({ status: "written" });
        const before = await states();
        const again = { ...v("verdict_1", "t1", "FAIL"), json: "{\"changed\":true}" };
        expect(await store.putVerdict(again)).toEqual({ status: "exists" });
        expect(await states()).toEqual(before);
        expect(await store.getVerdict("verdict_1")).toBe(v("verdict_1", "t1", "PASS").json);
        expect(await store.listVerdicts("a1", {})).toEqual([v("verdict_1", "t1", "PASS").json]);
      });

      it("getVerdict answers null for an unknown id", async () => {
        expect(await store.getVerdict("verdict_none")).toBeNull();
      });

      it("listVerdicts lists in write order and filters by turn and status", async () => {
        await enqueue();
        await store.putVerdict(v("v1", "t1", "NEEDS_CHANGES"));
        await store.putVerdict(v("v2", "t1", "PASS"));
        await store.putVerdict(v("v3", "t2", "FAIL"));
        await store.putVerdict(v("v4", "t2", "PASS"));
        const ids = (xs: string[]) => xs.map((x) => JSON.parse(x).verdictId);
        expect(ids(await store.listVerdicts("a1", {}))).toEqual(["v1", "v2", "v3", "v4"]);
        expect(ids(await store.listVerdicts("a1", { turnId: "t2" }))).toEqual(["v3", "v4"]);
        expect(ids(await store.listVerdicts("a1", { status: "PASS" }))).toEqual(["v2", "v4"]);
        expect(ids(await store.listVerdicts("a1", { turnId: "t1", status: "PASS" }))).toEqual(["v2"]);
        expect(await store.listVerdicts("a1", { turnId: "t9" })).toEqual([]);
        expect(await store.listVerdicts("nobody", {})).toEqual([]);
      });

      it("stores the record text byte for byte", async () => {
        await enqueue();
        const json = "{\"b\":1,  \"a\":\"ü \\u00fc\"}";
        await store.putVerdict({ agentId: "a1", verdictId: "v_raw", turnId: "t1", status: "PASS", json });
        expect(await store.getVerdict("v_raw")).toBe(json);
      });
    });

    // ---------------------------------------------------------------- agents index

    describe("agents index (listAgents)", () => {
      it("lists every agent newest updatedAt first, follows claims and commits, pages with a cursor, filters by time", async () => {
        expect(await store.listAgents({ limit: 10 })).toEqual([]);
        await enqueue({ agentId: "a1", now: T0 });
        await enqueue({ agentId: "a2", now: T0 + 5 });
        await enqueue({ agentId: "a3", now: T0 + 5 });
        await enqueue({ agentId: "a4", now: T0 + 9 });
        // A second task of a1 does not move its updatedAt (enqueue writes it only when it creates the head).
        await enqueue({ agentId: "a1", now: T0 + 20 });
        expect(await store.listAgents({ limit: 10 })).toEqual([
          { agentId: "a4", updatedAt: T0 + 9 },
          { agentId: "a3", updatedAt: T0 + 5 },
          { agentId: "a2", updatedAt: T0 + 5 },
          { agentId: "a1", updatedAt: T0 },
        ]);
        // A claim and a commit move an agent to the front, with the head's updatedAt.
        const c = await claimOk("a1", "w1", T0 + 30);
        expect((await store.listAgents({ limit: 1 }))[0]).toEqual({ agentId: "a1", updatedAt: T0 + 30 });
        expect((await store.commit(commitOf(c, "w1", { now: T0 + 40 }))).status).toBe("applied");
        expect((await store.getAgent("a1"))!.updatedAt).toBe(T0 + 40);
        const all = await store.listAgents({ limit: 10 });
        expect(all.map((e) => e.agentId)).toEqual(["a1", "a4", "a3", "a2"]);
        for (const e of all) expect((await store.getAgent(e.agentId))!.updatedAt).toBe(e.updatedAt);
        // Pages of 1 across the tie at T0 + 5 reach each agent once.
        const seen: string[] = [];
        let after: { agentId: string; updatedAt: number } | undefined;
        for (;;) {
          const page = await store.listAgents({ limit: 1, ...(after ? { after } : {}) });
          if (page.length === 0) break;
          seen.push(page[0].agentId);
          after = page[0];
        }
        expect(seen).toEqual(["a1", "a4", "a3", "a2"]);
        // Pages of 2 starting mid-tie.
        expect(await store.listAgents({ limit: 2, after: { agentId: "a3", updatedAt: T0 + 5 } })).toEqual([{ agentId: "a2", updatedAt: T0 + 5 }]);
        expect((await store.listAgents({ limit: 10, updatedSince: T0 + 5 })).map((e) => e.agentId)).toEqual(["a1", "a4", "a3", "a2"]);
        expect((await store.listAgents({ limit: 10, updatedSince: T0 + 6 })).map((e) => e.agentId)).toEqual(["a1", "a4"]);
        expect((await store.listAgents({ limit: 10, updatedSince: T0 + 5, after: { agentId: "a3", updatedAt: T0 + 5 } })).map((e) => e.agentId)).toEqual(["a2"]);
        expect(await store.listAgents({ limit: 10, updatedSince: T0 + 41 })).toEqual([]);
      });

      it("mail and cancels do not move an agent in the index", async () => {
        const { turnId } = await withPendingCalls({ call_1: T0 + 1_000 });
        const before = await store.listAgents({ limit: 10 });
        await store.deliverToolResult({ agentId: "a1", turnId, toolCallId: "call_1", outcome: ok, afterExecution: "continue", source: "http", now: T0 + 500 });
        expect(await store.listAgents({ limit: 10 })).toEqual(before);
      });
    });

    // ---------------------------------------------------------------- forks

    describe("forks (createFork, recordFork)", () => {
      const forkReq = (over: Record<string, unknown> = {}) => ({
        agentId: "f1",
        agentName: "calc2",
        workerTarget: TARGET,
        snapshot: { value: "waiting-tools", context: { n: 1 } },
        state: "waiting-tools",
        activeTurnId: "turn_9",
        currentTask: { turnId: "turn_9", options: {}, enqueuedAt: T0 },
        input: { q: "fork me" },
        messages: [{ role: "user", content: "{\"q\":\"fork me\"}" }, { role: "assistant", content: "", toolCalls: [{ id: "call_1", name: "ask", args: {} }] }] as Message[],
        toolCalls: [toolCall("turn_9", "call_1", T0 + 5_000)],
        event: { type: "forked_from", data: { agentId: "a1", atEventId: 3 } },
        runnableAt: null,
        now: T0 + 100,
        ...over,
      });

      it("creates the new agent with its snapshot, messages, pending calls and first event; the calls resolve like any", async () => {
        const r = await store.createFork(forkReq());
        expect(r).toEqual({ status: "created", lastEventId: 1 });
        const head = (await store.getAgent("f1"))!;
        expect(head).toMatchObject({
          agentId: "f1", agentName: "calc2", workerTarget: TARGET, state: "waiting-tools", activeTurnId: "turn_9",
          snapshot: { value: "waiting-tools", context: { n: 1 } }, version: 0, epoch: 0, messageCount: 2, lastEventId: 1,
          createdAt: T0 + 100, updatedAt: T0 + 100, pendingTasks: 0, pendingMail: 0, runnableAt: null, leaseOwner: null,
        });
        expect(await store.readMessages("f1")).toEqual(forkReq().messages);
        const ev = await allEvents("f1");
        expect(ev).toEqual([{ id: 1, at: T0 + 100, turnId: "turn_9", type: "forked_from", data: { agentId: "a1", atEventId: 3 } }]);
        expect(await store.getTurn("f1", "turn_9")).toEqual({ turnId: "turn_9", status: "active", input: { q: "fork me" } });
        const [rec] = await store.getToolCalls("f1", "turn_9");
        expect(rec).toMatchObject({ agentId: "f1", turnId: "turn_9", toolCallId: "call_1", status: "pending", external: true, deadline: T0 + 5_000 });
        expect(await store.dueToolCalls(T0 + 5_000, 10)).toEqual([{ agentId: "f1", turnId: "turn_9", toolCallId: "call_1" }]);
        expect(await store.listAgents({ limit: 10 })).toEqual([{ agentId: "f1", updatedAt: T0 + 100 }]);
        const d = await store.deliverToolResult({ agentId: "f1", turnId: "turn_9", toolCallId: "call_1", outcome: ok, afterExecution: "continue", source: "http", now: T0 + 200 });
        expect(d.status).toBe("accepted");
        const c = await claimOk("f1", "w1", T0 + 300);
        expect(c.task).toEqual({ turnId: "turn_9", options: {}, enqueuedAt: T0, input: { q: "fork me" } });
        expect(c.mail).toHaveLength(1);
      });

      it("refuses an id that exists and writes nothing", async () => {
        await enqueue({ agentId: "f1" });
        const before = { head: await store.getAgent("f1"), events: await allEvents("f1"), msgs: await store.readMessages("f1") };
        expect(await store.createFork(forkReq())).toEqual({ status: "exists" });
        expect({ head: await store.getAgent("f1"), events: await allEvents("f1"), msgs: await store.readMessages("f1") }).toEqual(before);
        expect(await store.getToolCalls("f1", "turn_9")).toEqual([]);
        expect(await store.dueToolCalls(T0 + 10_000, 10)).toEqual([]);
      });

      it("a fork between turns is idle with no active turn and is rung when runnable", async () => {
        const r = await store.createFork(forkReq({ state: "done", snapshot: { value: "done" }, activeTurnId: null, currentTask: null, input: undefined, toolCalls: [], messages: [] }));
        expect(r.status).toBe("created");
        const head = (await store.getAgent("f1"))!;
        expect(head).toMatchObject({ state: "done", activeTurnId: null, currentTask: null, messageCount: 0 });
        expect(await store.nextReadyAt(TARGET)).toBeNull();
        await store.createFork(forkReq({ agentId: "f2", state: "running", snapshot: { value: "running" }, toolCalls: [], runnableAt: T0 + 100 }));
        expect(await store.nextReadyAt(TARGET)).toBe(T0 + 100);
        expect((await claimOk("f2", "w1", T0 + 100)).head.state).toBe("running");
      });

      it("recordFork appends forked_to to the source and changes nothing else", async () => {
        await enqueue({ agentId: "a1", now: T0 });
        const before = (await store.getAgent("a1"))!;
        const index = await store.listAgents({ limit: 10 });
        const r = await store.recordFork({ agentId: "a1", event: { type: "forked_to", data: { agentId: "f1", atEventId: 1 } }, now: T0 + 50 });
        expect(r).toEqual({ status: "recorded", eventId: 2 });
        expect(await store.getAgent("a1")).toEqual({ ...before, lastEventId: 2 });
        expect((await allEvents("a1"))[1]).toEqual({ id: 2, at: T0 + 50, turnId: null, type: "forked_to", data: { agentId: "f1", atEventId: 1 } });
        expect(await store.listAgents({ limit: 10 })).toEqual(index);
        expect(await store.recordFork({ agentId: "nobody", event: { type: "forked_to", data: {} }, now: T0 })).toEqual({ status: "agent_not_found" });
        expect(await store.getAgent("nobody")).toBeNull();
      });
    });

    // ---------------------------------------------------------------- reads

    describe("reads", () => {
      it("no read writes anything: getAgent, getToolCalls, readMessages, readEvents, dueToolCalls, nextReadyAt, getVerdict, listVerdicts", async () => {
        const { turnId } = await withPendingCalls({ call_1: T0 + 100 });
        await store.putVerdict({ agentId: "a1", verdictId: "v1", turnId, status: "PASS", json: "{}" });
        const before = await states("a1", "nobody");
        await store.getAgent("a1");
        await store.getAgent("nobody");
        await store.getToolCalls("a1", turnId);
        await store.readMessages("a1", 0);
        await store.readEvents("a1", 0, 100);
        await store.dueToolCalls(T0 + 1_000, 10);
        await store.nextReadyAt(TARGET);
        await store.getVerdict("v1");
        await store.listVerdicts("a1", { status: "PASS" });
        expect(await states("a1", "nobody")).toEqual(before);
      });
    });

    // ---------------------------------------------------------------- refusals, at random

    describe("refusals (random operations)", () => {
      // Mostly valid operations (so agents get claimed, commits apply, calls get recorded and turns end)
      // with a fault now and then, so that every kind of refusal comes up.
      type Op =
        | { op: "enqueue"; agent: number; other: boolean; key: number }
        | { op: "claim"; agent: number; worker: number }
        | { op: "commit"; agent: number; fault: number; record: boolean; resolve: number; end: boolean; release: boolean }
        | { op: "deliver"; agent: number; call: number; otherTurn: boolean }
        | { op: "cancel"; agent: number; turn: number; task: boolean }
        | { op: "renew"; agent: number; fault: boolean }
        | { op: "verdict"; agent: number; id: number }
        | { op: "advance"; ms: number };
      // r1 and r2 exist from the start; "ghost" never does.
      const agent = fc.constantFrom(0, 0, 1, 1, 2);
      const opArb: fc.Arbitrary<Op> = fc.oneof(
        { weight: 3, arbitrary: fc.record({ op: fc.constant("enqueue" as const), agent, other: fc.integer({ min: 0, max: 4 }).map((x) => x === 0), key: fc.integer({ min: 0, max: 2 }) }) },
        { weight: 3, arbitrary: fc.record({ op: fc.constant("claim" as const), agent, worker: fc.integer({ min: 0, max: 1 }) }) },
        {
          weight: 6,
          arbitrary: fc.record({
            op: fc.constant("commit" as const), agent, fault: fc.integer({ min: 0, max: 11 }), record: fc.integer({ min: 0, max: 2 }).map((x) => x > 0),
            resolve: fc.integer({ min: -3, max: 2 }), end: fc.integer({ min: 0, max: 3 }).map((x) => x === 0), release: fc.boolean(),
          }),
        },
        { weight: 4, arbitrary: fc.record({ op: fc.constant("deliver" as const), agent, call: fc.integer({ min: 0, max: 4 }), otherTurn: fc.integer({ min: 0, max: 3 }).map((x) => x === 0) }) },
        { weight: 3, arbitrary: fc.record({ op: fc.constant("cancel" as const), agent, turn: fc.integer({ min: -1, max: 4 }), task: fc.boolean() }) },
        { weight: 1, arbitrary: fc.record({ op: fc.constant("renew" as const), agent, fault: fc.boolean() }) },
        { weight: 1, arbitrary: fc.record({ op: fc.constant("verdict" as const), agent, id: fc.integer({ min: 0, max: 2 }) }) },
        { weight: 2, arbitrary: fc.record({ op: fc.constant("advance" as const), ms: fc.constantFrom(1, LEASE / 2, LEASE) }) },
      );
      const AGENTS = ["r1", "r2", "ghost"];
      const WORKERS = ["w1", "w2"];
      /** Statuses that promise no write at all. */
      const NO_WRITE = new Set([
        "duplicate", "definition_conflict", "busy", "agent_not_found", "fenced", "version", "turn", "unknown_call", "turn_finished",
        "not_active", "lost", "exists", "turn_not_started", "turn_not_found", "turn_started", "cancelled_already",
      ]);

      it("an operation that is refused, or answers duplicate, writes nothing (the documented bell and lease writes aside)", async () => {
        const seen = new Map<string, number>();
        await fc.assert(
          fc.asyncProperty(fc.array(opArb, { minLength: 10, maxLength: 40 }), async (ops) => {
            const hh = await make();
            const s = hh.store;
            try {
              let now = T0;
              let n = 0;
              /** agent -> its latest claim, the worker that holds it and the version after its last applied commit. */
              const claims = new Map<string, { c: Claimed; worker: string; version: number }>();
              const calls = new Map<string, Array<{ id: string; turnId: string }>>();
              /** agent -> turn ids it enqueued */
              const turnsOf = new Map<string, string[]>([["r1", []], ["r2", []], ["ghost", []]]);
              for (const id of ["r1", "r2"]) {
                await s.enqueueTask({ agentId: id, agentName: "calc", workerTarget: TARGET, input: 0, options: {}, turnId: `rt_${++n}`, now });
                turnsOf.get(id)!.push(`rt_${n}`);
              }
              for (const o of ops) {
                if (o.op === "advance") {
                  now += o.ms;
                  continue;
                }
                const id = AGENTS[o.agent];
                if (o.op === "commit" && !claims.has(id)) {
                  // A commit needs a claim: take one first (setup, not the operation under test).
                  const r = await s.claim({ agentId: id, workerId: WORKERS[0], leaseMs: LEASE, now });
                  if (r.status === "claimed") claims.set(id, { c: r, worker: WORKERS[0], version: r.head.version });
                }
                const before = await statesOf(hh.state, AGENTS);
                let expected = before;
                let status: string;
                if (o.op === "enqueue") {
                  status = (await s.enqueueTask({
                    agentId: id, agentName: o.other ? "other" : "calc", workerTarget: TARGET, input: o.key, options: {},
                    turnId: `rt_${++n}`, now, ...(o.key > 0 ? { idempotencyKey: `k${o.key}` } : {}),
                  })).status;
                  if (status === "enqueued") turnsOf.get(id)!.push(`rt_${n}`);
                } else if (o.op === "claim") {
                  const r = await s.claim({ agentId: id, workerId: WORKERS[o.worker], leaseMs: LEASE, now });
                  status = r.status;
                  if (r.status === "claimed") claims.set(id, { c: r, worker: WORKERS[o.worker], version: r.head.version });
                  if (r.status === "empty") {
                    // Documented: an empty claim drops or moves the agent's bell, and writes nothing else.
                    const bell = (await statesOf(hh.state, [id]))[id].ready;
                    expected = { ...before, [id]: withIndexes(before[id], { ready: bell }) };
                  }
                } else if (o.op === "commit") {
                  const held = claims.get(id);
                  if (!held) continue;
                  const { c } = held;
                  const turnId = o.fault === 3 ? "turn_other" : c.head.activeTurnId;
                  const known = calls.get(id) ?? [];
                  // Negative: resolve nothing; an index of a recorded call: that call; 2 past the end: a call never recorded.
                  const resolve = o.resolve < 0 ? undefined : o.resolve < known.length ? known[o.resolve].id : o.resolve === 2 ? "call_none" : undefined;
                  const recordId = `call_${++n}`;
                  const r = await s.commit(commitOf(c, o.fault === 4 ? "w_other" : held.worker, {
                    epoch: c.epoch - (o.fault === 1 ? 1 : 0),
                    expectedVersion: held.version - (o.fault === 2 ? 1 : 0),
                    turnId,
                    now,
                    events: [{ type: "step", data: { n } }],
                    messages: [{ role: "assistant", content: `m${n}` }],
                    recordToolCalls: o.record && turnId ? [toolCall(turnId, recordId, now + LEASE)] : [],
                    resolveToolCalls: resolve ? [{ toolCallId: resolve, outcome: ok, afterExecution: "continue" }] : [],
                    activeTurnId: o.end ? null : turnId,
                    release: o.release ? { runnableAt: null } : null,
                    ackMailThrough: 1,
                  }));
                  status = r.status === "applied" ? "applied" : r.reason;
                  if (r.status === "applied") {
                    held.version = r.version;
                    if (o.record && turnId) calls.set(id, [...known, { id: recordId, turnId }]);
                  }
                  if (status === "tool_call_resolved") {
                    // Documented: the lease is released and the bell rung at now; nothing of the commit lands.
                    const lease = ["leaseOwner", "leaseUntil"];
                    const after = (await statesOf(hh.state, AGENTS))[id];
                    expect(omitHeadFields(after, lease), `${JSON.stringify(o)} -> ${status}`)
                      .toEqual(withIndexes(omitHeadFields(before[id], lease), { ready: { [TARGET]: now } }));
                  }
                } else if (o.op === "deliver") {
                  const known = calls.get(id) ?? [];
                  // 0-3: a recorded call (when there is one); 4: a call never recorded.
                  const call = o.call < 4 && known.length > 0 ? known[o.call % known.length] : { id: "call_none", turnId: "rt_1" };
                  status = (await s.deliverToolResult({
                    agentId: id, turnId: o.otherTurn ? "turn_other" : call.turnId, toolCallId: call.id, outcome: ok, afterExecution: "continue",
                    source: "http", now,
                  })).status;
                } else if (o.op === "cancel") {
                  // -1: no turn named; 4: a turn never enqueued; else one of the agent's turns.
                  const mine = turnsOf.get(id)!;
                  const turnId = o.turn < 0 ? undefined : o.turn < 4 && mine.length > 0 ? mine[o.turn % mine.length] : "turn_zz";
                  if (o.task) {
                    const r = await s.cancelTask({ agentId: id, turnId: turnId ?? "turn_zz", reason: "r", now });
                    status = r.status === "cancelled" && r.already ? "cancelled_already" : r.status;
                  } else {
                    status = (await s.requestCancel({ agentId: id, reason: "r", now, ...(turnId ? { turnId } : {}) })).status;
                  }
                } else if (o.op === "renew") {
                  const held = claims.get(id);
                  if (!held) continue;
                  status = (await s.renewLease({ agentId: id, workerId: held.worker, epoch: held.c.epoch - (o.fault ? 1 : 0), leaseMs: LEASE, now })).status;
                } else {
                  status = (await s.putVerdict({ agentId: id, verdictId: o.id === 2 ? `rv_${id}_${n}` : `rv_${id}`, turnId: "t", status: "PASS", json: "{}" })).status;
                }
                seen.set(`${o.op}:${status}`, (seen.get(`${o.op}:${status}`) ?? 0) + 1);
                if (NO_WRITE.has(status) || status === "empty") {
                  expect(await statesOf(hh.state, AGENTS), `${JSON.stringify(o)} -> ${status}`).toEqual(expected);
                }
              }
            } finally {
              await s.close();
              await hh.cleanup();
            }
          }),
          { numRuns: 30, seed: 20261123 },
        );
        // The runs came by every kind of refusal.
        const kinds = [
          "enqueue:duplicate", "enqueue:definition_conflict", "claim:busy", "claim:empty", "claim:agent_not_found",
          "commit:fenced", "commit:version", "commit:turn", "commit:tool_call_resolved",
          "deliver:duplicate", "deliver:unknown_call", "deliver:turn_finished", "deliver:agent_not_found",
          "cancel:not_active", "cancel:turn_not_started", "cancel:turn_not_found", "cancel:turn_started", "cancel:cancelled_already",
          "cancel:turn_finished", "renew:lost", "verdict:exists",
        ];
        expect(kinds.filter((k) => !seen.has(k)), [...seen].sort().map(([k, v]) => `${k}=${v}`).join(" ")).toEqual([]);
      }, 60_000);
    });

    // ---------------------------------------------------------------- turns ended from outside

    describe("recordClaimFailure and resetTurn", () => {
      const END: TurnEnd = {
        snapshot: { value: "failed", context: { error: { reason: "claim_error" } } },
        state: "failed",
        events: [{ type: "transition", data: { to: "failed" } }, { type: "task", data: { status: "failed" } }],
        messages: [{ role: "tool", toolCallId: "call_1", content: "failed" }],
      };

      /** a1 with turn 1 claimed by w1 (a pending external call, a tool result in the mail) and a second task queued. */
      async function failingTurn() {
        const { turnId, claim, version } = await withPendingCalls({ call_1: T0 + 60_000, call_2: T0 + 60_000 });
        await store.deliverToolResult({ agentId: "a1", turnId, toolCallId: "call_1", outcome: ok, afterExecution: "continue", source: "http", now: T0 + 2 });
        const second = await enqueue({ now: T0 + 3 });
        return { turnId, next: second.req.turnId, c: claim, version };
      }
      const fail = (c: Claimed, turnId: string | null, version: number, over: Partial<ClaimFailureRequest> = {}): ClaimFailureRequest => ({
        agentId: "a1", workerId: "w1", epoch: c.epoch, expectedVersion: version, turnId, error: "boom",
        maxFailures: 3, retryBaseMs: 1_000, end: END, now: T0 + 10, ...over,
      });

      it("below maxFailures: counts, logs claim_failed, releases the lease and offers the agent again after the backoff", async () => {
        const { turnId, c, version } = await failingTurn();
        const r = await store.recordClaimFailure(fail(c, turnId, version));
        expect(r).toEqual({ status: "retry", failures: 1, retryAt: T0 + 1_010 });
        const h1 = (await store.getAgent("a1"))!;
        expect(h1).toMatchObject({ activeTurnId: turnId, leaseOwner: null, version, runnableAt: T0 + 1_010 });
        const ev = (await allEvents()).at(-1)!;
        expect(ev).toMatchObject({ type: "claim_failed", turnId, data: { attempt: 1, maxAttempts: 3, error: "boom", workerId: "w1", retryAt: T0 + 1_010 } });
        // Not offered before the backoff, offered at it.
        expect(await store.claimNext({ workerTarget: TARGET, workerId: "w2", leaseMs: LEASE, now: T0 + 500 })).toEqual({ status: "empty" });
        const c2 = await store.claimNext({ workerTarget: TARGET, workerId: "w2", leaseMs: LEASE, now: T0 + 1_010 });
        expect(c2).toMatchObject({ status: "claimed", agentId: "a1" });
        // The second failure doubles the backoff; the count is per turn, across workers.
        const r2 = await store.recordClaimFailure(fail(c2 as Claimed, turnId, version, { workerId: "w2", now: T0 + 1_100 }));
        expect(r2).toEqual({ status: "retry", failures: 2, retryAt: T0 + 3_100 });
      });

      it("at maxFailures: ends the turn with the given end, drops its mail and deadlines, and the next task proceeds", async () => {
        const first = await failingTurn();
        const { turnId, next } = first;
        let now = T0 + 5;
        let r: ClaimFailureResult | undefined = await store.recordClaimFailure(fail(first.c, turnId, first.version, { now }));
        expect(r.status).toBe("retry");
        for (let i = 2; i <= 3; i++) {
          now += 100_000;
          const c = await claimOk("a1", `w${i}`, now);
          r = await store.recordClaimFailure(fail(c, turnId, c.head.version, { workerId: `w${i}`, now: now + 1 }));
        }
        expect(r).toMatchObject({ status: "turn_failed", failures: 3 });
        const h = (await store.getAgent("a1"))!;
        expect(h).toMatchObject({
          activeTurnId: null, currentTask: null, state: "failed", snapshot: END.snapshot, leaseOwner: null,
          pendingMail: 0, pendingTasks: 1, version: (r as { version: number }).version,
        });
        const events = await allEvents();
        expect(events.slice(-3).map((e) => [e.type, e.turnId])).toEqual([["claim_failed", turnId], ["transition", turnId], ["task", turnId]]);
        expect(events.at(-3)!.data).toMatchObject({ attempt: 3, retryAt: null });
        expect((await store.readMessages("a1")).at(-1)).toEqual(END.messages[0]);
        expect(await store.dueToolCalls(T0 + 10_000_000, 100)).toEqual([]);
        expect((await store.deliverToolResult({ agentId: "a1", turnId, toolCallId: "call_2", outcome: ok, afterExecution: "continue", source: "http", now })).status).toBe("turn_finished");
        now += 1;
        const c = await store.claimNext({ workerTarget: TARGET, workerId: "w9", leaseMs: LEASE, now });
        expect(c).toMatchObject({ status: "claimed", task: { turnId: next }, mail: [] });
        // A new turn starts its own count.
        const again = await store.recordClaimFailure(fail(c as Claimed, next, (c as Claimed).head.version, { workerId: "w9", now: now + 1 }));
        expect(again).toMatchObject({ status: "retry", failures: 1 });
      });

      it("counts only for the claim that owns the agent at the version and turn it read; otherwise stale and nothing written", async () => {
        const { turnId, c, version } = await failingTurn();
        const head = await store.getAgent("a1");
        expect(await store.recordClaimFailure(fail(c, turnId, version, { workerId: "w2" }))).toEqual({ status: "stale" });
        expect(await store.recordClaimFailure(fail(c, turnId, version, { epoch: c.epoch - 1 }))).toEqual({ status: "stale" });
        expect(await store.recordClaimFailure(fail(c, turnId, version + 1))).toEqual({ status: "stale" });
        expect(await store.recordClaimFailure(fail(c, "turn_other", version))).toEqual({ status: "stale" });
        expect(await store.recordClaimFailure(fail(c, turnId, version, { agentId: "nobody" }))).toEqual({ status: "agent_not_found" });
        expect(await store.getAgent("a1")).toEqual(head);
        // A replay of an applied failure finds the lease released: stale.
        const req = fail(c, turnId, version);
        expect((await store.recordClaimFailure(req)).status).toBe("retry");
        const after = await store.getAgent("a1");
        expect(await store.recordClaimFailure(req)).toEqual({ status: "stale" });
        expect(await store.getAgent("a1")).toEqual(after);
      });

      it("maxFailures 1 ends the turn at the first failure", async () => {
        const { turnId, c, version } = await failingTurn();
        expect(await store.recordClaimFailure(fail(c, turnId, version, { maxFailures: 1 }))).toMatchObject({ status: "turn_failed", failures: 1 });
      });

      it("resetTurn answers agent_not_found, and not_active between turns without writing", async () => {
        await enqueue();
        expect(await store.resetTurn({ agentId: "nobody", expectedVersion: 0, turnId: "t", end: END, now: T0 })).toEqual({ status: "agent_not_found" });
        const head = await store.getAgent("a1");
        expect(await store.resetTurn({ agentId: "a1", expectedVersion: 0, turnId: "t", end: END, now: T0 })).toEqual({ status: "not_active" });
        expect(await store.getAgent("a1")).toEqual(head);
      });

      it("resetTurn ends the active turn, increments epoch (the running worker is fenced) and lets the next task run", async () => {
        const { turnId, next, c } = await failingTurn();
        const head = (await store.getAgent("a1"))!;
        expect(await store.resetTurn({ agentId: "a1", expectedVersion: head.version + 1, turnId, end: END, now: T0 + 6 })).toEqual({ status: "conflict" });
        expect(await store.resetTurn({ agentId: "a1", expectedVersion: head.version, turnId: "turn_x", end: END, now: T0 + 6 })).toEqual({ status: "conflict" });
        expect(await store.getAgent("a1")).toEqual(head);
        const r = await store.resetTurn({ agentId: "a1", expectedVersion: head.version, turnId, end: END, now: T0 + 6 });
        expect(r).toEqual({ status: "reset", version: head.version + 1, epoch: c.epoch + 1 });
        expect(await store.getAgent("a1")).toMatchObject({ activeTurnId: null, state: "failed", leaseOwner: null, pendingMail: 0, epoch: c.epoch + 1 });
        expect(await store.commit(commitOf(c, "w1", { now: T0 + 7 }))).toEqual({ status: "conflict", reason: "fenced" });
        expect((await allEvents()).slice(-2).map((e) => [e.type, e.turnId])).toEqual([["transition", turnId], ["task", turnId]]);
        const c2 = await store.claimNext({ workerTarget: TARGET, workerId: "w2", leaseMs: LEASE, now: T0 + 8 });
        expect(c2).toMatchObject({ status: "claimed", task: { turnId: next } });
        expect(await store.resetTurn({ agentId: "a1", expectedVersion: head.version + 1, turnId, end: END, now: T0 + 9 })).toEqual({ status: "conflict" });
      });

      it("ping answers", async () => {
        await expect(store.ping()).resolves.toBeUndefined();
      });
    });

    describe("transport dedup of signed deliveries", () => {
      const W = 600_000;
      const H = 5_000;
      const TASKS = "POST /v1/agents/t1/tasks";
      const base = { messageId: "webhook:msg_1", target: TASKS, holder: "h1", windowMs: W, holdMs: H };
      const first = { status: 202, contentType: "application/json", body: '{"turnId":"turn_x"}' };

      it("claims a message id once; a replay to the same target sees in_progress, then the first response", async () => {
        expect(await store.claimDelivery({ ...base, now: T0 })).toEqual({ status: "fresh" });
        expect(await store.claimDelivery({ ...base, holder: "h2", now: T0 + 1 })).toEqual({ status: "in_progress", holdUntil: T0 + H });
        expect(await store.recordDelivery({ ...base, now: T0 + 2, response: first })).toEqual({ status: "written" });
        expect(await store.claimDelivery({ ...base, holder: "h2", now: T0 + 3 })).toEqual({ status: "answered", response: first });
        // Written once: a second record (of anyone) is lost and changes nothing.
        expect(await store.recordDelivery({ ...base, now: T0 + 4, response: { ...first, status: 200 } })).toEqual({ status: "lost" });
        expect(await store.claimDelivery({ ...base, holder: "h3", now: T0 + 5 })).toEqual({ status: "answered", response: first });
        // Another message id (or scheme): its own record.
        expect(await store.claimDelivery({ ...base, messageId: "qstash:msg_1", now: T0 + 3 })).toEqual({ status: "fresh" });
      });

      it("is deployment-wide: the same message id for another target (another agent's path) is other_target while the record lives, answered or not", async () => {
        expect(await store.claimDelivery({ ...base, now: T0 })).toEqual({ status: "fresh" });
        for (const target of ["POST /v1/agents/t2/tasks", "POST /v1/agents/t1/cancel", "POST /v1/agents/t1/tool-results"]) {
          expect(await store.claimDelivery({ ...base, target, holder: "h2", now: T0 + 1 })).toEqual({ status: "other_target" });
          // Not renewed or settled through another target either.
          expect(await store.renewDelivery({ ...base, target, now: T0 + 1 })).toEqual({ status: "lost" });
          expect(await store.recordDelivery({ ...base, target, now: T0 + 1, response: first })).toEqual({ status: "lost" });
        }
        // Past the hold (the holder died), another target is still refused: the binding lives for the window.
        expect(await store.claimDelivery({ ...base, target: "POST /v1/agents/t2/tasks", holder: "h2", now: T0 + H + 1 })).toEqual({ status: "other_target" });
        expect(await store.recordDelivery({ ...base, now: T0 + 2, response: first })).toEqual({ status: "written" });
        expect(await store.claimDelivery({ ...base, target: "POST /v1/agents/t2/tasks", holder: "h2", now: T0 + W - 1 })).toEqual({ status: "other_target" });
        expect(await store.claimDelivery({ ...base, holder: "h2", now: T0 + W - 1 })).toEqual({ status: "answered", response: first });
      });

      it("a hold expires holdMs after its claim or last renewal: then the next claim takes the message over, once", async () => {
        expect(await store.claimDelivery({ ...base, now: T0 })).toEqual({ status: "fresh" });
        expect(await store.renewDelivery({ ...base, now: T0 + 4_000 })).toEqual({ status: "renewed" });
        // Renewed at T0 + 4 000: held until T0 + 9 000, not T0 + 5 000.
        expect(await store.claimDelivery({ ...base, holder: "h2", now: T0 + 8_999 })).toEqual({ status: "in_progress", holdUntil: T0 + 9_000 });
        // Only the holder renews.
        expect(await store.renewDelivery({ ...base, holder: "h2", now: T0 + 8_999 })).toEqual({ status: "lost" });
        // The holder died: the first claim after the hold takes over, the next sees the new hold.
        expect(await store.claimDelivery({ ...base, holder: "h2", now: T0 + 9_000 })).toEqual({ status: "fresh" });
        expect(await store.claimDelivery({ ...base, holder: "h3", now: T0 + 9_001 })).toEqual({ status: "in_progress", holdUntil: T0 + 9_000 + H });
        // The old holder lost it: its renewal and its answer change nothing.
        expect(await store.renewDelivery({ ...base, now: T0 + 9_002 })).toEqual({ status: "lost" });
        expect(await store.recordDelivery({ ...base, now: T0 + 9_002, response: { ...first, status: 200 } })).toEqual({ status: "lost" });
        expect(await store.recordDelivery({ ...base, holder: "h2", now: T0 + 9_003, response: first })).toEqual({ status: "written" });
        expect(await store.claimDelivery({ ...base, holder: "h4", now: T0 + 9_004 })).toEqual({ status: "answered", response: first });
        expect(await store.renewDelivery({ ...base, holder: "h2", now: T0 + 9_005 })).toEqual({ status: "lost" });
      });

      it("a holder that lets go (response null) leaves the target bound; the next claim for it runs again", async () => {
        expect(await store.claimDelivery({ ...base, now: T0 })).toEqual({ status: "fresh" });
        expect(await store.recordDelivery({ ...base, now: T0 + 1, response: null })).toEqual({ status: "written" });
        expect(await store.claimDelivery({ ...base, target: "POST /v1/agents/t2/tasks", holder: "h2", now: T0 + 2 })).toEqual({ status: "other_target" });
        expect(await store.claimDelivery({ ...base, holder: "h2", now: T0 + 2 })).toEqual({ status: "fresh" });
        expect(await store.recordDelivery({ ...base, holder: "h2", now: T0 + 3, response: first })).toEqual({ status: "written" });
        // The window counts from the `now` arguments (the record at T0 + 3 extends it), not the store's clock.
        expect(await store.claimDelivery({ ...base, holder: "h3", now: T0 + 3 + W - 1 })).toEqual({ status: "answered", response: first });
        expect(await store.claimDelivery({ ...base, target: "POST /v1/agents/t2/tasks", holder: "h3", now: T0 + 3 + W })).toEqual({ status: "fresh" });
      });

      it("refuses message ids, targets and holders that cannot be stored, writing nothing", async () => {
        await expect(store.claimDelivery({ ...base, messageId: "bad id\n", now: T0 })).rejects.toThrow(/message id/);
        await expect(store.claimDelivery({ ...base, messageId: "", now: T0 })).rejects.toThrow(/message id/);
        await expect(store.claimDelivery({ ...base, target: "POST /x\n", now: T0 })).rejects.toThrow(/delivery target/);
        await expect(store.claimDelivery({ ...base, holder: "", now: T0 })).rejects.toThrow(/holder/);
        expect(await store.claimDelivery({ ...base, now: T0 })).toEqual({ status: "fresh" });
      });
    });

    // ---------------------------------------------------------------- retention (invariant `retention`)

    describe("retention and deletion (invariants `retention`, `deletion`)", () => {
      const limits = { maxEvents: 20, maxEventBytes: 1_000_000, maxTurns: 3, checkpointEvery: 5 };

      /** Runs `n` whole turns on a1: enqueue (1 event), claim, one commit ending the turn (3 events, 2 messages). */
      async function runTurns(n: number, retention: CommitRequest["retention"] | null = limits, from = 0) {
        for (let i = from; i < from + n; i++) {
          const now = T0 + i * 10;
          const { req } = await enqueue({ now, idempotencyKey: `k${i}`, input: `question ${i}` });
          const c = await claimOk("a1", "w1", now + 1);
          const r = await store.commit(commitOf(c, "w1", {
            now: now + 2,
            snapshot: { value: "done", turn: i },
            state: "done",
            activeTurnId: null,
            events: [1, 2, 3].map((k) => ({ type: "step", data: { turn: i, k } })),
            messages: [{ role: "user", content: "", inputOf: req.turnId }, { role: "assistant", content: `answer ${i}` }],
            recordToolCalls: [toolCall(req.turnId, `call_${i}`, now + 1_000)],
            release: { runnableAt: null },
            ...(retention ? { retention } : {}),
          }));
          expect(r.status).toBe("applied");
        }
      }

      it("keeps every event id dense and monotonic while cutting the log at a checkpoint", async () => {
        await runTurns(30);
        const head = (await store.getAgent("a1"))!;
        expect(head.lastEventId).toBe(120);
        expect(head.messageCount).toBe(60);
        const base = head.eventsTrimmedThrough;
        expect(base).toBeGreaterThan(0);
        // At most maxEvents plus one turn's events remain.
        expect(head.lastEventId - base).toBeLessThanOrEqual(limits.maxEvents + 4);
        const events = await store.readEvents("a1", 0, 1000);
        expect(events.map((e) => e.id)).toEqual(Array.from({ length: 120 - base }, (_, i) => base + 1 + i));
        // Reading from inside the kept range works as before; from before it starts at the base.
        expect((await store.readEvents("a1", base + 2, 2)).map((e) => e.id)).toEqual([base + 3, base + 4]);
        expect((await store.readEvents("a1", 1, 1))[0].id).toBe(base + 1);
        // The base checkpoint is the agent right after event `base`: the snapshot that commit stored.
        const cp = (await store.readCheckpoint("a1"))!;
        expect(cp.eventId).toBe(base);
        const turnOfBase = base / 4 - 1;
        expect(cp.snapshot).toEqual({ value: "done", turn: turnOfBase });
        expect(cp.messageIndex).toBe((turnOfBase + 1) * 2);
      });

      it("drops the records of old turns (status, input, tool calls, idempotency key, messages) and keeps the recent ones", async () => {
        await runTurns(30);
        const head = (await store.getAgent("a1"))!;
        expect(await store.getTurn("a1", "turn_1")).toBeNull();
        expect(await store.getToolCalls("a1", "turn_1")).toEqual([]);
        expect(await store.getTurn("a1", "turn_30")).toEqual({ turnId: "turn_30", status: "done", input: "question 29" });
        expect(await store.getToolCalls("a1", "turn_30")).toHaveLength(1);
        const dropped = head.messagesTrimmedThrough;
        expect(dropped).toBeGreaterThan(0);
        expect(dropped % 2).toBe(0);
        // Fewer idempotency entries than turns: the dropped turns' keys went with them.
        expect(await h.idempotencyEntries("a1")).toBe(30 - dropped / 2);
        // A dropped key is free again: it enqueues a new turn.
        expect((await enqueue({ idempotencyKey: "k0", now: T0 + 1_000 })).r.status).toBe("enqueued");
        const conv = (await store.readConversation("a1"))!;
        expect(conv.firstIndex).toBe(dropped);
        expect(conv.messages).toHaveLength(60 - dropped);
        expect(conv.messages[0]).toEqual({ role: "user", content: `question ${dropped / 2}` });
        expect(await store.readMessages("a1", 58)).toEqual([{ role: "user", content: "question 29" }, { role: "assistant", content: "answer 29" }]);
        // Records reach back at least maxTurns turns and no further than the base checkpoint.
        expect(30 - dropped / 2).toBeGreaterThanOrEqual(limits.maxTurns);
      });

      it("drops, like any other, turns ended by a reset and tasks cancelled while queued", async () => {
        const reset = (await enqueue({ idempotencyKey: "r", now: T0 - 100 })).req.turnId;
        const c = await claimOk("a1", "w1", T0 - 99);
        const end = { snapshot: { value: "failed" }, state: "failed", events: [], messages: [{ role: "assistant" as const, content: "reset" }] };
        expect((await store.resetTurn({ agentId: "a1", expectedVersion: c.head.version, turnId: reset, end, now: T0 - 98 })).status).toBe("reset");
        const cancelled = (await enqueue({ idempotencyKey: "c", now: T0 - 97 })).req.turnId;
        expect(await store.cancelTask({ agentId: "a1", turnId: cancelled, reason: "no", now: T0 - 96 })).toEqual({ status: "cancelled", already: false });
        expect((await store.getTurn("a1", cancelled))!.status).toBe("cancelled");
        await runTurns(30, limits, 100);
        expect(await store.getTurn("a1", reset)).toBeNull();
        expect(await store.getTurn("a1", cancelled)).toBeNull();
        // Their keys went with them: both enqueue new turns now.
        expect((await enqueue({ idempotencyKey: "r", now: T0 + 5_000 })).r.status).toBe("enqueued");
        expect((await enqueue({ idempotencyKey: "c", now: T0 + 5_001 })).r.status).toBe("enqueued");
        const conv = (await store.readConversation("a1"))!;
        expect(conv.messages.some((m) => m.content === "reset")).toBe(false);
      });

      it("cuts by bytes as well as by count", async () => {
        await runTurns(12, { ...limits, maxEvents: 1_000, maxEventBytes: 600 });
        const head = (await store.getAgent("a1"))!;
        expect(head.eventsTrimmedThrough).toBeGreaterThan(0);
        const kept = await store.readEvents("a1", 0, 1000);
        expect(kept[0].id).toBe(head.eventsTrimmedThrough + 1);
        expect(kept.at(-1)!.id).toBe(48);
      });

      it("keeps everything without limits; a commit that keeps the turn open trims nothing", async () => {
        await runTurns(10, null);
        const head = (await store.getAgent("a1"))!;
        expect([head.eventsTrimmedThrough, head.messagesTrimmedThrough]).toEqual([0, 0]);
        expect(await store.readCheckpoint("a1")).toBeNull();
        expect(await store.readEvents("a1", 0, 1000)).toHaveLength(40);
      });

      it("refuses limits that are not positive integers, writing nothing", async () => {
        await enqueue();
        const c = await claimOk();
        const before = await states();
        for (const bad of [{ ...limits, maxEvents: 0 }, { ...limits, maxTurns: -1 }, { ...limits, checkpointEvery: 1.5 }]) {
          await expect(store.commit(commitOf(c, "w1", { activeTurnId: null, state: "done", retention: bad }))).rejects.toThrow(/retention\./);
        }
        expect(await states()).toEqual(before);
      });

      it("stores the rolling summary with the commit that carries it", async () => {
        await enqueue();
        const c = await claimOk();
        expect((await store.readConversation("a1"))!.summary).toBeNull();
        await store.commit(commitOf(c, "w1", { summary: { content: "earlier: 1+2 was asked", through: 0 } }));
        expect((await store.readConversation("a1"))!.summary).toEqual({ content: "earlier: 1+2 was asked", through: 0 });
        expect(await store.readConversation("nobody")).toBeNull();
        // fromSummary: only what the summary does not cover.
        const v = (await store.getAgent("a1"))!.version;
        await store.commit(commitOf(c, "w1", {
          expectedVersion: v, now: T0 + 2,
          messages: [{ role: "user", content: "a" }, { role: "assistant", content: "b" }, { role: "user", content: "c" }],
          summary: { content: "a and b", through: 2 },
        }));
        expect(await store.readConversation("a1", { fromSummary: true })).toEqual({
          summary: { content: "a and b", through: 2 }, firstIndex: 2, messages: [{ role: "user", content: "c" }],
        });
        expect((await store.readConversation("a1"))!.messages).toHaveLength(3);
      });

      it("deleteAgent removes every record and index entry of the agent and nothing of another; verdict records stay", async () => {
        await runTurns(8);
        // A queued task (bell), an active turn with a pending call (deadline), a verdict.
        await enqueue({ now: T0 + 500 });
        const c = await claimOk("a1", "w1", T0 + 501);
        await store.commit(commitOf(c, "w1", { now: T0 + 502, recordToolCalls: [toolCall(c.head.activeTurnId!, "open", T0 + 5_000)] }));
        await enqueue({ now: T0 + 503 });
        await store.putVerdict({ agentId: "a1", verdictId: "v_1", turnId: "turn_1", status: "passed", json: '{"id":"v_1"}' });
        await enqueue({ agentId: "a2", now: T0 + 504 });
        const other = await states("a2");

        expect(await store.deleteAgent("a1", T0 + 505)).toEqual({ status: "deleted" });
        expect(await store.getAgent("a1")).toBeNull();
        const after = (await states("a1")).a1;
        // Only the deletion marker stays under the id (invariant `deletion-marker`; the memory store keeps it apart).
        const { deleted: _marker, ...rest } = after.records;
        expect(rest).toEqual({});
        expect(after.ready).toEqual({});
        expect(after.deadlines).toEqual({});
        expect(await store.listAgents({ limit: 10 })).toEqual([{ agentId: "a2", updatedAt: T0 + 504 }]);
        expect(await store.getVerdict("v_1")).toBe('{"id":"v_1"}');
        expect(await store.listVerdicts("a1", {})).toEqual([]);
        expect(await store.dueToolCalls(T0 + 10_000, 100)).toEqual([]);
        expect(await states("a2")).toEqual(other);
        // Idempotent: a second delete finds nothing; the id can be used again from scratch.
        expect(await store.deleteAgent("a1")).toEqual({ status: "agent_not_found" });
        await enqueue({ now: T0 + 600 });
        const fresh = (await store.getAgent("a1"))!;
        expect([fresh.lastEventId, fresh.messageCount, fresh.pendingTasks]).toEqual([1, 0, 1]);
      });

      it("deleteAgent leaves a marker: an enqueue with refuseDeleted answers agent_deleted and writes nothing (invariant `deletion-marker`)", async () => {
        await enqueue({ now: T0 });
        expect((await enqueue({ agentId: "a2", now: T0, refuseDeleted: true })).r.status).toBe("enqueued"); // never deleted
        expect(await store.deleteAgent("a1", T0 + 7)).toEqual({ status: "deleted" });
        const nothing = await states("a1");
        for (const key of ["k1", undefined]) {
          const { r } = await enqueue({ now: T0 + 8, refuseDeleted: true, ...(key ? { idempotencyKey: key } : {}) });
          expect(r).toEqual({ status: "agent_deleted", deletedAt: T0 + 7 });
        }
        expect(await states("a1")).toEqual(nothing);
        expect(await store.getAgent("a1")).toBeNull();
        // Without refuseDeleted the id is free again; the marker stays for the refusing kind.
        expect((await enqueue({ now: T0 + 9 })).r.status).toBe("enqueued");
        expect((await enqueue({ now: T0 + 10, refuseDeleted: true })).r).toEqual({ status: "agent_deleted", deletedAt: T0 + 7 });
        // Deleting again moves the marker; an id never created gets none.
        expect(await store.deleteAgent("a1", T0 + 11)).toEqual({ status: "deleted" });
        expect((await enqueue({ now: T0 + 12, refuseDeleted: true })).r).toEqual({ status: "agent_deleted", deletedAt: T0 + 11 });
        expect(await store.deleteAgent("a3", T0 + 13)).toEqual({ status: "agent_not_found" });
        expect((await enqueue({ agentId: "a3", now: T0 + 14, refuseDeleted: true })).r.status).toBe("enqueued");
      });
    });

    // ---------------------------------------------------------------- concurrency

    describe("concurrency", () => {
      it("50 concurrent claims of one agent: exactly one wins, the others answer busy", async () => {
        await enqueue();
        const cs = await clients(5);
        const results = await Promise.all(
          Array.from({ length: 50 }, (_, i) => cs[i % cs.length].claim({ agentId: "a1", workerId: `w${i}`, leaseMs: LEASE, now: T0 + 1 })),
        );
        const won = results.filter((r) => r.status === "claimed") as Claimed[];
        expect(won).toHaveLength(1);
        expect(results.filter((r) => r.status === "busy")).toHaveLength(49);
        const head = await store.getAgent("a1");
        expect(head!.epoch).toBe(1);
        expect(head!.leaseOwner).toBe(won[0].head.leaseOwner);
      });

      it("50 concurrent claimNext calls over 10 agents claim each agent exactly once", async () => {
        for (let i = 0; i < 10; i++) await enqueue({ agentId: `agent-${i}`, now: T0 + i });
        const cs = await clients(5);
        const results = await Promise.all(
          Array.from({ length: 50 }, (_, i) => cs[i % cs.length].claimNext({ workerTarget: TARGET, workerId: `w${i}`, leaseMs: LEASE, now: T0 + 20 })),
        );
        const won = (results.filter((r) => r.status === "claimed") as Claimed[]).map((r) => r.agentId).sort();
        expect(won).toEqual(Array.from({ length: 10 }, (_, i) => `agent-${i}`).sort());
        expect(results.filter((r) => r.status === "empty")).toHaveLength(40);
      });

      it("a commit with a stale epoch is refused while the new owner's commit applies", async () => {
        await enqueue();
        const c1 = await claimOk("a1", "w1", T0);
        const c2 = await claimOk("a1", "w2", T0 + LEASE);
        const cs = await clients(2);
        const [old, cur] = await Promise.all([
          cs[0].commit(commitOf(c1, "w1", { now: T0 + LEASE + 1, events: [{ type: "old", data: {} }] })),
          cs[cs.length - 1].commit(commitOf(c2, "w2", { now: T0 + LEASE + 1, events: [{ type: "new", data: {} }] })),
        ]);
        expect(old).toEqual({ status: "conflict", reason: "fenced" });
        expect(cur.status).toBe("applied");
        expect((await allEvents()).map((e) => e.type)).toEqual(["task_enqueued", "new"]);
      });

      it("a tool result delivered 10 times concurrently (different values) is applied once; the others learn it was resolved", async () => {
        const { turnId, claim, version } = await withPendingCalls({ call_1: T0 + 60_000 });
        await store.commit(commitOf(claim, "w1", { expectedVersion: version, now: T0 + 2, release: { runnableAt: null } }));
        const cs = await clients(5);
        const results = await Promise.all(
          Array.from({ length: 10 }, (_, i) => cs[i % cs.length].deliverToolResult({
            agentId: "a1", turnId, toolCallId: "call_1", outcome: { ok: true, value: i }, afterExecution: "continue", source: "http", now: T0 + 10 + i,
          })),
        );
        expect(results.filter((r) => r.status === "accepted")).toHaveLength(1);
        expect(results.filter((r) => r.status === "already_resolved" && r.resolvedBy === "result")).toHaveLength(9);
        const winner = results.find((r) => r.status === "accepted") as { record: ToolCallRecord };
        for (const r of results) expect((r as { record: ToolCallRecord }).record).toEqual(winner.record);
        expect((await store.getAgent("a1"))!.pendingMail).toBe(1);
        expect((await allEvents()).filter((e) => e.type === "tool_result_received")).toHaveLength(1);
        const c = await claimOk("a1", "w2", T0 + 100);
        expect(c.mail).toHaveLength(1);
        expect(c.mail[0]).toMatchObject({ kind: "tool_result", outcome: winner.record.outcome });
      });

      it("a result racing the watchdog's timeout yields exactly one of result or timeout", async () => {
        const cs = await clients(2);
        for (let round = 0; round < 10; round++) {
          const agentId = `race-${round}`;
          const { req } = await enqueue({ agentId });
          const c = await claimOk(agentId);
          await store.commit(commitOf(c, "w1", { recordToolCalls: [toolCall(req.turnId, "call_1", T0 + 50)], release: { runnableAt: null } }));
          const [http, tick] = await Promise.all([
            cs[0].deliverToolResult({ agentId, turnId: req.turnId, toolCallId: "call_1", outcome: ok, afterExecution: "continue", source: "http", now: T0 + 60 }),
            watchdogTick(cs[cs.length - 1], { now: () => T0 + 60 }),
          ]);
          const httpWon = http.status === "accepted";
          // The loser learns it lost: HTTP is told the timeout resolved the call, or the watchdog did not time it out.
          if (!httpWon) expect(http).toMatchObject({ status: "already_resolved", resolvedBy: "timeout" });
          expect(tick.timedOut).toBe(httpWon ? 0 : 1);
          const [rec] = await store.getToolCalls(agentId, req.turnId);
          expect(rec.source).toBe(httpWon ? "http" : "watchdog");
          expect(rec.outcome).toEqual(httpWon ? ok : expect.objectContaining({ ok: false }));
          expect((await store.getAgent(agentId))!.pendingMail).toBe(1);
          expect((await store.readEvents(agentId, 0, 100)).filter((e) => e.type === "tool_result_received")).toHaveLength(1);
          expect(await store.dueToolCalls(T0 + 1_000, 100)).toEqual([]);
        }
      });
    });
  });
}
