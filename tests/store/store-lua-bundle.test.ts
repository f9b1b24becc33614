import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { scripts } from "../../store/lua/scripts.gen.ts";
import { bundleLua, GENERATED, LUA_DIR } from "../../scripts/bundle-lua.ts";

const sources = readdirSync(LUA_DIR).filter((f) => f.endsWith(".lua")).map((f) => ({ file: f, text: readFileSync(join(LUA_DIR, f), "utf8") }));

describe("store/lua bundle", () => {
  it("store/lua/scripts.gen.ts is up to date (run `npx tsx scripts/bundle-lua.ts`)", () => {
    expect(readFileSync(GENERATED, "utf8")).toBe(bundleLua());
  });

  it("bundles every script with its includes expanded", () => {
    expect(Object.keys(scripts).sort()).toEqual(sources.map((s) => s.file.slice(0, -4)).sort());
    for (const body of Object.values(scripts)) expect(body).not.toMatch(/^-- @include /m);
  });

  it("every script opens with a header naming each KEYS[i] and ARGV[i] it reads and its replies", () => {
    for (const { file, text } of sources) {
      expect(text.startsWith("--[["), file).toBe(true);
      const header = text.slice(0, text.indexOf("]]"));
      expect(header, file).toMatch(/Returns:/);
      for (const [ref] of text.slice(header.length).matchAll(/\b(KEYS|ARGV)\[\d+\]/g)) {
        expect(header, `${file} uses ${ref}`).toContain(ref);
      }
    }
  });

  it("no script reads the server clock", () => {
    for (const body of Object.values(scripts)) expect(body).not.toMatch(/['"]TIME['"]/i);
  });
});
