import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, scriptedModel } from "../../mod.ts";
import { jsonRequest } from "../helpers/http.ts";

const post = (path: string, body: unknown) => jsonRequest("POST", path, body, {}, "http://x");

const echo = defineAgent({
  name: "echo",
  instructions: "echo",
  model: scriptedModel([{ toolCalls: [{ name: "submit_result", args: { result: "ok" } }] }]),
});

async function until(check: () => Promise<boolean>, ms = 3_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 10));
  }
  return false;
}

describe("createGatehouse options", () => {
  it("inline: without a running worker, an accepted task is processed right after the request", async () => {
    const gh = createGatehouse({ agents: [echo], inline: true });
    expect((await gh.fetch(post("/v1/agents/i1/tasks", { agent: "echo", input: "hi" }))).status).toBe(202);
    expect(await until(async () => (await gh.store.getAgent("i1"))?.state === "done")).toBe(true);
    await gh.close();
  });

  it("without inline and without a worker, nothing runs until drain()", async () => {
    const gh = createGatehouse({ agents: [echo] });
    await gh.fetch(post("/v1/agents/i2/tasks", { agent: "echo", input: "hi" }));
    await new Promise((r) => setTimeout(r, 50));
    expect((await gh.store.getAgent("i2"))!.state).toBe("idle");
    expect(await gh.drain()).toBeGreaterThan(0);
    expect((await gh.store.getAgent("i2"))!.state).toBe("done");
    await gh.close();
  });

  it("inspect: the XState inspection callback sees the agent's events and snapshots", async () => {
    const seen: string[] = [];
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
    const gh = createGatehouse({
      agents: [agent],
      inspect: (e) => {
        if (e.type === "@xstate.event") seen.push((e as { event: { type: string } }).event.type);
      },
    });
    await gh.fetch(post("/v1/agents/n1/tasks", { agent: "inspected", input: "go" }));
    await gh.drain();
    expect((await gh.store.getAgent("n1"))!.state).toBe("done");
    for (const t of ["TASK_STARTED", "MODEL_STEP", "TOOL_RESULT"]) expect(seen).toContain(t);
    await gh.close();
  });

  it("startWorker() processes tasks in the background and stopWorker() stops it", async () => {
    const gh = createGatehouse({ agents: [echo], pollMs: 10 });
    gh.startWorker();
    await gh.fetch(post("/v1/agents/w1/tasks", { agent: "echo", input: "hi" }));
    expect(await until(async () => (await gh.store.getAgent("w1"))?.state === "done")).toBe(true);
    await gh.stopWorker();
    await gh.fetch(post("/v1/agents/w2/tasks", { agent: "echo", input: "hi" }));
    await new Promise((r) => setTimeout(r, 60));
    expect((await gh.store.getAgent("w2"))!.state).toBe("idle");
    await gh.close();
  });
});
