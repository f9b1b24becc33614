/**
 * A store operation is written in at most four hand-written files
 * (store/script/operation.ts, docs/store.md "Adding a store operation"):
 * its Lua script, the section file of store/script/ that describes the
 * script and holds the port method over it, the port (store/port.ts) and
 * the memory store's section file. Everything else (the bundle, the
 * binding into the store object, running a script on Redis, Upstash and
 * Redis Cluster) is generated or generic.
 *
 * For every described script this test lists the hand-written files under
 * store/ whose code (comments left out) names the script or one of the
 * port methods over it (a call on another object, `x.name(`, is a use, not
 * a definition: left out), and fails above four. An operation that brings
 * its own kind of key also names it in store/keys.ts (the key layout every
 * adapter and the Cluster audit share): those are listed in OWN_KEYS and
 * may have that fifth file. The test also pins which scripts are on the
 * path: all but the commit and the claims, which keep their tuned path
 * (store/script/wire.ts, `decode` in store/script/replies.ts).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { scripts } from "../../store/lua/scripts.gen.ts";
import type { ScriptOp } from "../../store/script/operation.ts";
import * as turnProtocol from "../../store/script/turn-protocol.ts";
import * as reads from "../../store/script/reads.ts";
import * as lifecycle from "../../store/script/lifecycle.ts";
import * as sideStores from "../../store/script/side-stores.ts";
import * as approvals from "../../store/script/approvals.ts";
import * as namedEvents from "../../store/script/named-events.ts";
import * as schedules from "../../store/script/schedules.ts";
import * as keySlots from "../../store/script/key-slots.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const STORE = join(ROOT, "store");
const SECTIONS = { "turn-protocol": turnProtocol, reads, lifecycle, "side-stores": sideStores, approvals, "named-events": namedEvents, schedules, "key-slots": keySlots };
/** The scripts on the tuned path (not described; store/script/replies.ts decodes them). */
const TUNED = ["claim", "claim_next", "commit"];
const MAX_FILES = 4;
/** Scripts whose operation brings its own kind of key, built in store/keys.ts under the operation's name. */
const OWN_KEYS = ["delivery", "rate_limit"];

/** The text of a source file without its comments (TS `//`, `/* *\/`; Lua `--`, `--[[ ]]`). */
export function code(path: string, text: string): string {
  if (path.endsWith(".lua")) return text.replace(/--\[\[[\s\S]*?\]\]/g, "").replace(/--[^\n]*/g, "");
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:])\/\/[^\n]*/g, "$1");
}

/** Every hand-written source file under `dir` (generated `*.gen.ts` left out). */
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sources(p);
    return /\.(ts|lua)$/.test(name) && !name.endsWith(".gen.ts") ? [p] : [];
  });
}

/** The hand-written files under `storeDir` that name one of `names` in code, and the script's own file. */
export function filesNaming(storeDir: string, script: string, names: readonly string[]): string[] {
  const word = new RegExp(`(?<![.\\w])(${names.join("|")})\\b`);
  const found = sources(storeDir).filter((p) => p.endsWith(`/lua/${script}.lua`) || word.test(code(p, readFileSync(p, "utf8"))));
  return found.map((p) => relative(join(storeDir, ".."), p)).sort();
}

/** The exported functions of a section file that run `constName`. */
function methodsOver(sectionFile: string, constName: string): string[] {
  const text = code(sectionFile, readFileSync(sectionFile, "utf8"));
  const blocks = text.split(/^(?=export (?:async )?function )/m).slice(1);
  return blocks.filter((b) => new RegExp(`\\b${constName}\\b`).test(b)).map((b) => /function (\w+)/.exec(b)![1]);
}

const described = Object.entries(SECTIONS).flatMap(([section, m]) =>
  Object.entries(m as Record<string, unknown>)
    .filter((e): e is [string, ScriptOp] => typeof e[1] === "object" && e[1] !== null && typeof (e[1] as ScriptOp).reply === "function")
    .map(([constName, op]) => ({ section, constName, op, methods: methodsOver(join(STORE, "script", `${section}.ts`), constName) }))
);

describe("a store operation in four hand-written files or fewer", () => {
  it("every script but the commit and the claims is described beside its port method", () => {
    const all = Object.keys(scripts).sort();
    expect(described.map((d) => d.op.script).sort()).toEqual(all.filter((s) => !TUNED.includes(s)));
  });

  it.each(described.map((d) => [d.op.script, d] as const))("%s", (script, d) => {
    expect(d.methods.length, "port methods over the script").toBeGreaterThan(0);
    const files = filesNaming(STORE, script, [script, ...d.methods]);
    const counted = OWN_KEYS.includes(script) ? files.filter((f) => f !== "store/keys.ts") : files;
    expect(counted.length, `${script} (${d.methods.join(", ")}) is written in ${files.join(", ")}`).toBeLessThanOrEqual(MAX_FILES);
  });

  it.each(described.map((d) => [d.op.script, d] as const))("%s: every reply word it lists is one its script can answer", (script, d) => {
    const source = scripts[script as keyof typeof scripts];
    for (const w of d.op.words) expect(source, `'${w}' in ${script}.lua`).toMatch(new RegExp(`'${w}[ ']`));
  });
});
