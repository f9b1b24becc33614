/**
 * Each Lua script's arguments are named once, and the three places that use
 * the names cannot drift apart: the layout its encoder is built from
 * (its descriptor in store/script/*.ts, store/script/operation.ts; the
 * commit's and the claims' in store/lua/args/turn-protocol.ts), the script's header (`KEYS[1] head: ...`, one entry
 * a line, `KEYS[n..] rest: ...` for a variable tail) and the named locals the
 * script decodes KEYS and ARGV into at its top, in the same order. A script
 * reads no other position by number.
 */
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { ScriptLayout } from "../../store/lua/args/layout.ts";
import { encoder } from "../../store/lua/args/layout.ts";
import * as turnProtocol from "../../store/lua/args/turn-protocol.ts";
import * as turnProtocolOps from "../../store/script/turn-protocol.ts";
import * as reads from "../../store/script/reads.ts";
import * as lifecycle from "../../store/script/lifecycle.ts";
import * as sideStores from "../../store/script/side-stores.ts";
import * as approvals from "../../store/script/approvals.ts";
import * as namedEvents from "../../store/script/named-events.ts";
import * as schedules from "../../store/script/schedules.ts";
import * as keySlots from "../../store/script/key-slots.ts";

const dir = new URL("../../store/lua/", import.meta.url).pathname;
const layouts = [turnProtocol, turnProtocolOps, reads, lifecycle, sideStores, approvals, namedEvents, schedules, keySlots]
  .flatMap((m) => Object.values(m))
  .filter((v): v is ScriptLayout => typeof v === "object" && v !== null && "script" in v);
const scripts = readdirSync(dir).filter((f) => f.endsWith(".lua")).map((f) => f.slice(0, -4)).sort();

interface Parsed {
  header: Array<{ list: string; index: string; name: string }>;
  decoded: Array<{ list: string; index: number; name: string }>;
  /** Positions read by number outside the decoding lines. */
  stray: string[];
}

/** The header entries, the decoding locals and the stray positional reads of one script. */
export function parseScript(source: string): Parsed {
  const end = source.startsWith("--[[") ? source.indexOf("]]") + 2 : 0;
  const header = [...source.slice(0, end).matchAll(/^\s*(KEYS|ARGV)\[(\d+(?:\.\.)?)\] ([a-z_][a-z0-9_]*):/gm)]
    .map((m) => ({ list: m[1], index: m[2], name: m[3] }));
  const decoded: Parsed["decoded"] = [];
  const stray: string[] = [];
  for (const line of source.slice(end).split("\n")) {
    const m = /^local ([a-z_][a-z0-9_]*(?:, [a-z_][a-z0-9_]*)*) = ((?:KEYS|ARGV)\[\d+\](?:, (?:KEYS|ARGV)\[\d+\])*)$/.exec(line);
    if (m) {
      const names = m[1].split(", ");
      const refs = m[2].split(", ").map((r) => /^(KEYS|ARGV)\[(\d+)\]$/.exec(r)!);
      names.forEach((name, i) => decoded.push({ list: refs[i]?.[1] ?? "?", index: Number(refs[i]?.[2]), name }));
      continue;
    }
    const code = line.replace(/--.*$/, "");
    for (const r of code.matchAll(/\b(KEYS|ARGV)\[\d+\]/g)) stray.push(`${r[0]} in: ${line.trim()}`);
  }
  return { header, decoded, stray };
}

/** What the header and the decoding must be for a layout. */
function expected(l: ScriptLayout) {
  const named = (list: string, names: readonly string[]) => names.map((name, i) => ({ list, index: i + 1, name }));
  const decoded = [...named("KEYS", l.keys), ...named("ARGV", l.argv)];
  const header = [
    ...named("KEYS", l.keys).map((e) => ({ ...e, index: String(e.index) })),
    ...(l.keysRest ? [{ list: "KEYS", index: `${l.keys.length + 1}..`, name: l.keysRest }] : []),
    ...named("ARGV", l.argv).map((e) => ({ ...e, index: String(e.index) })),
    ...(l.argvRest ? [{ list: "ARGV", index: `${l.argv.length + 1}..`, name: l.argvRest }] : []),
  ];
  return { header, decoded };
}

describe("Lua script arguments: layout, header and decoding agree", () => {
  it("every script has exactly one layout", () => {
    expect(layouts.map((l) => l.script).sort()).toEqual(scripts);
  });

  it.each(layouts.map((l) => [l.script, l] as const))("%s", (name, layout) => {
    const parsed = parseScript(readFileSync(`${dir}${name}.lua`, "utf8"));
    const want = expected(layout);
    expect(parsed.header, "header entries").toEqual(want.header);
    expect(parsed.decoded, "named locals at the top").toEqual(want.decoded);
    expect(parsed.stray, "positions read by number").toEqual([]);
    const names = [...layout.keys, ...layout.argv, layout.keysRest, layout.argvRest].filter((n) => n !== undefined);
    expect(new Set(names).size, "names are distinct").toBe(names.length);
  });

  it("fails on a script whose header and layout drift apart", () => {
    const source = "--[[\n  x\n  KEYS[1] head: h\n  ARGV[1] now: n\n  ARGV[2] turn: t\n]]\nlocal head = KEYS[1]\nlocal turn, now = ARGV[1], ARGV[2]\nreturn ARGV[3]\n";
    const layout = { script: "ping", keys: ["head"], argv: ["now", "turn"] } as const;
    const parsed = parseScript(source);
    const want = expected(layout);
    expect(parsed.header).toEqual(want.header);
    expect(parsed.decoded).not.toEqual(want.decoded);
    expect(parsed.stray).toEqual(["ARGV[3] in: return ARGV[3]"]);
  });

  it("the encoder places named values by the layout and refuses a gap", () => {
    const enc = encoder({ script: "ping", keys: ["a", "b"], argv: ["x", "y"], optional: ["y"], keysRest: "more", argvRest: "tail" } as const);
    expect(enc({ a: "A", b: "B", x: "X", y: "Y", more: ["M"], tail: ["T1", "T2"] })).toEqual({
      script: "ping", keys: ["A", "B", "M"], argv: ["X", "Y", "T1", "T2"],
    });
    expect(enc({ a: "A", b: "B", x: "X" })).toEqual({ script: "ping", keys: ["A", "B"], argv: ["X"] });
    expect(() => enc({ a: "A", b: "B", x: "X", tail: ["T"] })).toThrow(/tail is given after y was left out/);
    expect(() => enc({ a: "A", x: "X" } as never)).toThrow(/argument b is missing/);
  });
});
