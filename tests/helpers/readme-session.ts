/**
 * The README's curl session (between the readme-session markers), for the
 * suites that run it verbatim against a server: `npm start`'s entry
 * (tests/docs/readme.int.test.ts) and the Workers example in workerd
 * (tests/runtimes/workerd-example.int.test.ts). Only the port differs.
 */
import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { expect } from "vitest";

const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
const session = /<!-- readme-session:start -->\n```sh\n([\s\S]*?)```\n<!-- readme-session:end -->/.exec(readme)?.[1];

export function runBash(script: string): string[] {
  const r = spawnSync("bash", ["-c", script], { encoding: "utf8", timeout: 30_000 });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.trim().split("\n");
}

/**
 * runBash without blocking this process's event loop: needed when a server
 * the script talks to (or that server's store, such as the Upstash bridge)
 * lives in this process.
 */
export async function runBashAsync(script: string): Promise<string[]> {
  const child = spawn("bash", ["-c", script], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
  clearTimeout(timer);
  expect(code, stderr).toBe(0);
  return stdout.trim().split("\n");
}

/** The session in two parts (steps 1–2, steps 3–4), so something can happen in between. */
export function sessionParts(port: number): [string, string] {
  expect(session, "README has the marked session block").toBeDefined();
  const script = session!.replaceAll("127.0.0.1:8787", `127.0.0.1:${port}`);
  const cut = script.indexOf("\n# 3.");
  expect(cut).toBeGreaterThan(0);
  const first = script.slice(0, cut);
  const base = /^B=.*$/m.exec(first)![0];
  return [first, `${base}\n${script.slice(cut)}`];
}

/** What the README says the session prints. */
export function expectSessionOutput(lines: string[]): void {
  expect(lines[0]).toMatch(/^\{"agentId":"alice","turnId":"turn_[0-9a-f]+","duplicate":false\}$/);
  expect(lines[1]).toMatch(/^"type":"tool_call","data":\{"step":2,"toolCallId":"call_turn_[0-9a-f]+_2_0","name":"approve_refund"$/);
  expect(lines[2]).toBe('"state":"waiting-tools"');
  expect(lines[3]).toBe('{"accepted":true,"duplicate":false,"contract":{"passed":true,"mismatch":null}}');
  expect(lines[4]).toBe('{"accepted":true,"duplicate":true,"contract":{"passed":true,"mismatch":null}}');
  expect(lines[5]).toBe('"state":"done"');
  expect(lines[6]).toBe('"output":{"orderId":"A-1001","refund":"approved","note":"approved by Dana"}');
  // A tool that needs approval: pending in the agent view, edited and approved over POST …/approvals (the edited amount paid), the turn done.
  expect(lines[7]).toBe('"state":"waiting-tools"');
  expect(lines[8]).toBe('"name":"send_payout"');
  expect(lines[9]).toBe('"approval":"pending"');
  expect(lines[10]).toBe('"decided":true,"duplicate":false,"decision":"approved"');
  expect(lines[11]).toBe('"state":"done"');
  expect(lines[12]).toBe('"output":{"status":"paid","to":"Dana","amount":25,"currency":"EUR"}');
  expect(lines).toHaveLength(13);
}
