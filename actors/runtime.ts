/** Injected environment of the actors: time, ids and logging. */
import { randomHex } from "../common/hex.ts";

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export interface IdSource {
  turnId(): string;
  workerId(): string;
}

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export const systemClock: Clock = { now: () => Date.now() };

const hex = randomHex;

export const randomIds: IdSource = {
  turnId: () => `turn_${hex(8)}`,
  workerId: () => `w_${hex(6)}`,
};

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** JSON lines on the console, one per message; `level` filters. */
export function consoleLogger(level: "debug" | "info" | "warn" | "error" = "info"): Logger {
  const order = ["debug", "info", "warn", "error"];
  const min = order.indexOf(level);
  const log = (lvl: string) => (msg: string, fields?: Record<string, unknown>) => {
    if (order.indexOf(lvl) < min) return;
    console.log(JSON.stringify({ level: lvl, msg, ...fields }));
  };
  return { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") };
}
