/**
 * agentTool() as a definition: its tool shape, the agents it brings along,
 * and the refusals (agents/agent-tool.ts, actors/delegation/delegation.ts).
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { agentTool, childInputOf, isAgentTool, withDelegates } from "../../agents/agent-tool.ts";
import { defineAgent } from "../../agents/define.ts";
import { childAgentId, delegationKey } from "../../actors/delegation/delegation.ts";
import { DefinitionError } from "../../errors/errors.ts";
import { createGatehouse } from "../../gatehouse.ts";
import { scriptedModel } from "../../models/scripted.ts";
import { defineTool } from "../../tools/define.ts";
import { toolSpec } from "../../tools/specs.ts";
import { ID_PATTERN } from "../../common/ids.ts";

const model = scriptedModel([{ text: "ok" }]);
const child = defineAgent({ name: "research.team", instructions: "Research.", model });

describe("agentTool()", () => {
  it("is an external tool named after the child, taking { input: string | object }", () => {
    const t = agentTool(child);
    expect(t).toMatchObject({ kind: "tool", name: "research_team", external: true, delegate: child, inputArgument: true });
    expect(t.deliverable).toBeUndefined();
    expect(isAgentTool(t)).toBe(true);
    expect(isAgentTool(defineTool({ name: "x", description: "x", parameters: z.object({}) }))).toBe(false);
    const spec = toolSpec(t);
    expect(spec.function.parameters).toMatchObject({ type: "object", required: ["input"] });
    expect(childInputOf(t, { input: { q: 1 } })).toEqual({ q: 1 });
    expect(childInputOf(t, { input: "text" })).toBe("text");
  });

  it("takes a name, description, parameters, deliverable and timeout", () => {
    const deliverable = { type: "object" as const, required: ["facts"] };
    const t = agentTool(child, { name: "ask", description: "Ask it", parameters: z.object({ q: z.string() }), deliverable, timeoutMs: 5_000 });
    expect(t).toMatchObject({ name: "ask", description: "Ask it", timeoutMs: 5_000, deliverable, inputArgument: false });
    expect(childInputOf(t, { q: "why" })).toEqual({ q: "why" });
  });

  it("refuses what is not an agent, and what defineTool refuses", () => {
    expect(() => agentTool({} as never)).toThrow(DefinitionError);
    expect(() => agentTool(child, { name: "has space" })).toThrow(DefinitionError);
    expect(() => agentTool(child, { parameters: z.string() as never })).toThrow(/parameters must be a zod object schema/);
    expect(() => agentTool(child, { name: "submit_result" })).toThrow(/reserved/);
  });

  it("brings its child (and grandchildren) into createGatehouse(), refusing two definitions under one name", () => {
    const leaf = defineAgent({ name: "leaf", instructions: "", model });
    const mid = defineAgent({ name: "mid", instructions: "", model, tools: [agentTool(leaf)] });
    const top = defineAgent({ name: "top", instructions: "", model, tools: [agentTool(mid)] });
    expect(withDelegates([top]).map((a) => a.name)).toEqual(["top", "mid", "leaf"]);
    const gh = createGatehouse({ agents: [top] });
    expect([...gh.agents.keys()]).toEqual(["top", "mid", "leaf"]);
    expect(gh.guardians.assignmentOf("leaf", "budget")).toBeTruthy();
    const otherLeaf = defineAgent({ name: "leaf", instructions: "another", model });
    expect(() => createGatehouse({ agents: [top, otherLeaf] })).toThrow(/Two different agents are named "leaf"/);
    // The same definition listed and delegated to is one agent.
    expect([...createGatehouse({ agents: [top, leaf] }).agents.keys()]).toEqual(["top", "leaf", "mid"]);
  });

  it("createGatehouse() refuses bad delegation settings", () => {
    for (const delegation of [{ maxDepth: -1 }, { maxDepth: 1.5 }, { pollMs: 0 }, "x"]) {
      expect(() => createGatehouse({ agents: [child], delegation: delegation as never })).toThrow(DefinitionError);
    }
  });

  it("child ids are valid agent ids, deterministic, and distinct per call", async () => {
    const long = "p".repeat(128);
    const a = await childAgentId(long, "turn_1", "call_1", "x".repeat(64));
    expect(a).toMatch(ID_PATTERN);
    expect(a.length).toBe(128);
    expect(await childAgentId(long, "turn_1", "call_1", "x".repeat(64))).toBe(a);
    expect(await childAgentId(long, "turn_1", "call_2", "x".repeat(64))).not.toBe(a);
    expect(await childAgentId("p1", "turn_2", "call_1", "t")).not.toBe(await childAgentId("p1", "turn_1", "call_1", "t"));
    expect(await delegationKey("p1", "turn_1", "call_1")).toMatch(/^delegation:[0-9a-f]{32}$/);
  });
});
