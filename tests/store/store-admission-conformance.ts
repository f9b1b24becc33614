/**
 * Conformance of the store's admission records, run on every adapter next to
 * tests/store/store-conformance.ts: rate-limit buckets (store/port.ts
 * RateLimitBucket, store/rate-limit.ts) and single-consumer target leases
 * (TargetLeaseRequest).
 *
 * What would catch a broken adapter:
 * - a burst of `limit` passes, the next is refused with the wait until one
 *   emission interval has passed, and it passes exactly then;
 * - a refusal charges no bucket (all-or-nothing over a token's and an
 *   agent's bucket): a second bucket that would admit is left as it was;
 * - time comes only from `now` (a far-future `now` admits again);
 * - concurrent calls from several clients admit exactly `limit`;
 * - one lease holder per target; the lease passes on only when it expired
 *   or was released, and release frees only the holder's own lease.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Store } from "../../store/port.ts";

export interface AdmissionHandle {
  store: Store;
  /** Another client on the same data (optional). */
  open?(): Promise<Store>;
  cleanup(): Promise<void>;
}

const T0 = 1_700_000_000_000;

export function admissionConformance(name: string, make: () => Promise<AdmissionHandle>): void {
  describe(`store admission conformance: ${name}`, () => {
    let h: AdmissionHandle;
    let store: Store;
    const extra: Store[] = [];
    beforeEach(async () => {
      h = await make();
      store = h.store;
    });
    afterEach(async () => {
      for (const s of extra.splice(0)) await s.close();
      await store.close();
      await h.cleanup();
    });

    describe("rateLimit", () => {
      const tok = { key: "t:abc", limit: 3, periodMs: 3_000 };

      it("admits a burst of `limit`, then one per emission interval, with the exact wait", async () => {
        for (let i = 0; i < 3; i++) expect(await store.rateLimit({ buckets: [tok], now: T0 })).toEqual({ status: "allowed" });
        expect(await store.rateLimit({ buckets: [tok], now: T0 })).toEqual({ status: "limited", bucket: 0, retryAfterMs: 1_000 });
        expect(await store.rateLimit({ buckets: [tok], now: T0 + 400 })).toEqual({ status: "limited", bucket: 0, retryAfterMs: 600 });
        expect(await store.rateLimit({ buckets: [tok], now: T0 + 1_000 })).toEqual({ status: "allowed" });
        expect(await store.rateLimit({ buckets: [tok], now: T0 + 1_000 })).toMatchObject({ status: "limited" });
        // Time comes from `now` only: long after, the full burst is back.
        for (let i = 0; i < 3; i++) expect(await store.rateLimit({ buckets: [tok], now: T0 + 60_000 })).toEqual({ status: "allowed" });
      });

      it("a refusal charges no bucket: the other bucket of the call is left as it was", async () => {
        const agent = { key: "a:acme-1", limit: 2, periodMs: 2_000 };
        const other = { key: "t:other", limit: 100, periodMs: 1_000 };
        expect(await store.rateLimit({ buckets: [other, agent], now: T0 })).toEqual({ status: "allowed" });
        expect(await store.rateLimit({ buckets: [other, agent], now: T0 })).toEqual({ status: "allowed" });
        for (let i = 0; i < 20; i++) {
          expect(await store.rateLimit({ buckets: [other, agent], now: T0 })).toEqual({ status: "limited", bucket: 1, retryAfterMs: 1_000 });
        }
        // `other` was charged twice, not 22 times: with a limit of 3 per 30 ms it still admits 98 more now.
        let admitted = 0;
        while ((await store.rateLimit({ buckets: [other], now: T0 })).status === "allowed") admitted++;
        expect(admitted).toBe(98);
      });

      it("names the bucket that frees last", async () => {
        const a = { key: "a:x", limit: 1, periodMs: 1_000 };
        const b = { key: "t:y", limit: 1, periodMs: 5_000 };
        expect(await store.rateLimit({ buckets: [a, b], now: T0 })).toEqual({ status: "allowed" });
        expect(await store.rateLimit({ buckets: [a, b], now: T0 })).toEqual({ status: "limited", bucket: 1, retryAfterMs: 5_000 });
        expect(await store.rateLimit({ buckets: [a, b], now: T0 + 1_000 })).toEqual({ status: "limited", bucket: 1, retryAfterMs: 4_000 });
      });

      it("buckets are independent by key, and no bucket admits anything", async () => {
        const one = { limit: 1, periodMs: 10_000 };
        expect(await store.rateLimit({ buckets: [{ key: "a:1", ...one }], now: T0 })).toEqual({ status: "allowed" });
        expect(await store.rateLimit({ buckets: [{ key: "a:2", ...one }], now: T0 })).toEqual({ status: "allowed" });
        expect(await store.rateLimit({ buckets: [{ key: "a:1", ...one }], now: T0 })).toMatchObject({ status: "limited" });
        expect(await store.rateLimit({ buckets: [], now: T0 })).toEqual({ status: "allowed" });
      });

      it("refuses buckets that cannot become a key or a rate, and non-integer times", async () => {
        await expect(store.rateLimit({ buckets: [{ key: "bad key", limit: 1, periodMs: 1 }], now: T0 })).rejects.toThrow(/bucket/);
        await expect(store.rateLimit({ buckets: [{ key: "", limit: 1, periodMs: 1 }], now: T0 })).rejects.toThrow(/bucket/);
        await expect(store.rateLimit({ buckets: [{ key: "k", limit: 0, periodMs: 1 }], now: T0 })).rejects.toThrow(/rate limit 0/);
        await expect(store.rateLimit({ buckets: [{ key: "k", limit: 1, periodMs: 0.5 }], now: T0 })).rejects.toThrow(/period/);
        await expect(store.rateLimit({ buckets: [{ key: "k", limit: 1, periodMs: 1 }], now: 1.5 })).rejects.toThrow(/now/);
        // Nothing was charged by the refused calls.
        expect(await store.rateLimit({ buckets: [{ key: "k", limit: 1, periodMs: 1_000 }], now: T0 })).toEqual({ status: "allowed" });
      });

      it("40 concurrent calls over several clients admit exactly `limit`", async () => {
        const clients = [store];
        if (h.open) for (let i = 0; i < 3; i++) clients.push(await h.open().then((s) => (extra.push(s), s)));
        const b = { key: "t:busy", limit: 10, periodMs: 60_000 };
        const rs = await Promise.all(Array.from({ length: 40 }, (_, i) => clients[i % clients.length].rateLimit({ buckets: [b], now: T0 })));
        expect(rs.filter((r) => r.status === "allowed")).toHaveLength(10);
      });
    });

    describe("target leases", () => {
      const base = { workerTarget: "svc1_billing_prod_eu", leaseMs: 5_000 };

      it("one holder at a time; renewal by the holder; takeover only after expiry", async () => {
        expect(await store.acquireTargetLease({ ...base, holder: "p1", now: T0 })).toEqual({ status: "held", leaseUntil: T0 + 5_000 });
        expect(await store.acquireTargetLease({ ...base, holder: "p2", now: T0 + 1 })).toEqual({ status: "busy", holder: "p1", leaseUntil: T0 + 5_000 });
        expect(await store.acquireTargetLease({ ...base, holder: "p1", now: T0 + 2_000 })).toEqual({ status: "held", leaseUntil: T0 + 7_000 });
        expect(await store.acquireTargetLease({ ...base, holder: "p2", now: T0 + 6_999 })).toEqual({ status: "busy", holder: "p1", leaseUntil: T0 + 7_000 });
        expect(await store.acquireTargetLease({ ...base, holder: "p2", now: T0 + 7_000 })).toEqual({ status: "held", leaseUntil: T0 + 12_000 });
        expect(await store.acquireTargetLease({ ...base, holder: "p1", now: T0 + 7_001 })).toEqual({ status: "busy", holder: "p2", leaseUntil: T0 + 12_000 });
        // Another target is another lease.
        expect(await store.acquireTargetLease({ ...base, workerTarget: "svc1_billing_prod_us", holder: "p1", now: T0 + 7_001 }))
          .toEqual({ status: "held", leaseUntil: T0 + 12_001 });
      });

      it("release frees only the holder's own live lease", async () => {
        await store.acquireTargetLease({ ...base, holder: "p1", now: T0 });
        expect(await store.releaseTargetLease({ workerTarget: base.workerTarget, holder: "p2", now: T0 + 1 })).toEqual({ status: "not_held" });
        expect(await store.acquireTargetLease({ ...base, holder: "p2", now: T0 + 2 })).toMatchObject({ status: "busy", holder: "p1" });
        expect(await store.releaseTargetLease({ workerTarget: base.workerTarget, holder: "p1", now: T0 + 3 })).toEqual({ status: "released" });
        expect(await store.releaseTargetLease({ workerTarget: base.workerTarget, holder: "p1", now: T0 + 4 })).toEqual({ status: "not_held" });
        expect(await store.acquireTargetLease({ ...base, holder: "p2", now: T0 + 5 })).toEqual({ status: "held", leaseUntil: T0 + 5_005 });
      });

      it("concurrent acquisitions from several clients: exactly one holder", async () => {
        const clients = [store];
        if (h.open) for (let i = 0; i < 3; i++) clients.push(await h.open().then((s) => (extra.push(s), s)));
        const rs = await Promise.all(Array.from({ length: 12 }, (_, i) =>
          clients[i % clients.length].acquireTargetLease({ ...base, holder: `p${i}`, now: T0 })));
        expect(rs.filter((r) => r.status === "held")).toHaveLength(1);
      });

      it("refuses bad targets, holders and lease lengths", async () => {
        await expect(store.acquireTargetLease({ ...base, workerTarget: "svc1.bad", holder: "p1", now: T0 })).rejects.toThrow(/worker target/);
        await expect(store.acquireTargetLease({ ...base, holder: "p 1", now: T0 })).rejects.toThrow(/holder/);
        await expect(store.acquireTargetLease({ ...base, holder: "p1", leaseMs: 0, now: T0 })).rejects.toThrow(/leaseMs/);
        expect(await store.acquireTargetLease({ ...base, holder: "p2", now: T0 })).toMatchObject({ status: "held" });
      });
    });
  });
}
