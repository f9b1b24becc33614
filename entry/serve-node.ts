/**
 * `@gatehouse-runtime/core/node`: serve a gatehouse on Node.
 *
 * - `serveNode(gatehouse, options)` listens (node:http through
 *   entry/node-server.ts: Node's parser errors answered as problem+json), then starts the worker pool and
 *   the watchdog; it resolves once the port is bound and rejects with a
 *   StartupError (kind `listen`, exit code 5) when it cannot be (EADDRINUSE,
 *   EACCES, EADDRNOTAVAIL), starting nothing. By default SIGINT/SIGTERM stop
 *   the server, let in-flight claims finish or be fenced, close the store and
 *   exit 0 (nothing acknowledged is lost either way).
 * - `startNode({ agents })` is the whole server from the environment (see
 *   entry/config.ts): what `gatehouse serve` and `gatehouse demo` run. A
 *   start that fails prints one line to stderr and exits with the code of
 *   STARTUP_EXIT_CODES.
 *
 * @example
 * import { createGatehouse } from "@gatehouse-runtime/core";
 * import { serveNode } from "@gatehouse-runtime/core/node";
 * const gh = createGatehouse({ agents: [concierge] });
 * const server = await serveNode(gh, { port: 8787 });
 * @module
 */
import type { Server } from "node:http";
import process from "node:process";
import { consoleLogger, type Gatehouse, type Logger } from "../mod.ts";
import { redisStore } from "../redis.ts";
import { DEFAULTS } from "../common/defaults.ts";
import type { Env } from "./config.ts";
import { createNodeServer } from "./node-server.ts";
import { describeStartupFailure, type StartFromEnvInput, StartupError, startServing, startWith } from "./startup.ts";

export { ConfigError, configFromEnv, ENV_VARIABLES } from "./config.ts";
export type { EnvConfig, EnvVariable, LogLevel } from "./config.ts";
export { describeStartupFailure, STARTUP_EXIT_CODES, StartupError } from "./startup.ts";
export type { StartupFailureKind } from "./startup.ts";

export interface ServeNodeOptions {
  /** Default 8787; 0 picks a free port (read it from the result). */
  port?: number;
  /** Default 127.0.0.1. */
  hostname?: string;
  /** Default: JSON lines at info level. */
  logger?: Logger;
  /** Stop, close and exit 0 on SIGINT/SIGTERM (default true). */
  handleSignals?: boolean;
}

export interface NodeServer {
  /** `http://host:port` */
  url: string;
  port: number;
  hostname: string;
  server: Server;
  /** Stops accepting requests, stops the workers (in-flight claims finish), closes the store. */
  close(): Promise<void>;
}

function listenFailure(err: NodeJS.ErrnoException, hostname: string, port: number): StartupError {
  const at = `${hostname}:${port}`;
  const why = err.code === "EADDRINUSE"
    ? `port ${port} on ${hostname} is already in use`
    : err.code === "EACCES"
    ? `no permission to listen on ${at}`
    : err.code === "EADDRNOTAVAIL"
    ? `address ${hostname} is not available on this machine`
    : `cannot listen on ${at}: ${err.message}`;
  return new StartupError("listen", `${why} (${err.code ?? "listen error"}); set PORT or HOST`, { cause: err });
}

export async function serveNode(gatehouse: Gatehouse, options: ServeNodeOptions = {}): Promise<NodeServer> {
  const hostname = options.hostname ?? "127.0.0.1";
  const wanted = options.port ?? DEFAULTS.port;
  const logger = options.logger ?? consoleLogger("info");
  const server: Server = createNodeServer(gatehouse.app.fetch, logger);
  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => reject(listenFailure(err, hostname, wanted));
    server.once("error", onError);
    server.listen(wanted, hostname, () => {
      server.off("error", onError);
      resolve();
    });
  });
  server.on("error", (err) => logger.error("http server error", { error: err.message }));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : wanted;
  const { url, close } = startServing(gatehouse, {
    hostname, port, logger,
    // Open SSE streams would keep server.close() waiting: stop accepting, end idle connections, and the open ones once closed.
    stop: () => {
      server.close();
      server.closeIdleConnections?.();
    },
    afterClose: () => server.closeAllConnections?.(),
    ...(options.handleSignals ?? true ? { onSignal: (h: (signal: string) => void) => (process.once("SIGINT", h), process.once("SIGTERM", h)) } : {}),
    exit: (code) => process.exit(code),
  });
  return { url, port, hostname, server, close };
}

export interface StartNodeOptions extends Omit<StartFromEnvInput, "env" | "redis"> {
  /** Default: process.env. */
  env?: Env;
  /** On a failed start: print one line to stderr and exit with its code (default true); else throw. */
  exitOnError?: boolean;
}

/**
 * The whole server from the environment: configuration, store (Redis,
 * Upstash or memory), gatehouse, HTTP, workers, signals.
 *
 * @example
 * import { startNode } from "@gatehouse-runtime/core/node";
 * import { concierge } from "./agents.js";
 * await startNode({ agents: [concierge] });
 */
export function startNode(options: StartNodeOptions): Promise<NodeServer> {
  return startWith(
    { ...options, env: options.env ?? process.env, redis: redisStore },
    (p) => serveNode(p.gatehouse, { port: p.config.port, hostname: p.config.hostname, logger: p.logger }),
    exitWith,
  );
}

/** Prints the one-line description of a failed start and exits with its code. */
export function exitWith(err: unknown): never {
  const { line, exitCode } = describeStartupFailure(err);
  process.stderr.write(`${line}\n`);
  process.exit(exitCode);
}
