/**
 * Starts worker processes (tests/helpers/worker-process.ts) for the fault
 * tests and keeps what they print, so a failing test can show it.
 *
 * The worker script is bundled once per test process with esbuild (a bundle
 * starts with a fifth of the CPU time of `node --import tsx`, which matters
 * when a test starts fifty workers on two cores); when esbuild cannot be
 * loaded the script runs through tsx instead. Either way it is the same code.
 *
 * Contract:
 * - `spawnWorker` resolves its `ready` promise when the child printed its
 *   ready line, and rejects it if the child exits first.
 * - `signal(sig)` sends a signal to the child (SIGKILL, SIGSTOP, SIGCONT).
 * - `stop()` ends the child (SIGCONT first, in case it is paused, then
 *   SIGKILL) and resolves when it has exited. Only processes started here are
 *   signalled, each by its own pid.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import process from "node:process";
import type { WorkerProcessConfig } from "./worker-process.ts";

const SCRIPT = fileURLToPath(new URL("./worker-process.ts", import.meta.url));
const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export interface WorkerHandle {
  name: string;
  child: ChildProcess;
  pid: number;
  ready: Promise<void>;
  exited: Promise<number | null>;
  /** Parsed JSON lines of stdout (log lines and the ready line). */
  lines: Array<Record<string, unknown>>;
  stderr: string[];
  alive(): boolean;
  signal(sig: NodeJS.Signals): void;
  stop(): Promise<void>;
}

const commands = new Map<string, Promise<string[]>>();

/** Node arguments that start a script: its bundle, or tsx. */
function scriptCommand(script: string): Promise<string[]> {
  let command = commands.get(script);
  if (command === undefined) {
    command = (async () => {
      try {
        const esbuild = await import("esbuild");
        const dir = mkdtempSync(join(tmpdir(), "gatehouse-worker-"));
        process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
        const outfile = join(dir, "worker.cjs");
        await esbuild.build({
          entryPoints: [script], bundle: true, platform: "node", format: "cjs", target: "node20", outfile, logLevel: "error",
        });
        return [outfile];
      } catch {
        return ["--import", "tsx", script];
      }
    })();
    commands.set(script, command);
  }
  return command;
}

export function spawnWorker(cfg: WorkerProcessConfig): Promise<WorkerHandle> {
  return spawnScript(SCRIPT, cfg.name, { GH_FAULT_WORKER: JSON.stringify(cfg) });
}

/**
 * Starts `script` (a file under tests/helpers that prints `{ "ready": true }`
 * once it runs) as a child process with `env` added, under the same
 * contract as `spawnWorker`.
 */
export async function spawnScript(script: string, name: string, env: Record<string, string>): Promise<WorkerHandle> {
  const cfg = { name };
  const child = spawn(process.execPath, await scriptCommand(script), {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: Array<Record<string, unknown>> = [];
  const stderr: string[] = [];
  let exitCode: number | null | undefined;
  let onReady: () => void = () => {};
  let onFail: (e: Error) => void = () => {};
  const ready = new Promise<void>((res, rej) => {
    onReady = res;
    onFail = rej;
  });
  ready.catch(() => {}); // observed by callers that care
  let buf = "";
  child.stdout!.setEncoding("utf8");
  child.stdout!.on("data", (chunk: string) => {
    buf += chunk;
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        const o = JSON.parse(line) as Record<string, unknown>;
        lines.push(o);
        if (o.ready === true) onReady();
      } catch {
        lines.push({ text: line });
      }
    }
  });
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (chunk: string) => stderr.push(chunk));
  const exited = new Promise<number | null>((resolve) => {
    child.on("exit", (code) => {
      exitCode = code;
      onFail(new Error(`worker ${cfg.name} exited (code ${code}) before it was ready: ${stderr.join("")}`));
      resolve(code);
    });
  });
  return {
    name: cfg.name,
    child,
    pid: child.pid!,
    ready,
    exited,
    lines,
    stderr,
    alive: () => exitCode === undefined,
    signal(sig) {
      if (exitCode === undefined) child.kill(sig);
    },
    async stop() {
      if (exitCode !== undefined) return;
      child.kill("SIGCONT");
      child.kill("SIGKILL");
      await exited;
    },
  };
}

export { seeded } from "./seeded.ts";

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `check` until it returns a value other than undefined/false, or throws after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs: number, everyMs = 25): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v as T;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}
