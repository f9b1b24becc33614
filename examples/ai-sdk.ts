/**
 * Any AI SDK model as a gatehouse model (docs/models.md): a "support" agent
 * on Anthropic's Messages API through `@ai-sdk/anthropic`, wrapped by
 * `aiSdkModel`. The model decides when to call `lookup_order`; the host runs
 * the tool, sends the result back, and the model ends the turn with
 * `submit_result`. Its text streams into the agent's `chunk` events.
 *
 * `main(env, question)` runs one task on the memory store and returns the
 * output, the streamed text and the step usage. `ANTHROPIC_BASE_URL` is
 * optional (default: Anthropic's API); tests/models/ai-sdk-example.test.ts points it
 * at a local server speaking the same wire format, and the Workers suite
 * (tests/runtimes/workerd-ai-sdk.int.test.ts) runs `supportAgent` inside workerd.
 *
 * Run against Anthropic: `ANTHROPIC_API_KEY=... npx tsx examples/ai-sdk.ts "Where is order A-1001?"`
 */
import { createAnthropic } from "@ai-sdk/anthropic";
import { z } from "zod";
import { aiSdkModel } from "../ai-sdk.ts";
import { createGatehouse, defineAgent, defineTool } from "../mod.ts";

const ORDERS: Record<string, { status: string; eta: string }> = {
  "A-1001": { status: "shipped", eta: "2026-12-02" },
};

export interface ExampleEnv {
  ANTHROPIC_API_KEY: string;
  ANTHROPIC_BASE_URL?: string;
}

// ai-sdk:start
const lookupOrder = defineTool({
  name: "lookup_order",
  description: "Find an order by its id",
  parameters: z.object({ orderId: z.string() }),
  execute: ({ orderId }) => ORDERS[orderId] ?? { error: "no such order" },
});

export function supportAgent(env: ExampleEnv) {
  const anthropic = createAnthropic({ apiKey: env.ANTHROPIC_API_KEY, baseURL: env.ANTHROPIC_BASE_URL });
  return defineAgent({
    name: "support",
    instructions: "Answer questions about orders. Look the order up, then end with submit_result.",
    model: aiSdkModel(anthropic("claude-sonnet-4-5"), { pricing: { inputPerMTok: 3, outputPerMTok: 15 } }),
    tools: [lookupOrder],
  });
}
// ai-sdk:end

export async function main(env: ExampleEnv, question: string) {
  const gh = createGatehouse({ agents: [supportAgent(env)] });
  try {
    await gh.fetch(new Request("http://local/v1/agents/customer-1/tasks", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ agent: "support", input: question }),
    }));
    await gh.drain();
    const agent = await (await gh.fetch(new Request("http://local/v1/agents/customer-1"))).json() as { state: string; output?: unknown };
    const events = await gh.store.readEvents("customer-1", 0, 1000);
    const streamed = events.filter((e) => e.type === "chunk").map((e) => String(e.data.text)).join("");
    const usage = events.filter((e) => e.type === "step" && e.data.phase === "completed").map((e) => e.data.llmUsage);
    return { state: agent.state, output: agent.output, streamed, usage };
  } finally {
    await gh.close();
  }
}

const g = globalThis as { process?: { argv: string[]; env: Record<string, string | undefined> } };
if (g.process && import.meta.url === `file://${g.process.argv[1]}`) {
  const { ANTHROPIC_API_KEY = "", ANTHROPIC_BASE_URL } = g.process.env;
  console.log(JSON.stringify(await main({ ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL }, g.process.argv[2] ?? "Where is order A-1001?"), null, 2));
}
