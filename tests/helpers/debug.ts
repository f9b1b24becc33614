/** A gatehouse with two definitions and an HTTP caller, for the debugging route tests. */
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, scriptedModel } from "../../mod.ts";
import type { GatehouseOptions } from "../../mod.ts";

const T0 = 1_700_000_000_000;
const ask = defineTool({ name: "ask_human", description: "Ask a human", parameters: z.object({ q: z.string() }) });

/** Step 1 calls the external tool, step 2 submits. */
export function helperAgent(name = "helper") {
  return defineAgent({
    name,
    instructions: "Ask, then submit.",
    model: scriptedModel([
      { toolCalls: [{ name: "ask_human", args: { q: "ok?" } }] },
      { toolCalls: [{ name: "submit_result", args: { result: `yes from ${name}` } }] },
    ]),
    tools: [ask],
  });
}

export function setup(extra: Partial<GatehouseOptions> = {}) {
  const clock = { t: T0, now: () => clock.t };
  const gh = createGatehouse({ agents: [helperAgent(), helperAgent("other")], clock, ...extra });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await gh.fetch(
      new Request(`http://gh.test${path}`, {
        method,
        headers: body === undefined ? {} : { "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
    return { status: res.status, type: res.headers.get("content-type"), body: await res.json() as any };
  };
  return { gh, clock, call };
}

