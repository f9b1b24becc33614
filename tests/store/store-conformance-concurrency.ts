/**
 * The concurrency part of the store conformance suite (store/port.ts
 * invariants `concurrency-keys`, `fair-lanes`, `priorities`), run by
 * tests/store/store-conformance.ts on every adapter: a key's limit never
 * exceeded under interleaved claims, commits, releases, renewals and crashes
 * (a seeded property), a parked lane due again right after a release (no
 * claim needed), a crashed holder's slot freed at its lease end, chaining
 * held back at the limit, priority order and its aging, least-recently-served
 * rotation between lanes (40 agents of one key, then one of another), keyless
 * agents beside keyed ones, and `concurrencyUsage`.
 */
import { describe, expect, it } from "vitest";
import type { ClaimResult, CommitRequest, ConcurrencyLimits, EnqueueTaskRequest, Store } from "../../store/port.ts";
import { StoreInputError } from "../../store/keys.ts";
import { seeded } from "../helpers/seeded.ts";

export interface ConcurrencyContext {
  store: Store;
  clients(n: number): Promise<Store[]>;
  /**
   * The sharded layout (Redis Cluster): it keeps limits across homes (each key counted in its own
   * slot) and orders lanes and priorities within each home only (docs/store.md "Concurrency keys and lanes").
   */
  sharded: boolean;
}

const T0 = 1_700_000_000_000;
const LEASE = 10_000;
const TARGET = "default";

type Claimed = Extract<ClaimResult, { status: "claimed" }>;

let seq = 0;
const enqueue = (store: Store, agentId: string, over: Partial<EnqueueTaskRequest> = {}) =>
  store.enqueueTask({ agentId, agentName: "calc", workerTarget: TARGET, input: null, options: {}, turnId: `turn_${++seq}`, now: T0, ...over });

const claimNext = (store: Store, now: number, limits?: ConcurrencyLimits, workerId = "w1") =>
  store.claimNext({ workerTarget: TARGET, workerId, leaseMs: LEASE, now, ...(limits ? { concurrencyLimits: limits } : {}) });

/** A commit of claim `c` that ends its turn and releases (chaining when asked). */
function endTurn(c: Claimed, workerId: string, now: number, over: Partial<CommitRequest> = {}): CommitRequest {
  return {
    agentId: c.agentId, workerId, epoch: c.epoch, expectedVersion: c.head.version, turnId: c.head.activeTurnId,
    snapshot: { n: 1 }, state: "done", activeTurnId: null, events: [], messages: [], recordToolCalls: [], resolveToolCalls: [],
    ackMailThrough: c.mail.length > 0 ? c.mail[c.mail.length - 1].seq : 0, release: { runnableAt: null }, leaseMs: LEASE, now, ...over,
  };
}

async function claimed(p: Promise<ClaimResult>): Promise<Claimed> {
  const c = await p;
  if (c.status !== "claimed") throw new Error(`expected claimed, got ${JSON.stringify(c)}`);
  return c;
}

export function concurrencyConformance(ctx: () => ConcurrencyContext, sharded = false): void {
  // Cross-agent order (priorities, rotation) is kept within one home: the sharded layout spreads agents over homes,
  // so those cases run on the unsharded layouts and memory (docs/store.md); the limits hold on every layout.
  const unsharded = (name: string, fn: () => Promise<void>, timeout?: number) => {
    if (!sharded) it(name, fn, timeout);
  };
  describe("concurrency keys, fair lanes and priorities", () => {
    if (sharded) it("the sharded layout keeps limits across homes: agents of one key in every home, never more running than the limit", async () => {
      const { store } = ctx();
      const limits = { K: 2 };
      // Eight agents: on 4 homes some share a home, most do not; the limit holds across them.
      for (let i = 0; i < 8; i++) await enqueue(store, `s${i}`, { concurrencyKey: "K", priority: 3, now: T0 + i });
      const got: Claimed[] = [];
      for (let i = 0; i < 8; i++) {
        const c = await claimNext(store, T0 + 10, limits);
        if (c.status === "claimed") got.push(c);
      }
      expect(got).toHaveLength(2);
      expect(got[0].head.currentTask?.priority).toBe(3);
      expect((await store.claim({ agentId: "s7", workerId: "w2", leaseMs: LEASE, now: T0 + 11, concurrencyLimits: limits })).status).not.toBe("claimed");
      const u = await store.concurrencyUsage({ workerTarget: TARGET, now: T0 + 11, limit: 5, concurrencyLimits: limits });
      expect(u.lanes.find((l) => l.key === "K")).toMatchObject({ key: "K", running: 2, queued: 6, atLimit: true });
      // One ends: one more runs, wherever its home is.
      await store.commit(endTurn(got[0], "w1", T0 + 12));
      expect((await claimed(claimNext(store, T0 + 13, limits))).head.currentTask?.concurrencyKey).toBe("K");
      expect((await claimNext(store, T0 + 14, limits)).status).toBe("empty");
    });

    it("refuses a limit that is not a whole number from 1, and a key or priority out of range, with StoreInputError", async () => {
      const { store } = ctx();
      await expect(claimNext(store, T0, { K: 0 })).rejects.toThrow(StoreInputError);
      await expect(claimNext(store, T0, { K: 1.5 })).rejects.toThrow(StoreInputError);
      await expect(enqueue(store, "a1", { concurrencyKey: "x".repeat(257) })).rejects.toThrow(StoreInputError);
      await expect(enqueue(store, "a1", { concurrencyKey: "a\nb" })).rejects.toThrow(StoreInputError);
      await expect(enqueue(store, "a1", { priority: 86_401 })).rejects.toThrow(StoreInputError);
      expect(await store.getAgent("a1")).toBeNull();
    });

    it("never has more agents running under a key than its limit, through interleaved claims, commits, releases, renewals and crashes (seeded)", async () => {
      const [s1, s2] = await ctx().clients(2);
      const stores = [s1, s2 ?? s1];
      const limits = { K: 2, "*": 3 };
      const keyOf = (i: number) => (i % 3 === 0 ? "K" : i % 3 === 1 ? "L" : undefined);
      const rand = seeded(20261206);
      let now = T0;
      let enqueued = 0;
      let done = 0;
      const held = new Map<string, { c: Claimed; worker: string; until: number; key: string | undefined }>();
      const keyOfTurn = new Map<string, string | undefined>();
      const check = async () => {
        const running = new Map<string, number>();
        for (const h of held.values()) if (h.until > now && h.key) running.set(h.key, (running.get(h.key) ?? 0) + 1);
        expect(running.get("K") ?? 0).toBeLessThanOrEqual(2);
        expect(running.get("L") ?? 0).toBeLessThanOrEqual(3);
        const usage = await s1.concurrencyUsage({ workerTarget: TARGET, now, limit: 10, concurrencyLimits: limits });
        for (const l of usage.lanes) if (l.key !== "") expect(l.running).toBeLessThanOrEqual(limits[l.key as "K"] ?? 3);
      };
      for (let step = 0; step < 300; step++) {
        const r = rand();
        const store = stores[step % 2];
        if (r < 0.3 && enqueued < 60) {
          const i = Math.floor(rand() * 12);
          const key = keyOf(i);
          const e = await enqueue(store, `a${i}`, { now, ...(key ? { concurrencyKey: key } : {}) });
          if (e.status === "enqueued") {
            keyOfTurn.set(e.turnId, key);
            enqueued++;
          }
        } else if (r < 0.65) {
          const worker = `w${step % 3}`;
          const c = await claimNext(store, now, limits, worker);
          if (c.status === "claimed") {
            held.set(c.agentId, { c, worker, until: now + LEASE, key: c.head.activeTurnId ? keyOfTurn.get(c.head.activeTurnId) : undefined });
          }
        } else if (r < 0.85 && held.size > 0) {
          const [id, h] = [...held.entries()][Math.floor(rand() * held.size)];
          held.delete(id);
          if (h.until <= now) continue;
          const ends = h.c.head.activeTurnId !== null && rand() < 0.8;
          const res = await store.commit(ends
            ? endTurn(h.c, h.worker, now, { concurrencyLimits: limits, chainNextTask: rand() < 0.5 })
            : endTurn(h.c, h.worker, now, { activeTurnId: h.c.head.activeTurnId, state: "waiting", release: { runnableAt: now + 5 } }));
          expect(res.status).toBe("applied");
          if (res.status === "applied" && ends && h.c.head.activeTurnId !== null) done++;
          if (res.status === "applied" && res.chained) {
            const c2: Claimed = { status: "claimed", agentId: h.c.agentId, epoch: res.chained.epoch, head: res.chained.head, task: null, mail: [], previousLease: null };
            held.set(id, { c: c2, worker: h.worker, until: now + LEASE, key: keyOfTurn.get(res.chained.head.activeTurnId!) });
          }
        } else if (r < 0.92 && held.size > 0) {
          const [, h] = [...held.entries()][Math.floor(rand() * held.size)];
          if (h.until > now) {
            const rn = await store.renewLease({ agentId: h.c.agentId, workerId: h.worker, epoch: h.c.epoch, leaseMs: LEASE, now });
            if (rn.status === "renewed") h.until = rn.leaseUntil;
          }
        } else {
          // Time passes; now and then past every lease (the holders crashed: their slots free at their lease ends).
          now += rand() < 0.15 ? LEASE : 7;
        }
        await check();
      }
      // Drain: every task runs to its end, the limits kept.
      for (let i = 0; i < 400 && done < enqueued; i++) {
        now += LEASE;
        held.clear();
        for (;;) {
          const c = await claimNext(s1, now, limits);
          if (c.status !== "claimed") break;
          held.set(c.agentId, { c, worker: "w1", until: now + LEASE, key: c.head.activeTurnId ? keyOfTurn.get(c.head.activeTurnId) : undefined });
          await check();
        }
        for (const h of held.values()) {
          const res = await s1.commit(endTurn(h.c, "w1", now));
          if (res.status === "applied" && h.c.head.activeTurnId !== null) done++;
        }
      }
      expect(done).toBe(enqueued);
    }, 120_000);

    it("parks a lane at its limit and makes it due right after a release, with no claim in between", async () => {
      const { store } = ctx();
      const limits = { K: 1 };
      await enqueue(store, "a1", { concurrencyKey: "K" });
      await enqueue(store, "a2", { concurrencyKey: "K", now: T0 + 1 });
      const c1 = await claimed(claimNext(store, T0 + 2, limits));
      expect(c1.agentId).toBe("a1");
      expect(c1.head.currentTask?.concurrencyKey).toBe("K");
      // a2 waits: claimNext and a direct claim leave it queued; the target is due again only at a1's lease end.
      expect((await claimNext(store, T0 + 3, limits)).status).toBe("empty");
      expect((await store.claim({ agentId: "a2", workerId: "w2", leaseMs: LEASE, now: T0 + 3, concurrencyLimits: limits })).status).toBe("empty");
      expect(await store.nextReadyAt(TARGET)).toBe(T0 + 2 + LEASE);
      expect((await store.listQueuedTasks("a2", 5)).map((t) => t.concurrencyKey)).toEqual(["K"]);
      // Without limits nothing waits (the limits are the claimer's).
      const usage = await store.concurrencyUsage({ workerTarget: TARGET, now: T0 + 3, limit: 5, concurrencyLimits: limits });
      expect(usage.lanes.find((l) => l.key === "K")).toEqual({ key: "K", running: 1, queued: 1, atLimit: true });
      // a1's turn ends: the lane is due at once.
      expect((await store.commit(endTurn(c1, "w1", T0 + 4))).status).toBe("applied");
      expect(await store.nextReadyAt(TARGET)).toBeLessThanOrEqual(T0 + 4);
      const c2 = await claimed(claimNext(store, T0 + 5, limits));
      expect(c2.agentId).toBe("a2");
    });

    it("frees a crashed holder's slot at its lease end", async () => {
      const { store } = ctx();
      const limits = { K: 1 };
      await enqueue(store, "a1", { concurrencyKey: "K" });
      await enqueue(store, "a2", { concurrencyKey: "K", now: T0 + 1 });
      await claimed(claimNext(store, T0 + 2, limits));
      // The holder of a1 crashes: nothing releases; its slot frees when its lease runs out.
      expect((await claimNext(store, T0 + 1 + LEASE, limits)).status).toBe("empty");
      const c = await claimed(claimNext(store, T0 + 2 + LEASE, limits));
      // In one home a2's older bell goes first; across homes (sharded) the homes' places tie: either.
      expect(sharded ? ["a1", "a2"] : ["a2"]).toContain(c.agentId);
      // a1's turn is due again (its lease ran out) but the one slot is taken now.
      expect((await claimNext(store, T0 + 3 + LEASE, limits)).status).toBe("empty");
    });

    it("keeps a renewed lease's slot until its new end", async () => {
      const { store } = ctx();
      const limits = { K: 1 };
      await enqueue(store, "a1", { concurrencyKey: "K" });
      await enqueue(store, "a2", { concurrencyKey: "K" });
      const c1 = await claimed(claimNext(store, T0, limits));
      const rn = await store.renewLease({ agentId: c1.agentId, workerId: "w1", epoch: c1.epoch, leaseMs: LEASE, now: T0 + LEASE - 1 });
      expect(rn.status).toBe("renewed");
      expect((await claimNext(store, T0 + LEASE + 1, limits)).status).toBe("empty");
    });

    it("keeps the slot of a lease a commit extended (release null) until its new end", async () => {
      const { store } = ctx();
      const limits = { K: 1 };
      await enqueue(store, "a1", { concurrencyKey: "K" });
      await enqueue(store, "a2", { concurrencyKey: "K" });
      const c1 = await claimed(claimNext(store, T0, limits));
      const kept = await store.commit(endTurn(c1, "w1", T0 + LEASE - 1, { activeTurnId: c1.head.activeTurnId, state: "running", release: null }));
      expect(kept.status).toBe("applied");
      expect((await claimNext(store, T0 + LEASE + 1, limits)).status).toBe("empty");
    });

    it("chains the next task only while its key is under the limit; held back, the lane rings when the slot frees", async () => {
      const { store } = ctx();
      const limits = { K: 1, L: 1 };
      await enqueue(store, "b1", { concurrencyKey: "L" });
      const b = await claimed(store.claim({ agentId: "b1", workerId: "w2", leaseMs: LEASE, now: T0, concurrencyLimits: limits }));
      await enqueue(store, "a1", { concurrencyKey: "K", now: T0 + 1 });
      await enqueue(store, "a1", { concurrencyKey: "K", now: T0 + 1 });
      await enqueue(store, "a1", { concurrencyKey: "L", now: T0 + 1 });
      const a = await claimed(claimNext(store, T0 + 2, limits));
      expect(a.agentId).toBe("a1");
      // K -> K: chained (the ended turn's slot is free again).
      const r1 = await store.commit(endTurn(a, "w1", T0 + 3, { chainNextTask: true, concurrencyLimits: limits }));
      if (r1.status !== "applied" || !r1.chained) throw new Error(`expected a chained commit, got ${JSON.stringify(r1)}`);
      const a2: Claimed = { status: "claimed", agentId: "a1", epoch: r1.chained.epoch, head: r1.chained.head, task: null, mail: [], previousLease: null };
      // K -> L while b1 runs under L: not chained; released, queued.
      const r2 = await store.commit(endTurn(a2, "w1", T0 + 4, { chainNextTask: true, concurrencyLimits: limits }));
      expect(r2.status).toBe("applied");
      expect(r2.status === "applied" && r2.chained).toBeFalsy();
      expect((await claimNext(store, T0 + 5, limits)).status).toBe("empty");
      expect((await store.getAgent("a1"))?.leaseOwner).toBeNull();
      // b1 ends: a1's L task is due at once.
      await store.commit(endTurn(b, "w2", T0 + 6));
      expect(await store.nextReadyAt(TARGET)).toBeLessThanOrEqual(T0 + 6);
      const c = await claimed(claimNext(store, T0 + 7, limits));
      expect(c.agentId).toBe("a1");
      expect(c.head.currentTask?.concurrencyKey).toBe("L");
    });

    unsharded("claims higher priorities first with one claimer, and lets a task that waited longer than the difference go first", async () => {
      const { store } = ctx();
      await enqueue(store, "p0", {});
      await enqueue(store, "p1", { priority: 10 });
      await enqueue(store, "p2", { priority: 5 });
      await enqueue(store, "p3", {});
      const order: string[] = [];
      for (let i = 0; i < 4; i++) {
        const c = await claimed(claimNext(store, T0 + 1));
        order.push(c.agentId);
        await store.commit(endTurn(c, "w1", T0 + 2));
      }
      expect(order).toEqual(["p1", "p2", "p0", "p3"]);
      // Aging: q0 waited 20 s with priority 0; q1 arrives with priority 10: q0 first. q2 (priority 30) passes q0.
      await enqueue(store, "q0", { now: T0 + 10 });
      await enqueue(store, "q1", { priority: 10, now: T0 + 20_010 });
      await enqueue(store, "q2", { priority: 30, now: T0 + 20_010 });
      const next: string[] = [];
      for (let i = 0; i < 3; i++) next.push((await claimed(claimNext(store, T0 + 20_011))).agentId);
      expect(next).toEqual(["q2", "q0", "q1"]);
    });

    unsharded("rotates between lanes least recently served first: one key's 40 agents hold another key's task behind one claim", async () => {
      const { store } = ctx();
      for (let i = 0; i < 40; i++) await enqueue(store, `a${String(i).padStart(2, "0")}`, { concurrencyKey: "tenant:A", now: T0 + i });
      await enqueue(store, "b1", { concurrencyKey: "tenant:B", now: T0 + 50 });
      await enqueue(store, "c1", { now: T0 + 60 });
      const order: string[] = [];
      for (let i = 0; i < 6; i++) order.push((await claimed(claimNext(store, T0 + 100))).agentId);
      // The first claim is A's oldest; B and the default lane come next, then A again.
      expect(order[0]).toBe("a00");
      expect(order.slice(1, 3).sort()).toEqual(["b1", "c1"]);
      expect(order.slice(3)).toEqual(["a01", "a02", "a03"]);
    });

    unsharded("chains under the ended turn's own key on its own slot; refused there (the key over-held), the slot frees and the lane parks until another holder's lease end", async () => {
      const { store } = ctx();
      const limits = { K: 2 };
      for (let i = 0; i < 3; i++) await enqueue(store, "a1", { concurrencyKey: "K" });
      await enqueue(store, "b1", { concurrencyKey: "K" });
      await enqueue(store, "c1", { concurrencyKey: "K" });
      const a = await claimed(store.claim({ agentId: "a1", workerId: "w1", leaseMs: LEASE, now: T0 + 1, concurrencyLimits: limits }));
      // b1 and c1 run under K too, claimed without limits (the limits are the claimer's).
      const b = await claimed(store.claim({ agentId: "b1", workerId: "w2", leaseMs: LEASE, now: T0 + 2 }));
      // K -> K with a1 and b1 running at limit 2: the ended turn's slot carries the next turn.
      const r1 = await store.commit(endTurn(a, "w1", T0 + 3, { chainNextTask: true, concurrencyLimits: limits }));
      if (r1.status !== "applied" || !r1.chained) throw new Error(`expected a chained commit, got ${JSON.stringify(r1)}`);
      const usage = await store.concurrencyUsage({ workerTarget: TARGET, now: T0 + 3, limit: 5, concurrencyLimits: limits });
      expect(usage.lanes.find((l) => l.key === "K")).toMatchObject({ key: "K", running: 2 });
      const a2: Claimed = { status: "claimed", agentId: "a1", epoch: r1.chained.epoch, head: r1.chained.head, task: null, mail: [], previousLease: null };
      await claimed(store.claim({ agentId: "c1", workerId: "w3", leaseMs: LEASE, now: T0 + 4 }));
      const rn = await store.renewLease({ agentId: "b1", workerId: "w2", epoch: b.epoch, leaseMs: LEASE, now: T0 + 5 });
      expect(rn.status).toBe("renewed");
      // K -> K with b1 and c1 running too: refused; a1's slot frees, the lane parks until the earliest lease end of
      // the others (c1's), not a1's own (earlier still).
      const r2 = await store.commit(endTurn(a2, "w1", T0 + 6, { chainNextTask: true, concurrencyLimits: limits }));
      expect(r2.status === "applied" && r2.chained).toBeFalsy();
      expect((await store.getAgent("a1"))?.leaseOwner).toBeNull();
      expect(await store.nextReadyAt(TARGET)).toBe(T0 + 4 + LEASE);
      expect((await store.concurrencyUsage({ workerTarget: TARGET, now: T0 + 6, limit: 5, concurrencyLimits: limits })).lanes
        .find((l) => l.key === "K")).toMatchObject({ running: 2, queued: 1 });
      expect((await claimNext(store, T0 + 6, limits)).status).toBe("empty");
      // b1 ends: a1's K task is due at once.
      await store.commit(endTurn(b, "w2", T0 + 7));
      expect(await store.nextReadyAt(TARGET)).toBeLessThanOrEqual(T0 + 7);
      expect((await claimed(claimNext(store, T0 + 8, limits))).agentId).toBe("a1");
    });

    it("places a keyed lane at its earliest bell as leases move its bells later", async () => {
      const { store } = ctx();
      await enqueue(store, "a1", { concurrencyKey: "K" });
      await enqueue(store, "a2", { concurrencyKey: "K" });
      const c1 = await claimed(store.claim({ agentId: "a1", workerId: "w1", leaseMs: LEASE, now: T0 + 1 }));
      expect(await store.nextReadyAt(TARGET)).toBe(T0);
      await claimed(store.claim({ agentId: "a2", workerId: "w2", leaseMs: LEASE, now: T0 + 2 }));
      expect(await store.nextReadyAt(TARGET)).toBe(T0 + 1 + LEASE);
      // a1's lease goes on (a commit that keeps it): the lane's earliest bell is a2's now.
      const kept = await store.commit(endTurn(c1, "w1", T0 + 3, { activeTurnId: c1.head.activeTurnId, state: "running", release: null }));
      expect(kept.status).toBe("applied");
      expect(await store.nextReadyAt(TARGET)).toBe(T0 + 2 + LEASE);
      expect((await claimNext(store, T0 + 1 + LEASE)).status).toBe("empty");
    });

    it("claims keyless agents beside keyed ones, each lane in due order", async () => {
      const { store } = ctx();
      await enqueue(store, "k1", { now: T0 });
      await enqueue(store, "k2", { now: T0 + 1 });
      await enqueue(store, "x1", { concurrencyKey: "X", now: T0 + 2 });
      const got = new Set<string>();
      for (let i = 0; i < 3; i++) got.add((await claimed(claimNext(store, T0 + 10, { X: 1 }))).agentId);
      expect([...got].sort()).toEqual(["k1", "k2", "x1"]);
      expect((await claimNext(store, T0 + 10)).status).toBe("empty");
      expect(await store.readyCount(TARGET, T0 + 10)).toBe(0);
    });

    it("moves an idle agent to its next task's lane when its first queued task is cancelled", async () => {
      const { store } = ctx();
      const limits = { K: 1 };
      await enqueue(store, "b1", { concurrencyKey: "K" });
      await claimed(claimNext(store, T0, limits));
      const first = await enqueue(store, "a1", { concurrencyKey: "K", now: T0 + 1 });
      await enqueue(store, "a1", { concurrencyKey: "L", now: T0 + 1 });
      // a1 waits in lane K (b1 holds K's one slot) until its K task is cancelled: then its L task runs.
      expect((await claimNext(store, T0 + 2, limits)).status).toBe("empty");
      if (first.status !== "enqueued") throw new Error("not enqueued");
      expect((await store.cancelTask({ agentId: "a1", turnId: first.turnId, reason: "x", now: T0 + 3 })).status).toBe("cancelled");
      const c = await claimed(claimNext(store, T0 + 4, limits));
      expect(c.agentId).toBe("a1");
      expect(c.head.currentTask?.concurrencyKey).toBe("L");
    });

    it("answers concurrencyUsage: running and queued per lane, busiest first, the rest summed", async () => {
      const { store } = ctx();
      const limits = { K: 1 };
      for (const id of ["a1", "a2", "a3"]) await enqueue(store, id, { concurrencyKey: "K" });
      await enqueue(store, "b1", { concurrencyKey: "B" });
      await enqueue(store, "c1", {});
      await claimed(store.claim({ agentId: "a1", workerId: "w1", leaseMs: LEASE, now: T0, concurrencyLimits: limits }));
      const u = await store.concurrencyUsage({ workerTarget: TARGET, now: T0 + 1, limit: 2, concurrencyLimits: limits });
      expect(u.lanes).toEqual([{ key: "K", running: 1, queued: 2, atLimit: true }, { key: "", running: 0, queued: 1 }]);
      expect(u.others).toEqual({ lanes: 1, running: 0, queued: 1 });
      const one = await store.concurrencyUsage({ workerTarget: TARGET, now: T0 + 1, limit: 5, keys: ["B", "none"] });
      expect(one.lanes).toEqual([{ key: "B", running: 0, queued: 1 }, { key: "none", running: 0, queued: 0 }]);
    });
  });
}
