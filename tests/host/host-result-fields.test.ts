import { describe, expect, it } from "vitest";
import { missingResultFields } from "../../actors/steps/model-step.ts";
import { createGatehouse, defineAgent, scriptedModel } from "../../mod.ts";

describe("submit_result with declared result fields", () => {
  it("missingResultFields lists declared fields the value lacks and ignores malformed declarations", () => {
    expect(missingResultFields({ resultFields: ["a", "b"] }, { a: 1 })).toEqual(["b"]);
    expect(missingResultFields({ resultFields: ["a"] }, "text")).toEqual(["a"]);
    expect(missingResultFields({ resultFields: ["a"] }, { a: null })).toEqual([]);
    expect(missingResultFields({ resultFields: "a" }, {})).toEqual([]);
    expect(missingResultFields("plain input", {})).toEqual([]);
  });

  it("a result missing declared fields still completes the turn, with a submit_result_degraded warning", async () => {
    const agent = defineAgent({
      name: "reporter",
      instructions: "report",
      model: scriptedModel([{ toolCalls: [{ name: "submit_result", args: { result: { title: "t" } } }] }]),
    });
    const gh = createGatehouse({ agents: [agent] });
    const res = await gh.fetch(new Request("http://x/v1/agents/r1/tasks", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ agent: "reporter", input: { text: "write", resultFields: ["title", "body"] } }),
    }));
    expect(res.status).toBe(202);
    await gh.drain();
    const head = await gh.store.getAgent("r1");
    expect(head!.state).toBe("done");
    expect((head!.snapshot as { context: { output: unknown } }).context.output).toEqual({ title: "t" });
    const events = await gh.store.readEvents("r1", 0, 100);
    const warn = events.filter((e) => e.type === "submit_result_degraded");
    expect(warn).toHaveLength(1);
    expect(warn[0].data.missingFields).toEqual(["body"]);
    await gh.close();
  });
});
