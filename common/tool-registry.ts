/**
 * The tool registry's record of one role (store/port.ts `recordToolMethod`).
 *
 * A role is what a tool is for (`web_fetcher`); its methods are the tool
 * names through which it was called successfully (`fetch_url`). `methods`
 * holds the first spelling seen of each method; `aliases` the other
 * spellings of the same method that were seen later (`fetchUrl` of
 * `fetch_url`: equal under `methodForm`). Both are observations: nothing
 * is renamed or resolved through them.
 *
 * `loadToolRoleEntry` reads a stored entry leniently: an entry written
 * before methods were recorded (`{ "purpose": "..." }`, no `methods`) loads
 * with empty lists; unknown fields are kept.
 */
export interface ToolAlias {
  alias: string;
  method: string;
}

export interface ToolRoleEntry {
  role: string;
  methods: string[];
  aliases: ToolAlias[];
  /** Successful calls recorded (0 for a legacy entry). */
  calls: number;
  createdAt: number | null;
  updatedAt: number | null;
  [extra: string]: unknown;
}

/**
 * The one normalisation of case and separators (used for tolerant keys and
 * for method spellings): camelCase and PascalCase words are split, `-`,
 * spaces and `_` become one `_`, everything is lower case. `userId`,
 * `UserId`, `user-id`, `USER_ID` and `user_id` all become `user_id`;
 * `HTMLBody` becomes `html_body`.
 */
export function methodForm(name: string): string {
  return name
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1_$2")
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/[\s_-]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .toLowerCase();
}

const strings = (v: unknown): string[] => Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];

/** A stored entry (JSON text or value) as a ToolRoleEntry; null when it is not an object. */
export function loadToolRoleEntry(role: string, raw: unknown): ToolRoleEntry | null {
  let v = raw;
  if (typeof v === "string") {
    try {
      v = JSON.parse(v);
    } catch {
      return null;
    }
  }
  if (!v || typeof v !== "object" || Array.isArray(v)) return null;
  const o = v as Record<string, unknown>;
  const aliases = Array.isArray(o.aliases)
    ? o.aliases.filter((a): a is ToolAlias =>
      !!a && typeof a === "object" && typeof (a as ToolAlias).alias === "string" && typeof (a as ToolAlias).method === "string"
    ).map((a) => ({ alias: a.alias, method: a.method }))
    : [];
  const num = (x: unknown) => typeof x === "number" && Number.isFinite(x) ? x : null;
  return {
    ...o,
    role,
    methods: strings(o.methods),
    aliases,
    calls: num(o.calls) ?? 0,
    createdAt: num(o.createdAt),
    updatedAt: num(o.updatedAt),
  };
}
