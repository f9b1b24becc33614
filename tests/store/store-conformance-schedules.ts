/**
 * The schedules part of the store conformance suite (store/port.ts
 * `Schedules`, invariants `schedule-put` and `schedule-tick-once`), run by
 * tests/store/store-conformance.ts on every adapter: put/get/list/delete, a due
 * schedule answered by claimNext (and its due time read by nextReadyAt), a
 * fire applied once (stale and duplicate ticks), and deleteAgent; the
 * bounds of invariant `schedule-bounds` (count per agent, coalesced ticks,
 * a catch-up tick behind what was due before it).
 */
import { describe, expect, it } from "vitest";
import type { FireScheduleTickRequest, PutScheduleRequest, ScheduleRecord, Store } from "../../store/port.ts";
import { StoreInputError } from "../../store/keys.ts";
import type { ScheduleSpec } from "../../common/schedule.ts";
import { DEFAULTS } from "../../common/defaults.ts";
import type { StateReader } from "../helpers/store-state.ts";

export interface ScheduleContext {
  store: Store;
  clients(n: number): Promise<Store[]>;
  /** The whole stored state of one agent (tests/helpers/store-state.ts): a refusal must leave it as it was. */
  state: StateReader;
}

const T0 = 1_700_000_000_000;
const TARGET = "default";
const SPEC: ScheduleSpec = { input: { job: "report", n: [1, 2.5] }, everyMs: 60_000, catchUp: "last", anchor: T0 };

const put = (store: Store, over: Partial<PutScheduleRequest> = {}) =>
  store.putSchedule({ agentId: "a1", scheduleId: "s1", agentName: "echo", workerTarget: TARGET, spec: SPEC, nextTick: T0 + 60_000, now: T0, ...over });

const fire = (store: Store, rec: ScheduleRecord, over: Partial<FireScheduleTickRequest> = {}) =>
  store.fireScheduleTick({
    agentId: rec.agentId, scheduleId: rec.scheduleId, expectTick: rec.nextTick!, expectRev: rec.rev, fireTick: rec.nextTick,
    nextTick: rec.nextTick! + 60_000, turnId: `turn_${rec.nextTick}`, idempotencyKey: `schedule:${rec.scheduleId}:${rec.nextTick}`,
    options: {}, input: rec.spec.input, now: rec.nextTick!, ...over,
  });

async function created(store: Store): Promise<ScheduleRecord> {
  const r = await put(store);
  if (r.status !== "created") throw new Error("not created");
  return r.schedule;
}

export function scheduleConformance(ctx: () => ScheduleContext): void {
  describe("schedules (putSchedule, claimNext, fireScheduleTick, deleteSchedule)", () => {
    it("creates, reads, lists by id, replaces (a new rev, createdAt kept) and deletes a schedule", async () => {
      const { store } = ctx();
      const created = await put(store);
      expect(created.status).toBe("created");
      const want: ScheduleRecord = {
        agentId: "a1", scheduleId: "s1", agentName: "echo", workerTarget: TARGET, spec: SPEC, nextTick: T0 + 60_000, rev: 1,
        lastFired: null, createdAt: T0, updatedAt: T0,
      };
      expect(created).toEqual({ status: "created", schedule: want });
      expect(await store.getSchedule("a1", "s1")).toEqual(want);
      await put(store, { scheduleId: "a0", now: T0 + 1 });
      expect((await store.listSchedules("a1")).map((s) => s.scheduleId)).toEqual(["a0", "s1"]);
      const replaced = await put(store, { spec: { ...SPEC, everyMs: 5_000 }, nextTick: T0 + 5_000, now: T0 + 2 });
      expect(replaced).toEqual({ status: "replaced", schedule: { ...want, spec: { ...SPEC, everyMs: 5_000 }, nextTick: T0 + 5_000, rev: 2, updatedAt: T0 + 2 } });
      expect(await store.deleteSchedule("a1", "s1")).toEqual({ status: "deleted" });
      expect(await store.deleteSchedule("a1", "s1")).toEqual({ status: "schedule_not_found" });
      expect(await store.getSchedule("a1", "s1")).toBeNull();
      expect((await store.listSchedules("a1")).map((s) => s.scheduleId)).toEqual(["a0"]);
      expect(await store.listSchedules("nobody")).toEqual([]);
      await expect(put(store, { scheduleId: "bad id" })).rejects.toThrow(StoreInputError);
    });

    it("by: putSchedule stores who wrote the revision; deleteSchedule with a log appends schedule_deleted on an agent that exists, nothing on one that does not", async () => {
      const { store } = ctx();
      expect((await put(store, { by: "alice@ops" })).status).toBe("created");
      expect((await store.getSchedule("a1", "s1"))?.by).toBe("alice@ops");
      expect((await put(store, { by: null, now: T0 + 1 })).status).toBe("replaced");
      expect((await store.getSchedule("a1", "s1"))?.by).toBeNull();
      // No agent yet: deleted, nothing logged (there is no log to write to, and none is created).
      expect(await store.deleteSchedule("a1", "s1", { by: "alice@ops", now: T0 + 2 })).toEqual({ status: "deleted" });
      expect(await store.getAgent("a1")).toBeNull();
      await store.enqueueTask({ agentId: "a1", agentName: "echo", workerTarget: TARGET, input: "x", options: {}, turnId: "t1", now: T0 + 3 });
      await put(store, { now: T0 + 4 });
      expect(await store.deleteSchedule("a1", "s1", { by: "alice@ops", now: T0 + 5 })).toEqual({ status: "deleted" });
      await put(store, { now: T0 + 6 });
      expect(await store.deleteSchedule("a1", "s1")).toEqual({ status: "deleted" });
      const events = (await store.readEvents("a1", 0, 100)).filter((e) => e.type === "schedule_deleted");
      expect(events.map(({ id: _id, ...e }) => e)).toEqual([{ at: T0 + 5, turnId: null, type: "schedule_deleted", data: { scheduleId: "s1", by: "alice@ops" } }]);
      expect((await store.getAgent("a1"))?.lastEventId).toBe(2);
    });

    it("with expectRev, putSchedule writes only over that revision of an existing schedule (else stale, nothing written)", async () => {
      const { store, state } = ctx();
      await store.enqueueTask({ agentId: "a1", agentName: "echo", workerTarget: TARGET, input: "x", options: {}, turnId: "t1", now: T0 });
      const before = await state("a1");
      expect(await put(store, { expectRev: 1 })).toEqual({ status: "stale" });
      expect(await state("a1")).toEqual(before);
      const first = await created(store);
      const paused = { ...SPEC, paused: true as const, options: { verifyMaxAttempts: 2, budget: { maxCostPerTurn: 0.25 } } };
      const r = await put(store, { spec: paused, nextTick: null, now: T0 + 1, expectRev: first.rev });
      expect(r).toEqual({ status: "replaced", schedule: { ...first, spec: paused, nextTick: null, rev: 2, updatedAt: T0 + 1 } });
      const after = await state("a1");
      expect(await put(store, { nextTick: T0 + 120_000, now: T0 + 2, expectRev: first.rev })).toEqual({ status: "stale" });
      expect(await state("a1")).toEqual(after);
      expect(await store.nextDueSchedule({ workerTarget: TARGET, now: T0 + 10 * 60_000 })).toEqual({ status: "none", next: null });
      await store.deleteSchedule("a1", "s1");
      expect(await put(store, { expectRev: 2 })).toEqual({ status: "stale" });
      expect(await store.getSchedule("a1", "s1")).toBeNull();
    });

    it("refuses a schedule naming another definition than the agent's with definition_conflict and writes nothing", async () => {
      const { store, state } = ctx();
      await store.enqueueTask({ agentId: "a1", agentName: "echo", workerTarget: TARGET, input: "x", options: {}, turnId: "t1", now: T0 });
      const before = await state("a1");
      expect(await put(store, { agentName: "other" })).toEqual({ status: "definition_conflict", boundTo: "echo" });
      expect(await state("a1")).toEqual(before);
      expect(await store.listSchedules("a1")).toEqual([]);
    });

    it("nextDueSchedule reads the schedule index only: answers a due schedule without claiming a due agent, the next tick otherwise", async () => {
      const { store } = ctx();
      await store.enqueueTask({ agentId: "b1", agentName: "echo", workerTarget: TARGET, input: "x", options: {}, turnId: "tb", now: T0 });
      expect(await store.nextDueSchedule({ workerTarget: TARGET, now: T0 + 59_999 })).toEqual({ status: "none", next: null });
      const rec = await created(store);
      expect(await store.nextDueSchedule({ workerTarget: TARGET, now: T0 + 59_999 })).toEqual({ status: "none", next: T0 + 60_000 });
      expect(await store.nextDueSchedule({ workerTarget: TARGET, now: T0 + 60_000 })).toEqual({ status: "schedule_due", schedule: rec });
      expect(await store.nextDueSchedule({ workerTarget: TARGET, now: T0 + 60_000, agentNames: ["other"] })).toMatchObject({ status: "none" });
      expect(await store.nextDueSchedule({ workerTarget: "elsewhere", now: T0 + 60_000 })).toEqual({ status: "none", next: null });
      // The due agent was left as it was: a claim still gets it.
      expect((await store.claim({ agentId: "b1", workerId: "w", leaseMs: 1000, now: T0 + 60_000 })).status).toBe("claimed");
      expect((await fire(store, rec)).status).toBe("fired");
      expect(await store.nextDueSchedule({ workerTarget: TARGET, now: T0 + 60_000 })).toEqual({ status: "none", next: T0 + 120_000 });
      expect(await store.deleteSchedule("a1", "s1")).toEqual({ status: "deleted" });
      expect(await store.nextDueSchedule({ workerTarget: TARGET, now: T0 + 200_000 })).toEqual({ status: "none", next: null });
    });

    it("keeps the due time in the ready queue: nextReadyAt reads it, claimNext answers the schedule once due and claims nothing for it", async () => {
      const { store } = ctx();
      await put(store);
      expect(await store.nextReadyAt(TARGET)).toBe(T0 + 60_000);
      expect(await store.claimNext({ workerTarget: TARGET, workerId: "w", leaseMs: 1000, now: T0 + 59_999 })).toEqual({ status: "empty" });
      const due = await store.claimNext({ workerTarget: TARGET, workerId: "w", leaseMs: 1000, now: T0 + 60_000 });
      expect(due).toEqual({ status: "schedule_due", schedule: (await store.getSchedule("a1", "s1"))! });
      // Another deployment's schedule is left due and counted.
      expect(await store.claimNext({ workerTarget: TARGET, workerId: "w", leaseMs: 1000, now: T0 + 60_000, agentNames: ["other"] }))
        .toEqual({ status: "empty", foreign: 1 });
      expect(await store.getAgent("a1")).toBeNull();
      await store.deleteSchedule("a1", "s1");
      expect(await store.nextReadyAt(TARGET)).toBeNull();
    });

    it("fires a tick once: enqueues the task under its key, records it, moves the due time; a second fire of the same tick is stale and writes nothing", async () => {
      const { store } = ctx();
      const rec = await created(store);
      const r = await fire(store, rec);
      expect(r).toEqual({ status: "fired", enqueue: { status: "enqueued", turnId: `turn_${T0 + 60_000}` }, nextTick: T0 + 120_000 });
      const task = await store.getTurn("a1", `turn_${T0 + 60_000}`);
      expect(task).toMatchObject({ status: "queued", input: SPEC.input });
      const after = (await store.getSchedule("a1", "s1"))!;
      expect(after).toMatchObject({ nextTick: T0 + 120_000, rev: 1, lastFired: { tick: T0 + 60_000, turnId: `turn_${T0 + 60_000}`, at: T0 + 60_000 } });
      expect(await store.nextReadyAt(TARGET)).toBe(T0 + 60_000); // the agent's own bell, rung by the enqueue
      const head = await store.getAgent("a1");
      expect(head).toMatchObject({ agentName: "echo", pendingTasks: 1 });
      // The same planned step again (a second worker): stale, nothing written.
      const before = await ctx().state("a1");
      expect(await fire(store, rec, { turnId: "turn_other" })).toEqual({ status: "stale", nextTick: T0 + 120_000 });
      expect(await ctx().state("a1")).toEqual(before);
      // A rewritten schedule refuses a step planned from the old revision.
      await put(store, { nextTick: T0 + 120_000, now: T0 + 61_000 });
      expect(await fire(store, after, { turnId: "turn_x" })).toEqual({ status: "stale", nextTick: T0 + 120_000 });
      // The task stands under the tick's key.
      expect(await store.enqueueTask({ agentId: "a1", agentName: "echo", workerTarget: TARGET, input: 1, options: {}, turnId: "t9", idempotencyKey: `schedule:s1:${T0 + 60_000}`, now: T0 }))
        .toEqual({ status: "duplicate", turnId: `turn_${T0 + 60_000}` });
    });

    it("a tick whose key was seen before enqueues nothing (duplicate) and still advances; fireTick null only advances", async () => {
      const { store } = ctx();
      const rec = await created(store);
      await store.enqueueTask({ agentId: "a1", agentName: "echo", workerTarget: TARGET, input: "x", options: {}, turnId: "t0", idempotencyKey: `schedule:s1:${T0 + 60_000}`, now: T0 });
      expect(await fire(store, rec)).toEqual({ status: "fired", enqueue: { status: "duplicate", turnId: "t0" }, nextTick: T0 + 120_000 });
      expect((await store.getAgent("a1"))!.pendingTasks).toBe(1);
      const next = (await store.getSchedule("a1", "s1"))!;
      expect(await fire(store, next, { fireTick: null, nextTick: null, now: T0 + 500_000 })).toEqual({ status: "skipped", nextTick: null });
      expect((await store.getSchedule("a1", "s1"))!.nextTick).toBeNull();
      // The agent's own task only: an ended schedule has no due time.
      expect(await store.claimNext({ workerTarget: TARGET, workerId: "w", leaseMs: 1000, now: T0 + 10_000_000, agentNames: ["none"] })).toEqual({ status: "empty", foreign: 1 });
      expect(await store.fireScheduleTick({ ...next, expectTick: 1, expectRev: 1, fireTick: null, nextTick: null, turnId: "t", idempotencyKey: "", options: {}, input: null, now: T0, scheduleId: "nope" }))
        .toEqual({ status: "schedule_not_found" });
    });

    it("applies exactly one of concurrent fires of the same tick from several clients", async () => {
      const { store, clients } = ctx();
      const rec = await created(store);
      const cs = await clients(3);
      const rs = await Promise.all(Array.from({ length: 6 }, (_, i) => fire(cs[i % cs.length], rec, { turnId: `turn_c${i}` })));
      expect(rs.filter((r) => r.status === "fired")).toHaveLength(1);
      expect(rs.filter((r) => r.status === "stale")).toHaveLength(5);
      expect((await store.getAgent("a1"))!.pendingTasks).toBe(1);
    });

    it("schedule-bounds: a new schedule past maxSchedules is schedule_limit and writes nothing; a replace at the bound, and a new one after a delete, are not refused", async () => {
      const { store, state } = ctx();
      for (const id of ["s0", "s1", "s2"]) expect((await put(store, { scheduleId: id, maxSchedules: 3 })).status).toBe("created");
      const before = await state("a1");
      expect(await put(store, { scheduleId: "s3", maxSchedules: 3 })).toEqual({ status: "schedule_limit", limit: 3 });
      expect(await state("a1")).toEqual(before);
      expect(await store.getSchedule("a1", "s3")).toBeNull();
      expect(await store.claimNext({ workerTarget: TARGET, workerId: "w", leaseMs: 1000, now: T0 + 60_000 })).toMatchObject({ status: "schedule_due" });
      expect((await put(store, { scheduleId: "s1", maxSchedules: 3, now: T0 + 1 })).status).toBe("replaced");
      expect(await store.deleteSchedule("a1", "s0")).toEqual({ status: "deleted" });
      expect((await put(store, { scheduleId: "s3", maxSchedules: 3 })).status).toBe("created");
      expect((await store.listSchedules("a1")).map((s) => s.scheduleId)).toEqual(["s1", "s2", "s3"]);
      // Each agent has its own count.
      expect((await put(store, { agentId: "a2", scheduleId: "s0", maxSchedules: 3 })).status).toBe("created");
    });

    it("schedule-bounds: without maxSchedules the bound is DEFAULTS.maxSchedulesPerAgent", async () => {
      const { store } = ctx();
      const limit = DEFAULTS.maxSchedulesPerAgent;
      const rs = [];
      for (let i = 0; i <= limit; i++) rs.push((await put(store, { scheduleId: `s${i}` })).status);
      expect(rs.filter((r) => r === "created")).toHaveLength(limit);
      expect(rs[limit]).toBe("schedule_limit");
      expect(await store.listSchedules("a1")).toHaveLength(limit);
    });

    it("schedule-bounds: concurrent puts of new schedules from several clients never pass the bound", async () => {
      const { store, clients } = ctx();
      const cs = await clients(3);
      const rs = await Promise.all(Array.from({ length: 12 }, (_, i) => put(cs[i % cs.length], { scheduleId: `c${i}`, maxSchedules: 5 })));
      expect(rs.filter((r) => r.status === "created")).toHaveLength(5);
      expect(rs.filter((r) => r.status === "schedule_limit")).toHaveLength(7);
      expect(await store.listSchedules("a1")).toHaveLength(5);
    });

    it("schedule-bounds: a tick while the schedule's newest task still waits is coalesced into it (nothing enqueued, the schedule advances); once that task is claimed the next tick enqueues", async () => {
      const { store } = ctx();
      const rec = await created(store);
      expect((await fire(store, rec)).status).toBe("fired");
      const second = (await store.getSchedule("a1", "s1"))!;
      const events = (await store.readEvents("a1", 0, 100)).length;
      expect(await fire(store, second)).toEqual({ status: "coalesced", turnId: `turn_${T0 + 60_000}`, nextTick: T0 + 180_000 });
      expect((await store.getAgent("a1"))!.pendingTasks).toBe(1);
      expect(await store.getTurn("a1", `turn_${T0 + 120_000}`)).toBeNull();
      const third = (await store.getSchedule("a1", "s1"))!;
      expect(third).toMatchObject({ nextTick: T0 + 180_000, lastFired: { tick: T0 + 60_000, turnId: `turn_${T0 + 60_000}` } });
      expect((await store.readEvents("a1", 0, 100)).length).toBe(events);
      // The waiting task is claimed: the next tick enqueues again.
      const c = await store.claimNext({ workerTarget: TARGET, workerId: "w", leaseMs: 600_000, now: T0 + 180_000 });
      expect(c).toMatchObject({ status: "claimed", agentId: "a1" });
      expect(await fire(store, third)).toEqual({ status: "fired", enqueue: { status: "enqueued", turnId: `turn_${T0 + 180_000}` }, nextTick: T0 + 240_000 });
      expect((await store.getAgent("a1"))!.pendingTasks).toBe(1);
    });

    it("schedule-bounds: maxQueued lets that many tasks of a schedule wait; a cancelled newest task starts the count again", async () => {
      const { store } = ctx();
      let rec = await created(store);
      const statuses: string[] = [];
      for (let i = 0; i < 4; i++) {
        statuses.push((await fire(store, rec, { maxQueued: 3 })).status);
        rec = (await store.getSchedule("a1", "s1"))!;
      }
      expect(statuses).toEqual(["fired", "fired", "fired", "coalesced"]);
      expect((await store.getAgent("a1"))!.pendingTasks).toBe(3);
      expect(await store.cancelTask({ agentId: "a1", turnId: `turn_${T0 + 180_000}`, reason: "test", now: T0 + 300_000 })).toMatchObject({ status: "cancelled" });
      expect((await fire(store, rec, { maxQueued: 3 })).status).toBe("fired");
      expect((await store.getAgent("a1"))!.pendingTasks).toBe(3);
    });

    it("schedule-bounds: after a fire, a catch-up tick already due waits behind an agent that was due before the fire", async () => {
      const { store } = ctx();
      const rec = await created(store);
      await store.enqueueTask({ agentId: "b1", agentName: "echo", workerTarget: TARGET, input: "x", options: {}, turnId: "tb", now: T0 + 100_000 });
      // Fired late (at T0 + 130 000) with a catch-up tick (T0 + 70 000) due next.
      const r = await fire(store, rec, { now: T0 + 130_000, nextTick: T0 + 70_000, maxQueued: 100 });
      expect(r.status).toBe("fired");
      expect((await store.getSchedule("a1", "s1"))!.nextTick).toBe(T0 + 70_000);
      const c = await store.claimNext({ workerTarget: TARGET, workerId: "w", leaseMs: 600_000, now: T0 + 130_000 });
      expect(c).toMatchObject({ status: "claimed", agentId: "b1" });
    });

    it("deleteAgent removes the agent's schedules and their due times, also of an id that has schedules only", async () => {
      const { store } = ctx();
      await put(store);
      await store.enqueueTask({ agentId: "a1", agentName: "echo", workerTarget: TARGET, input: "x", options: {}, turnId: "t1", now: T0 });
      await put(store, { agentId: "a2" });
      expect(await store.deleteAgent("a1", T0 + 1)).toEqual({ status: "deleted" });
      expect(await store.listSchedules("a1")).toEqual([]);
      expect(await store.deleteAgent("a2", T0 + 1)).toEqual({ status: "deleted" });
      expect(await store.listSchedules("a2")).toEqual([]);
      expect(await store.nextReadyAt(TARGET)).toBeNull();
    });
  });
}
