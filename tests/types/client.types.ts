/**
 * Type-level test of the typed client (checked by `tsc --noEmit`, never run):
 * `hc<GatehouseApp>` from `hono/client` types each route's params, body and
 * JSON response, and refuses a call that misses a required field.
 */
import { hc } from "hono/client";
import type { GatehouseApp } from "../../mod.ts";

export async function enqueue(url: string, agentId: string): Promise<string> {
  const client = hc<GatehouseApp>(url);
  const res = await client.v1.agents[":agentId"].tasks.$post({ param: { agentId }, json: { agent: "helper", input: "hi" } });
  const { turnId } = await res.json();
  const check: string = turnId;
  // @ts-expect-error `input` is required
  await client.v1.agents[":agentId"].tasks.$post({ param: { agentId }, json: { agent: "helper" } });
  return check;
}

/** Routes whose query and header fields are all optional take no `query: {}` / `header: {}`. */
export async function optionalParts(url: string, agentId: string): Promise<number> {
  const client = hc<GatehouseApp>(url);
  const list = await client.v1.agents.$get();
  const verdicts = await client.v1.agents[":agentId"].verdicts.$get({ param: { agentId } });
  const events = await client.v1.agents[":agentId"].events.$get({ param: { agentId } });
  const page = await client.v1.agents[":agentId"].events.$get({ param: { agentId }, query: { after: 3 } });
  // @ts-expect-error the path parameter is still required
  await client.v1.agents[":agentId"].verdicts.$get({});
  return list.status + verdicts.status + events.status + page.status;
}
