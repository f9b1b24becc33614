/**
 * The delegation and spend-limit example (docs/contracts.md, docs/teams.md): `lead`
 * hands research to `researcher` through an agent tool, receives the
 * researcher's verified output as the call's result, and writes a summary.
 * The lead runs under a spend limit; the researcher's tokens count toward it.
 *
 * `main()` runs two tasks on the memory store: one within the limit (it ends
 * `done`), and one whose task-level `spendLimit` is too small for the team (it
 * ends `failed` with `budget_exhausted` and a FAIL verdict of the built-in
 * `budget` guardian).
 */
import { z } from "zod";
import { agentTool, createGatehouse, defineAgent, scriptedModel, VerificationRejected } from "../mod.ts";

const researcherModel = scriptedModel([
  { toolCalls: [{ name: "agent_output", args: { facts: ["Sea otters hold hands while they sleep"] } }], usage: { inputTokens: 300, outputTokens: 50 }, cost: 0.002 },
]);
const leadModel = scriptedModel((ctx) => {
  const tool = ctx.messages.find((m) => m.role === "tool");
  if (!tool) return { toolCalls: [{ name: "researcher", args: { input: "sea otters" } }], usage: { inputTokens: 200, outputTokens: 20 }, cost: 0.001 };
  const { facts } = JSON.parse(String(tool.content)) as { facts: string[] };
  return { toolCalls: [{ name: "submit_result", args: { result: { summary: facts.join("; ") } } }], usage: { inputTokens: 250, outputTokens: 30 }, cost: 0.001 };
});

// #region team
const researcher = defineAgent({
  name: "researcher",
  instructions: "Find facts about the topic and propose them with agent_output.",
  model: researcherModel,
  output: {
    schema: z.object({ facts: z.array(z.string()) }),
    async verify(candidate) {
      if (candidate.facts.length === 0) throw new VerificationRejected({ message: "No facts found", code: "empty" });
      return { facts: candidate.facts, checked: true };
    },
  },
});

export const lead = defineAgent({
  name: "lead",
  instructions: "Have the researcher find facts, then write a one-line summary.",
  model: leadModel,
  tools: [agentTool(researcher, { description: "Research a topic", deliverable: { type: "object", required: ["facts"] } })],
  spendLimit: { maxTokensPerTurn: 2_000, maxCostTotal: 1 },
});
// #endregion team

export async function main() {
  const gh = createGatehouse({ agents: [lead] });
  const task = (agentId: string, body: unknown) =>
    gh.fetch(new Request(`http://gatehouse/v1/agents/${agentId}/tasks`, {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
    }));
  const view = async (agentId: string) => await (await gh.fetch(new Request(`http://gatehouse/v1/agents/${agentId}`))).json();
  const events = async (agentId: string) => (await gh.store.readEvents(agentId, 0, 1_000)).map((e) => ({ type: e.type, data: e.data }));
  try {
    // #region run
    await task("lead-1", { agent: "lead", input: "Tell me about sea otters" });
    await task("lead-2", { agent: "lead", input: "Tell me about sea otters", spendLimit: { maxTokensPerTurn: 500 } });
    await gh.drain();
    // #endregion run
    const started = (await events("lead-1")).find((e) => e.type === "delegation_started")!.data as { childAgentId: string };
    return {
      within: await view("lead-1"),
      child: await view(started.childAgentId),
      childEvents: await events(started.childAgentId),
      over: await view("lead-2"),
      overEvents: await events("lead-2"),
      verdicts: (await (await gh.fetch(new Request("http://gatehouse/v1/agents/lead-2/verdicts"))).json()).verdicts,
    };
  } finally {
    await gh.close();
  }
}
