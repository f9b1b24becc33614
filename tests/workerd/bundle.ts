/**
 * Bundles a module for Cloudflare Workers the way wrangler does (esbuild,
 * platform neutral, conditions workerd/worker/browser, ESM) and reports every
 * Node built-in the bundle would need. Built-ins are kept out of the bundle
 * (marked external) and collected with their importer, so a test can name the
 * module that pulled one in instead of failing on esbuild's first error.
 */
import { isBuiltin } from "node:module";
import { relative } from "node:path";
import { build, type Plugin } from "esbuild";

export interface WorkerBundle {
  code: string;
  bytes: number;
  /** Node built-ins imported anywhere in the module graph, with their importer. */
  nodeBuiltins: Array<{ path: string; importer: string }>;
}

const root = new URL("../..", import.meta.url).pathname;

export async function bundleForWorkerd(entry: string, define: Record<string, string> = {}): Promise<WorkerBundle> {
  const nodeBuiltins: WorkerBundle["nodeBuiltins"] = [];
  const catchBuiltins: Plugin = {
    name: "node-builtins",
    setup(b) {
      b.onResolve({ filter: /.*/ }, (args) => {
        if (args.kind === "entry-point" || !isBuiltin(args.path)) return undefined;
        nodeBuiltins.push({ path: args.path, importer: relative(root, args.importer) });
        return { path: args.path, external: true };
      });
    },
  };
  const out = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    conditions: ["workerd", "worker", "browser"],
    mainFields: ["browser", "module", "main"],
    minify: true,
    logLevel: "silent",
    define,
    plugins: [catchBuiltins],
  });
  const code = out.outputFiles[0].text;
  return { code, bytes: out.outputFiles[0].contents.byteLength, nodeBuiltins };
}
