/**
 * `mod.ts` is Web-only: bundled for workerd exactly as a Worker that imports
 * it would be, the module graph reaches no Node built-in (ioredis, the TCP
 * adapter, lives in `redis.ts`), and no AI SDK code (`aiSdkModel` lives in
 * `ai-sdk.ts`, whose `@ai-sdk/provider` is an optional peer). The bundle
 * size is printed so a change that bloats the edge bundle shows in the test
 * log.
 */
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { bundleForWorkerd } from "../workerd/bundle.ts";

/** The marker of the AI SDK's errors (`Symbol.for("vercel.ai.error…")`), in every bundle that holds @ai-sdk/provider. */
const AI_SDK_MARKER = "vercel.ai.error";
const path = (p: string) => new URL(`../../${p}`, import.meta.url).pathname;

describe("workerd bundle", () => {
  it("mod.ts bundles for workerd (neutral platform, workerd/worker/browser conditions) without any Node built-in", async () => {
    const b = await bundleForWorkerd(path("mod.ts"));
    const gz = gzipSync(b.code).byteLength;
    console.log(`mod.ts workerd bundle: ${(b.bytes / 1024).toFixed(1)} KiB minified, ${(gz / 1024).toFixed(1)} KiB gzip`);
    expect(b.nodeBuiltins).toEqual([]);
    expect(b.code).not.toMatch(/\bioredis\b/);
    // The AI SDK stays behind its subpath (ai-sdk.ts): none of its code in the root bundle.
    expect(b.code).not.toContain(AI_SDK_MARKER);
  }, 60_000);

  it("the check catches the AI SDK: ai-sdk.ts (the subpath) contains it, and it bundles without Node built-ins", async () => {
    const b = await bundleForWorkerd(path("ai-sdk.ts"));
    expect(b.code).toContain(AI_SDK_MARKER);
    expect(b.nodeBuiltins).toEqual([]);
  }, 60_000);

  it("mcp.ts (the MCP tools over Streamable HTTP) bundles for workerd without any Node built-in or the stdio transport", async () => {
    const b = await bundleForWorkerd(path("mcp.ts"));
    console.log(`mcp.ts workerd bundle: ${(b.bytes / 1024).toFixed(1)} KiB minified, ${(gzipSync(b.code).byteLength / 1024).toFixed(1)} KiB gzip`);
    expect(b.nodeBuiltins).toEqual([]);
    expect(b.code).not.toMatch(/StdioClientTransport|cross-spawn/);
  }, 60_000);

  it("the check catches Node built-ins: redis.ts (ioredis) needs them", async () => {
    const b = await bundleForWorkerd(path("redis.ts"));
    const paths = new Set(b.nodeBuiltins.map((x) => x.path.replace(/^node:/, "")));
    expect(paths.has("net")).toBe(true);
    expect(paths.has("events")).toBe(true);
  }, 60_000);
});
