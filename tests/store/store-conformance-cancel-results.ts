/**
 * Results after a cancel (store/port.ts invariant `results-after-cancel`),
 * part of the store conformance suite run by tests/store/store-conformance.ts on
 * every adapter (memory, Redis, Upstash, Cluster): while a cancel aimed at a
 * turn is accepted and not yet applied (its mail unacknowledged), a result
 * delivered from outside (HTTP) for a pending call of that turn answers
 * `cancel_pending` and changes nothing: the claim that applies the cancel
 * would drop it. The watchdog's timeout and a child agent's result are not
 * refused (they are the runtime's own, and the cancel ends the turn anyway).
 * Once the claim applied the cancel the delivery answers `turn_finished`; a
 * cancel aimed at another turn refuses nothing.
 */
import { describe, expect, it } from "vitest";
import type { DeliverToolResultRequest, Store } from "../../store/port.ts";
import type { StateReader } from "../helpers/store-state.ts";
import { statesOf } from "../helpers/store-state.ts";

export interface CancelResultsContext {
  store: Store;
  state: StateReader;
}

const T0 = 1_700_000_000_000;
const LEASE = 10_000;

export function cancelResultsConformance(ctx: () => CancelResultsContext): void {
  describe("results after a cancel (invariant `results-after-cancel`)", () => {
    /** a1 waits in turn_rc on the external calls `ext` and `ext2`; the agent is released. */
    async function waiting() {
      const { store } = ctx();
      const turnId = "turn_rc";
      await store.enqueueTask({ agentId: "a1", agentName: "calc", workerTarget: "default", input: {}, options: {}, turnId, now: T0 });
      const c = await store.claim({ agentId: "a1", workerId: "w1", leaseMs: LEASE, now: T0 });
      if (c.status !== "claimed") throw new Error(`expected claimed, got ${c.status}`);
      const r = await store.commit({
        agentId: "a1", workerId: "w1", epoch: c.epoch, expectedVersion: c.head.version, turnId, snapshot: { value: "waiting-tools" },
        state: "waiting-tools", activeTurnId: turnId, events: [], messages: [],
        recordToolCalls: [
          { turnId, toolCallId: "ext", name: "ask", args: {}, external: true, deadline: T0 + 60_000 },
          { turnId, toolCallId: "ext2", name: "ask", args: {}, external: true, deadline: T0 + 60_000 },
        ],
        resolveToolCalls: [], ackMailThrough: 0, release: { runnableAt: null }, leaseMs: LEASE, now: T0 + 1,
      });
      expect(r.status).toBe("applied");
      return { turnId };
    }
    const result = (turnId: string, toolCallId: string, source: DeliverToolResultRequest["source"], now: number): DeliverToolResultRequest => ({
      agentId: "a1", turnId, toolCallId, outcome: { ok: true, value: "late" }, afterExecution: "continue", source, now,
    });

    it("a result from outside while the turn's cancel waits: cancel_pending, nothing changed; after the cancel applies: turn_finished", async () => {
      const { store, state } = ctx();
      const { turnId } = await waiting();
      expect(await store.requestCancel({ agentId: "a1", reason: "stop", now: T0 + 10 })).toEqual({ status: "accepted", turnId });
      const before = await statesOf(state, ["a1"]);
      expect(await store.deliverToolResult(result(turnId, "ext", "http", T0 + 11))).toEqual({ status: "cancel_pending" });
      expect(await statesOf(state, ["a1"])).toEqual(before);
      expect((await store.getToolCalls("a1", turnId)).find((r) => r.toolCallId === "ext")).toMatchObject({ status: "pending" });

      // The claim that applies the cancel sees the cancel only; its commit ends the turn.
      const c = await store.claim({ agentId: "a1", workerId: "w2", leaseMs: LEASE, now: T0 + 20 });
      if (c.status !== "claimed") throw new Error(`expected claimed, got ${c.status}`);
      expect(c.mail.map((m) => m.kind)).toEqual(["cancel"]);
      const end = await store.commit({
        agentId: "a1", workerId: "w2", epoch: c.epoch, expectedVersion: c.head.version, turnId, snapshot: { value: "failed" },
        state: "failed", activeTurnId: null, events: [], messages: [], recordToolCalls: [], resolveToolCalls: [],
        ackMailThrough: c.mail.at(-1)!.seq, release: { runnableAt: null }, leaseMs: LEASE, now: T0 + 21,
      });
      expect(end.status).toBe("applied");
      expect(await store.deliverToolResult(result(turnId, "ext", "http", T0 + 22))).toEqual({ status: "turn_finished" });
    });

    it("the watchdog's timeout is not refused while the cancel waits", async () => {
      const { store } = ctx();
      const { turnId } = await waiting();
      await store.requestCancel({ agentId: "a1", turnId, reason: "stop", now: T0 + 10 });
      expect((await store.deliverToolResult(result(turnId, "ext2", "watchdog", T0 + 60_000))).status).toBe("accepted");
    });

    it("a result delivered before the cancel is accepted and mailed ahead of it", async () => {
      const { store } = ctx();
      const { turnId } = await waiting();
      expect((await store.deliverToolResult(result(turnId, "ext", "http", T0 + 5))).status).toBe("accepted");
      await store.requestCancel({ agentId: "a1", reason: "stop", now: T0 + 10 });
      expect((await store.deliverToolResult(result(turnId, "ext2", "http", T0 + 11))).status).toBe("cancel_pending");
      const c = await store.claim({ agentId: "a1", workerId: "w2", leaseMs: LEASE, now: T0 + 20 });
      if (c.status !== "claimed") throw new Error(`expected claimed, got ${c.status}`);
      expect(c.mail.map((m) => m.kind)).toEqual(["tool_result", "cancel"]);
    });

    it("once the claim acknowledged the cancel (the turn still running), results are taken again", async () => {
      const { store } = ctx();
      const { turnId } = await waiting();
      await store.requestCancel({ agentId: "a1", reason: "stop", now: T0 + 10 });
      const c = await store.claim({ agentId: "a1", workerId: "w2", leaseMs: LEASE, now: T0 + 20 });
      if (c.status !== "claimed") throw new Error(`expected claimed, got ${c.status}`);
      // A commit that acknowledges the mail and keeps the turn (the store does not judge what the host did with it).
      const r = await store.commit({
        agentId: "a1", workerId: "w2", epoch: c.epoch, expectedVersion: c.head.version, turnId, snapshot: { value: "waiting-tools" },
        state: "waiting-tools", activeTurnId: turnId, events: [], messages: [], recordToolCalls: [], resolveToolCalls: [],
        ackMailThrough: c.mail.at(-1)!.seq, release: { runnableAt: null }, leaseMs: LEASE, now: T0 + 21,
      });
      expect(r.status).toBe("applied");
      expect((await store.deliverToolResult(result(turnId, "ext", "http", T0 + 22))).status).toBe("accepted");
    });
  });
}
