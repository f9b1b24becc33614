/**
 * Startup shared by the runtime entries (Node, Deno, Bun): configuration from
 * the environment, the store opened and checked within a bound, the
 * gatehouse created; and the one-line description of whatever stops a start.
 *
 * Invariants:
 * - A start that fails says why in ONE line (`gatehouse: cannot start: …`)
 *   and exits with a code that names the kind of failure (STARTUP_EXIT_CODES);
 *   no stack trace, no stream of reconnect warnings. A Redis that cannot be
 *   reached gives up after `GATEHOUSE_STORE_TIMEOUT_MS` (default 5 s), with
 *   the client's last connection error in the line.
 * - Connection errors of the TCP client are silent until the first check
 *   succeeded (the start either succeeds or reports the last one); after
 *   that an outage is logged by the adapter's two state lines
 *   (`store_reconnecting` when it is lost, `store_ready` with the attempts
 *   and errors counted when it is back), not one line per error.
 * - A Redis whose persistence keeps less than GATEHOUSE_DURABILITY asks is
 *   one `store_durability_weaker` warning, never a failed start; one that
 *   refuses CONFIG is one `store_durability_unchecked` info line; one that
 *   keeps what is asked is one `store_durability` info line naming the
 *   settings it checked.
 * - Secrets do not reach the line: Redis URLs are shown as host:port, bearer
 *   tokens never.
 * Web APIs only (timers, URL): the runtime files pass in the environment
 * record and the TCP adapter.
 */
import {
  type AnyAgent,
  consoleLogger,
  createGatehouse,
  DefinitionError,
  EvictionPolicyError,
  type Gatehouse,
  type GatehouseOptions,
  type Logger,
  type Store,
  StoreInputError,
} from "../mod.ts";
import { STARTUP_EXIT_CODES, StartupError, type StartupFailureKind } from "../errors/startup.ts";
import { ConfigError, configFromEnv, type Env, type EnvConfig, nearestVariable } from "./config.ts";
import { storeFromEnv, type TcpStoreFactory } from "./store-from-env.ts";

export { STARTUP_EXIT_CODES, StartupError };
export type { StartupFailureKind };

/** The TCP adapter's connection lines, held back until the store opened (the startup line reports a failure). */
const CONNECTION_LINES = new Set(["store_reconnecting", "store_ready"]);

const oneLine = (s: string) => s.replace(/\s*\n\s*/g, " ").trim();

/** The one line and exit code for anything a start can throw. */
export function describeStartupFailure(err: unknown): { line: string; exitCode: number } {
  let kind: StartupFailureKind = "unexpected";
  let message = err instanceof Error ? err.message : String(err);
  if (err instanceof StartupError) kind = err.kind;
  else if (err instanceof ConfigError || err instanceof StoreInputError) kind = "config";
  else if (err instanceof DefinitionError) kind = "agents", message = `agent definitions refused: ${message}`;
  else if (err instanceof EvictionPolicyError) kind = "store";
  else if (err instanceof Error && err.name !== "Error") message = `${err.name}: ${message}`;
  return { line: `gatehouse: cannot start: ${oneLine(message)}`, exitCode: STARTUP_EXIT_CODES[kind] };
}

/** host:port of a Redis URL, never its user or password. */
export function redactedRedis(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.hostname}:${u.port || "6379"}`;
  } catch {
    return "the configured Redis";
  }
}

export interface StartFromEnvInput {
  agents: AnyAgent[];
  env: Env;
  /** More createGatehouse options (code wins over the environment). */
  options?: Omit<GatehouseOptions, "agents" | "store">;
  /** The TCP adapter for GATEHOUSE_REDIS_URL. */
  redis?: TcpStoreFactory;
  /** Default: JSON lines at GATEHOUSE_LOG's level. */
  logger?: Logger;
}

export interface Started {
  config: EnvConfig;
  logger: Logger;
  store: Store;
  gatehouse: Gatehouse;
}

/**
 * Parses the environment, opens and checks the store within
 * `storeTimeoutMs`, creates the gatehouse. Throws StartupError (or the
 * errors describeStartupFailure knows); opens nothing that it does not
 * close on failure.
 */
export async function prepareFromEnv(input: StartFromEnvInput): Promise<Started> {
  const config = configFromEnv(input.env);
  const logger = input.logger ?? input.options?.logger ?? consoleLogger(config.logLevel);
  for (const name of config.unknown) {
    const near = nearestVariable(name);
    logger.warn(near ? `unknown environment variable ignored (did you mean ${near}?)` : "unknown environment variable ignored", {
      variable: name,
      ...(near ? { didYouMean: near } : {}),
    });
  }
  if (!Array.isArray(input.agents) || input.agents.length === 0) {
    throw new StartupError("agents", "no agents to serve");
  }

  let started = false;
  let lastConnectionError: Error | undefined;
  // Once serving, errors are counted in the adapter's `store_ready` line instead of logged one by one.
  const onError = (err: Error) => {
    if (!started) lastConnectionError = err;
  };
  // Reconnect lines of the TCP adapter (store_reconnecting / store_ready) once serving; before that a
  // failing connection is reported by the one startup line instead. Its other lines (the persistence
  // check, store_durability_*, written while the store opens) pass at once.
  const storeLogger = {
    info: (msg: string, fields?: Record<string, unknown>) => (started || !CONNECTION_LINES.has(msg)) && logger.info(msg, fields),
    warn: (msg: string, fields?: Record<string, unknown>) => logger.warn(msg, fields),
  };
  const storeOptions = { onError, logger: storeLogger, ...(input.redis ? { redis: input.redis } : {}) };
  const where = input.env.GATEHOUSE_REDIS_URL?.trim()
    ? `redis at ${redactedRedis(input.env.GATEHOUSE_REDIS_URL.trim())}`
    : input.env.UPSTASH_REDIS_REST_URL?.trim() ? "Upstash" : "memory";

  let timer: ReturnType<typeof setTimeout> | undefined;
  const opening = storeFromEnv(input.env, storeOptions);
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const last = lastConnectionError ? `: ${lastConnectionError.message}` : "";
      reject(new StartupError("store", `cannot reach the store (${where}) within ${config.storeTimeoutMs} ms${last}`));
    }, config.storeTimeoutMs);
  });
  let store: Store;
  try {
    store = await Promise.race([opening, timeout]);
  } catch (err) {
    // The store may still open after the bound: close it then, so nothing keeps the process alive.
    opening.then((s) => s.close().catch(() => {}), () => {});
    if (err instanceof StartupError || err instanceof ConfigError || err instanceof StoreInputError) throw err;
    if (err instanceof EvictionPolicyError) throw new StartupError("store", err.message, { cause: err });
    const reason = lastConnectionError?.message ?? (err instanceof Error ? err.message : String(err));
    throw new StartupError("store", `cannot reach the store (${where}): ${reason}`, { cause: err });
  } finally {
    clearTimeout(timer);
  }
  started = true;

  try {
    const gatehouse = createGatehouse({ ...config.gatehouse, ...input.options, agents: input.agents, store, logger });
    return { config, logger, store, gatehouse };
  } catch (err) {
    await store.close().catch(() => {});
    throw err;
  }
}

/** Agents a module exports: `default` (an agent, an array, or `{ agents }`), `agents`, or every exported definition. */
export function agentsOfModule(mod: Record<string, unknown>, from: string): AnyAgent[] {
  const isAgent = (v: unknown): v is AnyAgent => typeof v === "object" && v !== null && (v as { kind?: unknown }).kind === "agent";
  const pick = (v: unknown): AnyAgent[] | undefined => {
    if (isAgent(v)) return [v];
    if (Array.isArray(v) && v.length > 0 && v.every(isAgent)) return v;
    if (typeof v === "object" && v !== null && "agents" in v) return pick((v as { agents: unknown }).agents);
    return undefined;
  };
  const chosen = pick(mod.default) ?? pick(mod.agents);
  if (chosen) return chosen;
  const all = new Set<AnyAgent>();
  for (const [key, v] of Object.entries(mod)) {
    if (key === "default") continue;
    for (const a of pick(v) ?? []) all.add(a);
  }
  if (all.size === 0) {
    throw new StartupError(
      "agents",
      `${from} exports no agent: export the results of defineAgent() (named exports, an \`agents\` array, or a default export)`,
    );
  }
  return [...all];
}

/** How a runtime's server is stopped, and how its process reacts to signals. */
export interface ServingHooks {
  hostname: string;
  /** The port the server listens on (after 0 was resolved). */
  port: number;
  logger: Logger;
  /** Stops accepting; awaited after the gatehouse closed (open streams must not hold the shutdown). */
  stop: () => Promise<void> | void;
  /** Runs once the gatehouse closed and the server stopped (e.g. end the connections left). */
  afterClose?: () => void;
  /** Registers a handler for SIGINT and SIGTERM; absent: no signal handling. */
  onSignal?: (handler: (signal: string) => void) => void;
  exit: (code: number) => never;
}

/**
 * What every runtime's serve does once its server listens: starts the
 * workers, logs the URL and returns one idempotent `close` of server and
 * gatehouse; on a signal it closes and exits 0 (1 when closing failed).
 * Closing drains first (`Gatehouse.drainWorker`): no new claims, the claims
 * in progress end and release their leases, `/healthz` answers `draining`
 * while requests are still served; then the server stops and the store closes.
 */
export function startServing(gatehouse: Gatehouse, h: ServingHooks): { url: string; close: () => Promise<void> } {
  const url = `http://${h.hostname.includes(":") ? `[${h.hostname}]` : h.hostname}:${h.port}`;
  gatehouse.startWorker();
  h.logger.info("gatehouse listening", { url, store: gatehouse.store.kind, agents: [...gatehouse.agents.keys()] });
  let closing: Promise<void> | undefined;
  const close = () =>
    closing ??= (async () => {
      // Graceful drain: /healthz says `draining` while the claims in progress end and hand their leases back.
      await gatehouse.drainWorker();
      const stopped = h.stop();
      await gatehouse.close();
      await stopped;
      h.afterClose?.();
    })();
  h.onSignal?.((signal) => {
    h.logger.info("shutting down", { signal });
    close().then(() => h.exit(0), (err) => {
      h.logger.error("shutdown failed", { error: String(err) });
      h.exit(1);
    });
  });
  return { url, close };
}

/**
 * The start every runtime entry shares: prepare from the environment, then
 * serve; on a failure close what was opened and, unless `exitOnError` is
 * false, print the one line and exit with its code (`fail`).
 */
export async function startWith<T>(
  input: StartFromEnvInput & { exitOnError?: boolean },
  serve: (prepared: Started) => Promise<T>,
  fail: (err: unknown) => never,
): Promise<T> {
  let prepared: Started | undefined;
  try {
    prepared = await prepareFromEnv(input);
    return await serve(prepared);
  } catch (err) {
    await prepared?.gatehouse.close().catch(() => {});
    if (input.exitOnError === false) throw err;
    return fail(err);
  }
}
