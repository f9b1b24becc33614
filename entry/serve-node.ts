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
import type { Env } from "./config.ts";
import { createNodeServer } from "./node-server.ts";
import { describeStartupFailure, prepareFromEnv, type StartFromEnvInput, StartupError } from "./startup.ts";

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
  const wanted = options.port ?? 8787;
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
  const url = `http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}`;
  gatehouse.startWorker();
  logger.info("gatehouse listening", { url, store: gatehouse.store.kind, agents: [...gatehouse.agents.keys()] });

  let closing: Promise<void> | undefined;
  const close = () =>
    closing ??= (async () => {
      // Open SSE streams would keep server.close() waiting: stop accepting, then end idle and open connections.
      server.close();
      server.closeIdleConnections?.();
      await gatehouse.close();
      server.closeAllConnections?.();
    })();
  if (options.handleSignals ?? true) {
    const onSignal = (signal: string) => {
      logger.info("shutting down", { signal });
      close().then(() => process.exit(0), (err) => {
        logger.error("shutdown failed", { error: String(err) });
        process.exit(1);
      });
    };
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
  }
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
export async function startNode(options: StartNodeOptions): Promise<NodeServer> {
  let prepared: Awaited<ReturnType<typeof prepareFromEnv>> | undefined;
  try {
    prepared = await prepareFromEnv({ ...options, env: options.env ?? process.env, redis: redisStore });
    return await serveNode(prepared.gatehouse, {
      port: prepared.config.port,
      hostname: prepared.config.hostname,
      logger: prepared.logger,
    });
  } catch (err) {
    await prepared?.gatehouse.close().catch(() => {});
    if (options.exitOnError === false) throw err;
    return exitWith(err);
  }
}

/** Prints the one-line description of a failed start and exits with its code. */
export function exitWith(err: unknown): never {
  const { line, exitCode } = describeStartupFailure(err);
  process.stderr.write(`${line}\n`);
  process.exit(exitCode);
}
