/**
 * Conformance cases of `enqueueAndClaim` (store/port.ts invariant `enqueue-then-claim`), run by
 * tests/store/store-conformance.ts on every adapter (memory, one Redis, Upstash, the sharded layout):
 * the enqueue, then the claim, each answered on its own, the claim taking only what `claimNext`
 * takes (nothing for a delayed task, an agent leased elsewhere or a duplicate; the bell stays), and
 * the same answers as `enqueueTask` then `claimNext` one after the other.
 */
import { describe, expect, it } from "vitest";
import { enqueueAndClaim, enqueueThenClaim } from "../../store/enqueue-claim.ts";
import type { ClaimNextRequest, EnqueueTaskRequest, Store } from "../../store/port.ts";

const T0 = 1_700_000_000_000;

const task = (agentId: string, turnId: string, now: number, extra: Partial<EnqueueTaskRequest> = {}): EnqueueTaskRequest => ({
  agentId, agentName: "ec", workerTarget: "default", input: "go", options: {}, turnId, now, ...extra,
});
const claimReq = (now: number, workerId = "w/0"): ClaimNextRequest => ({ workerTarget: "default", workerId, leaseMs: 10_000, now, agentNames: ["ec"] });

export function enqueueClaimConformance(ctx: () => { store: Store }): void {
  describe("enqueueAndClaim (invariant `enqueue-then-claim`)", () => {
    it("a lone task: enqueued, then claimed with its task by the claim sent with it", async () => {
      const { store } = ctx();
      const r = await enqueueAndClaim(store, task("ec1", "t1", T0), claimReq(T0));
      expect(r.enqueued).toEqual({ ok: true, value: { status: "enqueued", turnId: "t1" } });
      const c = r.claim.ok ? r.claim.value : null;
      expect(c?.status === "claimed" && [c.agentId, c.task?.turnId]).toEqual(["ec1", "t1"]);
      expect((await store.getAgent("ec1"))?.leaseOwner).toBe("w/0");
    });

    it("a delayed task: enqueued, the claim takes nothing, the bell stays at runAt", async () => {
      const { store } = ctx();
      const r = await enqueueAndClaim(store, task("ec2", "t2", T0, { runAt: T0 + 5_000 }), claimReq(T0));
      expect(r.enqueued.ok && r.enqueued.value.status).toBe("enqueued");
      expect(r.claim).toEqual({ ok: true, value: { status: "empty" } });
      expect(await store.nextReadyAt("default")).toBe(T0 + 5_000);
      const later = await store.claimNext(claimReq(T0 + 5_000, "w/1"));
      expect(later.status === "claimed" && later.task?.turnId).toBe("t2");
    });

    it("an agent leased elsewhere: enqueued, the claim takes nothing, another worker takes it at the lease end", async () => {
      const { store } = ctx();
      await store.enqueueTask(task("ec3", "t3a", T0));
      expect((await store.claimNext({ ...claimReq(T0, "elsewhere"), leaseMs: 500 })).status).toBe("claimed");
      const r = await enqueueAndClaim(store, task("ec3", "t3b", T0 + 100), claimReq(T0 + 100));
      expect(r.enqueued.ok && r.enqueued.value.status).toBe("enqueued");
      expect(r.claim).toEqual({ ok: true, value: { status: "empty" } });
      expect((await store.getAgent("ec3"))?.leaseOwner).toBe("elsewhere");
      expect(await store.nextReadyAt("default")).toBe(T0 + 500);
      const taken = await store.claimNext(claimReq(T0 + 600, "w/2"));
      expect(taken.status === "claimed" && taken.previousLease?.workerId).toBe("elsewhere");
    });

    it("a duplicate (same idempotency key) enqueues nothing and its claim takes nothing new", async () => {
      const { store } = ctx();
      const a = await enqueueAndClaim(store, task("ec4", "t4", T0, { idempotencyKey: "k" }), claimReq(T0));
      expect(a.claim.ok && a.claim.value.status).toBe("claimed");
      const epoch = (await store.getAgent("ec4"))!.epoch;
      const b = await enqueueAndClaim(store, task("ec4", "t4-again", T0 + 100, { idempotencyKey: "k" }), claimReq(T0 + 100, "w/1"));
      expect(b.enqueued).toEqual({ ok: true, value: { status: "duplicate", turnId: "t4" } });
      expect(b.claim).toEqual({ ok: true, value: { status: "empty" } });
      const head = (await store.getAgent("ec4"))!;
      expect([head.epoch, head.leaseOwner, head.pendingTasks]).toEqual([epoch, "w/0", 0]);
    });

    it("the claim keeps claimNext's order: a task due earlier is taken first, the new one stays due", async () => {
      const { store } = ctx();
      await store.enqueueTask(task("ec5", "t5", T0 - 100));
      const r = await enqueueAndClaim(store, task("ec6", "t6", T0), claimReq(T0));
      expect(r.claim.ok && r.claim.value.status === "claimed" && r.claim.value.agentId).toBe("ec5");
      const next = await store.claimNext(claimReq(T0, "w/1"));
      expect(next.status === "claimed" && next.agentId).toBe("ec6");
    });

    it("bad input of the claim is its own answer: the enqueue still answers and is stored", async () => {
      const { store } = ctx();
      const r = await enqueueAndClaim(store, task("ec7", "t7", T0), { ...claimReq(T0), agentNames: ["a,b"] });
      expect(r.enqueued.ok && r.enqueued.value.status).toBe("enqueued");
      expect(r.claim.ok).toBe(false);
      expect((await store.getAgent("ec7"))?.pendingTasks).toBe(1);
    });

    it("answers as enqueueTask then claimNext one after the other (a refused enqueue included)", async () => {
      const { store } = ctx();
      const one = await enqueueAndClaim(store, task("ec8", "t8", T0), claimReq(T0));
      const two = await enqueueThenClaim(store, task("ec9", "t9", T0), claimReq(T0, "w/1"));
      expect(two.enqueued).toEqual({ ok: true, value: { status: "enqueued", turnId: "t9" } });
      expect([one.claim.ok && one.claim.value.status, two.claim.ok && two.claim.value.status]).toEqual(["claimed", "claimed"]);
      const conflict = await enqueueAndClaim(store, { ...task("ec8", "t8b", T0 + 1), agentName: "other" }, claimReq(T0 + 1, "w/2"));
      expect(conflict).toEqual({ enqueued: { ok: true, value: { status: "definition_conflict", boundTo: "ec" } }, claim: { ok: true, value: { status: "empty" } } });
    });
  });
}
