/**
 * Memory of mcpTools() against a hostile MCP server: `npx tsx bench/mcp-listing.ts`.
 *
 * The servers run in this process: the plain test server
 * (tests/helpers/mcp-server.ts, 4 tools) and two hostile ones
 * (tests/helpers/mcp-hostile-server.ts) listing 3,000 tools with
 * 100-property schemas (about 22 MB of listing), one in pages of 100 and one
 * in a single page. Each row runs mcpTools() in a fresh child process and
 * reports the child's peak RSS (`process.resourceUsage().maxRSS`), and its
 * ratio to the plain server's row of the same run:
 * - `plain`: the plain server, default bounds;
 * - `hostile, paged, defaults`: refused at `maxTools` after 3 pages;
 * - `hostile, one page, maxTools raised`: refused at `maxListingBytes`,
 *   the page cut off while it arrives;
 * - `hostile, paged, every bound raised`: the whole listing read and built,
 *   as mcpTools() did before it had bounds.
 *
 * Prints a table and writes bench/results/mcp-listing.md.
 */
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { manyTools, startHostileMcpServer } from "../tests/helpers/mcp-hostile-server.ts";
import { startMcpServer } from "../tests/helpers/mcp-server.ts";

interface Sample {
  tools: number;
  error?: string;
  maxRssMb: number;
}

async function child(url: string, options: Record<string, number>): Promise<void> {
  const { mcpTools } = await import("../mcp.ts");
  let out: Sample;
  try {
    const tools = await mcpTools({ url, ...options, logger: { warn() {} } });
    out = { tools: tools.length, maxRssMb: 0 };
    await tools.close();
  } catch (err) {
    out = { tools: 0, error: `${(err as Error).name}: ${(err as { limit?: string }).limit ?? (err as Error).message}`, maxRssMb: 0 };
  }
  out.maxRssMb = process.resourceUsage().maxRSS / 1024;
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

/** One row in a fresh child process (spawned, not spawnSync: the servers answer from this process). */
async function measure(url: string, options: Record<string, number>): Promise<Sample> {
  const script = fileURLToPath(import.meta.url);
  const proc = spawn(process.execPath, ["--import", "tsx", script, "--client", url, JSON.stringify(options)], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  proc.stdout.on("data", (c) => (stdout += c));
  proc.stderr.on("data", (c) => (stderr += c));
  const status = await new Promise<number | null>((resolve) => proc.on("close", resolve));
  const line = stdout.trim().split("\n").pop() ?? "";
  if (status !== 0 || !line.startsWith("{")) throw new Error(`the child failed (${status}): ${stderr}`);
  return JSON.parse(line) as Sample;
}

async function main() {
  const plain = await startMcpServer();
  const paged = await startHostileMcpServer(manyTools(3_000, 100), { pageSize: 100 });
  const onePage = await startHostileMcpServer(manyTools(3_000, 100));
  const raised = { maxTools: 10_000, maxSchemaBytes: 1e9, maxListingBytes: 1e9 };
  try {
    const rows: [string, Sample][] = [
      ["plain", await measure(plain.url, {})],
      ["hostile, paged, defaults", await measure(paged.url, {})],
      ["hostile, one page, maxTools raised", await measure(onePage.url, { maxTools: 10_000 })],
      ["hostile, paged, every bound raised", await measure(paged.url, raised)],
    ];
    const base = rows[0]![1].maxRssMb;
    const lines = [
      `# mcpTools() memory against a hostile MCP server (${new Date().toISOString()}, listing ${(paged.listingBytes / 1e6).toFixed(1)} MB)`,
      "",
      "| row | tools offered | refusal | child peak RSS (MB) | ratio to plain |",
      "|---|---|---|---|---|",
      ...rows.map(([name, s]) => `| ${name} | ${s.tools} | ${s.error ?? "-"} | ${s.maxRssMb.toFixed(0)} | ${(s.maxRssMb / base).toFixed(2)} |`),
      "",
    ];
    const text = lines.join("\n");
    process.stdout.write(text);
    const dir = fileURLToPath(new URL("./results/", import.meta.url));
    mkdirSync(dir, { recursive: true });
    writeFileSync(`${dir}mcp-listing.md`, text);
  } finally {
    await plain.stop();
    await paged.stop();
    await onePage.stop();
  }
}

if (process.argv[2] === "--client") await child(process.argv[3]!, JSON.parse(process.argv[4]!) as Record<string, number>);
else await main();
