/**
 * A private redis-server for tests: a free loopback port (never 6379), its own
 * temp dir, no persistence unless asked. Kill it to simulate a crash, start it
 * again on the same port and dir to test recovery (with `appendonly: true` the
 * AOF survives).
 *
 * @example
 * const redis = await startRedisServer();              // --save "" --appendonly no
 * const store = redisStore({ url: redis.url, prefix: "t1" });
 * await redis.kill("SIGKILL");                         // crash, data in memory is gone
 * await redis.start();                                 // same port, same dir
 * await redis.stop();                                  // kill and remove the dir
 *
 * const durable = await startRedisServer({ appendonly: true, appendfsync: "always" });
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface RedisServerOptions {
  /** Turn on the AOF (default false). */
  appendonly?: boolean;
  /** AOF fsync policy (default "everysec"). */
  appendfsync?: "always" | "everysec" | "no";
  /** maxmemory-policy (default the server's: noeviction). */
  maxmemoryPolicy?: string;
  /** More `--name value` arguments, e.g. ["--maxmemory", "64mb"]. */
  args?: string[];
  /** The redis-server binary (default `redis-server` on PATH). */
  bin?: string;
}

export interface RedisServer {
  readonly port: number;
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  /** Working dir (AOF and RDB files live here). */
  readonly dir: string;
  /** Whether the process is running. */
  readonly running: boolean;
  /** Sends a signal (default SIGKILL: a crash) and waits for the process to exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** SIGSTOP: the server keeps its connections but answers nothing (a stall) until resume(). */
  pause(): void;
  /** SIGCONT after pause(). */
  resume(): void;
  /** Starts the server again on the same port and dir; resolves when it answers PING. */
  start(): Promise<void>;
  /** kill("SIGKILL") then start(). */
  restart(): Promise<void>;
  /** Kills the server and removes its dir. */
  stop(): Promise<void>;
}

/** A port the OS considers free right now on 127.0.0.1 (never 6379). */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const srv = createServer();
      srv.once("error", reject);
      srv.listen(0, "127.0.0.1", () => {
        const p = (srv.address() as { port: number }).port;
        srv.close(() => resolve(p));
      });
    });
    if (port !== 6379) return port;
  }
}

/** Resolves when a PING on the port answers PONG, rejects after `timeoutMs`. */
async function waitForPing(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const sock = createConnection({ port, host: "127.0.0.1" });
      let buf = "";
      sock.setTimeout(500, () => {
        sock.destroy();
        resolve(false);
      });
      sock.on("connect", () => sock.write("PING\r\n"));
      sock.on("data", (d) => {
        buf += d.toString();
        if (buf.includes("\r\n")) {
          sock.destroy();
          resolve(buf.startsWith("+PONG"));
        }
      });
      sock.on("error", () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer PING within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function startRedisServer(opts: RedisServerOptions = {}): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "gatehouse-redis-"));
  const args = [
    "--port", String(port),
    "--bind", "127.0.0.1",
    "--dir", dir,
    "--save", "",
    "--appendonly", opts.appendonly ? "yes" : "no",
    "--appendfsync", opts.appendfsync ?? "everysec",
    "--protected-mode", "no",
    "--loglevel", "warning",
    ...(opts.maxmemoryPolicy ? ["--maxmemory-policy", opts.maxmemoryPolicy] : []),
    ...(opts.args ?? []),
  ];
  let proc: ChildProcess | null = null;
  let exited: Promise<void> = Promise.resolve();

  async function start() {
    if (proc) throw new Error(`redis-server on port ${port} is already running`);
    const p = spawn(opts.bin ?? "redis-server", args, { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    p.stderr?.on("data", (d) => (stderr += d.toString()));
    proc = p;
    exited = new Promise<void>((resolve) => p.once("exit", () => {
      if (proc === p) proc = null;
      resolve();
    }));
    const failed = new Promise<never>((_, reject) => {
      p.once("error", (err) => reject(err));
      p.once("exit", (code) => reject(new Error(`redis-server exited with ${code} before answering: ${stderr.trim()}`)));
    });
    failed.catch(() => {});
    await Promise.race([waitForPing(port, 10_000), failed]);
  }

  async function kill(signal: NodeJS.Signals = "SIGKILL") {
    if (!proc) return;
    proc.kill(signal);
    await exited;
  }

  await start();
  return {
    pause() {
      proc?.kill("SIGSTOP");
    },
    resume() {
      proc?.kill("SIGCONT");
    },
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    get running() {
      return proc !== null;
    },
    kill,
    start,
    async restart() {
      await kill("SIGKILL");
      await start();
    },
    async stop() {
      await kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
