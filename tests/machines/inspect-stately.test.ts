/**
 * XState tooling: `@statelyai/inspect` inspectors work through
 * createGatehouse's `inspect` option with real actors. An inspector built
 * by `createInspector` over a recording adapter (the browser, WebSocket and
 * Stately Sky inspectors are the same inspector over another adapter)
 * receives the actor with its machine definition, every machine event the
 * host sends, and the snapshots up to `done`.
 */
import { createInspector, type StatelyInspectionEvent } from "@statelyai/inspect";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, scriptedModel } from "../../mod.ts";

describe("@statelyai/inspect through the inspect option", () => {
  it("receives actor, event and snapshot inspection events of the agent actors", async () => {
    const sent: StatelyInspectionEvent[] = [];
    const inspector = createInspector({ send: (e) => void sent.push(e) });
    const tool = defineTool({ name: "noop", description: "noop", parameters: z.object({}), execute: () => "done" });
    const agent = defineAgent({
      name: "inspected",
      instructions: "x",
      tools: [tool],
      model: scriptedModel([
        { toolCalls: [{ name: "noop", args: {} }] },
        { toolCalls: [{ name: "submit_result", args: { result: 1 } }] },
      ]),
    });
    const gh = createGatehouse({ agents: [agent], inspect: inspector.inspect });
    const res = await gh.fetch(new Request("http://gh.test/v1/agents/i1/tasks", {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ agent: "inspected", input: "go" }),
    }));
    expect(res.status).toBe(202);
    await gh.drain();
    expect((await gh.store.getAgent("i1"))!.state).toBe("done");
    // The inspector hands events on from an idle callback (a timer outside browsers).
    await new Promise((r) => setTimeout(r, 20));

    const actors = sent.filter((e) => e.type === "@xstate.actor");
    expect(actors.length).toBeGreaterThan(0);
    // The actor event carries the machine definition the visualizer draws.
    const def = JSON.parse(actors[0].definition!);
    expect(Object.keys(def.states)).toEqual(expect.arrayContaining(["idle", "running", "waiting-tools", "verifying", "done", "failed"]));
    const events = sent.filter((e) => e.type === "@xstate.event").map((e) => (e as { event: { type: string } }).event.type);
    for (const t of ["TASK_STARTED", "MODEL_STEP", "TOOL_RESULT"]) expect(events).toContain(t);
    const values = sent.filter((e) => e.type === "@xstate.snapshot").map((e) => (e as unknown as { snapshot: { value: string } }).snapshot.value);
    expect(values).toContain("waiting-tools");
    expect(values.at(-1)).toBe("done");
    for (const e of sent) expect(typeof e.sessionId).toBe("string");
    inspector.stop();
    await gh.close();
  });
});
