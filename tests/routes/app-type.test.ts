/**
 * routes/app-type.gen.ts is the type `buildApp` infers, written out (JSR
 * refuses inferred types on the public API; `createApp` returns this one).
 * It must be what the routes give now, or `hc<GatehouseApp>` types a client
 * for routes that changed.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { GENERATED, generateAppType } from "../../scripts/app-type.ts";

describe("routes/app-type.gen.ts", () => {
  it("is up to date (run `npm run app-type`)", () => {
    expect(readFileSync(GENERATED, "utf8")).toBe(generateAppType());
  }, 120_000);

  it("types the routes precisely: no `any`, the task route's body and answer spelled out", () => {
    const text = readFileSync(GENERATED, "utf8");
    expect(text).not.toMatch(/\bany\b/);
    expect(text).toContain(`"/v1/agents/:agentId/tasks": {`);
    expect(text).toMatch(/json: \{\s+agent: string;\s+input: string \| Record<string, unknown>;/);
  });
});
