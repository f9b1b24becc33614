/**
 * The text part of the store conformance suite (store/port.ts invariant
 * `well-formed-text`), run by tests/store/store-conformance.ts on every adapter
 * (memory, Redis, Upstash, Cluster): a lone UTF-16 surrogate in any string a
 * store is given (an id, an idempotency key, a task's input, a tool call's
 * arguments, a result, a reason, an event, a message, a snapshot) is stored
 * as U+FFFD, the same on every adapter, and nothing the store wrote from it
 * makes a later call fail: claim, commit, result delivery, approval,
 * cancel, reset and delete all answer as they would for plain text.
 *
 * `JSON.parse('"\\ud800"')` is such a string, and `JSON.stringify` writes it
 * back as the escape `\ud800`, which Redis's Lua `cjson.decode` refuses.
 */
import { describe, expect, it } from "vitest";
import type { CommitRequest, Store, TurnEnd } from "../../store/port.ts";

export interface TextContext {
  store: Store;
}

const T0 = 1_700_000_000_000;
const LEASE = 10_000;
/** Lone surrogates, as a JSON body would hand them over. */
const HI = JSON.parse('"\\ud800"') as string;
const LO = JSON.parse('"\\udfff"') as string;
const R = "\ufffd";
const END: TurnEnd = { snapshot: { value: "failed" }, state: "failed", events: [], messages: [] };

export function textConformance(ctx: () => TextContext): void {
  describe("lone surrogates (invariant `well-formed-text`)", () => {
    const enqueue = (over: Record<string, unknown> = {}) =>
      ctx().store.enqueueTask({ agentId: "a1", agentName: "calc", workerTarget: "default", input: "x", options: {}, turnId: "turn_1", now: T0, ...over });
    const claim = async (agentId = "a1", now = T0 + 1) => {
      const c = await ctx().store.claim({ agentId, workerId: "w1", leaseMs: LEASE, now });
      if (c.status !== "claimed") throw new Error(`expected claimed, got ${JSON.stringify(c)}`);
      return c;
    };
    const commitOf = (c: Awaited<ReturnType<typeof claim>>, over: Partial<CommitRequest>): CommitRequest => ({
      agentId: c.agentId, workerId: "w1", epoch: c.epoch, expectedVersion: c.head.version, turnId: c.head.activeTurnId,
      snapshot: { value: "running" }, state: "running", activeTurnId: c.head.activeTurnId, events: [], messages: [],
      recordToolCalls: [], resolveToolCalls: [], ackMailThrough: 0, release: null, leaseMs: LEASE, now: T0 + 2, ...over,
    });

    it("an idempotency key: the task is claimed, cancelled, reset and deleted like any; the key is stored as U+FFFD", async () => {
      const { store } = ctx();
      expect(await enqueue({ idempotencyKey: `key${HI}` })).toEqual({ status: "enqueued", turnId: "turn_1" });
      // The same key, and the key as stored, find the first turn.
      expect(await enqueue({ idempotencyKey: `key${HI}`, turnId: "turn_2" })).toMatchObject({ status: "duplicate", turnId: "turn_1" });
      expect(await enqueue({ idempotencyKey: `key${R}`, turnId: "turn_3" })).toMatchObject({ status: "duplicate", turnId: "turn_1" });
      expect(await enqueue({ idempotencyKey: `later${LO}`, turnId: "turn_4", now: T0 + 1 })).toEqual({ status: "enqueued", turnId: "turn_4" });
      expect(await store.listQueuedTasks("a1", 10)).toMatchObject([{ turnId: "turn_1" }, { turnId: "turn_4" }]);
      const c = await claim();
      expect(c.task).toMatchObject({ turnId: "turn_1", input: "x" });
      expect(await store.requestCancel({ agentId: "a1", reason: `stop${HI}`, now: T0 + 2 })).toEqual({ status: "accepted", turnId: "turn_1" });
      expect(await store.cancelTask({ agentId: "a1", turnId: "turn_4", reason: `no${LO}`, now: T0 + 2 })).toEqual({ status: "cancelled", already: false });
      const head = (await store.getAgent("a1"))!;
      expect((await store.resetTurn({ agentId: "a1", expectedVersion: head.version, turnId: "turn_1", end: END, now: T0 + 3 })).status).toBe("reset");
      expect((await store.getTurn("a1", "turn_1"))?.status).toBe("failed");
      expect((await store.getAgent("a1"))?.activeTurnId).toBeNull();
      expect(await store.deleteAgent("a1", T0 + 4)).toEqual({ status: "deleted" });
      expect(await store.getAgent("a1")).toBeNull();
    });

    it("ids: an agent id and a turn id are stored with U+FFFD and found by either spelling", async () => {
      const { store } = ctx();
      const r = await enqueue({ agentId: `a${HI}`, turnId: `turn${LO}` });
      expect(r).toEqual({ status: "enqueued", turnId: `turn${R}` });
      expect((await store.getAgent(`a${HI}`))?.agentId).toBe(`a${R}`);
      expect((await store.getAgent(`a${R}`))?.agentId).toBe(`a${R}`);
      expect(await store.getTurn(`a${R}`, `turn${HI}`)).toMatchObject({ turnId: `turn${R}`, status: "queued" });
      const c = await claim(`a${HI}`);
      expect(c.agentId).toBe(`a${R}`);
      expect(c.head.activeTurnId).toBe(`turn${R}`);
      expect((await store.listAgents({ limit: 10 })).map((e) => e.agentId)).toEqual([`a${R}`]);
      expect(await store.deleteAgent(`a${HI}`, T0 + 5)).toEqual({ status: "deleted" });
    });

    it("task input: stored with U+FFFD (keys too), its byte count is that text's, and the claim reads it", async () => {
      const { store } = ctx();
      const input = { q: `x${HI}y`, [`k${LO}`]: [`${LO}${HI}`], pair: "😀" };
      const clean = { q: `x${R}y`, [`k${R}`]: [`${R}${R}`], pair: "😀" };
      await enqueue({ input, options: { forkedUnresolved: [`o${HI}`] } });
      expect(await store.getTurn("a1", "turn_1")).toEqual({ turnId: "turn_1", status: "queued", input: clean });
      const [ev] = await store.readEvents("a1", 0, 10);
      expect(ev.data).toEqual({ turnId: "turn_1", options: { forkedUnresolved: [`o${R}`] }, inputBytes: new TextEncoder().encode(JSON.stringify(clean)).byteLength });
      const c = await claim();
      expect(c.task).toEqual({ turnId: "turn_1", input: clean, options: { forkedUnresolved: [`o${R}`] }, enqueuedAt: T0 });
    });

    it("a commit: tool call arguments, messages, events and the snapshot are stored with U+FFFD; the turn goes on", async () => {
      const { store } = ctx();
      await enqueue();
      const c = await claim();
      const args = { path: `/tmp/${HI}`, [`${LO}`]: 1 };
      const r = await store.commit(commitOf(c, {
        snapshot: { value: "waiting-tools", note: `s${HI}` }, state: "waiting-tools",
        events: [{ type: "step", data: { text: `model${LO}` } }],
        messages: [{ role: "assistant", content: `said${HI}` }],
        recordToolCalls: [{ turnId: "turn_1", toolCallId: "c1", name: "ask", args, external: true, deadline: T0 + 60_000 }],
        release: { runnableAt: null },
      }));
      expect(r.status).toBe("applied");
      const [rec] = await store.getToolCalls("a1", "turn_1");
      expect(rec.args).toEqual({ path: `/tmp/${R}`, [R]: 1 });
      expect(await store.readMessages("a1")).toEqual([{ role: "assistant", content: `said${R}` }]);
      expect((await store.readEvents("a1", 0, 100)).find((e) => e.type === "step")?.data).toEqual({ text: `model${R}` });
      expect((await store.getAgent("a1"))?.snapshot).toEqual({ value: "waiting-tools", note: `s${R}` });
      // The result comes in, the turn is claimed again and reset: every script reads what the commit wrote.
      const d = await store.deliverToolResult({
        agentId: "a1", turnId: "turn_1", toolCallId: "c1", outcome: { ok: true, value: { out: `r${HI}` } }, afterExecution: "continue",
        source: "http", now: T0 + 3,
      });
      expect(d.status).toBe("accepted");
      const again = await claim("a1", T0 + 4);
      expect(again.mail).toMatchObject([{ kind: "tool_result", toolCallId: "c1", outcome: { ok: true, value: { out: `r${R}` } } }]);
      expect((await store.resetTurn({ agentId: "a1", expectedVersion: again.head.version, turnId: "turn_1", end: END, now: T0 + 5 })).status)
        .toBe("reset");
    });

    it("a tool result: the resolution and the mail hold U+FFFD; a repeat with the same text is a duplicate", async () => {
      const { store } = ctx();
      await enqueue();
      const c = await claim();
      const r = await store.commit(commitOf(c, {
        state: "waiting-tools", release: { runnableAt: null },
        recordToolCalls: [{ turnId: "turn_1", toolCallId: `call${HI}`, name: "ask", args: {}, external: true, deadline: T0 + 60_000 }],
      }));
      expect(r.status).toBe("applied");
      const outcome = { ok: false as const, error: { type: "tool_error", message: `bad${LO}`, retryable: false } };
      const d = await store.deliverToolResult({
        agentId: "a1", turnId: "turn_1", toolCallId: `call${HI}`, outcome, afterExecution: "continue", source: "http", now: T0 + 3,
      });
      expect(d.status).toBe("accepted");
      const dup = await store.deliverToolResult({
        agentId: "a1", turnId: "turn_1", toolCallId: `call${R}`, outcome, afterExecution: "continue", source: "http", now: T0 + 4,
      });
      expect(dup.status).toBe("duplicate");
      const [rec] = await store.getToolCalls("a1", "turn_1");
      expect(rec).toMatchObject({ toolCallId: `call${R}`, status: "resolved", outcome: { ok: false, error: { message: `bad${R}` } } });
    });

    it("an approval reason: stored with U+FFFD; the rejection resolves the call", async () => {
      const { store } = ctx();
      await enqueue();
      const c = await claim();
      const r = await store.commit(commitOf(c, {
        state: "waiting-tools", release: { runnableAt: null },
        recordToolCalls: [{
          turnId: "turn_1", toolCallId: "pay1", name: "pay", args: { to: `x${HI}` }, external: true, deadline: T0 + 60_000,
          approval: { status: "pending", runMs: 30_000 },
        }],
      }));
      expect(r.status).toBe("applied");
      const d = await store.decideApproval({ agentId: "a1", turnId: "turn_1", toolCallId: "pay1", decision: "rejected", reason: `no${HI}`, now: T0 + 3 });
      expect(d.status).toBe("decided");
      const [rec] = await store.getToolCalls("a1", "turn_1");
      expect(rec.approval).toMatchObject({ status: "rejected", reason: `no${R}` });
      expect(rec.args).toEqual({ to: `x${R}` });
      expect(rec.status).toBe("resolved");
    });

    it("a commit and a claimNext: an agent id, a worker id, a key, its limits, results, events and a summary are stored with U+FFFD", async () => {
      const { store } = ctx();
      // The sharded layout refuses limits (store/port.ts `keepsConcurrencyLimits`).
      const limits = store.keepsConcurrencyLimits === false ? undefined : { [`k${HI}`]: 1 };
      await enqueue({ agentId: `a${HI}`, concurrencyKey: `k${HI}` });
      await enqueue({ agentId: `a${HI}`, turnId: "turn_2", concurrencyKey: `k${R}`, now: T0 + 1 });
      const c = await store.claimNext({ workerId: `w${LO}`, workerTarget: "default", leaseMs: LEASE, now: T0 + 2, concurrencyLimits: limits });
      if (c.status !== "claimed") throw new Error(`expected claimed, got ${JSON.stringify(c)}`);
      expect(c.agentId).toBe(`a${R}`);
      expect(c.head.leaseOwner).toBe(`w${R}`);
      expect(c.head.currentTask?.concurrencyKey).toBe(`k${R}`);
      const rec = { turnId: "turn_1", toolCallId: `c${HI}`, name: "ask", args: { q: `?${LO}` }, external: false, deadline: T0 + 60_000 };
      const base = { agentId: `a${HI}`, workerId: `w${LO}`, epoch: c.epoch, turnId: "turn_1", ackMailThrough: 0, leaseMs: LEASE };
      const r = await store.commit({
        ...base, expectedVersion: c.head.version, snapshot: { value: "running" }, state: "running", activeTurnId: "turn_1", events: [],
        messages: [], recordToolCalls: [rec], resolveToolCalls: [], release: null, now: T0 + 3,
      });
      if (r.status !== "applied") throw new Error(`expected applied, got ${JSON.stringify(r)}`);
      const done = await store.commit({
        ...base, workerId: `w${R}`, expectedVersion: r.version, snapshot: { value: "done", out: { [`o${LO}`]: `v${HI}` } }, state: "done",
        activeTurnId: null, events: [{ type: "note", data: { [`x${LO}`]: [`y${HI}`] } }],
        messages: [{ role: "tool", toolCallId: `c${HI}`, content: `r${LO}` }], recordToolCalls: [],
        resolveToolCalls: [{ toolCallId: `c${HI}`, outcome: { ok: true, value: `r${LO}` }, afterExecution: "continue" }],
        release: { runnableAt: null }, now: T0 + 4, summary: { content: `sum${HI}`, through: 0 }, chainNextTask: true, concurrencyLimits: limits,
      });
      if (done.status !== "applied") throw new Error(`expected applied, got ${JSON.stringify(done)}`);
      // The next task (same key, as stored) is chained: the ended turn's slot is free again.
      expect(done.chained?.head.currentTask).toMatchObject({ turnId: "turn_2", concurrencyKey: `k${R}` });
      const [call] = await store.getToolCalls(`a${R}`, "turn_1");
      expect(call).toMatchObject({ toolCallId: `c${R}`, args: { q: `?${R}` }, status: "resolved", outcome: { ok: true, value: `r${R}` } });
      expect(await store.readMessages(`a${HI}`)).toEqual([{ role: "tool", toolCallId: `c${R}`, content: `r${R}` }]);
      const events = await store.readEvents(`a${R}`, 0, 100);
      expect(JSON.stringify(events)).not.toContain("\\ud");
      expect(events.find((e) => e.type === "note")?.data).toEqual({ [`x${R}`]: [`y${R}`] });
      expect((await store.readConversation(`a${HI}`))?.summary).toEqual({ content: `sum${R}`, through: 0 });
    });

    it("a claim failure's error and a delayed task's key: the failure is recorded, the delayed task cancelled", async () => {
      const { store } = ctx();
      await enqueue();
      expect(await enqueue({ turnId: "turn_d", idempotencyKey: `d${HI}`, runAt: T0 + 3_600_000 })).toEqual({ status: "enqueued", turnId: "turn_d" });
      const c = await claim();
      const f = await store.recordClaimFailure({
        agentId: "a1", workerId: "w1", epoch: c.epoch, expectedVersion: c.head.version, turnId: "turn_1", error: `boom${LO}`,
        maxFailures: 1, retryBaseMs: 10, end: { ...END, events: [{ type: "error", data: { message: `boom${LO}` } }] }, now: T0 + 2,
      });
      expect(f.status).toBe("turn_failed");
      const failed = (await store.readEvents("a1", 0, 100)).filter((e) => e.type === "claim_failed" || e.type === "error");
      expect(JSON.stringify(failed)).toContain(`boom${R}`);
      expect(JSON.stringify(failed)).not.toContain("\\ud");
      expect(await store.cancelTask({ agentId: "a1", turnId: "turn_d", reason: "later", now: T0 + 3 })).toEqual({ status: "cancelled", already: false });
      expect(await store.deleteAgent("a1", T0 + 4)).toEqual({ status: "deleted" });
    });
  });
}
