/**
 * The approvals part of the store conformance suite (store/port.ts invariants
 * `first-decision-wins` and `approval-before-result`), run by
 * tests/store/store-conformance.ts on every adapter (memory, Redis, Upstash, Cluster).
 */
import { describe, expect, it } from "vitest";
import type { DecideApprovalRequest, Store } from "../../store/port.ts";
import type { StateReader } from "../helpers/store-state.ts";
import { statesOf } from "../helpers/store-state.ts";

export interface ApprovalsContext {
  store: Store;
  clients(n: number): Promise<Store[]>;
  state: StateReader;
}

const T0 = 1_700_000_000_000;
const LEASE = 10_000;
const RUN_MS = 30_000;
const APPROVAL_DEADLINE = T0 + 60_000;

export function approvalsConformance(ctx: () => ApprovalsContext): void {
  describe("approvals (invariants `first-decision-wins`, `approval-before-result`)", () => {
    /** a1 waits on `ext` (external) and `inproc` (in-process), both awaiting approval, and `plain` (no approval). */
    async function waiting() {
      const { store } = ctx();
      const turnId = "turn_ap";
      await store.enqueueTask({ agentId: "a1", agentName: "calc", workerTarget: "default", input: {}, options: {}, turnId, now: T0 });
      const c = await store.claim({ agentId: "a1", workerId: "w1", leaseMs: LEASE, now: T0 });
      if (c.status !== "claimed") throw new Error(`expected claimed, got ${c.status}`);
      const approval = { status: "pending" as const, runMs: RUN_MS };
      const r = await store.commit({
        agentId: "a1", workerId: "w1", epoch: c.epoch, expectedVersion: c.head.version, turnId, snapshot: { value: "waiting-tools" },
        state: "waiting-tools", activeTurnId: turnId, events: [], messages: [],
        recordToolCalls: [
          { turnId, toolCallId: "ext", name: "pay", args: [], external: true, deadline: APPROVAL_DEADLINE, approval },
          { turnId, toolCallId: "inproc", name: "pay", args: { n: 1 }, external: false, deadline: APPROVAL_DEADLINE, approval },
          { turnId, toolCallId: "plain", name: "ask", args: {}, external: true, deadline: T0 + 90_000 },
        ],
        resolveToolCalls: [], ackMailThrough: 0, release: { runnableAt: null }, leaseMs: LEASE, now: T0 + 1,
      });
      expect(r.status).toBe("applied");
      return { turnId };
    }
    const decide = (turnId: string, toolCallId: string, decision: DecideApprovalRequest["decision"], now: number, reason?: string) =>
      ctx().store.decideApproval({ agentId: "a1", turnId, toolCallId, decision, now, ...(reason !== undefined ? { reason } : {}) });
    const recordOf = async (turnId: string, id: string) => (await ctx().store.getToolCalls("a1", turnId)).find((r) => r.toolCallId === id)!;

    it("records the approval with the call; the due index holds the approval's deadline", async () => {
      const { store } = ctx();
      const { turnId } = await waiting();
      expect(await recordOf(turnId, "ext")).toMatchObject({ status: "pending", deadline: APPROVAL_DEADLINE, approval: { status: "pending", runMs: RUN_MS } });
      expect(await recordOf(turnId, "ext")).toMatchObject({ args: [] });
      expect(await store.dueToolCalls(APPROVAL_DEADLINE - 1, 10)).toEqual([]);
      expect((await store.dueToolCalls(APPROVAL_DEADLINE, 10)).map((d) => d.toolCallId).sort()).toEqual(["ext", "inproc"]);
    });

    it("approval moves the deadline to now + runMs, mails `approval`, logs approval_decided and rings", async () => {
      const { store } = ctx();
      const { turnId } = await waiting();
      const d = await decide(turnId, "ext", "approved", T0 + 100, "looks fine");
      expect(d.status).toBe("decided");
      const rec = (d as { record: unknown }).record;
      expect(rec).toMatchObject({ status: "pending", deadline: T0 + 100 + RUN_MS, approval: { status: "approved", runMs: RUN_MS, decidedAt: T0 + 100, reason: "looks fine" } });
      expect(await recordOf(turnId, "ext")).toEqual(rec);
      expect(await store.dueToolCalls(T0 + 100 + RUN_MS - 1, 10)).toEqual([]);
      expect((await store.dueToolCalls(T0 + 100 + RUN_MS, 10)).map((x) => x.toolCallId)).toEqual(["ext"]);
      const events = await store.readEvents("a1", 0, 100);
      expect(events.at(-1)).toMatchObject({
        type: "approval_decided", turnId, at: T0 + 100,
        data: { toolCallId: "ext", decision: "approved", reason: "looks fine", deadline: T0 + 100 + RUN_MS },
      });
      const c = await store.claim({ agentId: "a1", workerId: "w2", leaseMs: LEASE, now: T0 + 101 });
      expect(c.status).toBe("claimed");
      expect((c as { mail: unknown[] }).mail).toEqual([{ kind: "approval", seq: 1, at: T0 + 100, turnId, toolCallId: "ext", deadline: T0 + 100 + RUN_MS }]);
    });

    it("an approval with edited args keeps the proposed args and stores, mails and logs the edited ones", async () => {
      const { store } = ctx();
      const { turnId } = await waiting();
      const args = { n: 2, note: "edited ☃" };
      const d = await store.decideApproval({ agentId: "a1", turnId, toolCallId: "inproc", decision: "approved", args, now: T0 + 100 });
      expect(d.status).toBe("decided");
      const rec = (d as { record: unknown }).record;
      expect(rec).toMatchObject({ args: { n: 1 }, deadline: T0 + 100 + RUN_MS, approval: { status: "approved", runMs: RUN_MS, decidedAt: T0 + 100, args } });
      expect(await recordOf(turnId, "inproc")).toEqual(rec);
      expect((await store.readEvents("a1", 0, 100)).at(-1)).toMatchObject({
        type: "approval_decided", data: { toolCallId: "inproc", decision: "approved", reason: null, args, deadline: T0 + 100 + RUN_MS },
      });
      const c = await store.claim({ agentId: "a1", workerId: "w2", leaseMs: LEASE, now: T0 + 101 });
      expect((c as { mail: unknown[] }).mail).toEqual([{ kind: "approval", seq: 1, at: T0 + 100, turnId, toolCallId: "inproc", args, deadline: T0 + 100 + RUN_MS }]);
      // The same edit again (keys in another order) is a duplicate; another edit, or none, a conflict; nothing changes.
      const again = await store.decideApproval({ agentId: "a1", turnId, toolCallId: "inproc", decision: "approved", args: { note: "edited ☃", n: 2 }, now: T0 + 200 });
      expect(again.status).toBe("duplicate");
      expect((await store.decideApproval({ agentId: "a1", turnId, toolCallId: "inproc", decision: "approved", args: { n: 3 }, now: T0 + 200 })).status).toBe("conflict");
      expect((await decide(turnId, "inproc", "approved", T0 + 200)).status).toBe("conflict");
      expect(await recordOf(turnId, "inproc")).toEqual(rec);
    });

    it("refuses args with a rejection, or args that are not an object, and changes nothing", async () => {
      const { store } = ctx();
      const { turnId } = await waiting();
      const before = await statesOf(ctx().state, ["a1"]);
      await expect(store.decideApproval({ agentId: "a1", turnId, toolCallId: "ext", decision: "rejected", args: { n: 1 }, now: T0 + 100 })).rejects.toThrow(/args/);
      await expect(store.decideApproval({ agentId: "a1", turnId, toolCallId: "ext", decision: "approved", args: [1] as never, now: T0 + 100 })).rejects.toThrow(/args/);
      expect(await statesOf(ctx().state, ["a1"])).toEqual(before);
    });

    it("rejection resolves the call with approval_rejected and the reason, mailed as a tool result", async () => {
      const { store } = ctx();
      const { turnId } = await waiting();
      const d = await decide(turnId, "inproc", "rejected", T0 + 100, "too expensive");
      expect(d.status).toBe("decided");
      const rec = await recordOf(turnId, "inproc");
      expect(rec).toMatchObject({ status: "resolved", source: "approval", resolvedAt: T0 + 100, approval: { status: "rejected", reason: "too expensive" } });
      expect(rec.outcome).toMatchObject({ ok: false, error: { type: "approval_rejected", metadata: { reason: "too expensive" } } });
      expect(JSON.stringify(rec.outcome)).toContain("too expensive");
      expect((await store.dueToolCalls(APPROVAL_DEADLINE, 10)).map((x) => x.toolCallId)).toEqual(["ext"]);
      const types = (await store.readEvents("a1", 0, 100)).slice(-2).map((e) => e.type);
      expect(types).toEqual(["approval_decided", "tool_result_received"]);
      const c = await store.claim({ agentId: "a1", workerId: "w2", leaseMs: LEASE, now: T0 + 101 });
      expect((c as { mail: Array<{ kind: string; outcome?: unknown }> }).mail.map((m) => [m.kind, m.outcome])).toEqual([["tool_result", rec.outcome]]);
    });

    it("the same decision again answers duplicate, another one conflict; neither changes anything", async () => {
      const { store, state } = ctx();
      const { turnId } = await waiting();
      const first = await decide(turnId, "ext", "approved", T0 + 100);
      const before = await statesOf(state, ["a1"]);
      const again = await decide(turnId, "ext", "approved", T0 + 200, "other words");
      expect(again).toEqual({ status: "duplicate", record: (first as { record: unknown }).record });
      const contrary = await decide(turnId, "ext", "rejected", T0 + 300);
      expect(contrary).toEqual({ status: "conflict", record: (first as { record: unknown }).record });
      expect(await statesOf(state, ["a1"])).toEqual(before);
      await decide(turnId, "inproc", "rejected", T0 + 400, "no");
      const afterReject = await statesOf(state, ["a1"]);
      expect((await decide(turnId, "inproc", "approved", T0 + 500)).status).toBe("conflict");
      expect((await decide(turnId, "inproc", "rejected", T0 + 500, "no")).status).toBe("duplicate");
      expect(await statesOf(state, ["a1"])).toEqual(afterReject);
      expect((await store.getAgent("a1"))!.pendingMail).toBe(2);
    });

    it("concurrent contrary decisions: exactly one is decided, the others answer duplicate or conflict", async () => {
      const { turnId } = await waiting();
      const cs = await ctx().clients(3);
      const results = await Promise.all(Array.from({ length: 8 }, (_, i) =>
        cs[i % cs.length].decideApproval({ agentId: "a1", turnId, toolCallId: "ext", decision: i % 2 === 0 ? "approved" : "rejected", now: T0 + 10 + i })
      ));
      expect(results.filter((r) => r.status === "decided")).toHaveLength(1);
      const won = (await recordOf(turnId, "ext")).approval!.status;
      for (const [i, r] of results.entries()) {
        if (r.status === "decided") continue;
        expect(r.status).toBe((i % 2 === 0 ? "approved" : "rejected") === won ? "duplicate" : "conflict");
      }
    });

    it("a timeout decides only once the approval's deadline passed", async () => {
      const { turnId } = await waiting();
      expect(await decide(turnId, "ext", "timeout", APPROVAL_DEADLINE - 1)).toEqual({ status: "not_due" });
      const d = await decide(turnId, "ext", "timeout", APPROVAL_DEADLINE);
      expect(d.status).toBe("decided");
      const rec = await recordOf(turnId, "ext");
      expect(rec).toMatchObject({ status: "resolved", source: "watchdog", approval: { status: "timeout" } });
      expect(rec.outcome).toMatchObject({ ok: false, error: { type: "approval_timeout" } });
      expect((await decide(turnId, "ext", "approved", APPROVAL_DEADLINE + 1)).status).toBe("conflict");
    });

    it("refuses what it cannot decide and changes nothing", async () => {
      const { store, state } = ctx();
      expect(await decide("turn_ap", "ext", "approved", T0)).toEqual({ status: "agent_not_found" });
      const { turnId } = await waiting();
      const before = await statesOf(state, ["a1"]);
      expect(await decide(turnId, "nope", "approved", T0 + 5)).toEqual({ status: "unknown_call" });
      expect(await decide("turn_other", "ext", "approved", T0 + 5)).toEqual({ status: "unknown_call" });
      expect(await decide(turnId, "plain", "approved", T0 + 5)).toEqual({ status: "not_awaiting_approval" });
      await expect(store.decideApproval({ agentId: "a1", turnId, toolCallId: "ext", decision: "maybe" as "approved", now: T0 + 5 })).rejects.toThrow();
      expect(await statesOf(state, ["a1"])).toEqual(before);
    });

    it("deliverToolResult refuses a call whose approval is pending (any source), accepts it once approved", async () => {
      const { store, state } = ctx();
      const { turnId } = await waiting();
      const ok = { ok: true as const, value: 1 };
      const before = await statesOf(state, ["a1"]);
      for (const source of ["http", "watchdog"] as const) {
        expect(await store.deliverToolResult({ agentId: "a1", turnId, toolCallId: "ext", outcome: ok, afterExecution: "continue", source, now: APPROVAL_DEADLINE })).toEqual({ status: "approval_pending" });
      }
      expect(await store.deliverToolResult({ agentId: "a1", turnId, toolCallId: "inproc", outcome: ok, afterExecution: "continue", source: "watchdog", now: APPROVAL_DEADLINE })).toEqual({ status: "approval_pending" });
      expect(await statesOf(state, ["a1"])).toEqual(before);
      await decide(turnId, "ext", "approved", T0 + 100);
      // The watchdog's timeout before the moved deadline changes nothing.
      expect(await store.deliverToolResult({ agentId: "a1", turnId, toolCallId: "ext", outcome: ok, afterExecution: "continue", source: "watchdog", now: T0 + 101 })).toEqual({ status: "not_due" });
      const d = await store.deliverToolResult({ agentId: "a1", turnId, toolCallId: "ext", outcome: ok, afterExecution: "continue", source: "http", now: T0 + 102 });
      expect(d.status).toBe("accepted");
      expect((d as { record: unknown }).record).toMatchObject({ status: "resolved", outcome: ok, approval: { status: "approved" }, deadline: T0 + 100 + RUN_MS });
      expect(await recordOf(turnId, "ext")).toEqual((d as { record: unknown }).record);
    });

    it("createFork stores a waiting call with its approval; the fork decides it on its own", async () => {
      const { store } = ctx();
      const turnId = "turn_f";
      const r = await store.createFork({
        agentId: "f1", agentName: "calc", workerTarget: "default", snapshot: { value: "waiting-tools" }, state: "waiting-tools",
        activeTurnId: turnId, currentTask: { turnId, options: {}, enqueuedAt: T0 }, input: {}, messages: [],
        toolCalls: [{ turnId, toolCallId: "ext", name: "pay", args: {}, external: true, deadline: T0 + 500, approval: { status: "pending", runMs: RUN_MS } }],
        event: { type: "forked_from", data: {} }, runnableAt: null, now: T0,
      });
      expect(r.status).toBe("created");
      expect((await store.getToolCalls("f1", turnId))[0]).toMatchObject({ status: "pending", deadline: T0 + 500, approval: { status: "pending", runMs: RUN_MS } });
      const d = await store.decideApproval({ agentId: "f1", turnId, toolCallId: "ext", decision: "approved", now: T0 + 10 });
      expect(d).toMatchObject({ status: "decided", record: { deadline: T0 + 10 + RUN_MS, approval: { status: "approved" } } });
    });

    it("an undecided call of a turn that ended answers turn_finished", async () => {
      const { store } = ctx();
      const { turnId } = await waiting();
      expect((await store.requestCancel({ agentId: "a1", reason: "stop", now: T0 + 4 })).status).toBe("accepted");
      const c = await store.claim({ agentId: "a1", workerId: "w1", leaseMs: LEASE, now: T0 + 5 });
      if (c.status !== "claimed") throw new Error(c.status);
      const r = await store.commit({
        agentId: "a1", workerId: "w1", epoch: c.epoch, expectedVersion: c.head.version, turnId, snapshot: { value: "failed" },
        state: "failed", activeTurnId: null, events: [], messages: [], recordToolCalls: [], resolveToolCalls: [],
        ackMailThrough: 1, release: { runnableAt: null }, leaseMs: LEASE, now: T0 + 6,
      });
      expect(r.status).toBe("applied");
      expect(await decide(turnId, "ext", "approved", T0 + 7)).toEqual({ status: "turn_finished" });
    });
  });
}
