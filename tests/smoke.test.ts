import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, scriptedModel } from "../mod.ts";

describe("smoke", () => {
  it("runs a turn with an in-process tool, an external tool and submit_result", async () => {
    const add = defineTool({ name: "add", description: "add", parameters: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }) => a + b });
    const ask = defineTool({ name: "ask_human", description: "ask", parameters: z.object({ q: z.string() }) });
    const agent = defineAgent({
      name: "calc", instructions: "calc",
      model: scriptedModel([
        { toolCalls: [{ name: "add", args: { a: 1, b: 2 } }, { name: "ask_human", args: { q: "ok?" } }] },
        { text: "thinking", toolCalls: [{ name: "submit_result", args: { result: 3 } }] },
      ]),
      tools: [add, ask],
    });
    const gh = createGatehouse({ agents: [agent] });
    const r = await gh.fetch(new Request("http://x/v1/agents/a1/tasks", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ agent: "calc", input: "1+2" }) }));
    const { turnId } = await r.json();
    await gh.drain();
    let head = await gh.store.getAgent("a1");
    expect(head!.state).toBe("waiting-tools");
    const calls = await gh.store.getToolCalls("a1", turnId);
    const ext = calls.find((c) => c.name === "ask_human")!;
    await gh.fetch(new Request("http://x/v1/agents/a1/tool-results", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ turnId, toolCallId: ext.toolCallId, outcome: { ok: true, value: "yes" } }) }));
    await gh.drain();
    head = await gh.store.getAgent("a1");
    expect(head!.state).toBe("done");
    expect((head!.snapshot as any).context.output).toBe(3);
    const msgs = await gh.store.readMessages("a1");
    console.log(JSON.stringify(msgs));
    const ev = await gh.store.readEvents("a1", 0, 100);
    console.log(ev.map((e) => e.type + (e.type === "transition" ? `:${(e.data as any).from}->${(e.data as any).to}` : "")).join("\n"));
  });
});
