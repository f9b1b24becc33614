/**
 * Turns pinned to the definition version they started with (store/port.ts
 * invariant `turn-versions`, actors/host/versions.ts), run on one store by
 * several deployments in turn: a turn started under v1 and continued by a
 * deployment with [v2, v1] runs under v1 to its end, the next turn under v2;
 * a deployment with only v2 never runs the v1 turn and its agent view says
 * what the turn waits for; one whose v2 has `upgradeFrom: ["1"]` takes it
 * over, recorded as `turn_upgraded`.
 */
import { expect, it } from "vitest";
import { z } from "zod";
import { type AnyAgent, defineAgent } from "../../agents/define.ts";
import { createGatehouse, type Gatehouse } from "../../gatehouse.ts";
import { defineTool } from "../../tools/define.ts";
import type { Store } from "../../store/port.ts";
import { manualClock } from "../helpers/clock.ts";
import { enqueue, eventsOf, head, recordingModel } from "../helpers/host.ts";

const ask = defineTool({ name: "ask", description: "Ask a person", parameters: z.object({}) });

/** A model that asks once, then answers with its tag; it records every request. */
const modelOf = (tag: string) =>
  recordingModel((req) => (req.step === 1 ? { toolCalls: [{ id: `c-${req.turnId}`, name: "ask", args: {} }] } : { text: `${tag} done` }));

/** `storeFor`: the store the test reads and writes through; `fresh`: a store for each deployment (one key space). */
export function turnVersionSuite(storeFor: () => Store, fresh: () => Store, close: () => Promise<void> = async () => {}) {
  it("a v1 turn runs under v1 to its end beside v2; a deployment with v2 only leaves it and says so; upgradeFrom moves it on", async () => {
    const clock = manualClock();
    const m1 = modelOf("v1"), m2 = modelOf("v2"), m3 = modelOf("v2u");
    const v1 = defineAgent({ name: "assistant", version: "1", instructions: "You are v1.", model: m1, tools: [ask] });
    const v2 = defineAgent({ name: "assistant", version: "2", instructions: "You are v2.", model: m2, tools: [ask] });
    const open: Gatehouse[] = [];
    const deploy = (agents: AnyAgent[]) => {
      const gh = createGatehouse({ agents, store: fresh(), clock, leaseMs: 30_000 });
      open.push(gh);
      return gh;
    };
    const deliver = async (agentId: string, turnId: string) => {
      const r = await storeFor().deliverToolResult({
        agentId, turnId, toolCallId: `c-${turnId}`, outcome: { ok: true, value: "yes" }, afterExecution: "continue", source: "http", now: clock.now(),
      });
      expect(r.status).toBe("accepted");
    };
    const started = async (agentId: string) =>
      (await eventsOf(storeFor(), agentId, "transition")).filter((e) => (e.data as any).event.type === "TASK_STARTED").map((e) => (e.data as any).event.version);
    try {
      // Deployment A has v1 only: both agents start a turn under v1 and wait for the person.
      const a = deploy([v1]);
      const t1 = (await enqueue(storeFor(), clock, "a1", v1, "one")).turnId;
      const t2 = (await enqueue(storeFor(), clock, "a2", v1, "two")).turnId;
      await a.drain();
      expect((await head(storeFor(), "a1")).state).toBe("waiting-tools");
      expect(await started("a1")).toEqual(["1"]);
      expect(m1.requests.every((r) => r.messages[0].content === "You are v1.")).toBe(true);

      // B has [v2, v1]: the v1 turn ends under v1; the next turn starts under v2.
      const b = deploy([v2, v1]);
      await deliver("a1", t1);
      await b.drain();
      expect((await storeFor().getTurn("a1", t1))?.status).toBe("done");
      expect(m1.requests.filter((r) => r.agentId === "a1").map((r) => r.step)).toEqual([1, 2]);
      expect(m2.requests.filter((r) => r.agentId === "a1")).toEqual([]);
      const next = (await enqueue(storeFor(), clock, "a1", v2, "again")).turnId;
      await b.drain();
      expect(await started("a1")).toEqual(["1", "2"]);
      expect(m2.requests.filter((r) => r.turnId === next).map((r) => r.messages[0].content)).toEqual(["You are v2."]);

      // C has v2 only: the v1 turn of a2 is never run there, no lease taken, and the view says what it waits for.
      await a.close();
      await b.close();
      const c = deploy([v2]);
      await deliver("a2", t2);
      const before = await head(storeFor(), "a2");
      await c.drain();
      const after = await head(storeFor(), "a2");
      expect(after.epoch).toBe(before.epoch);
      expect(after.leaseOwner).toBeNull();
      expect(after.state).toBe("waiting-tools");
      const view = await (await c.fetch(new Request("http://x/v1/agents/a2"))).json() as Record<string, unknown>;
      expect(view.turnVersion).toBe("1");
      expect(view.waiting).toEqual({ for: "version", version: "1" });
      expect(m2.requests.filter((r) => r.agentId === "a2")).toEqual([]);
      const versions = await (await c.fetch(new Request("http://x/v1/versions"))).json() as { definitions: unknown[] };
      expect(versions.definitions).toEqual([{
        name: "assistant", current: "2",
        versions: [
          // a1's second turn, pinned to "2" (waiting for its tool, not for a version).
          { version: "2", here: true, processes: 0, runningTurns: 1, waitingTurns: 0 },
          { version: "1", here: false, processes: 0, runningTurns: 0, waitingTurns: 1 },
        ],
      }]);
      const metrics = await (await c.fetch(new Request("http://x/metrics"))).text();
      expect(metrics).toContain("\ngatehouse_turns_waiting_for_version 1\n");

      // D's v2 upgrades from 1: it takes the turn over, recorded, and runs its remaining steps under v2.
      await c.close();
      const v2u = defineAgent({ name: "assistant", version: "2", instructions: "You are v2.", model: m3, tools: [ask], upgradeFrom: ["1"] });
      const d = deploy([v2u]);
      await d.drain();
      expect((await storeFor().getTurn("a2", t2))?.status).toBe("done");
      const upgraded = await eventsOf(storeFor(), "a2", "turn_upgraded");
      expect(upgraded.map((e) => e.data)).toEqual([{ turnId: t2, from: "1", to: "2" }]);
      expect(m3.requests.filter((r) => r.agentId === "a2").map((r) => [r.step, r.messages[0].content])).toEqual([[2, "You are v2."]]);
      const dView = await (await d.fetch(new Request("http://x/v1/agents/a2"))).json() as Record<string, unknown>;
      expect(dView.waiting).toBeUndefined();
    } finally {
      for (const gh of open) await gh.close();
      await close();
    }
  }, 60_000);
}
