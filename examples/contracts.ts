/**
 * The external-tool half of the contracts example (docs/contracts.md): an
 * external tool declares a deliverable; its result arrives over HTTP and is
 * checked there, before the agent sees it. `main()` runs one turn on a memory
 * store: the model calls `lookup_user`, a result without `userId` is refused
 * (`contract_violation`), the model asks again, and a result spelt `user_id`
 * passes by tolerance.
 */
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, scriptedModel } from "../mod.ts";

/** An external tool (no `execute`): its results are posted to /v1/agents/:id/tool-results. */
export const lookupUser = defineTool({
  name: "lookup_user",
  description: "Look a user up by email (answered by the CRM over HTTP)",
  parameters: z.object({ email: z.string() }),
  deliverable: { type: "object", required: ["userId", "plan"] },
});

export const support = defineAgent({
  name: "support",
  instructions: "Find the user, then submit their plan.",
  model: scriptedModel(({ messages }) => {
    const last = messages.at(-1)!;
    if (last.role === "tool" && !last.content.includes('"error"')) {
      return { toolCalls: [{ name: "submit_result", args: { result: JSON.parse(last.content) } }] };
    }
    return { toolCalls: [{ name: "lookup_user", args: { email: "dana@example.org" } }] };
  }),
  tools: [lookupUser],
});

/** Runs the example; returns what the two deliveries were answered and the turn's output. */
export async function main() {
  const gh = createGatehouse({ agents: [support] });
  const post = (path: string, body: unknown) =>
    gh.app.request(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const deliver = async (value: unknown) => {
    await gh.drain();
    const call = (await gh.store.readEvents("u1", 0, 1_000)).findLast((e) => e.type === "tool_call")!;
    const res = await post("/v1/agents/u1/tool-results", { turnId: call.turnId, toolCallId: call.data.toolCallId, outcome: { ok: true, value } });
    return await res.json();
  };
  try {
    await post("/v1/agents/u1/tasks", { agent: "support", input: "What plan is dana@example.org on?" });
    const refused = await deliver({ plan: "pro" }); // no userId: refused
    const accepted = await deliver({ user_id: "u_42", plan: "pro" }); // user_id satisfies userId
    await gh.drain();
    const view = await (await gh.app.request("/v1/agents/u1")).json() as { context?: { output?: unknown }; output?: unknown };
    return { refused, accepted, output: view.output ?? view.context?.output };
  } finally {
    await gh.close();
  }
}
