/**
 * `gatehouse replay <bundle.json>`: an exported run served offline by the
 * CLI, on Node, from a fresh memory store. The served agent answers as the
 * original did, the debugger page for it is served, and a file that is not
 * a bundle stops the start with one line and exit code 3 (agents).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { setup } from "../helpers/debug.ts";

const dir = mkdtempSync(join(tmpdir(), "gatehouse-replay-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function runCli(args: string[]) {
  const child = spawn(process.execPath, ["--import", "tsx", "entry/cli.ts", ...args], {
    cwd: join(import.meta.dirname, "../.."),
    env: { ...process.env, PORT: "0", GATEHOUSE_LOG: "warn" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  return { child, exited, out: () => out, err: () => err };
}

describe("gatehouse replay", () => {
  it("serves an exported run and its debugger page", async () => {
    const { gh, call } = setup();
    await call("POST", "/v1/agents/r1/tasks", { agent: "helper", input: "hello" });
    await gh.drain();
    const bundle = (await call("GET", "/v1/agents/r1/export")).body;
    const original = (await call("GET", "/v1/agents/r1")).body;
    const file = join(dir, "r1.json");
    writeFileSync(file, JSON.stringify(bundle));

    const cli = runCli(["replay", file]);
    try {
      const deadline = Date.now() + 30_000;
      let url = "";
      while (!url && Date.now() < deadline) {
        url = /replaying agent r1: (http:\/\/\S+)\/debug\/agents\/r1/.exec(cli.out())?.[1] ?? "";
        if (!url) await new Promise((r) => setTimeout(r, 100));
      }
      expect(url, cli.err()).not.toBe("");
      const served = await (await fetch(`${url}/v1/agents/r1`)).json();
      expect(served).toEqual(original);
      const page = await fetch(`${url}/debug/agents/r1`);
      expect(page.status).toBe(200);
      expect(page.headers.get("content-type")).toContain("text/html");
    } finally {
      cli.child.kill("SIGTERM");
      await cli.exited;
    }
  }, 60_000);

  it("refuses a file that is not a bundle with one line and exit code 3", async () => {
    const file = join(dir, "bad.json");
    writeFileSync(file, JSON.stringify({ schemaVersion: 99 }));
    const cli = runCli(["replay", file]);
    expect(await cli.exited).toBe(3);
    const lines = cli.err().trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("bad.json");
  }, 60_000);

  it("refuses a bundle that loads but could not be served (snapshot, id) with the reason and exit code 3", async () => {
    const { gh, call } = setup();
    await call("POST", "/v1/agents/r2/tasks", { agent: "helper", input: "hello" });
    await gh.drain();
    const bundle = (await call("GET", "/v1/agents/r2/export")).body;
    await gh.close();
    const snap = bundle.head.snapshot;
    const cases: Array<[string, unknown, RegExp]> = [
      ["state.json", { ...bundle, head: { ...bundle.head, snapshot: { ...snap, value: "flying" } } }, /head\.snapshot: unknown state "flying"/],
      ["version.json", { ...bundle, head: { ...bundle.head, snapshot: { ...snap, context: { ...snap.context, schemaVersion: 99 } } } }, /schema version 99/],
      ["id.json", { ...bundle, agentId: "../x", head: { ...bundle.head, agentId: "../x" } }, /agent id "\.\.\/x" must match/],
    ];
    // One process per file, one at a time (two shared cores).
    for (const [name, bad, reason] of cases) {
      const file = join(dir, name);
      writeFileSync(file, JSON.stringify(bad));
      const cli = runCli(["replay", file]);
      // A bundle that loads starts a server that never exits: stop it, and fail, after 30 s.
      let timer: ReturnType<typeof setTimeout> | undefined;
      const code = await Promise.race([
        cli.exited,
        new Promise<string>((r) => (timer = setTimeout(() => r("still serving"), 30_000))),
      ]);
      clearTimeout(timer);
      if (code === "still serving") {
        cli.child.kill("SIGKILL");
        await cli.exited;
      }
      expect(code, `${name}: ${cli.out()}${cli.err()}`).toBe(3);
      const lines = cli.err().trim().split("\n");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(name);
      expect(lines[0]).toMatch(reason);
    }
  }, 120_000);
});
