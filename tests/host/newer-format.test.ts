/**
 * A snapshot a newer build wrote (actors/host/restore.ts `newerFormat`) is
 * held for one second, instead of parked for minutes as an unrestorable one
 * is: a process that reads it takes it a second later.
 */
import { describe, expect, it } from "vitest";
import { defineAgent } from "../../agents/define.ts";
import { createGatehouse } from "../../gatehouse.ts";
import { scriptedModel } from "../../models/scripted.ts";
import { newerFormat } from "../../actors/host/restore.ts";
import { manualClock } from "../helpers/clock.ts";
import { enqueue, eventsOf, head } from "../helpers/host.ts";

describe("a snapshot of a newer format", () => {
  it("is told apart from an unreadable one", () => {
    expect(newerFormat({ "~": 2, value: "running" })).toBe(true);
    expect(newerFormat({ value: "running", context: { schemaVersion: 99 } })).toBe(true);
    expect(newerFormat({ value: "running", context: { schemaVersion: 2 } })).toBe(false);
    expect(newerFormat({ value: "nonsense" })).toBe(false);
    expect(newerFormat(null)).toBe(false);
  });

  it("is held for a second only (not minutes), no parking event; then another process claims it", async () => {
    const clock = manualClock();
    const agent = defineAgent({ name: "a", instructions: "", model: scriptedModel([{ text: "ok" }]) });
    const gh = createGatehouse({ agents: [agent], clock, leaseMs: 30_000 });
    try {
      const { turnId } = await enqueue(gh.store, clock, "n1", agent, "go");
      const c = await gh.store.claim({ agentId: "n1", workerId: "newer", leaseMs: 30_000, now: clock.now() });
      if (c.status !== "claimed") throw new Error(c.status);
      const r = await gh.store.commit({
        agentId: "n1", workerId: "newer", epoch: c.epoch, expectedVersion: c.head.version, turnId, activeTurnId: turnId,
        snapshot: { value: "running", context: { schemaVersion: 99 } }, state: "running",
        events: [], messages: [], recordToolCalls: [], resolveToolCalls: [], ackMailThrough: 0,
        release: { runnableAt: clock.now() }, leaseMs: 30_000, now: clock.now(),
      });
      expect(r.status).toBe("applied");
      await gh.drain();
      const h = await head(gh.store, "n1");
      expect(h.leaseUntil).toBe(clock.now() + 1_000);
      expect(h.epoch).toBe(c.epoch + 1);
      expect(await eventsOf(gh.store, "n1", "snapshot_unrestorable")).toEqual([]);
      clock.advance(1_001);
      const next = await gh.store.claim({ agentId: "n1", workerId: "reader", leaseMs: 30_000, now: clock.now() });
      expect(next.status).toBe("claimed");
    } finally {
      await gh.close();
    }
  });
});
