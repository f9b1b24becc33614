/**
 * `@gatehouse-runtime/core/bun`: serve a gatehouse on Bun (Bun.serve), the
 * counterpart of `./node` and `./deno`: `serveBun(gatehouse, options)` binds
 * first and then starts the workers, rejecting with StartupError (kind
 * `listen`, exit code 5) on a busy port; `startBun({ agents })` is the whole
 * server from the environment with one-line startup errors.
 *
 * Bun's idle timeout is turned off: an SSE stream writes its keep-alive
 * comment every 15 s, past Bun's default 10 s, which would cut it.
 * The Bun API is reached through `globalThis.Bun` with the few types it needs
 * declared here, so the file compiles with tsc into the npm package.
 *
 * @example
 * import { createGatehouse } from "@gatehouse-runtime/core";
 * import { serveBun } from "@gatehouse-runtime/core/bun";
 * await serveBun(createGatehouse({ agents: [concierge] }), { port: 8787 });
 * @module
 */
import process from "node:process";
import { consoleLogger, type Gatehouse, type Logger } from "../mod.ts";
import { redisStore } from "../redis.ts";
import { DEFAULTS } from "../common/defaults.ts";
import type { Env } from "./config.ts";
import { describeStartupFailure, type StartFromEnvInput, StartupError, startServing, startWith } from "./startup.ts";

export { ConfigError, configFromEnv, ENV_VARIABLES } from "./config.ts";
export { describeStartupFailure, STARTUP_EXIT_CODES, StartupError } from "./startup.ts";

interface BunServer {
  port: number;
  stop(closeActiveConnections?: boolean): Promise<void>;
}
interface BunApi {
  serve(options: {
    port: number;
    hostname: string;
    idleTimeout: number;
    fetch: (req: Request) => Response | Promise<Response>;
  }): BunServer;
  env: Record<string, string | undefined>;
}

function bun(): BunApi {
  const b = (globalThis as { Bun?: BunApi }).Bun;
  if (!b) throw new StartupError("unexpected", "serveBun runs on Bun; on Node use @gatehouse-runtime/core/node");
  return b;
}

export interface ServeBunOptions {
  port?: number;
  hostname?: string;
  logger?: Logger;
  /** Stop, close and exit 0 on SIGINT/SIGTERM (default true). */
  handleSignals?: boolean;
}

export interface BunServing {
  url: string;
  port: number;
  hostname: string;
  close(): Promise<void>;
}

export function serveBun(gatehouse: Gatehouse, options: ServeBunOptions = {}): Promise<BunServing> {
  const B = bun();
  const hostname = options.hostname ?? "127.0.0.1";
  const wanted = options.port ?? DEFAULTS.port;
  const logger = options.logger ?? consoleLogger("info");
  let server: BunServer;
  try {
    server = B.serve({ port: wanted, hostname, idleTimeout: 0, fetch: gatehouse.fetch });
  } catch (err) {
    const code = (err as { code?: string }).code;
    const why = code === "EADDRINUSE"
      ? `port ${wanted} on ${hostname} is already in use (EADDRINUSE)`
      : `cannot listen on ${hostname}:${wanted}: ${(err as Error).message}`;
    return Promise.reject(new StartupError("listen", `${why}; set PORT or HOST`, { cause: err }));
  }
  const { url, close } = startServing(gatehouse, {
    hostname, port: server.port, logger,
    // Stop accepting and let open requests finish; open SSE streams do not hold the shutdown.
    stop: () => void server.stop(),
    ...(options.handleSignals ?? true ? { onSignal: (h: (signal: string) => void) => (process.once("SIGINT", h), process.once("SIGTERM", h)) } : {}),
    exit: (code) => process.exit(code),
  });
  return Promise.resolve({ url, port: server.port, hostname, close });
}

export interface StartBunOptions extends Omit<StartFromEnvInput, "env" | "redis"> {
  /** Default: Bun.env. */
  env?: Env;
  /** On a failed start: print one line to stderr and exit with its code (default true); else throw. */
  exitOnError?: boolean;
}

export function startBun(options: StartBunOptions): Promise<BunServing> {
  return startWith(
    { ...options, env: options.env ?? bun().env, redis: redisStore },
    (p) => serveBun(p.gatehouse, { port: p.config.port, hostname: p.config.hostname, logger: p.logger }),
    (err) => {
      const { line, exitCode } = describeStartupFailure(err);
      process.stderr.write(`${line}\n`);
      return process.exit(exitCode);
    },
  );
}
