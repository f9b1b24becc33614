/**
 * Builds the chat page into a static folder (default `examples/chat/dist/`):
 * `index.html` and `app.js`, the page with React, `@ai-sdk/react` and `ai`
 * bundled by esbuild (one minified ES module, nothing loaded from elsewhere).
 *
 *   npx tsx examples/chat/build.ts [outdir]
 */
import { copyFile, mkdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

export async function buildChatPage(outdir: string = here("./dist/")): Promise<string> {
  await mkdir(outdir, { recursive: true });
  await build({
    entryPoints: [here("./page.ts")],
    outfile: join(outdir, "app.js"),
    bundle: true,
    format: "esm",
    minify: true,
    target: "es2022",
    define: { "process.env.NODE_ENV": JSON.stringify("production") },
    logLevel: "warning",
  });
  await copyFile(here("./index.html"), join(outdir, "index.html"));
  return outdir;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const out = await buildChatPage(process.argv[2] ? resolve(process.argv[2]) : undefined);
  process.stdout.write(`built ${out}\n`);
}
