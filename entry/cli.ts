#!/usr/bin/env node
/**
 * The `gatehouse` command (package.json `bin`):
 *
 *   gatehouse serve ./agents.js   serve the agents a module exports
 *   gatehouse demo                serve the three example agents (examples/demo.ts)
 *   gatehouse replay run.json [./agents.js]
 *                                 serve an exported run (GET /v1/agents/:id/export)
 *                                 from a memory store, with the debugger page at
 *                                 /debug/agents/<id>; workers run only for the
 *                                 definitions of the optional agents module
 *   gatehouse interfaces [--role <role>]
 *                                 the tool registry of the configured store: methods,
 *                                 aliases and overlaps per role (entry/interfaces.ts)
 *   gatehouse dev-redis-http [--port 8079] [--redis <url>] [--token <t>]
 *                                 the Upstash REST protocol in front of a local Redis,
 *                                 for upstashStore() and `wrangler dev` without an
 *                                 account (entry/dev-redis-http.ts)
 *
 * The module exports its agents: named exports of defineAgent() results, an
 * `agents` array, or a default export (an agent, an array, `{ agents }`).
 * A `.ts` module loads under Deno and Bun as is, and under Node through tsx
 * (installed in the project, or `npx tsx`). Everything else comes from the
 * environment (entry/config.ts); a failed start prints one line and exits
 * with a code of STARTUP_EXIT_CODES (usage errors: 2).
 *
 * Runs on Node (`npx @gatehouse-runtime/core serve …`), Deno
 * (`deno run -A entry/cli.ts serve …`) and Bun (`bunx @gatehouse-runtime/core serve …`);
 * only `demo` imports the demo agents.
 */
import process from "node:process";
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";
import type { AnyAgent } from "../mod.ts";
import { agentsOfModule, describeStartupFailure, StartupError } from "./startup.ts";

const USAGE = `usage: gatehouse serve <module>   serve the agents the module exports (.js, .mjs; .ts under tsx, Deno or Bun)
       gatehouse demo              serve the example agents (concierge, summarizer)
       gatehouse replay <bundle.json> [<module>]
                                   serve an exported run for offline debugging (/debug/agents/<id>)
       gatehouse interfaces [--role <role>]
                                   the tool registry: methods, aliases and overlaps per role
       gatehouse dev-redis-http [--port 8079] [--redis redis://127.0.0.1:6379] [--token gatehouse-dev]
                                   the Upstash REST protocol in front of a local Redis (development)
configuration: environment variables (PORT, HOST, GATEHOUSE_*), see docs/operations.md`;

const isDeno = typeof (globalThis as { Deno?: unknown }).Deno !== "undefined";
const isBun = typeof (globalThis as { Bun?: unknown }).Bun !== "undefined";

function fail(err: unknown): never {
  const { line, exitCode } = describeStartupFailure(err);
  process.stderr.write(`${line}\n`);
  process.exit(exitCode);
}

async function loadAgents(spec: string): Promise<AnyAgent[]> {
  const url = pathToFileURL(resolve(process.cwd(), spec)).href;
  const isTs = /\.[mc]?tsx?$/.test(spec);
  if (isTs && !isDeno && !isBun) {
    // Node 20 cannot load TypeScript by itself: register tsx's loader when the project has it.
    try {
      const api = "tsx/esm/api";
      const { register } = (await import(api)) as { register: () => unknown };
      register();
    } catch {
      // Already running under tsx (node --import tsx) works without it; otherwise the import below says so.
    }
  }
  let mod: Record<string, unknown>;
  try {
    mod = (await import(url)) as Record<string, unknown>;
  } catch (err) {
    const e = err as Error & { code?: string };
    if (e.code === "ERR_MODULE_NOT_FOUND" && e.message.includes(url.replace("file://", ""))) {
      throw new StartupError("agents", `cannot load ${spec}: no such file`);
    }
    if (e.code === "ERR_UNKNOWN_FILE_EXTENSION") {
      throw new StartupError("agents", `cannot load ${spec}: Node runs .ts files only through tsx (npm install -D tsx), or serve the compiled .js`);
    }
    if (e.name === "DefinitionError") throw err;
    throw new StartupError("agents", `cannot load ${spec}: ${e.name}: ${e.message}`, { cause: err });
  }
  return agentsOfModule(mod, spec);
}

async function main(args: string[]) {
  const [command, ...rest] = args;
  if (command === "--help" || command === "-h" || command === "help") {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (command === "interfaces") {
    await interfaces(rest);
    return;
  }
  if (command === "dev-redis-http") {
    await devRedisHttp(rest);
    return;
  }
  if (command === "replay" && (rest.length === 1 || rest.length === 2) && !rest.some((a) => a.startsWith("-"))) {
    await replay(rest[0]!, rest[1]);
    return;
  }
  let agents: AnyAgent[];
  if (command === "serve" && rest.length === 1 && !rest[0]!.startsWith("-")) {
    agents = await loadAgents(rest[0]!);
  } else if (command === "demo" && rest.length === 0) {
    agents = (await import("../examples/demo.ts")).demoAgents;
  } else {
    process.stderr.write(`gatehouse: cannot start: ${command === undefined ? "no command given" : `unknown arguments: ${args.join(" ")}`}\n${USAGE}\n`);
    process.exit(2);
  }
  if (isDeno) {
    const { startDeno } = await import("./serve-deno.ts");
    await startDeno({ agents });
  } else if (isBun) {
    const { startBun } = await import("./serve-bun.ts");
    await startBun({ agents });
  } else {
    const { startNode } = await import("./serve-node.ts");
    await startNode({ agents });
  }
}

/** `gatehouse replay`: the bundle in a fresh memory store, served on Node with the environment's PORT/HOST. */
async function replay(bundlePath: string, agentsModule: string | undefined) {
  const { readFile } = await import("node:fs/promises");
  const [{ createReplayGatehouse }, { serveNode }, { configFromEnv }] = await Promise.all([
    import("../replay.ts"),
    import("./serve-node.ts"),
    import("./config.ts"),
  ]);
  const config = configFromEnv(process.env);
  let text: string;
  try {
    text = await readFile(resolve(process.cwd(), bundlePath), "utf8");
  } catch (err) {
    throw new StartupError("agents", `cannot read ${bundlePath}: ${(err as Error).message}`);
  }
  let bundle: unknown;
  try {
    bundle = JSON.parse(text);
  } catch (err) {
    throw new StartupError("agents", `cannot read ${bundlePath}: not JSON (${(err as Error).message})`);
  }
  const agents = agentsModule ? await loadAgents(agentsModule) : [];
  let gh;
  try {
    gh = await createReplayGatehouse(bundle, { agents });
  } catch (err) {
    throw new StartupError("agents", `cannot load ${bundlePath}: ${(err as Error).message}`);
  }
  const server = await serveNode(gh, { port: config.port, hostname: config.hostname });
  if (agents.length > 0) gh.startWorker();
  process.stdout.write(`replaying agent ${gh.agentId}: ${server.url}/debug/agents/${encodeURIComponent(gh.agentId)}\n`);
}

/** `gatehouse dev-redis-http`: serves until SIGINT/SIGTERM, then closes and exits 0. */
async function devRedisHttp(args: string[]) {
  const { parseDevRedisHttpArgs, startDevRedisHttp, devRedisHttpBanner } = await import("./dev-redis-http.ts");
  const options = parseDevRedisHttpArgs(args);
  const server = await startDevRedisHttp(options);
  process.stdout.write(devRedisHttpBanner(server, options));
  const stop = () => void server.close().then(() => process.exit(0));
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

/** `gatehouse interfaces`: reads the registry of the store the environment configures. */
async function interfaces(args: string[]) {
  const [{ storeFromEnv }, { redisStore }, { interfacesCommand }] = await Promise.all([
    import("./store-from-env.ts"),
    import("../redis.ts"),
    import("./interfaces.ts"),
  ]);
  const store = await storeFromEnv(process.env, { redis: redisStore });
  try {
    const r = await interfacesCommand(store, args);
    process.stdout.write(r.out);
    process.stderr.write(r.err);
    process.exitCode = r.exitCode;
  } finally {
    await store.close();
  }
}

main(process.argv.slice(2)).catch(fail);
