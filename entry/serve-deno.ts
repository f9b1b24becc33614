/**
 * `@gatehouse-runtime/core/deno`: serve a gatehouse on Deno (Deno.serve), the
 * counterpart of `./node`: `serveDeno(gatehouse, options)` binds first and
 * then starts the workers, rejecting with StartupError (kind `listen`, exit
 * code 5) on a busy port; `startDeno({ agents })` is the whole server from
 * the environment with one-line startup errors.
 *
 * The Deno API is reached through `globalThis.Deno` with the few types it
 * needs declared here, so the file also compiles with tsc into the npm
 * package (`npm:@gatehouse-runtime/core/deno`).
 *
 * @example
 * import { createGatehouse } from "@gatehouse-runtime/core";
 * import { serveDeno } from "@gatehouse-runtime/core/deno";
 * await serveDeno(createGatehouse({ agents: [concierge] }), { port: 8787 });
 * @module
 */
import { consoleLogger, type Gatehouse, type Logger } from "../mod.ts";
import { redisStore } from "../redis.ts";
import { DEFAULTS } from "../common/defaults.ts";
import type { Env } from "./config.ts";
import { describeStartupFailure, type StartFromEnvInput, StartupError, startServing, startWith } from "./startup.ts";

export { ConfigError, configFromEnv, ENV_VARIABLES } from "./config.ts";
export { describeStartupFailure, STARTUP_EXIT_CODES, StartupError } from "./startup.ts";

interface DenoServer {
  finished: Promise<void>;
  shutdown(): Promise<void>;
  addr: { hostname: string; port: number };
}
interface DenoApi {
  serve(
    options: { port: number; hostname: string; onListen?: (addr: { hostname: string; port: number }) => void },
    handler: (req: Request) => Response | Promise<Response>,
  ): DenoServer;
  addSignalListener(signal: "SIGINT" | "SIGTERM", handler: () => void): void;
  exit(code: number): never;
  env: { toObject(): Record<string, string> };
  stderr: { writeSync(bytes: Uint8Array): number };
  errors: { AddrInUse: new (...args: never[]) => Error; PermissionDenied: new (...args: never[]) => Error };
}

function deno(): DenoApi {
  const d = (globalThis as { Deno?: DenoApi }).Deno;
  if (!d) throw new StartupError("unexpected", "serveDeno runs on Deno; on Node use @gatehouse-runtime/core/node");
  return d;
}

export interface ServeDenoOptions {
  port?: number;
  hostname?: string;
  logger?: Logger;
  /** Stop, close and exit 0 on SIGINT/SIGTERM (default true). */
  handleSignals?: boolean;
}

export interface DenoServing {
  url: string;
  port: number;
  hostname: string;
  close(): Promise<void>;
}

export function serveDeno(gatehouse: Gatehouse, options: ServeDenoOptions = {}): Promise<DenoServing> {
  const D = deno();
  const hostname = options.hostname ?? "127.0.0.1";
  const wanted = options.port ?? DEFAULTS.port;
  const logger = options.logger ?? consoleLogger("info");
  let server: DenoServer;
  try {
    server = D.serve({ port: wanted, hostname, onListen: () => {} }, gatehouse.fetch);
  } catch (err) {
    const why = err instanceof D.errors.AddrInUse
      ? `port ${wanted} on ${hostname} is already in use (EADDRINUSE)`
      : err instanceof D.errors.PermissionDenied
      ? `no permission to listen on ${hostname}:${wanted}`
      : `cannot listen on ${hostname}:${wanted}: ${(err as Error).message}`;
    return Promise.reject(new StartupError("listen", `${why}; set PORT or HOST`, { cause: err }));
  }
  const port = server.addr.port;
  const { url, close } = startServing(gatehouse, {
    hostname, port, logger,
    stop: () => server.shutdown(),
    ...(options.handleSignals ?? true
      ? { onSignal: (h: (signal: string) => void) => { for (const sig of ["SIGINT", "SIGTERM"] as const) D.addSignalListener(sig, () => h(sig)); } }
      : {}),
    exit: (code) => D.exit(code),
  });
  return Promise.resolve({ url, port, hostname, close });
}

export interface StartDenoOptions extends Omit<StartFromEnvInput, "env" | "redis"> {
  /** Default: Deno.env.toObject(). */
  env?: Env;
  /** On a failed start: print one line to stderr and exit with its code (default true); else throw. */
  exitOnError?: boolean;
}

export function startDeno(options: StartDenoOptions): Promise<DenoServing> {
  const D = deno();
  return startWith(
    { ...options, env: options.env ?? D.env.toObject(), redis: redisStore },
    (p) => serveDeno(p.gatehouse, { port: p.config.port, hostname: p.config.hostname, logger: p.logger }),
    (err) => {
      const { line, exitCode } = describeStartupFailure(err);
      D.stderr.writeSync(new TextEncoder().encode(`${line}\n`));
      return D.exit(exitCode);
    },
  );
}
