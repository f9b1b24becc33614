import process from "node:process";
import { createGatehouse, defineAgent, scriptedModel } from "@gatehouse-runtime/core";
import { mcpTools } from "@gatehouse-runtime/core/mcp";

// The tools of an MCP server (Streamable HTTP; { command, args } spawns a stdio server on Node, Deno, Bun).
const tools = await mcpTools({ url: process.env.MCP_URL ?? "http://127.0.0.1:3001/mcp", allow: ["add"] });
const calculator = defineAgent({
  name: "calculator",
  instructions: "Add numbers with the add tool.",
  model: scriptedModel(({ step, messages }) =>
    step === 1
      ? { toolCalls: [{ name: "add", args: { a: 2, b: 3 } }] } // checked against the server's schema first
      : { toolCalls: [{ name: "submit_result", args: { result: JSON.parse(messages.at(-1)!.content) } }] }
  ),
  tools,
});
const gh = createGatehouse({ agents: [calculator] });
await gh.fetch(new Request("http://localhost/v1/agents/c1/tasks", {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ agent: "calculator", input: "2 + 3" }),
}));
await gh.drain();
const agent = await (await gh.fetch(new Request("http://localhost/v1/agents/c1"))).json();
console.log(agent.state, JSON.stringify(agent.output)); // done {"sum":5}
await gh.close();
await tools.close();
