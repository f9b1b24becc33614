/**
 * The debugger page's bundled assets: routes/debug/assets.gen.ts is what
 * scripts/bundle-debug.ts builds from debug-ui/ now, holds no network
 * reference the page would load (no CDN), and the routes serve it; and
 * `/favicon.ico` is a 16×16 ICO served without a token (not a 404).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { bundleDebug, GENERATED } from "../../scripts/bundle-debug.ts";
import { DEBUG_ASSETS_HASH, DEBUG_CSS, DEBUG_JS } from "../../routes/debug/assets.gen.ts";
import { createGatehouse, defineAgent, scriptedModel } from "../../mod.ts";

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

  it("serves /favicon.ico, a 16×16 32-bit ICO, without a token", async () => {
    const gh = createGatehouse({ agents: [defineAgent({ name: "a", instructions: "x", model: scriptedModel([{ text: "hi" }]) })], auth: { bearerTokens: ["a-token-of-sixteen-chars"] } });
    const res = await gh.fetch(new Request("http://gh.test/favicon.ico"));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/x-icon");
    const bytes = new Uint8Array(await res.arrayBuffer());
    const v = new DataView(bytes.buffer);
    // ICONDIR: reserved 0, type 1 (icon), one image; its entry: 16×16, 32 bpp, the image right after.
    expect([v.getUint16(0, true), v.getUint16(2, true), v.getUint16(4, true)]).toEqual([0, 1, 1]);
    expect([bytes[6], bytes[7], v.getUint16(12, true), v.getUint32(18, true)]).toEqual([16, 16, 32, 22]);
    expect(v.getUint32(14, true)).toBe(bytes.length - 22);
    // BITMAPINFOHEADER: 40 bytes, 16 wide, 32 high (image and mask), not all pixels transparent.
    expect([v.getUint32(22, true), v.getInt32(26, true), v.getInt32(30, true)]).toEqual([40, 16, 32]);
    const alphas = Array.from({ length: 256 }, (_, i) => bytes[62 + i * 4 + 3]);
    expect(alphas.filter((a) => a === 255).length).toBeGreaterThan(150);
    const shell = await (await gh.fetch(new Request("http://gh.test/debug"))).text();
    expect(shell).toContain('<link rel="icon" href="/favicon.ico"');
    await gh.close();
  });
});
