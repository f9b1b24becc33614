/**
 * Definition-time checks of tools, agents and createGatehouse options: each
 * refusal is a DefinitionError whose `key` (and message) names the option at
 * fault; the accepted forms still build and work.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import * as zm from "zod/mini";
import { createGatehouse, defineAgent, DefinitionError, defineTool, memoryStore, scriptedModel } from "../../mod.ts";
import { prepareArgs, toolSpec } from "../../tools/specs.ts";

function refused(f: () => unknown): DefinitionError {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(DefinitionError);
    return err as DefinitionError;
  }
  throw new Error("expected a DefinitionError");
}

/** Refused with `key` set and named in the message. */
function expectRefused(f: () => unknown, key: string, message?: RegExp) {
  const err = refused(f);
  expect(err.key).toBe(key);
  expect(err.message).toContain(key);
  if (message) expect(err.message).toMatch(message);
}

const params = z.object({ query: z.string(), limit: z.number().int().max(100).optional(), tenant: z.string().optional() });
const tool = (over: Record<string, unknown>) =>
  defineTool({ name: "search", description: "Search", parameters: params, ...over } as never);
const model = scriptedModel([{ text: "unused" }]);

describe("defineTool: parameters must be a zod object schema", () => {
  it("refuses a non-object zod schema, a pipe, an optional object, a JSON Schema and nothing, naming `parameters`", () => {
    expectRefused(() => tool({ parameters: z.string() }), "parameters", /a zod string schema/);
    expectRefused(() => tool({ parameters: z.array(z.string()) }), "parameters", /a zod array schema/);
    expectRefused(() => tool({ parameters: z.object({ a: z.string() }).transform((x) => x.a) }), "parameters", /zod pipe/);
    expectRefused(() => tool({ parameters: z.object({}).optional() }), "parameters", /a zod optional schema/);
    expectRefused(() => tool({ parameters: { type: "object", properties: {} } }), "parameters", /not a zod schema/);
    expectRefused(() => tool({ parameters: undefined }), "parameters");
  });

  it("accepts z.object, z.strictObject, z.looseObject, a refined object, an empty object and a zod/mini object", () => {
    for (const parameters of [
      params,
      z.strictObject({ q: z.string() }),
      z.looseObject({ q: z.string() }),
      z.object({ a: z.number(), b: z.number() }).refine((v) => v.a < v.b),
      z.object({}),
      zm.object({ q: zm.string() }),
    ]) {
      const t = defineTool({ name: "t", description: "d", parameters: parameters as z.ZodType });
      expect(toolSpec(t).function.parameters.type).toBe("object");
    }
  });
});

describe("defineTool: defaults and fixed must fit the parameters", () => {
  it("refuses a key that is not a parameter, naming `defaults.<key>` / `fixed.<key>` and listing the parameters", () => {
    expectRefused(() => tool({ defaults: { limt: 5 } }), "defaults.limt", /parameters: query, limit, tenant/);
    expectRefused(() => tool({ fixed: { org: "acme" } }), "fixed.org", /is not a parameter/);
    expectRefused(() => defineTool({ name: "t", description: "d", parameters: z.object({}), fixed: { a: 1 } }), "fixed.a", /takes none/);
  });

  it("refuses a value the key's schema refuses", () => {
    expectRefused(() => tool({ defaults: { limit: "ten" } }), "defaults.limit", /refused by the parameter's schema/);
    expectRefused(() => tool({ defaults: { limit: 1000 } }), "defaults.limit", /100/);
    expectRefused(() => tool({ defaults: { limit: 2.5 } }), "defaults.limit");
    expectRefused(() => tool({ fixed: { tenant: 42 } }), "fixed.tenant");
    expectRefused(() => tool({ fixed: { query: null } }), "fixed.query");
  });

  it("refuses defaults or fixed that are not an object of values, and a key both defaulted and fixed", () => {
    expectRefused(() => tool({ defaults: ["limit", 5] }), "defaults", /object of argument values/);
    expectRefused(() => tool({ fixed: "acme" }), "fixed");
    expectRefused(() => tool({ defaults: { tenant: "a" }, fixed: { tenant: "b" } }), "defaults.tenant", /also fixed/);
  });

  it("accepts fitting defaults and fixed values; the model's schema hides fixed keys and the call gets both", () => {
    const t = tool({ defaults: { limit: 10 }, fixed: { tenant: "acme" } });
    const spec = toolSpec(t).function.parameters as { properties: Record<string, unknown>; required: string[] };
    expect(Object.keys(spec.properties)).toEqual(["query", "limit"]);
    expect(prepareArgs(t, { query: "q" })).toEqual({ ok: true, args: { query: "q", limit: 10, tenant: "acme" } });
    // An optional key may default to undefined; a required one may be fixed.
    expect(() => tool({ defaults: { limit: undefined }, fixed: { query: "everything" } })).not.toThrow();
  });

  it("the other checks name their key too", () => {
    expectRefused(() => tool({ name: "bad name" }), "name");
    expectRefused(() => tool({ name: "submit_result" }), "name");
    expectRefused(() => tool({ description: " " }), "description");
    expectRefused(() => tool({ execute: "run" }), "execute");
    expectRefused(() => tool({ timeoutMs: 0 }), "timeoutMs");
    expectRefused(() => tool({ retrySafe: "yes", execute: () => 1 }), "retrySafe");
    // An external tool's result is stored when it is delivered: the flag would mean nothing.
    expectRefused(() => tool({ retrySafe: true, execute: undefined }), "retrySafe", /tools with execute/);
    expect(tool({ retrySafe: true, execute: () => 1 }).retrySafe).toBe(true);
  });
});

describe("defineAgent: output.schema must be a zod object schema", () => {
  const agent = (schema: unknown) => () => defineAgent({ name: "a", instructions: "", model, output: { schema: schema as z.ZodType } });

  it("refuses a string, an array, a pipe, a union and a JSON Schema, naming `output.schema`", () => {
    expectRefused(agent(z.string()), "output.schema", /zod object schema/);
    expectRefused(agent(z.array(z.object({ a: z.string() }))), "output.schema", /a zod array schema/);
    expectRefused(agent(z.object({ a: z.string() }).transform((x) => x.a)), "output.schema", /pipe/);
    expectRefused(agent(z.union([z.object({ a: z.string() }), z.object({ b: z.string() })])), "output.schema", /union/);
    expectRefused(agent({ type: "object" }), "output.schema", /not a zod schema/);
  });

  it("accepts z.object and z.strictObject, with or without verify", () => {
    expect(agent(z.object({ summary: z.string() }))().output?.schema).toBeDefined();
    expect(defineAgent({ name: "a", instructions: "", model, output: { schema: z.strictObject({ n: z.number() }), verify: (c) => c } }).kind)
      .toBe("agent");
  });

  it("other agent checks name their key", () => {
    expectRefused(() => defineAgent({ name: "a", instructions: "", model, stepLimit: 0 }), "stepLimit");
    expectRefused(() => defineAgent({ name: "a", instructions: "", model, workerTarget: "a.b" }), "workerTarget");
    expectRefused(() => defineAgent({ name: "a", instructions: "", model, mustEndWith: ["nope"] }), "mustEndWith");
    const unknownKey = refused(() =>
      defineAgent({ name: "a", instructions: "", model, output: { schema: z.object({}), verifier: () => 1 } as never })
    );
    expect(unknownKey.key).toBe("output.verifier");
    expect(unknownKey.message).toMatch(/output has an unknown key "verifier"/);
  });
});

describe("createGatehouse: options", () => {
  const agent = defineAgent({ name: "a", instructions: "", model });

  it("refuses concurrency below 1 or not an integer, naming `concurrency`", () => {
    for (const concurrency of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, "2", null]) {
      expectRefused(() => createGatehouse({ agents: [agent], concurrency: concurrency as number }), "concurrency", /at least 1/);
    }
  });

  it("refuses maxChainedTurns that is not a non-negative integer, naming it", () => {
    for (const maxChainedTurns of [-1, 1.5, Number.NaN, "2"]) {
      expectRefused(() => createGatehouse({ agents: [agent], maxChainedTurns: maxChainedTurns as number }), "maxChainedTurns");
    }
  });

  it("refuses an unknown option key, naming it and the likely meant one", () => {
    expectRefused(() => createGatehouse({ agents: [agent], concurency: 2 } as never), "concurency", /did you mean "concurrency"/);
    expectRefused(() => createGatehouse({ agents: [agent], LeaseMS: 10 } as never), "LeaseMS", /did you mean "leaseMs"/);
    const err = refused(() => createGatehouse({ agents: [agent], workers: 2 } as never));
    expect(err.key).toBe("workers");
    expect(err.message).not.toMatch(/did you mean/);
    expect(err.message).toMatch(/it takes agents, store, .*concurrency/);
    // A key present with the value undefined is still a key.
    expectRefused(() => createGatehouse({ agents: [agent], retries: undefined } as never), "retries");
  });

  it("refuses before building anything: the store it was given is not touched", async () => {
    const store = memoryStore();
    let touched = 0;
    const spy = new Proxy(store, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver);
        return typeof v === "function" ? (...args: unknown[]) => (touched++, v.apply(target, args)) : v;
      },
    });
    expectRefused(() => createGatehouse({ agents: [agent], store: spy, concurrency: 0 }), "concurrency");
    expectRefused(() => createGatehouse({ agents: [agent], store: spy, storage: 1 } as never), "storage");
    expect(touched).toBe(0);
    await store.close();
  });

  it("accepts integer concurrency of 1 and more, and every documented option", async () => {
    for (const concurrency of [1, 8]) {
      const gh = createGatehouse({ agents: [agent], concurrency });
      await gh.close();
    }
    const gh = createGatehouse({
      agents: [agent],
      store: memoryStore(),
      clock: { now: () => 0 },
      workerTargets: ["default"],
      concurrency: 2,
      leaseMs: 1_000,
      pollMs: 10,
      watchdogIntervalMs: 1_000,
      maxBodyBytes: 1024,
      maxEventPageBytes: 65_536,
      externalToolTimeoutMs: 1_000,
      toolTimeoutMs: 1_000,
      verifierBackoffMs: 10,
      inspect: () => {},
      inline: false,
      guardians: [],
      assignments: [],
      sse: { pollMs: 10 },
    });
    expect(gh.agents.get("a")).toBe(agent);
    await gh.close();
  });

  it("the agent and auth checks name their key", () => {
    expectRefused(() => createGatehouse({ agents: [] }), "agents");
    expectRefused(() => createGatehouse({ agents: [agent, agent] }), "agents");
    expectRefused(() => createGatehouse({ agents: [agent], auth: { bearerTokens: [] } }), "auth");
  });
});
