/**
 * A rolling upgrade across builds on one Redis (docs/operations.md,
 * "Upgrades"). Three server processes of the build before definition
 * versions (the commit in tests/fixtures/rolling-upgrade/base-commit.txt,
 * checked out with `git archive` into a temp dir, node_modules linked) serve
 * 200 agents whose turns wait on an external tool mid-turn; while tasks keep
 * arriving and the test answers the calls, each old process is sent SIGTERM
 * and a process of this build started in its place, one by one. Checked:
 * - every acknowledged task ends its turn done (none lost);
 * - no agent is parked (`snapshot_unrestorable`, `worker_missing_definition`);
 * - no turn records two versions (its TASK_STARTED version and any `turn_upgraded`);
 * - every process exits 0 on SIGTERM, and none exits by itself.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import process from "node:process";
import { afterAll, describe, expect, it } from "vitest";
import { redisStore } from "../../store/redis.ts";
import type { Store } from "../../store/port.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { sleep, waitFor } from "../helpers/processes.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const SERVER = fileURLToPath(new URL("../helpers/upgrade-server.ts", import.meta.url));
const BASE = readFileSync(new URL("../fixtures/rolling-upgrade/base-commit.txt", import.meta.url), "utf8").trim();
const AGENTS = 200;
const LEASE_MS = 3_000;

const redis = useRedisServer({}, 60_000);
const children: ChildProcess[] = [];
/** Every server started, the replaced ones included. */
const started: Server[] = [];
let oldTree = "";
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  if (oldTree) rmSync(oldTree, { recursive: true, force: true });
});

/** The tree of the build before this change, with this tree's node_modules. */
function checkOutBase(): string {
  const dir = mkdtempSync(join(tmpdir(), "gatehouse-base-"));
  execFileSync("sh", ["-c", `git -C "${ROOT}" archive "${BASE}" | tar -x -C "${dir}"`]);
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
  return dir;
}

interface Server {
  name: string;
  child: ChildProcess;
  ready: Promise<void>;
  exited: Promise<number | null>;
  lines: Array<Record<string, unknown>>;
}

function start(name: string, root: string, prefix: string): Server {
  const child = spawn(process.execPath, ["--import", "tsx", SERVER], {
    cwd: root,
    env: { ...process.env, GH_ROOT: root, GH_UPGRADE_SERVER: JSON.stringify({ url: redis.url, prefix, leaseMs: LEASE_MS, name }) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  const lines: Array<Record<string, unknown>> = [];
  let onReady = () => {};
  const ready = new Promise<void>((r) => (onReady = r));
  let buf = "";
  child.stdout!.setEncoding("utf8");
  child.stdout!.on("data", (chunk: string) => {
    buf += chunk;
    for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
      const text = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        const o = JSON.parse(text) as Record<string, unknown>;
        lines.push(o);
        if (o.ready === true) onReady();
      } catch {
        lines.push({ text });
      }
    }
  });
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (chunk: string) => lines.push({ stderr: chunk }));
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  const server = { name, child, ready, exited, lines };
  started.push(server);
  return server;
}

describe("rolling upgrade across builds", () => {
  it("three old-build servers replaced one by one while 200 agents work: no task lost, no agent parked, no turn under two versions, clean exits", async () => {
    oldTree = checkOutBase();
    const prefix = `roll${Date.now() % 100_000}`;
    const store: Store = redisStore({ url: redis.url, prefix });
    const turns: Array<{ agentId: string; turnId: string }> = [];
    let seq = 0;
    const enqueue = async (agentId: string) => {
      const r = await store.enqueueTask({
        agentId, agentName: "assistant", workerTarget: "default", input: "go", options: {}, turnId: `t${++seq}`, now: Date.now(),
      });
      if (r.status === "enqueued") turns.push({ agentId, turnId: r.turnId });
    };
    const ids = Array.from({ length: AGENTS }, (_, i) => `ag${i}`);
    // The outside system: answers every pending `ask` call.
    let answering = true;
    const answer = (async () => {
      while (answering) {
        for (const id of ids) {
          const h = await store.getAgent(id);
          if (!h || h.state !== "waiting-tools" || h.activeTurnId === null) continue;
          const pending = Object.keys((h.snapshot as { context: { pending: Record<string, unknown> } }).context.pending);
          for (const toolCallId of pending) {
            await store.deliverToolResult({
              agentId: id, turnId: h.activeTurnId, toolCallId, outcome: { ok: true, value: "yes" }, afterExecution: "continue", source: "http", now: Date.now(),
            });
          }
        }
        await sleep(50);
      }
    })();
    const servers = [0, 1, 2].map((i) => start(`old${i}`, oldTree, prefix));
    try {
      await Promise.all(servers.map((s) => s.ready));
      for (const id of ids) await enqueue(id);
      // Replace each old server by a new one, while tasks keep arriving.
      for (let i = 0; i < 3; i++) {
        for (const id of ids.slice(i * 50, i * 50 + 50)) await enqueue(id);
        await sleep(1_000);
        const old = servers[i];
        old.child.kill("SIGTERM");
        expect(await old.exited).toBe(0);
        servers[i] = start(`new${i}`, ROOT, prefix);
        await servers[i].ready;
      }
      for (const id of ids.slice(0, 50)) await enqueue(id);
      await waitFor("every acknowledged task done", async () => {
        for (const t of turns) if ((await store.getTurn(t.agentId, t.turnId))?.status !== "done") return false;
        return true;
      }, 120_000, 500);
      const parked: string[] = [];
      const twoVersions: string[] = [];
      const starts = { withVersion: 0, without: 0 };
      for (const id of ids) {
        const events = await store.readEvents(id, 0, 100_000);
        for (const e of events) if (e.type === "snapshot_unrestorable" || e.type === "worker_missing_definition") parked.push(`${id} ${e.type}`);
        const versions = new Map<string, Set<string>>();
        for (const e of events) {
          const d = e.data as { event?: { type?: string; version?: string; turnId?: string }; from?: string; to?: string; turnId?: string };
          const add = (turn: string | undefined, v: string | undefined) => {
            if (!turn || v === undefined) return;
            if (!versions.has(turn)) versions.set(turn, new Set());
            versions.get(turn)!.add(v);
          };
          if (e.type === "transition" && d.event?.type === "TASK_STARTED") {
            add(d.event.turnId, d.event.version);
            starts[d.event.version === undefined ? "without" : "withVersion"]++;
          }
          if (e.type === "turn_upgraded") add(d.turnId, d.to);
        }
        for (const [turn, vs] of versions) if (vs.size > 1) twoVersions.push(`${id} ${turn}: ${[...vs]}`);
      }
      // Both builds ran turns: the old one records no version, this one does.
      expect(starts.without).toBeGreaterThan(0);
      expect(starts.withVersion).toBeGreaterThan(0);
      expect(parked).toEqual([]);
      const unreadable = started.flatMap((s) => s.lines).filter((l) => l.level === "error" || l.stderr !== undefined);
      expect(unreadable).toEqual([]);
      expect(twoVersions).toEqual([]);
      expect(turns.length).toBe(AGENTS + 200);
    } finally {
      answering = false;
      await answer;
      for (const s of servers) s.child.kill("SIGTERM");
      const codes = await Promise.all(servers.map((s) => s.exited));
      await store.close();
      expect(codes).toEqual([0, 0, 0]);
    }
  }, 240_000);
});
