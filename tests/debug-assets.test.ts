/**
 * The debugger page's bundled assets: routes/debug/assets.gen.ts is what
 * scripts/bundle-debug.ts builds from debug-ui/ now, holds no network
 * reference the page would load (no CDN), and the routes serve it.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { bundleDebug, GENERATED } from "../scripts/bundle-debug.ts";
import { DEBUG_ASSETS_HASH, DEBUG_CSS, DEBUG_JS } from "../routes/debug/assets.gen.ts";
import { createGatehouse, defineAgent, scriptedModel } from "../mod.ts";

describe("debugger page assets", () => {
  it("routes/debug/assets.gen.ts is up to date (run `npx tsx scripts/bundle-debug.ts`)", async () => {
    expect(readFileSync(GENERATED, "utf8")).toBe(await bundleDebug());
  }, 30_000);

  it("the bundle imports nothing and loads nothing from another origin", () => {
    expect(DEBUG_JS).not.toMatch(/\bimport\s*\(|^import\s/m);
    expect(DEBUG_JS).not.toMatch(/https?:\/\/(?!www\.w3\.org\/)/);
    expect(DEBUG_CSS).not.toMatch(/url\(|@import/);
  });

  it("serves the shell on both paths and the assets with their hash as ETag, without auth, and the data routes still ask for it", async () => {
    const gh = createGatehouse({ agents: [defineAgent({ name: "a", instructions: "x", model: scriptedModel([{ text: "hi" }]) })], auth: { bearerTokens: ["a-token-of-sixteen-chars"] } });
    const get = (path: string, headers: Record<string, string> = {}) => gh.fetch(new Request(`http://gh.test${path}`, { headers }));
    for (const path of ["/debug", "/debug/agents/some-agent"]) {
      const res = await get(path);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^text\/html/);
      const body = await res.text();
      expect(body).toContain(`/debug/app.js?v=${DEBUG_ASSETS_HASH}`);
      expect(body).not.toContain("some-agent");
    }
    const js = await get("/debug/app.js");
    expect(js.headers.get("etag")).toBe(`"${DEBUG_ASSETS_HASH}"`);
    expect(await js.text()).toBe(DEBUG_JS);
    expect((await get("/debug/app.js", { "if-none-match": `"${DEBUG_ASSETS_HASH}"` })).status).toBe(304);
    expect(await (await get("/debug/app.css")).text()).toBe(DEBUG_CSS);
    expect((await get("/v1/agents")).status).toBe(401);
    expect((await get("/v1/machine")).status).toBe(401);
    await gh.close();
  });
});
