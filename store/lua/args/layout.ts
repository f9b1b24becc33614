/**
 * The argument layout of a Lua script and the encoder built from it.
 *
 * A script takes positional lists (KEYS, ARGV). Each script's layout names
 * every position, in order, once: the same names head the script
 * (`KEYS[1] head: ...`, `ARGV[3] worker_json: ...`) and are the Lua locals
 * it decodes them into at its top. The encoder takes the values by those
 * names and puts each at its position, so a caller never counts positions.
 * tests/store/store-lua-args.test.ts checks every script's header and decoding
 * against its layout (names, order, count).
 *
 * A layout is part of its script's descriptor (store/script/operation.ts),
 * beside the port method in the section file of store/script/; the commit's
 * and the claims' are in turn-protocol.ts here (their tuned path). The
 * values are formatted by the caller (store/script/values.ts), the encoder
 * only places them.
 */
import type { ScriptName } from "../scripts.gen.ts";

export interface ScriptLayout {
  readonly script: ScriptName;
  /** KEYS[1], KEYS[2], ... by name. */
  readonly keys: readonly string[];
  /** ARGV[1], ARGV[2], ... by name. */
  readonly argv: readonly string[];
  /** Names that may be left out; a name left out ends its list (no later name, no rest, may be given). */
  readonly optional?: readonly string[];
  /** The name of a variable-length tail of KEYS after the named ones (`KEYS[n..]`). */
  readonly keysRest?: string;
  /** The name of a variable-length tail of ARGV after the named ones (`ARGV[n..]`). */
  readonly argvRest?: string;
}

/** One script call: the script and its positional lists. */
export interface ScriptArgs {
  script: ScriptName;
  keys: string[];
  argv: string[];
}

type Optional<L extends ScriptLayout> = L["optional"] extends readonly (infer O)[] ? O & string : never;
type Rest<R> = R extends string ? { [K in R]?: readonly string[] } : unknown;

/** The named values of a layout: a string per name (optional ones may be absent), a list per rest. */
export type ScriptFields<L extends ScriptLayout> =
  & { [K in Exclude<L["keys"][number] | L["argv"][number], Optional<L>>]: string }
  & { [K in Optional<L>]?: string }
  & Rest<L["keysRest"]>
  & Rest<L["argvRest"]>;

/** The encoder of a layout: named values in, positional lists out. */
export function encoder<const L extends ScriptLayout>(layout: L): (fields: ScriptFields<L>) => ScriptArgs {
  return (fields) => {
    const f = fields as unknown as Record<string, string | readonly string[] | undefined>;
    return {
      script: layout.script,
      keys: positional(layout, layout.keys, f, layout.keysRest),
      argv: positional(layout, layout.argv, f, layout.argvRest),
    };
  };
}

function positional(
  layout: ScriptLayout,
  names: readonly string[],
  f: Record<string, string | readonly string[] | undefined>,
  rest: string | undefined,
): string[] {
  const out: string[] = [];
  let leftOut: string | null = null;
  for (const name of names) {
    const v = f[name];
    if (v === undefined) {
      if (!layout.optional?.includes(name)) throw new TypeError(`${layout.script}: argument ${name} is missing`);
      leftOut ??= name;
    } else if (leftOut !== null) {
      throw new TypeError(`${layout.script}: argument ${name} is given after ${leftOut} was left out`);
    } else out.push(v as string);
  }
  const tail = rest === undefined ? undefined : (f[rest] as readonly string[] | undefined);
  if (tail && tail.length > 0) {
    if (leftOut !== null) throw new TypeError(`${layout.script}: ${rest} is given after ${leftOut} was left out`);
    for (const v of tail) out.push(v);
  }
  return out;
}
