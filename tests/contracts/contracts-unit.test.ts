/**
 * The contract check as pure functions (contracts/): deliverables with
 * tolerant keys, the mismatch taxonomy, preconditions, the outcome helpers,
 * definition-time refusals, and the registry's overlap and prompt rules.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { error, isMadeOutcome, ok, type Outcome } from "../../common/outcome.ts";
import { methodForm, type ToolRoleEntry } from "../../common/tool-registry.ts";
import { checkOutcome } from "../../contracts/check.ts";
import { findKey } from "../../contracts/keys.ts";
import { checkPreconditions, requiredParams } from "../../contracts/preconditions.ts";
import { KNOWN_TOOLS_LIMITS, knownToolsBlock, overlapsOf } from "../../contracts/registry.ts";
import { DefinitionError } from "../../errors/errors.ts";
import { defineTool } from "../../tools/define.ts";

const fetcher = { name: "fetch_url", role: "web_fetcher", deliverable: { type: "object" as const, required: ["body"] } };
const errOf = (o: Outcome) => {
  if (o.ok) throw new Error(`expected an error outcome, got ${JSON.stringify(o)}`);
  return o.error;
};

describe("tolerant keys (one normalisation of case and separators)", () => {
  it("userId is satisfied by user_id, UserId, user-id and USER_ID; the exact spelling wins", () => {
    for (const k of ["user_id", "UserId", "user-id", "USER_ID", "userId", "UserID"]) expect(methodForm(k)).toBe("user_id");
    expect(methodForm("HTMLBody")).toBe("html_body");
    expect(findKey({ user_id: 1 }, "userId")).toBe("user_id");
    expect(findKey({ "user-id": 1 }, "userId")).toBe("user-id");
    expect(findKey({ UserId: 1, userId: 2 }, "userId")).toBe("userId");
    expect(findKey({ user: 1, id: 2, userid: 3 }, "userId")).toBeNull();
  });

  it("a required key in another spelling passes, the payload is the same object, untouched, and the record names both spellings", () => {
    const value = { status: 200, Body: "<html>" };
    const frozen = Object.freeze({ ...value });
    const input: Outcome = { ok: true, value: frozen };
    const r = checkOutcome(fetcher, input);
    expect(r.outcome).toBe(input);
    expect(frozen).toEqual({ status: 200, Body: "<html>" });
    expect(r.contractValidation).toEqual({
      applied: true, passed: true, mismatch: null, expectedKeys: ["body"], actualKeys: ["status", "Body"],
      tolerated: [{ expected: "body", found: "Body" }],
    });
  });

  it("works for every spelling of a camelCase key", () => {
    const tool = { name: "who", deliverable: { type: "object" as const, required: ["userId"] } };
    for (const k of ["user_id", "UserId", "user-id"]) {
      expect(checkOutcome(tool, { ok: true, value: { [k]: 7 } }).contractValidation).toMatchObject({ passed: true, tolerated: [{ expected: "userId", found: k }] });
    }
  });
});

describe("tolerant keys: properties", () => {
  const key = fc.stringMatching(/^[A-Za-z][A-Za-z0-9_-]{0,8}$/);
  it("passes exactly when every required key has a same-form key holding a value; never changes the value", () => {
    fc.assert(fc.property(
      fc.dictionary(key, fc.oneof(fc.constant(null), fc.integer(), fc.string())),
      fc.uniqueArray(key, { maxLength: 4 }),
      (value, required) => {
        const before = JSON.stringify(value);
        const r = checkOutcome({ name: "t", deliverable: { type: "object", required } }, { ok: true, value });
        expect(JSON.stringify(value)).toBe(before);
        // The oracle: the exact key, else the first key of the same form, holding a value.
        const satisfied = required.every((e) => {
          const k = Object.hasOwn(value, e) ? e : Object.keys(value).find((x) => methodForm(x) === methodForm(e));
          return k !== undefined && value[k] !== null;
        });
        expect(r.contractValidation.passed).toBe(satisfied);
        expect(r.outcome.ok).toBe(satisfied);
        if (satisfied) expect((r.outcome as { value: unknown }).value).toBe(value);
        else expect(["missing_required_key", "nil_required_input"]).toContain(r.contractValidation.mismatch);
      },
    ), { seed: 8, numRuns: 300 });
  });
});

describe("deliverable contracts: the mismatch taxonomy", () => {
  it("a missing required key becomes contract_violation (not retryable) with the documented metadata", () => {
    const r = checkOutcome(fetcher, { ok: true, value: { status: 404 } });
    const e = errOf(r.outcome);
    expect(e.type).toBe("contract_violation");
    expect(e.retryable).toBe(false);
    expect(e.message).toMatch(/^Cannot accept the result of tool "fetch_url": required key "body" is missing/);
    expect(e.metadata).toMatchObject({
      expectedShape: "object", actualShape: "object", expectedKeys: ["body"], actualKeys: ["status"],
      mismatch: "missing_required_key", tool: "web_fetcher", method: "fetch_url",
    });
    expect(r.contractValidation).toEqual({ applied: true, passed: false, mismatch: "missing_required_key", expectedKeys: ["body"], actualKeys: ["status"] });
  });

  it("a value of another shape is type_mismatch; a null value or a null required key is nil_required_input", () => {
    expect(errOf(checkOutcome(fetcher, { ok: true, value: ["body"] }).outcome).metadata).toMatchObject({ mismatch: "type_mismatch", actualShape: "array" });
    expect(errOf(checkOutcome(fetcher, { ok: true, value: "body" }).outcome).metadata).toMatchObject({ mismatch: "type_mismatch", actualShape: "string" });
    expect(errOf(checkOutcome(fetcher, { ok: true, value: null }).outcome).metadata).toMatchObject({ mismatch: "nil_required_input", actualShape: "null" });
    expect(errOf(checkOutcome(fetcher, { ok: true, value: { BODY: null } }).outcome).metadata).toMatchObject({
      mismatch: "nil_required_input", tolerated: [{ expected: "body", found: "BODY" }],
    });
  });

  it("arrays: the shape, and with item keys every item", () => {
    const list = { name: "parse", deliverable: { type: "array" as const } };
    expect(checkOutcome(list, { ok: true, value: [] }).contractValidation.passed).toBe(true);
    expect(errOf(checkOutcome(list, { ok: true, value: { items: [] } }).outcome).metadata).toMatchObject({ mismatch: "type_mismatch", expectedShape: "array" });
    const headlines = { name: "parse", deliverable: { type: "array" as const, items: { required: ["title", "url"] } } };
    expect(checkOutcome(headlines, { ok: true, value: [{ Title: "a", URL: "u" }] }).contractValidation).toMatchObject({
      passed: true, tolerated: [{ expected: "title", found: "Title" }, { expected: "url", found: "URL" }],
    });
    const bad = checkOutcome(headlines, { ok: true, value: [{ title: "a", url: "u" }, { title: "b" }] });
    expect(errOf(bad.outcome).metadata).toMatchObject({ mismatch: "missing_required_key", expectedKeys: ["title", "url"], actualKeys: ["title"] });
    expect(errOf(checkOutcome(headlines, { ok: true, value: ["a"] }).outcome).metadata).toMatchObject({ mismatch: "type_mismatch" });
  });

  it("a zod schema: tolerant object keys, and its refusals classified", () => {
    const tool = { name: "fetch_url", deliverable: z.object({ status: z.number(), body: z.string() }) };
    expect(checkOutcome(tool, { ok: true, value: { Status: 200, Body: "x" } }).contractValidation).toMatchObject({ passed: true, expectedKeys: ["status", "body"] });
    expect(errOf(checkOutcome(tool, { ok: true, value: { status: 200 } }).outcome).metadata).toMatchObject({ mismatch: "missing_required_key" });
    expect(errOf(checkOutcome(tool, { ok: true, value: { status: "200", body: "x" } }).outcome).metadata).toMatchObject({ mismatch: "type_mismatch" });
    expect(errOf(checkOutcome(tool, { ok: true, value: { status: 200, body: null } }).outcome).metadata).toMatchObject({ mismatch: "nil_required_input" });
    const arr = { name: "parse", deliverable: z.array(z.object({ title: z.string() })) };
    expect(checkOutcome(arr, { ok: true, value: [{ TITLE: "x" }] }).contractValidation.passed).toBe(true);
  });

  it("error outcomes and tools without a contract pass through unchanged, not applied", () => {
    const e: Outcome = { ok: false, error: { type: "timeout", message: "late", retryable: true } };
    expect(checkOutcome(fetcher, e).outcome).toBe(e);
    expect(checkOutcome(fetcher, e).contractValidation.applied).toBe(false);
    const plain: Outcome = { ok: true, value: { anything: 1 } };
    expect(checkOutcome({ name: "plain" }, plain)).toEqual({
      outcome: plain, contractValidation: { applied: false, passed: true, mismatch: null, expectedKeys: [], actualKeys: [] },
    });
  });

  it("resultRequired: an empty result becomes invalid_input, not an empty success", () => {
    const tool = { name: "parse", resultRequired: true };
    for (const v of [null, "", [], {}]) {
      const r = checkOutcome(tool, { ok: true, value: v });
      expect(errOf(r.outcome)).toMatchObject({ type: "invalid_input", retryable: false, metadata: { mismatch: "nil_required_input", method: "parse" } });
      expect(r.contractValidation).toMatchObject({ applied: true, passed: false, mismatch: "nil_required_input" });
    }
    expect(checkOutcome(tool, { ok: true, value: [1] }).contractValidation).toMatchObject({ applied: true, passed: true });
  });

  it("is deterministic: the same input gives the same bytes (redeliveries stay duplicates)", () => {
    const a = checkOutcome(fetcher, { ok: true, value: { status: 1 } });
    const b = checkOutcome(fetcher, { ok: true, value: { status: 1 } });
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
  });
});

describe("preconditions", () => {
  const parser = defineTool({
    name: "parse", description: "Parse a page", parameters: z.object({ html: z.string(), limit: z.number().optional(), mode: z.string() }),
    defaults: { mode: "news" }, deliverable: { type: "array" }, execute: () => [],
  });

  it("required parameters are the schema's non-optional ones that are neither defaulted nor fixed", () => {
    expect(requiredParams(parser)).toEqual(["html"]);
  });

  it("refuses null, undefined, \"\", [] and {} with invalid_input before anything runs", () => {
    for (const args of [{ html: null }, {}, { html: "" }, { html: [] }, { html: {} }, null]) {
      const r = checkPreconditions(parser, args);
      expect(r && errOf(r)).toMatchObject({ type: "invalid_input", retryable: true, metadata: { mismatch: "nil_required_input", parameters: ["html"], method: "parse" } });
      expect(errOf(r!).message).toMatch(/^Cannot run tool "parse": required parameter "html" is empty/);
    }
    expect(checkPreconditions(parser, { html: "<p>" })).toBeNull();
    expect(checkPreconditions(parser, { html: " " })).toBeNull();
  });

  it("applies to contracted tools and to tools that opt in; other tools keep their schema's behaviour", () => {
    const plain = defineTool({ name: "echo", description: "Echo", parameters: z.object({ text: z.string() }), execute: ({ text }) => text });
    expect(checkPreconditions(plain, { text: "" })).toBeNull();
    const opted = defineTool({ ...plain, name: "echo2", preconditions: true });
    expect(checkPreconditions(opted, { text: "" })).not.toBeNull();
    const optedOut = defineTool({ ...parser, name: "parse2", preconditions: false });
    expect(checkPreconditions(optedOut, { html: null })).toBeNull();
  });
});

describe("ok() and error()", () => {
  it("make plain outcomes (the mark is not in JSON); error() takes retriable as retryable", () => {
    expect(JSON.parse(JSON.stringify(ok({ a: 1 })))).toEqual({ ok: true, value: { a: 1 } });
    expect(ok(undefined)).toEqual({ ok: true, value: null });
    expect(error({ type: "x", message: "m", retriable: true })).toEqual({ ok: false, error: { type: "x", message: "m", retryable: true } });
    expect(error({ type: "x", message: "m", retriable: true, retryable: false })).toMatchObject({ error: { retryable: false } });
    expect(error({ type: "x", message: "m", metadata: { k: 1 } })).toEqual({ ok: false, error: { type: "x", message: "m", retryable: false, metadata: { k: 1 } } });
    expect(isMadeOutcome(ok(1))).toBe(true);
    expect(isMadeOutcome({ ok: true, value: 1 })).toBe(false);
  });
});

describe("defineTool: role and contract options", () => {
  const base = { name: "t", description: "d", parameters: z.object({}) };
  it("refuses a bad deliverable, role or flag with a DefinitionError naming the key", () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ deliverable: { type: "objekt" } }, "deliverable.type"],
      [{ deliverable: { type: "object", required: "body" } }, "deliverable.required"],
      [{ deliverable: { type: "object", required: ["a", "a"] } }, "deliverable.required"],
      [{ deliverable: { type: "object", requires: ["a"] } }, "deliverable.requires"],
      [{ deliverable: { type: "array", items: { required: [1] } } }, "deliverable.items.required"],
      [{ deliverable: "object" }, "deliverable"],
      [{ role: "web fetcher" }, "role"],
      [{ resultRequired: "yes" }, "resultRequired"],
      [{ preconditions: 1 }, "preconditions"],
    ];
    for (const [over, key] of cases) {
      let err: unknown;
      try {
        defineTool({ ...base, ...over } as never);
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(over)).toBeInstanceOf(DefinitionError);
      expect((err as DefinitionError).key).toBe(key);
    }
    expect(defineTool({ ...base, role: "web_fetcher", deliverable: { type: "object", required: ["body"] } }).role).toBe("web_fetcher");
    expect(defineTool({ ...base, deliverable: z.object({ body: z.string() }) }).deliverable).toBeDefined();
  });
});

describe("the registry: overlaps and <known_tools>", () => {
  const entry = (role: string, methods: string[], aliases: Array<{ alias: string; method: string }> = [], calls = 1): ToolRoleEntry => ({
    role, methods, aliases, calls, createdAt: 1, updatedAt: 1,
  });

  it("fetch and fetch_url overlap (prefix); fetchUrl is an alias of fetch_url; unrelated methods and roles do not", () => {
    expect(overlapsOf(entry("web_fetcher", ["fetch_url", "fetch"]))).toEqual([{ role: "web_fetcher", methods: ["fetch_url", "fetch"], kind: "prefix" }]);
    expect(overlapsOf(entry("web_fetcher", ["fetch_url"], [{ alias: "fetchUrl", method: "fetch_url" }]))).toEqual([
      { role: "web_fetcher", methods: ["fetch_url", "fetchUrl"], kind: "alias" },
    ]);
    expect(overlapsOf(entry("web_fetcher", ["fetch_url", "parse", "get_status"]))).toEqual([]);
    // Different roles never overlap, whatever their methods are called.
    const block = knownToolsBlock([entry("web_fetcher", ["fetch_url"]), entry("downloader", ["fetch"])]);
    expect(block).not.toContain("interface_overlap");
  });

  it("lists the agent's own roles with their methods, most calls first, and adds a hint for an overlap", () => {
    const entries = [entry("parser", ["parse"], [], 1), entry("web_fetcher", ["fetch_url", "fetch"], [], 9), entry("other", ["fetch", "fetch_all"])];
    const block = knownToolsBlock(entries, ["web_fetcher", "parser"]);
    expect(block).toBe([
      "<known_tools>",
      "- web_fetcher: methods fetch_url, fetch",
      "- parser: methods parse",
      "</known_tools>",
      '<interface_overlap role="web_fetcher">"fetch_url" and "fetch" look like one capability; prefer one method (the first) and call it consistently.</interface_overlap>',
    ].join("\n"));
    expect(knownToolsBlock([])).toBe("");
    // An agent that has only the parser hears nothing of the fetcher's overlap.
    expect(knownToolsBlock(entries, ["parser"])).toBe("<known_tools>\n- parser: methods parse\n</known_tools>");
    expect(knownToolsBlock([{ role: "old", methods: [], aliases: [], calls: 0, createdAt: null, updatedAt: null }])).toBe("");
  });

  it("is bounded: at most N roles, M methods each, C characters, H hints", () => {
    const many = Array.from({ length: 40 }, (_, i) => entry(`role_${i}_${"x".repeat(50)}`, Array.from({ length: 20 }, (_, j) => `m${j}_${"y".repeat(60)}`).concat(["get", "get_all"])));
    const block = knownToolsBlock(many);
    const [list, ...hints] = block.split("\n<interface_overlap");
    expect(list.length).toBeLessThanOrEqual(KNOWN_TOOLS_LIMITS.chars);
    expect(list.match(/^- /gm)!.length).toBeLessThanOrEqual(KNOWN_TOOLS_LIMITS.roles);
    expect(hints.length).toBeLessThanOrEqual(KNOWN_TOOLS_LIMITS.hints);
    expect(list.endsWith("</known_tools>")).toBe(true);
  });
});
