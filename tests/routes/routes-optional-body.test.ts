/**
 * Routes whose JSON body is optional (watchdog tick, cancel, reset) take an
 * absent or empty body whatever its media type, as routes/body.ts says: the
 * library's media-type gate must not answer 415 for a body that is not there
 * (workerd gives every POST an empty body stream; queues often send
 * `text/plain` with no body). A non-empty body must still be JSON.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, scriptedModel } from "../../mod.ts";
import type { Context } from "hono";
import { originalRequest, replaceRequest } from "../../routes/request-origin.ts";

const ask = defineTool({ name: "ask", description: "Ask a human", parameters: z.object({ q: z.string() }) });
const agent = defineAgent({
  name: "waiter",
  instructions: "",
  model: scriptedModel([{ toolCalls: [{ name: "ask", args: { q: "?" } }] }, { toolCalls: [{ name: "submit_result", args: { result: "ok" } }] }]),
  tools: [ask],
});

describe("optional JSON bodies", () => {
  const kinds: Array<Record<string, string>> = [{}, { "content-type": "text/plain;charset=UTF-8" }, { "content-type": "application/octet-stream" }];
  for (const headers of kinds) {
    it(`an empty body with ${JSON.stringify(headers)} is {} on the tick, cancel and reset routes`, async () => {
      const gh = createGatehouse({ agents: [agent] });
      try {
        const post = (path: string, body?: string) => gh.fetch(new Request(`http://gh.test${path}`, { method: "POST", headers, ...(body !== undefined ? { body } : {}) }));
        expect((await post("/v1/watchdog/tick")).status).toBe(200);
        expect((await post("/v1/watchdog/tick", "")).status).toBe(200);
        const res = await gh.fetch(new Request("http://gh.test/v1/agents/a1/tasks", {
          method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ agent: "waiter", input: "go" }),
        }));
        expect(res.status).toBe(202);
        await gh.drain();
        expect((await post("/v1/agents/a1/cancel", "")).status).toBe(202);
      } finally {
        await gh.close();
      }
    });
  }

  it("a non-empty body that is not JSON is still 415, and a JSON one is read", async () => {
    const gh = createGatehouse({ agents: [agent] });
    try {
      const tick = (headers: Record<string, string>, body: string) => gh.fetch(new Request("http://gh.test/v1/watchdog/tick", { method: "POST", headers, body }));
      const refused = await tick({ "content-type": "text/plain" }, "hello");
      expect(refused.status).toBe(415);
      expect(await refused.json()).toMatchObject({ code: "unsupported_media_type" });
      expect((await tick({ "content-type": "application/json" }, "{}")).status).toBe(200);
    } finally {
      await gh.close();
    }
  });

  it("a replaced request stands for the incoming one, also when replaced twice (the Workers handler keys bells by it)", () => {
    const incoming = new Request("http://gh.test/x", { method: "POST", body: "{}" });
    expect(originalRequest(incoming)).toBe(incoming);
    const c = { req: { raw: incoming } } as unknown as Context;
    replaceRequest(c, new Request("http://gh.test/x", { method: "POST", body: "{}" })); // signed: the bytes read once
    replaceRequest(c, new Request("http://gh.test/x", { method: "POST" })); // then: an empty optional body dropped
    expect(c.req.raw).not.toBe(incoming);
    expect(originalRequest(c.req.raw)).toBe(incoming);
  });
});
