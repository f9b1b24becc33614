/**
 * The package as a user gets it. `npm pack` (which builds dist/ through
 * `prepack`), then the tarball is installed, offline from the npm cache, into
 * fresh projects in a temp dir, and the README's API example (the block
 * between `api-example` markers) runs in each:
 * - plain Node ESM JavaScript;
 * - TypeScript with `module`/`moduleResolution` NodeNext, `strict`,
 *   `noUncheckedIndexedAccess`, `exactOptionalPropertyTypes` and
 *   `skipLibCheck: false` (so the package's declarations are checked too),
 *   type-checked with this repository's tsc, emitted and run;
 * - Deno importing the TypeScript source by an import map.
 * None of them installs the optional peers (`ai`, `@ai-sdk/provider`): the
 * root import works without them, and the `./ai-sdk` subpath names the
 * missing package. A fourth project installs `ai` and
 * `@ai-sdk/openai-compatible` besides and runs (and type-checks, under the
 * same strict NodeNext settings) a turn on `aiSdkModel` over the AI SDK's
 * `MockLanguageModelV3`.
 * The subpaths `./inspect`, `./replay` and `./ops` are imported from the
 * JavaScript and the TypeScript projects, and the names that moved there
 * are gone from the root (CHANGELOG.md); the TypeScript project is
 * type-checked, and TypeScript's language service, reading the packed
 * declarations, marks nothing as deprecated.
 * The JavaScript project then runs the package's `gatehouse` bin on a
 * user's own agents module (tests/fixtures/consumer/agents.mjs) with the
 * README's curl session against it, and each kind of failed start is checked
 * for its one line and exit code. Node-only: it spawns processes.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../helpers/redis-server.ts";
import { SOURCE_OF_SUBPATH } from "../../vitest.config.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  name: string;
  version: string;
  exports: Record<string, string | { types: string; default: string }>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  devDependencies: Record<string, string>;
  bin: Record<string, string>;
};
const readme = readFileSync(join(ROOT, "README.md"), "utf8");
const apiExample = /<!-- api-example:start -->\n```ts\n([\s\S]*?)```\n<!-- api-example:end -->/.exec(readme)?.[1];
const session = /<!-- readme-session:start -->\n```sh\n([\s\S]*?)```\n<!-- readme-session:end -->/.exec(readme)?.[1];
const EXPECTED_OUTPUT = '202 done "refunded"';

let tmp: string;
let tarball: string;

function run(cmd: string, args: string[], opts: { cwd: string; env?: Record<string, string>; timeout?: number }) {
  const r = spawnSync(cmd, args, {
    cwd: opts.cwd,
    encoding: "utf8",
    timeout: opts.timeout ?? 120_000,
    env: { ...process.env, npm_config_loglevel: "error", npm_config_update_notifier: "false", ...opts.env },
  });
  return { status: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "", error: r.error };
}

/** `run` without blocking the worker's event loop (a long synchronous child starves vitest's RPC). */
function runAsync(cmd: string, args: string[], opts: { cwd: string; timeout?: number }): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: process.env, stdio: ["ignore", "pipe", "pipe"], timeout: opts.timeout ?? 120_000 });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

/** npm install, asynchronously, so the projects install side by side. */
function npmInstall(dir: string, specs: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", ...specs], {
      cwd: dir,
      env: { ...process.env, npm_config_loglevel: "error" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`npm install in ${dir} failed (${code}):\n${out}`))));
  });
}

/** The peers npm installs with the package: the required ones (not the optional `ai`, `@ai-sdk/provider` and `@modelcontextprotocol/sdk`, which tests add where they need them). */
const peers = () =>
  Object.keys(pkg.peerDependencies)
    .filter((name) => !pkg.peerDependenciesMeta?.[name]?.optional)
    .map((name) => `${name}@${pkg.devDependencies[name]}`);
const MCP_SDK = "@modelcontextprotocol/sdk";
const dev = (name: string) => `${name}@${pkg.devDependencies[name]}`;

/** A turn on aiSdkModel over the AI SDK's own test model: a streamed answer and submit_result. */
const AI_SDK_MAIN = `import { createGatehouse, defineAgent } from "@gatehouse-runtime/core";
import { aiSdkModel } from "@gatehouse-runtime/core/ai-sdk";
import { MockLanguageModelV3, simulateReadableStream } from "ai/test";

const usage = { inputTokens: { total: 12, noCache: 12, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 4, text: 4, reasoning: undefined } };
const mock = new MockLanguageModelV3({
  doStream: async () => ({
    stream: simulateReadableStream({
      chunks: [
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", delta: "refund " },
        { type: "text-delta", id: "t", delta: "approved" },
        { type: "text-end", id: "t" },
        { type: "tool-call", toolCallId: "c1", toolName: "submit_result", input: JSON.stringify({ result: "refunded" }) },
        { type: "finish", usage, finishReason: { unified: "tool-calls", raw: "tool_calls" } },
      ],
    }),
  }),
});
const agent = defineAgent({ name: "concierge", instructions: "Help.", model: aiSdkModel(mock), tools: [] });
const gh = createGatehouse({ agents: [agent] });
const r = await gh.fetch(new Request("http://local/v1/agents/alice/tasks", {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ agent: "concierge", input: "refund?" }),
}));
await gh.drain();
const view = (await (await gh.fetch(new Request("http://local/v1/agents/alice"))).json()) as { state: string; output?: unknown };
const events = await gh.store.readEvents("alice", 0, 100);
const chunks = events.filter((e) => e.type === "chunk").map((e) => String(e.data.text)).join("");
console.log(r.status, view.state, JSON.stringify(view.output), JSON.stringify(chunks));
await gh.close();
`;
const AI_SDK_OUTPUT = '202 done "refunded" "refund approved"';

/** The subpaths; the names that moved out of the root are not in it any more. */
const SUBPATHS_MAIN = `import * as root from "@gatehouse-runtime/core";
import { describeMachine, toMermaid } from "@gatehouse-runtime/core/inspect";
import { createReplayGatehouse, REPLAY_BUNDLE_SCHEMA_VERSION } from "@gatehouse-runtime/core/replay";
import { createApp, DEFAULTS, PROBLEMS } from "@gatehouse-runtime/core/ops";

console.log(JSON.stringify({
  moved: !("describeMachine" in root) && !("createApp" in root) && !("PROBLEMS" in root) && !("serveReplay" in root) && typeof createApp === "function" && typeof PROBLEMS === "object" && typeof createReplayGatehouse === "function",
  mermaid: toMermaid(describeMachine()).split("\\n")[0],
  replay: typeof REPLAY_BUNDLE_SCHEMA_VERSION,
  leaseMs: DEFAULTS.leaseMs,
  errorBase: new root.DefinitionError("x") instanceof root.GatehouseError,
}));
`;
const SUBPATHS_OUTPUT = '{"moved":true,"mermaid":"stateDiagram-v2","replay":"number","leaseMs":15000,"errorBase":true}';

function project(name: string, files: Record<string, string>): string {
  const dir = join(tmp, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name, private: true, type: "module" }, null, 2));
  for (const [f, text] of Object.entries(files)) writeFileSync(join(dir, f), text);
  return dir;
}

let jsDir: string;
let tsDir: string;
let aiDir: string;

beforeAll(async () => {
  expect(apiExample, "README has the marked API example").toBeDefined();
  tmp = mkdtempSync(join(tmpdir(), "gatehouse-consumer-"));
  const packed = run("npm", ["pack", "--json", "--pack-destination", tmp], { cwd: ROOT, timeout: 180_000 });
  expect(packed.status, packed.stderr).toBe(0);
  const info = JSON.parse(packed.stdout.slice(packed.stdout.indexOf("["))) as Array<{ filename: string; files: Array<{ path: string }> }>;
  tarball = join(tmp, info[0]!.filename);
  packedFiles = info[0]!.files.map((f) => f.path);

  jsDir = project("consumer-js", { "main.mjs": apiExample! });
  copyFileSync(join(ROOT, "tests/fixtures/consumer/agents.mjs"), join(jsDir, "agents.mjs"));
  tsDir = project("consumer-ts", {
    "main.ts": apiExample!,
    "tsconfig.json": JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        noUncheckedIndexedAccess: true,
        exactOptionalPropertyTypes: true,
        skipLibCheck: false,
        // Web globals (fetch, Request, console) from lib.dom, as Node 20 has them; checking @types/node
        // too would double the time without checking more of the package.
        lib: ["ES2022", "DOM"],
        types: [],
        outDir: "out",
      },
      files: ["main.ts"],
    }),
  });
  aiDir = project("consumer-ai-sdk", {
    // The same source as JavaScript (type annotations are only in the `as` casts) and as TypeScript.
    "main.mjs": AI_SDK_MAIN.replace(/ as \{ state: string; output\?: unknown \}/, ""),
    "main.ts": AI_SDK_MAIN,
    "tsconfig.json": readFileSync(join(tsDir, "tsconfig.json"), "utf8"),
  });
  await Promise.all([
    // tsx too: `gatehouse serve ./agents.ts` loads TypeScript through the project's tsx.
    npmInstall(jsDir, [tarball, ...peers(), `tsx@${pkg.devDependencies.tsx}`]),
    npmInstall(tsDir, [tarball, ...peers()]),
    npmInstall(aiDir, [tarball, ...peers(), dev("ai"), dev("@ai-sdk/openai-compatible")]),
  ]);
}, 300_000);

let packedFiles: string[] = [];

afterAll(() => {
  for (const s of servers) s.kill("SIGKILL");
  if (tmp) rmSync(tmp, { recursive: true, force: true });
}, 60_000);

describe("the packed package", () => {
  it("ships dist/ for every export, the bin, and no TypeScript source or tests", () => {
    for (const [sub, target] of Object.entries(pkg.exports)) {
      if (typeof target === "string") continue;
      expect(packedFiles, sub).toContain(target.default.replace(/^\.\//, ""));
      expect(packedFiles, sub).toContain(target.types.replace(/^\.\//, ""));
    }
    expect(packedFiles).toContain(Object.values(pkg.bin)[0]);
    expect(packedFiles.filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))).toEqual([]);
    expect(packedFiles.filter((f) => f.startsWith("tests/") || f.includes(".test."))).toEqual([]);
    // No declaration keeps a .ts specifier (resolvable by any TypeScript version).
    const dts = readFileSync(join(jsDir, "node_modules", pkg.name, "dist/mod.d.ts"), "utf8");
    expect(dts).not.toMatch(/from "\.[^"]*\.ts"/);
  });

  it("maps each export to the same source file in vitest, tsc and Deno", () => {
    const tsconfig = JSON.parse(readFileSync(join(ROOT, "tsconfig.json"), "utf8")) as { compilerOptions: { paths: Record<string, string[]> } };
    const deno = JSON.parse(readFileSync(join(ROOT, "deno.json"), "utf8")) as { imports: Record<string, string> };
    const subpaths = Object.keys(pkg.exports).filter((s) => s !== "./package.json");
    expect(Object.keys(SOURCE_OF_SUBPATH).sort()).toEqual(subpaths.map((s) => (s === "." ? pkg.name : `${pkg.name}/${s.slice(2)}`)).sort());
    for (const [name, file] of Object.entries(SOURCE_OF_SUBPATH)) {
      const sub = name === pkg.name ? "." : `./${name.slice(pkg.name.length + 1)}`;
      const target = pkg.exports[sub] as { default: string };
      expect(target.default, name).toBe(`./dist/${file.replace(/\.ts$/, ".js")}`);
      expect(tsconfig.compilerOptions.paths[name], name).toEqual([`./${file}`]);
      expect(deno.imports[name], name).toBe(`./${file}`);
    }
  });

  it("runs the README's API example as plain Node ESM JavaScript", () => {
    const r = run(process.execPath, ["main.mjs"], { cwd: jsDir, timeout: 30_000 });
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe(EXPECTED_OUTPUT);
  });

  it("type-checks the README's API example under NodeNext + strict + noUncheckedIndexedAccess + exactOptionalPropertyTypes, and runs it", () => {
    const tsc = run(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "."], { cwd: tsDir, timeout: 120_000 });
    const errors = tsc.stdout.split("\n").filter((l) => /error TS\d+/.test(l));
    // xstate's own declarations do not compile under exactOptionalPropertyTypes with skipLibCheck off
    // (setup.d.ts, TS2344); that is xstate's, seen by any project that uses it. Nothing else may fail.
    const ours = errors.filter((l) => !l.startsWith("node_modules/xstate/"));
    expect(ours).toEqual([]);
    const run1 = run(process.execPath, ["out/main.js"], { cwd: tsDir, timeout: 30_000 });
    expect(run1.stderr).toBe("");
    expect(run1.stdout.trim()).toBe(EXPECTED_OUTPUT);
  }, 150_000);

  it("imports the ./inspect, ./replay and ./ops subpaths, and the moved names are gone from the root, in JavaScript", () => {
    writeFileSync(join(jsDir, "subpaths.mjs"), SUBPATHS_MAIN);
    const r = run(process.execPath, ["subpaths.mjs"], { cwd: jsDir, timeout: 30_000 });
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe(SUBPATHS_OUTPUT);
  });

  it("type-checks and runs the subpath imports under strict NodeNext; the language service marks nothing deprecated", async () => {
    writeFileSync(join(tsDir, "subpaths.ts"), SUBPATHS_MAIN);
    const config = JSON.parse(readFileSync(join(tsDir, "tsconfig.json"), "utf8")) as { compilerOptions: Record<string, unknown> };
    writeFileSync(join(tsDir, "tsconfig.subpaths.json"), JSON.stringify({ ...config, compilerOptions: { ...config.compilerOptions, outDir: "out-subpaths" }, files: ["subpaths.ts"] }));
    const tsc = run(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.subpaths.json"], { cwd: tsDir, timeout: 120_000 });
    const ours = tsc.stdout.split("\n").filter((l) => /error TS\d+/.test(l) && !l.startsWith("node_modules/xstate/"));
    expect(ours).toEqual([]);
    const ran = run(process.execPath, ["out-subpaths/subpaths.js"], { cwd: tsDir, timeout: 30_000 });
    expect(ran.stderr).toBe("");
    expect(ran.stdout.trim()).toBe(SUBPATHS_OUTPUT);

    const ts = (await import("typescript")).default;
    const parsed = ts.parseJsonConfigFileContent(JSON.parse(readFileSync(join(tsDir, "tsconfig.subpaths.json"), "utf8")), ts.sys, tsDir);
    const file = join(tsDir, "subpaths.ts");
    const service = ts.createLanguageService({
      getScriptFileNames: () => [file],
      getScriptVersion: () => "1",
      getScriptSnapshot: (f) => (ts.sys.fileExists(f) ? ts.ScriptSnapshot.fromString(ts.sys.readFile(f)!) : undefined),
      getCurrentDirectory: () => tsDir,
      getCompilationSettings: () => parsed.options,
      getDefaultLibFileName: (o) => ts.getDefaultLibFilePath(o),
      fileExists: ts.sys.fileExists,
      readFile: ts.sys.readFile,
      directoryExists: ts.sys.directoryExists,
      getDirectories: ts.sys.getDirectories,
      realpath: ts.sys.realpath,
    });
    const flagged = new Set(service.getSuggestionDiagnostics(file).filter((d) => d.code === 6385)
      .map((d) => /'(\w+)'/.exec(ts.flattenDiagnosticMessageText(d.messageText, "\n"))![1]));
    expect([...flagged].sort()).toEqual([]);
  }, 150_000);

  it("the root import needs no AI SDK: none is installed, and the ./ai-sdk subpath names the missing peer", () => {
    for (const dir of [jsDir, tsDir]) {
      expect(existsSync(join(dir, "node_modules/ai")), dir).toBe(false);
      expect(existsSync(join(dir, "node_modules/@ai-sdk")), dir).toBe(false);
    }
    // The README's example ran above on the root import alone; the subpath fails only when imported.
    const r = run(process.execPath, ["--input-type=module", "-e", 'await import("@gatehouse-runtime/core/ai-sdk")'], { cwd: jsDir, timeout: 30_000 });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain("Cannot find package '@ai-sdk/provider'");
  });

  it("with ai installed: a turn on aiSdkModel over MockLanguageModelV3 runs as JavaScript, and type-checks and runs as strict NodeNext TypeScript", async () => {
    const js = await runAsync(process.execPath, ["main.mjs"], { cwd: aiDir, timeout: 30_000 });
    expect(js.stderr).toBe("");
    expect(js.stdout.trim()).toBe(AI_SDK_OUTPUT);
    const tsc = await runAsync(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "."], { cwd: aiDir, timeout: 120_000 });
    const errors = tsc.stdout.split("\n").filter((l) => /error TS\d+/.test(l));
    // Other packages' declarations are theirs (see above); ours and the program's must compile.
    const ours = errors.filter((l) => !l.startsWith("node_modules/") || l.startsWith(`node_modules/${pkg.name}/`));
    expect(ours).toEqual([]);
    const ts = await runAsync(process.execPath, ["out/main.js"], { cwd: aiDir, timeout: 30_000 });
    expect(ts.stderr).toBe("");
    expect(ts.stdout.trim()).toBe(AI_SDK_OUTPUT);
  }, 150_000);

  it("runs the README's API example on Deno, importing the TypeScript source", () => {
    const dir = project("consumer-deno", { "main.ts": apiExample! });
    writeFileSync(
      join(dir, "deno.json"),
      JSON.stringify({ nodeModulesDir: "manual", imports: { [pkg.name]: join(ROOT, "mod.ts") } }),
    );
    // zod comes from the project's own install, as it would in a Deno project with a package.json.
    symlinkSync(join(jsDir, "node_modules"), join(dir, "node_modules"), "dir");
    const r = run(join(ROOT, "node_modules/.bin/deno"), ["run", "-A", "main.ts"], { cwd: dir, env: { NO_COLOR: "1" }, timeout: 60_000 });
    expect(r.stderr.replace(/^(Download|Warning).*\n/gm, "")).toBe("");
    expect(r.stdout.trim()).toBe(EXPECTED_OUTPUT);
  }, 70_000);
});

describe("the ./mcp subpath", () => {
  it("the root import works without @modelcontextprotocol/sdk installed; ./mcp then says what is missing", () => {
    expect(pkg.peerDependenciesMeta?.[MCP_SDK]?.optional).toBe(true);
    expect(existsSync(join(jsDir, "node_modules", MCP_SDK))).toBe(false);
    const root = run(process.execPath, ["--input-type=module", "-e", `const m = await import("${pkg.name}"); console.log(typeof m.createGatehouse, "mcpTools" in m)`], { cwd: jsDir, timeout: 30_000 });
    expect(root.stderr).toBe("");
    expect(root.stdout.trim()).toBe("function false");
    const mcp = run(process.execPath, ["--input-type=module", "-e", `await import("${pkg.name}/mcp")`], { cwd: jsDir, timeout: 30_000 });
    expect(mcp.status).not.toBe(0);
    expect(mcp.stderr).toContain(`Cannot find package '${MCP_SDK}'`);
  }, 40_000);

  it("with the SDK installed, the MCP example of docs/mcp.md runs from the package over HTTP, and a stdio server is spawned", async () => {
    const { transformSync } = await import("esbuild");
    const example = readFileSync(join(ROOT, "examples/mcp.ts"), "utf8");
    const dir = project("consumer-mcp", {
      "main.mjs": transformSync(example, { loader: "ts", format: "esm" }).code,
      "stdio.mjs": `import { mcpTools } from "${pkg.name}/mcp";
const tools = await mcpTools({ command: process.execPath, args: ["--import", "tsx", "tests/fixtures/mcp/stdio-server.ts"], cwd: ${JSON.stringify(ROOT)} });
console.log(tools.map((t) => t.name).sort().join(","));
await tools.close();
`,
    });
    await npmInstall(dir, [tarball, ...peers(), `${MCP_SDK}@${pkg.devDependencies[MCP_SDK]}`]);
    const port = await freePort();
    const server = spawn(process.execPath, ["--import", "tsx", "examples/mcp-server.ts"], { cwd: ROOT, env: { ...process.env, PORT: String(port) }, stdio: ["ignore", "pipe", "pipe"] });
    servers.push(server);
    let out = "";
    server.stdout!.on("data", (d) => (out += d));
    for (let i = 0; i < 300 && !out.includes("MCP server on"); i++) await new Promise((r) => setTimeout(r, 100));
    const r = run(process.execPath, ["main.mjs"], { cwd: dir, env: { MCP_URL: `http://127.0.0.1:${port}/mcp` }, timeout: 60_000 });
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe('done {"sum":5}');
    server.kill("SIGKILL");
    const stdio = run(process.execPath, ["stdio.mjs"], { cwd: dir, timeout: 60_000 });
    expect(stdio.stderr).toBe("");
    expect(stdio.stdout.trim()).toBe("add,echo,fail,hang");
  }, 240_000);
});

const servers: ChildProcess[] = [];

function startBin(args: string[], env: Record<string, string>) {
  const bin = join(jsDir, "node_modules/.bin/gatehouse");
  const child = spawn(bin, args, { cwd: jsDir, env: { ...process.env, GATEHOUSE_REDIS_URL: "", UPSTASH_REDIS_REST_URL: "", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  servers.push(child);
  let out = "";
  let err = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (err += d));
  const exited = new Promise<number | null>((res) => child.on("exit", (code) => res(code)));
  return { child, exited, out: () => out, err: () => err };
}

function bash(script: string) {
  const r = spawnSync("bash", ["-c", script], { encoding: "utf8", timeout: 30_000 });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.trim().split("\n");
}

describe("npx @gatehouse-runtime/core serve <module>", () => {
  it("serves a user's own agents module, and the README session runs against it", async () => {
    const port = await freePort();
    const s = startBin(["serve", "./agents.mjs"], { PORT: String(port) });
    let up = false;
    for (let i = 0; i < 150 && !up && s.child.exitCode === null; i++) {
      up = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false);
      if (!up) await new Promise((r) => setTimeout(r, 100));
    }
    expect(up, s.err()).toBe(true);
    expect(s.out()).toContain('"msg":"gatehouse listening"');
    expect(s.out()).toContain('"agents":["cashier","concierge"]');
    const lines = bash(session!.replaceAll("127.0.0.1:8787", `127.0.0.1:${port}`));
    expect(lines[0]).toMatch(/^\{"agentId":"alice","turnId":"turn_[0-9a-f]+","duplicate":false\}$/);
    expect(lines.slice(2)).toEqual([
      '"state":"waiting-tools"',
      '{"accepted":true,"duplicate":false,"contract":{"passed":true,"mismatch":null}}',
      '{"accepted":true,"duplicate":true,"contract":{"passed":true,"mismatch":null}}',
      '"state":"done"',
      '"output":{"orderId":"A-1001","refund":"approved","note":"approved by Dana"}',
      '"state":"waiting-tools"',
      '"name":"send_payout"',
      '"approval":"pending"',
      '"decided":true,"duplicate":false,"decision":"approved"',
      '"state":"done"',
      '"output":{"status":"paid","to":"Dana","amount":25,"currency":"EUR"}',
    ]);
    s.child.kill("SIGTERM");
    expect(await s.exited).toBe(0);
  }, 40_000);

  async function failedStart(args: string[], env: Record<string, string>) {
    const s = startBin(args, env);
    const code = await s.exited;
    const lines = s.err().trimEnd().split("\n");
    return { code, lines, stdout: s.out() };
  }

  it("a bad configuration value: one line naming it, exit code 2", async () => {
    const r = await failedStart(["serve", "./agents.mjs"], { GATEHOUSE_LEASE_MS: "30s" });
    expect(r.lines).toEqual(['gatehouse: cannot start: GATEHOUSE_LEASE_MS="30s" is not a whole number (expected 1000 to 86400000)']);
    expect(r.code).toBe(2);
  }, 20_000);

  it("an agents module that does not exist or exports no agent: one line, exit code 3", async () => {
    const missing = await failedStart(["serve", "./nope.mjs"], {});
    expect(missing.lines).toEqual(["gatehouse: cannot start: cannot load ./nope.mjs: no such file"]);
    expect(missing.code).toBe(3);
    writeFileSync(join(jsDir, "empty.mjs"), "export const x = 1;\n");
    const empty = await failedStart(["serve", "./empty.mjs"], {});
    expect(empty.lines).toHaveLength(1);
    expect(empty.lines[0]).toMatch(/^gatehouse: cannot start: \.\/empty\.mjs exports no agent/);
    expect(empty.code).toBe(3);
  }, 20_000);

  it("a Redis that cannot be reached: one line with the cause, exit code 4, within the store timeout", async () => {
    const port = await freePort(); // nothing listens there
    const started = Date.now();
    const r = await failedStart(["serve", "./agents.mjs"], {
      GATEHOUSE_REDIS_URL: `redis://user:secret@127.0.0.1:${port}`,
      GATEHOUSE_STORE_TIMEOUT_MS: "1500",
    });
    expect(r.lines).toEqual([
      `gatehouse: cannot start: cannot reach the store (redis at redis://127.0.0.1:${port}) within 1500 ms: connect ECONNREFUSED 127.0.0.1:${port}`,
    ]);
    expect(r.code).toBe(4);
    expect(r.stdout).toBe("");
    expect(Date.now() - started).toBeLessThan(10_000);
  }, 20_000);

  it("a port in use: one line, exit code 5", async () => {
    const blocker = createServer();
    const port = await new Promise<number>((res) => blocker.listen(0, "127.0.0.1", () => res((blocker.address() as { port: number }).port)));
    try {
      const r = await failedStart(["serve", "./agents.mjs"], { PORT: String(port) });
      expect(r.lines).toEqual([`gatehouse: cannot start: port ${port} on 127.0.0.1 is already in use (EADDRINUSE); set PORT or HOST`]);
      expect(r.code).toBe(5);
    } finally {
      blocker.close();
    }
  }, 20_000);

  it("unknown arguments: usage on stderr, exit code 2", async () => {
    const r = await failedStart(["serve"], {});
    expect(r.lines[0]).toBe("gatehouse: cannot start: unknown arguments: serve");
    expect(r.code).toBe(2);
  }, 20_000);

  it("serves a TypeScript agents module through the project's tsx", async () => {
    copyFileSync(join(jsDir, "agents.mjs"), join(jsDir, "agents-ts.ts"));
    const port = await freePort();
    const s = startBin(["serve", "./agents-ts.ts"], { PORT: String(port) });
    let agents: string | undefined;
    for (let i = 0; i < 150 && !agents && s.child.exitCode === null; i++) {
      await new Promise((r) => setTimeout(r, 100));
      agents = /"agents":\[[^\]]*\]/.exec(s.out())?.[0];
    }
    expect(agents, s.err()).toBe('"agents":["cashier","concierge"]');
    s.child.kill("SIGTERM");
    expect(await s.exited).toBe(0);
  }, 30_000);

  it("demo serves the example agents", async () => {
    const port = await freePort();
    const s = startBin(["demo"], { PORT: String(port) });
    let agents: string | undefined;
    for (let i = 0; i < 100 && !agents && s.child.exitCode === null; i++) {
      await new Promise((r) => setTimeout(r, 100));
      agents = /"agents":\[[^\]]*\]/.exec(s.out())?.[0];
    }
    expect(agents, s.err()).toBe('"agents":["concierge","summarizer","cashier"]');
    s.child.kill("SIGTERM");
    expect(await s.exited).toBe(0);
    expect(existsSync(join(jsDir, "node_modules", pkg.name, "dist/examples/demo.js"))).toBe(true);
  }, 20_000);
});
