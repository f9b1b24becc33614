/**
 * The verifier gate example (docs/verification.md): `fixer` proposes a fix
 * through `agent_output`; its verifier runs the test suite and rejects the
 * candidate while tests fail. The scripted model first claims a fix without
 * making it, reads the rejection, applies the patch with a tool, and proposes
 * again; the second candidate passes and the verifier's return value is the
 * turn's output.
 *
 * `runTests` is a stub over an in-memory workspace, so the example runs the
 * same way every time: `main()` resets the workspace and runs one task.
 */
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, scriptedModel, VerificationRejected } from "../mod.ts";
import type { Message } from "../mod.ts";

// --- The example's stand-in for a repository and its test runner. ---

const workspace = { patched: false };

interface TestReport {
  passed: boolean;
  summary: string;
  failed: string[];
  total: number;
}

/** Runs the suite of a profile against the workspace ("fast": 12 tests, anything else: 40). */
async function runTests(profile: string): Promise<TestReport> {
  const total = profile === "fast" ? 12 : 40;
  const failed = workspace.patched ? [] : ["test_parser_generics", "test_codegen_switch"];
  return {
    passed: failed.length === 0,
    summary: failed.length === 0 ? `All ${total} tests passed.` : `${failed.length} of ${total} tests failed.`,
    failed,
    total,
  };
}

const applyPatch = defineTool({
  name: "apply_patch",
  description: "Apply a patch to the workspace",
  parameters: z.object({ patch: z.string() }),
  execute: () => {
    workspace.patched = true;
    return "Patch applied.";
  },
});

/** The model: propose, read the rejection, patch, propose again. */
const model = scriptedModel(({ messages }: { messages: Message[] }) => {
  const last = messages[messages.length - 1];
  if (last.role === "tool" && last.content.startsWith("<verification_rejected")) {
    return { toolCalls: [{ name: "apply_patch", args: { patch: "--- a/parser.ts\n+++ b/parser.ts\n…" } }] };
  }
  return { toolCalls: [{ name: "agent_output", args: { summary: "Fixed generic parsing in the parser" } }] };
});

// #region fixer (quoted in docs/verification.md)
const AgentOutput = z.object({ summary: z.string(), testProfile: z.string().default("fast") });
export const fixer = defineAgent({
  name: "fixer",
  instructions: "Fix the failing tests, then propose your output with agent_output.",
  model,
  tools: [applyPatch],
  output: {
    schema: AgentOutput,
    async verify(candidate, { agent, execution, attempt, maxAttempts }) {
      const report = await runTests(candidate.testProfile);
      if (!report.passed) throw new VerificationRejected({
        message: report.summary, code: "tests_failed", retryable: true,
        metadata: { failedTests: report.failed.slice(0, 10) } });
      return { summary: candidate.summary, verification: { testsRun: report.total } };
    },
  },
  verifyAttempts: 5,
});
// #endregion fixer

/** Runs one task of `fixer` to its end; returns the agent's view, its verdicts and the conversation. */
export async function main() {
  workspace.patched = false;
  const gh = createGatehouse({ agents: [fixer] });
  try {
    await gh.fetch(new Request("http://gatehouse/v1/agents/fixer-1/tasks", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ agent: "fixer", input: "test_parser_generics fails on nested generics" }),
    }));
    await gh.drain();
    const agent = await (await gh.fetch(new Request("http://gatehouse/v1/agents/fixer-1"))).json();
    const { verdicts } = await (await gh.fetch(new Request("http://gatehouse/v1/agents/fixer-1/verdicts"))).json();
    const messages = await gh.store.readMessages("fixer-1");
    return { agent, verdicts, messages };
  } finally {
    await gh.close();
  }
}
