/**
 * A static check of the store scripts' first rule: all checks come before
 * the first write (Redis has no rollback, so a write before a refusal stays).
 *
 * A script (after include expansion) is split into units: its main chunk and
 * every top-level `local function`. A unit writes when it calls a writing
 * Redis command (`redis.call('HSET', ...)`, also `redis.pcall`) or a unit
 * that writes (`append_events(...)`). Every unit that writes carries exactly
 * one marker comment at its top level:
 *
 * - `-- checks done` (any text may follow, e.g. `-- Checks done; writes
 *   follow.`): no write happens before it, and no `return` after it except
 *   the unit's last statement (a `return` inside a branch after the marker
 *   would be a refusal after writes), unless the line above says
 *   `-- outcome after checks done: <why>` (a second success reply);
 * - `-- no checks: <why>`: the unit refuses nothing (it claims, or only
 *   maintains bells); writes and returns are free.
 *
 * A write before the marker that belongs to a refusal on purpose (the
 * refusal itself writes, e.g. releasing the lease) is annotated on its line
 * or the line above with `-- write before checks done: <why>`; the test pins
 * the list of those exemptions. The main chunk of a script that writes
 * nothing says `-- reads only`; a function without writes carries no marker.
 * Every command a script sends must be a string literal and be known here as
 * reading or writing, so a new command cannot slip past unclassified.
 */

/** Redis commands that change data (or publish). */
export const WRITE_COMMANDS = new Set([
  "SET", "SETNX", "SETEX", "PSETEX", "MSET", "MSETNX", "GETSET", "GETDEL", "GETEX", "APPEND", "SETRANGE",
  "INCR", "INCRBY", "INCRBYFLOAT", "DECR", "DECRBY",
  "DEL", "UNLINK", "EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT", "PERSIST", "RENAME", "RENAMENX", "COPY", "MOVE",
  "RESTORE", "SORT", "FLUSHDB", "FLUSHALL", "SWAPDB",
  "HSET", "HSETNX", "HMSET", "HDEL", "HINCRBY", "HINCRBYFLOAT", "HEXPIRE", "HPEXPIRE", "HEXPIREAT", "HPEXPIREAT",
  "HPERSIST", "HGETDEL", "HGETEX", "HSETEX",
  "LPUSH", "RPUSH", "LPUSHX", "RPUSHX", "LPOP", "RPOP", "LSET", "LREM", "LTRIM", "LINSERT", "LMOVE", "RPOPLPUSH",
  "LMPOP", "BLPOP", "BRPOP", "BLMOVE", "BRPOPLPUSH", "BLMPOP",
  "SADD", "SREM", "SPOP", "SMOVE", "SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE",
  "ZADD", "ZINCRBY", "ZREM", "ZREMRANGEBYSCORE", "ZREMRANGEBYRANK", "ZREMRANGEBYLEX", "ZPOPMIN", "ZPOPMAX",
  "BZPOPMIN", "BZPOPMAX", "ZMPOP", "BZMPOP", "ZRANGESTORE", "ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE",
  "XADD", "XDEL", "XTRIM", "XACK", "XCLAIM", "XAUTOCLAIM", "XGROUP", "XSETID", "XREADGROUP",
  "PFADD", "PFMERGE", "PFCOUNT", "SETBIT", "BITOP", "BITFIELD", "GEOADD", "GEORADIUS", "GEOSEARCHSTORE",
  "PUBLISH", "SPUBLISH",
]);

/** Redis commands that only read. */
export const READ_COMMANDS = new Set([
  "GET", "MGET", "STRLEN", "GETRANGE", "EXISTS", "TYPE", "TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME",
  "HGET", "HMGET", "HGETALL", "HEXISTS", "HLEN", "HKEYS", "HVALS", "HSTRLEN", "HSCAN",
  "LLEN", "LRANGE", "LINDEX", "LPOS",
  "SCARD", "SMEMBERS", "SISMEMBER", "SMISMEMBER", "SSCAN",
  "ZRANGE", "ZRANGEBYSCORE", "ZREVRANGE", "ZREVRANGEBYSCORE", "ZRANGEBYLEX", "ZSCORE", "ZMSCORE", "ZCARD", "ZCOUNT",
  "ZRANK", "ZREVRANK", "ZSCAN",
  "XRANGE", "XREVRANGE", "XLEN", "XINFO",
  "SCAN", "KEYS",
]);

export interface Token {
  kind: "name" | "string" | "number" | "comment" | "op";
  /** The text; for strings the unquoted content, for comments the text after `--`. */
  text: string;
  line: number;
}

/** Lua tokens, comments included (long brackets, escapes and nested levels handled). */
export function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  let line = 1;
  const longBracket = (at: number): { level: number; len: number } | null => {
    const m = /^\[(=*)\[/.exec(src.slice(at, at + 64));
    return m ? { level: m[1].length, len: m[0].length } : null;
  };
  const readLong = (at: number, level: number, openLen: number) => {
    const close = `]${"=".repeat(level)}]`;
    const end = src.indexOf(close, at + openLen);
    if (end < 0) throw new Error(`unclosed long bracket at line ${line}`);
    return { text: src.slice(at + openLen, end), next: end + close.length };
  };
  while (i < src.length) {
    const c = src[i];
    if (c === "\n") {
      line++;
      i++;
    } else if (/\s/.test(c)) {
      i++;
    } else if (src.startsWith("--", i)) {
      const lb = longBracket(i + 2);
      const start = line;
      if (lb) {
        const { text, next } = readLong(i + 2, lb.level, lb.len);
        out.push({ kind: "comment", text, line: start });
        line += text.split("\n").length - 1;
        i = next;
      } else {
        const end = src.indexOf("\n", i);
        const stop = end < 0 ? src.length : end;
        out.push({ kind: "comment", text: src.slice(i + 2, stop).trim(), line: start });
        i = stop;
      }
    } else if (c === "'" || c === '"') {
      let j = i + 1;
      let text = "";
      while (j < src.length && src[j] !== c) {
        if (src[j] === "\n") throw new Error(`unfinished string at line ${line}`);
        if (src[j] === "\\") {
          text += src.slice(j, j + 2);
          j += 2;
        } else text += src[j++];
      }
      out.push({ kind: "string", text, line });
      i = j + 1;
    } else if (c === "[" && longBracket(i)) {
      const lb = longBracket(i)!;
      const { text, next } = readLong(i, lb.level, lb.len);
      out.push({ kind: "string", text, line });
      line += text.split("\n").length - 1;
      i = next;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i))!;
      out.push({ kind: "name", text: m[0], line });
      i += m[0].length;
    } else if (/[0-9]/.test(c)) {
      const m = /^(0[xX][0-9a-fA-F]+|[0-9]*\.?[0-9]+([eE][+-]?[0-9]+)?)/.exec(src.slice(i))!;
      out.push({ kind: "number", text: m[0], line });
      i += m[0].length;
    } else {
      const m = /^(\.\.\.|\.\.|==|~=|<=|>=|::|.)/.exec(src.slice(i))!;
      out.push({ kind: "op", text: m[0], line });
      i += m[0].length;
    }
  }
  return out;
}

const OPENS = new Set(["function", "if", "do", "repeat"]);
const CLOSES = new Set(["end", "until"]);

export interface Unit {
  /** "main" or the function's name. */
  name: string;
  /** The unit's tokens; depth is relative to the unit's own body. */
  tokens: Array<Token & { depth: number }>;
}

/** Splits a script into its main chunk and its top-level `local function`s. */
export function units(src: string): Unit[] {
  const toks = tokenize(src);
  const main: Unit = { name: "main", tokens: [] };
  const out: Unit[] = [main];
  let depth = 0;
  let current: Unit | null = null;
  let base = 0;
  for (let k = 0; k < toks.length; k++) {
    const t = toks[k];
    const isKw = t.kind === "name";
    if (isKw && t.text === "local" && depth === 0 && toks[k + 1]?.text === "function" && toks[k + 2]?.kind === "name") {
      current = { name: toks[k + 2].text, tokens: [] };
      out.push(current);
      base = 1;
      depth = 1;
      k += 2;
      continue;
    }
    if (isKw && OPENS.has(t.text)) {
      (current ?? main).tokens.push({ ...t, depth: depth - base });
      depth++;
      continue;
    }
    if (isKw && CLOSES.has(t.text)) {
      depth--;
      if (current && depth === 0) {
        current = null;
        base = 0;
        continue;
      }
      (current ?? main).tokens.push({ ...t, depth: depth - base });
      continue;
    }
    (current ?? main).tokens.push({ ...t, depth: depth - base });
  }
  if (depth !== 0) throw new Error(`unbalanced blocks (depth ${depth} at the end)`);
  return out;
}

export interface Call {
  /** A Redis command (upper case) or the name of a unit. */
  target: string;
  kind: "command" | "unit";
  line: number;
  depth: number;
  index: number;
}

function callsOf(u: Unit, unitNames: Set<string>, problems: string[], where: string): Call[] {
  const out: Call[] = [];
  const t = u.tokens;
  for (let k = 0; k < t.length; k++) {
    if (t[k].kind === "name" && t[k].text === "redis" && t[k + 1]?.text === "." && /^p?call$/.test(t[k + 2]?.text ?? "") && t[k + 3]?.text === "(") {
      const arg = t[k + 4];
      if (arg?.kind !== "string") {
        problems.push(`${where}:${t[k].line}: redis.${t[k + 2].text} with a command that is not a string literal`);
        continue;
      }
      out.push({ target: arg.text.toUpperCase(), kind: "command", line: t[k].line, depth: t[k].depth, index: k });
    } else if (t[k].kind === "name" && unitNames.has(t[k].text) && t[k + 1]?.text === "(" && t[k - 1]?.text !== "function" && t[k - 1]?.text !== ".") {
      out.push({ target: t[k].text, kind: "unit", line: t[k].line, depth: t[k].depth, index: k });
    }
  }
  return out;
}

export interface Exemption {
  unit: string;
  target: string;
  line: number;
  why: string;
}

export interface Report {
  /** Rule violations; empty when the script follows the rule. */
  problems: string[];
  /** Units that write, with the marker they carry. */
  writers: Array<{ unit: string; marker: "checks done" | "no checks" }>;
  exemptions: Exemption[];
}

const CHECKS_DONE = /^checks done\b/i;
const NO_CHECKS = /^no checks:\s*\S/i;
const EXEMPT = /^write before checks done:\s*(\S.*)$/i;
const READS_ONLY = /^reads only\b/i;
const OUTCOME = /^outcome after checks done:\s*\S/i;

/** Checks one expanded script; `file` names it in the messages. */
export function checkScript(src: string, file: string): Report {
  const problems: string[] = [];
  const us = units(src);
  const names = new Set(us.filter((u) => u.name !== "main").map((u) => u.name));
  const calls = new Map(us.map((u) => [u.name, callsOf(u, names, problems, `${file} (${u.name})`)]));
  for (const cs of calls.values()) {
    for (const c of cs) {
      if (c.kind === "command" && !WRITE_COMMANDS.has(c.target) && !READ_COMMANDS.has(c.target)) {
        problems.push(`${file}:${c.line}: command ${c.target} is neither a known read nor a known write; classify it in tests/helpers/lua-writes.ts`);
      }
    }
  }
  // Writers, to a fixed point: a unit that calls a writing unit writes.
  const writes = new Set<string>();
  for (let changed = true; changed; ) {
    changed = false;
    for (const u of us) {
      if (writes.has(u.name)) continue;
      if (calls.get(u.name)!.some((c) => (c.kind === "command" ? WRITE_COMMANDS.has(c.target) : writes.has(c.target)))) {
        writes.add(u.name);
        changed = true;
      }
    }
  }
  const isWrite = (c: Call) => (c.kind === "command" ? WRITE_COMMANDS.has(c.target) : writes.has(c.target));

  const writers: Report["writers"] = [];
  const exemptions: Exemption[] = [];
  for (const u of us) {
    const where = `${file} (${u.name === "main" ? "main chunk" : `function ${u.name}`})`;
    const comments = u.tokens.map((t, index) => ({ t, index })).filter(({ t }) => t.kind === "comment");
    const markers = comments.filter(({ t }) => CHECKS_DONE.test(t.text) || NO_CHECKS.test(t.text));
    const readsOnly = comments.filter(({ t }) => READS_ONLY.test(t.text));
    if (!writes.has(u.name)) {
      if (markers.length > 0) problems.push(`${where}:${markers[0].t.line}: carries a marker but writes nothing`);
      if (u.name === "main" && readsOnly.length !== 1) {
        problems.push(`${where}: writes nothing, so it says "-- reads only" once, found ${readsOnly.length}`);
      }
      continue;
    }
    if (readsOnly.length > 0) problems.push(`${where}:${readsOnly[0].t.line}: says "-- reads only" but writes`);
    if (markers.length !== 1) {
      problems.push(`${where}: writes, so it needs exactly one "-- checks done" or "-- no checks: <why>" marker, found ${markers.length}`);
      continue;
    }
    const m = markers[0];
    if (m.t.depth !== 0) {
      problems.push(`${where}:${m.t.line}: the marker must stand at the unit's top level, not inside a block`);
      continue;
    }
    if (NO_CHECKS.test(m.t.text)) {
      writers.push({ unit: u.name, marker: "no checks" });
      continue;
    }
    writers.push({ unit: u.name, marker: "checks done" });
    for (const c of calls.get(u.name)!) {
      if (c.index > m.index || !isWrite(c)) continue;
      const note = comments.find(({ t }) => EXEMPT.test(t.text) && (t.line === c.line || t.line === c.line - 1));
      if (note) {
        exemptions.push({ unit: u.name, target: c.target, line: c.line, why: EXEMPT.exec(note.t.text)![1] });
      } else {
        problems.push(`${where}:${c.line}: ${c.kind === "command" ? c.target : `${c.target}() (writes)`} before "-- checks done" (line ${m.t.line})`);
      }
    }
    u.tokens.forEach((t, index) => {
      const outcome = comments.some(({ t: c }) => OUTCOME.test(c.text) && (c.line === t.line || c.line === t.line - 1));
      if (index > m.index && t.kind === "name" && t.text === "return" && t.depth !== 0 && !outcome) {
        problems.push(`${where}:${t.line}: return inside a block after "-- checks done" (line ${m.t.line}): a refusal after writes`);
      }
    });
  }
  return { problems, writers, exemptions };
}
