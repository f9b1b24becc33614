/**
 * Every 400 `validation_failed` names what is wrong in its `detail`, not only
 * in `errors`: each issue's field (its path, dotted; `(body)` for the body
 * itself) and the rule it breaks (routes/body.ts `describeIssues`, used by
 * `validate` and by the route apps' `problemHook`). Cross-field rules (a
 * task with both `spendLimit` and its old name `budget`, or both
 * `verifyAttempts` and `verifyMaxAttempts`) carry the field and say what to
 * send instead. The audit walks a bad body of every route that reads one and
 * checks that no issue's rule is zod's bare "Invalid input".
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, scriptedModel } from "../../mod.ts";
import { describeIssues } from "../../routes/body.ts";
import { send } from "../helpers/http.ts";

const ask = defineTool({ name: "ask_human", description: "Ask", parameters: z.object({ q: z.string() }) });
const agent = defineAgent({ name: "helper", instructions: "", model: scriptedModel([{ toolCalls: [{ name: "ask_human", args: { q: "?" } }] }]), tools: [ask] });

function app() {
  const gh = createGatehouse({ agents: [agent] });
  const call = async (method: string, path: string, body: unknown) => {
    const { status, json } = await send(gh, method, path, body);
    return { status, body: json as { code: string; detail: string; errors?: Array<{ path: Array<string | number>; message: string }> } };
  };
  return { gh, call };
}

const pathText = (path: Array<string | number>) => (path.length === 0 ? "(body)" : path.join("."));

/** A 400 validation_failed whose detail names every issue's field and rule. */
function expectNamed(r: Awaited<ReturnType<ReturnType<typeof app>["call"]>>, field: string, rule: RegExp) {
  expect(r.status).toBe(400);
  expect(r.body.code).toBe("validation_failed");
  expect(r.body.detail).not.toBe("The body does not match the schema");
  expect(r.body.detail).toContain(`${field}: `);
  expect(r.body.detail).toMatch(rule);
  for (const issue of r.body.errors ?? []) {
    expect(r.body.detail).toContain(`${pathText(issue.path)}: `);
    expect(issue.message).not.toBe("Invalid input");
  }
}

describe("400 validation_failed names the field and the rule", () => {
  // `budget` and `verifyMaxAttempts` were renamed spendLimit and verifyAttempts (CHANGELOG.md): the old names are
  // unknown keys of the body now, and the 400 names them.
  it("a task with budget (renamed spendLimit): detail and errors name the key, nothing is enqueued", async () => {
    const { gh, call } = app();
    const r = await call("POST", "/v1/agents/a1/tasks", { agent: "helper", input: "x", spendLimit: { maxCostPerTurn: 1 }, budget: { maxCostPerTurn: 2 } });
    expectNamed(r, "(body)", /Unrecognized key: "budget"/);
    expect(r.body.errors).toEqual([{ path: [], code: "unrecognized_keys", message: expect.stringContaining("budget") }]);
    // Nothing was enqueued.
    expect((await gh.fetch(new Request("http://gh.test/v1/agents/a1"))).status).toBe(404);
    await gh.close();
  });

  it("a task with verifyMaxAttempts (renamed verifyAttempts) names the key", async () => {
    const { gh, call } = app();
    const r = await call("POST", "/v1/agents/a1/tasks", { agent: "helper", input: "x", verifyAttempts: 2, verifyMaxAttempts: 2 });
    expectNamed(r, "(body)", /Unrecognized key: "verifyMaxAttempts"/);
    await gh.close();
  });

  it("audit: a bad body of every route that reads one names its field and rule", async () => {
    const { gh, call } = app();
    const cases: Array<[string, string, unknown, string, RegExp]> = [
      ["POST", "/v1/agents/a1/tasks", { agent: "helper", input: 5 }, "input", /text or a JSON object/],
      ["POST", "/v1/agents/a1/tasks", { agent: "helper", input: "x", extra: 1 }, "(body)", /extra/],
      ["POST", "/v1/agents/a1/tasks", { agent: "helper", input: "x", spendLimit: { maxCostPerTurn: -1 } }, "spendLimit.maxCostPerTurn", />=\s?0/],
      ["POST", "/v1/agents/a1/tasks", { agent: "", input: "x" }, "agent", /.+/],
      ["POST", "/v1/agents/a1/tool-results", { turnId: "t", toolCallId: "c", outcome: { ok: "yes" } }, "outcome.ok", /true.*false/],
      ["POST", "/v1/agents/a1/tool-results", { turnId: "t", toolCallId: "c", outcome: { ok: true, value: 1 }, afterExecution: "stop" }, "afterExecution", /continue.*terminate/],
      ["POST", "/v1/agents/a1/approvals", { turnId: "t", toolCallId: "c", approved: "yes" }, "approved", /boolean/],
      ["POST", "/v1/agents/a1/cancel", { reason: "" }, "reason", /.+/],
      ["POST", "/v1/agents/a1/reset", { why: "x" }, "(body)", /why/],
      ["POST", "/v1/agents/a1/fork", { atEventId: 0, newAgentId: "b1" }, "atEventId", />=\s?1/],
      ["POST", "/v1/agents/a1/what-if", { after: -1 }, "after", />=\s?0/],
      ["POST", "/v1/watchdog/tick", { now: 1 }, "(body)", /now/],
    ];
    for (const [method, path, body, field, rule] of cases) {
      const r = await call(method, path, body);
      try {
        expectNamed(r, field, rule);
      } catch (err) {
        throw new Error(`${method} ${path} ${JSON.stringify(body)} -> ${JSON.stringify(r.body)}: ${(err as Error).message}`);
      }
    }
    await gh.close();
  });

  it("describeIssues: each issue as field: rule, a bounded detail", () => {
    expect(describeIssues("body", [{ path: ["a", 0, "b"], code: "custom", message: "must be x" }, { path: [], code: "custom", message: "no y" }]))
      .toBe("The body does not match the schema: a.0.b: must be x; (body): no y");
    const many = Array.from({ length: 9 }, (_, i) => ({ path: [`f${i}`], code: "custom", message: "bad" }));
    expect(describeIssues("query", many)).toBe("The query does not match the schema: f0: bad; f1: bad; f2: bad; f3: bad; f4: bad; and 4 more (see errors)");
    const long = describeIssues("body", [{ path: ["k".repeat(5_000)], code: "custom", message: "m".repeat(5_000) }]);
    expect(long.length).toBeLessThanOrEqual(1_000);
  });
});
