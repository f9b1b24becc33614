/** Approvals of agentTool calls and handoffs, handoff input filters, on the memory store (tests/host/approvals-anywhere-suite.ts), and their definitions. */
import { describe, expect, it } from "vitest";
import { agentTool, DefinitionError, defineAgent, handoff, lastUserMessage, memoryStore, scriptedModel } from "../../mod.ts";
import { approvalsAnywhereSuite } from "./approvals-anywhere-suite.ts";

approvalsAnywhereSuite("memory", () => memoryStore());

describe("agentTool and handoff: needsApproval, approvalTimeoutMs, inputFilter", () => {
  const child = defineAgent({ name: "child", instructions: "", model: scriptedModel(() => ({ text: "ok" })) });
  it("take them as defineTool does, and refuse bad ones naming the key", () => {
    const pred = () => true;
    expect(agentTool(child, { needsApproval: pred, approvalTimeoutMs: 5 })).toMatchObject({ needsApproval: pred, approvalTimeoutMs: 5 });
    expect(handoff(child, { needsApproval: true, inputFilter: lastUserMessage })).toMatchObject({ needsApproval: true, inputFilter: lastUserMessage });
    expect(handoff(child).inputFilter).toBeNull();
    expect(() => agentTool(child, { needsApproval: "yes" as never })).toThrow(expect.objectContaining({ key: "needsApproval" }));
    expect(() => handoff(child, { approvalTimeoutMs: 0 })).toThrow(expect.objectContaining({ key: "approvalTimeoutMs" }));
    expect(() => handoff(child, { inputFilter: "last" as never })).toThrow(DefinitionError);
    expect(() => handoff(child, { inputFiltr: lastUserMessage } as never)).toThrow(/inputFilter/);
  });

  it("lastUserMessage passes the last user message only", () => {
    const ms = [
      { role: "user" as const, content: "first" }, { role: "assistant" as const, content: "a" },
      { role: "user" as const, content: "second" }, { role: "tool" as const, content: "{}", toolCallId: "c1" },
    ];
    expect(lastUserMessage(ms)).toEqual([{ role: "user", content: "second" }]);
    expect(lastUserMessage([])).toEqual([]);
  });
});
