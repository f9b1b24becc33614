/**
 * Graceful drain (`Gatehouse.drainWorker`, docs/operations.md "Upgrades"):
 * `/healthz` answers 503 `draining` at once, the claim in progress ends and
 * releases its lease (none is left to expire), nothing new is claimed.
 */
import { describe, expect, it } from "vitest";
import { createGatehouse, defineAgent, memoryStore } from "../../mod.ts";
import { enqueue, head, recordingModel } from "../helpers/host.ts";
import { systemClock } from "../../actors/runtime.ts";

describe("drainWorker", () => {
  it("says draining, lets the claim in progress end with its lease released, and claims nothing new", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let calls = 0;
    const model = recordingModel(async () => {
      calls++;
      await gate;
      return { text: "done" };
    });
    const agent = defineAgent({ name: "d", instructions: "", model });
    const store = memoryStore();
    const gh = createGatehouse({ agents: [agent], store, pollMs: 10, idlePollMaxMs: 50 });
    try {
      expect((await gh.fetch(new Request("http://x/healthz"))).status).toBe(200);
      gh.startWorker();
      const { turnId } = await enqueue(store, systemClock, "d1", agent, "go");
      for (let i = 0; i < 400 && calls === 0; i++) await new Promise((r) => setTimeout(r, 10));
      expect(calls).toBe(1);
      const drained = gh.drainWorker();
      const res = await gh.fetch(new Request("http://x/healthz"));
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ ok: false, status: "draining", store: "memory" });
      release();
      await drained;
      expect((await store.getTurn("d1", turnId))?.status).toBe("done");
      expect((await head(store, "d1")).leaseOwner).toBeNull();
      // Nothing is claimed any more: a new task stays queued.
      await enqueue(store, systemClock, "d2", agent, "later");
      await new Promise((r) => setTimeout(r, 200));
      expect((await head(store, "d2")).epoch).toBe(0);
    } finally {
      release();
      await gh.close();
    }
  }, 30_000);
});
