/**
 * examples/client.ts drives the README scenario through `hc<GatehouseApp>`
 * against a gatehouse serving the demo agents (its requests go to
 * `gh.fetch`); tests/types/client.types.ts checks the client's types with
 * `tsc`.
 */
import { describe, expect, it } from "vitest";
import { createGatehouse } from "../../mod.ts";
import { demoAgents } from "../../examples/demo.ts";
import { runScenario } from "../../examples/client.ts";

describe("examples/client.ts: the README scenario through the typed client", () => {
  it("enqueues, finds the approval call, delivers its result twice and reads the output", async () => {
    const gh = createGatehouse({ agents: demoAgents, pollMs: 5 });
    gh.startWorker();
    try {
      const r = await runScenario("http://gatehouse.test", (input, init) => gh.fetch(new Request(input, init)));
      expect(r.turnId).toMatch(/^turn_/);
      expect(r.waitingState).toBe("waiting-tools");
      const contract = { passed: true, mismatch: null }; // the approval tool declares no contract
      expect(r.deliveries).toEqual([{ accepted: true, duplicate: false, contract }, { accepted: true, duplicate: true, contract }]);
      expect(r.finalState).toBe("done");
      expect(r.output).toEqual({ orderId: "A-1001", refund: "approved", note: "approved by Dana" });
    } finally {
      await gh.close();
    }
  });

  it("runs again on the same server (fresh agent id and idempotency key), and says what it saw when a step cannot happen", async () => {
    const gh = createGatehouse({ agents: demoAgents, pollMs: 5 });
    gh.startWorker();
    const f = (input: RequestInfo | URL, init?: RequestInit) => gh.fetch(new Request(input, init));
    try {
      const first = await runScenario("http://gatehouse.test", f);
      const second = await runScenario("http://gatehouse.test", f);
      expect(second.finalState).toBe("done");
      expect(second.turnId).not.toBe(first.turnId);
      // A server without the demo agents: the error names the problem instead of timing out.
      const bare = createGatehouse({ agents: demoAgents.filter((a) => a.name !== "concierge"), pollMs: 5 });
      try {
        await expect(runScenario("http://gatehouse.test", (input, init) => bare.fetch(new Request(input, init)))).rejects.toThrow(/Cannot enqueue the task for alice-[0-9a-f]{8}: 4\d\d .*demo agents/);
      } finally {
        await bare.close();
      }
    } finally {
      await gh.close();
    }
  }, 60_000);
});
