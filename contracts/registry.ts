/**
 * What the tool registry tells the model, and when methods overlap. Pure:
 * the entries come from the store (store/port.ts `recordToolMethod`,
 * `listToolRoles`).
 *
 * Overlap: two methods of ONE role whose word lists (after the one
 * normalisation, common/tool-registry.ts `methodForm`) are equal (`fetchUrl`
 * and `fetch_url`: kept as an alias) or one is a proper prefix or suffix of
 * the other (`fetch` and `fetch_url`). Methods of different roles never
 * overlap, and neither do methods of one role without that relation
 * (`fetch` and `parse`). An overlap is an observation (an
 * `interface_overlap` event, a hint in the prompt); nothing is renamed.
 *
 * Bounds: `<known_tools>` lists at most KNOWN_TOOLS_LIMITS.roles roles, each
 * with at most `.methods` methods, and is cut at `.chars` characters; at
 * most `.hints` overlap hints follow it.
 */
import { methodForm, type ToolRoleEntry } from "../common/tool-registry.ts";

export interface MethodOverlap {
  role: string;
  /** The two spellings, the first-seen (canonical) first. */
  methods: [string, string];
  kind: "alias" | "prefix";
}

export const KNOWN_TOOLS_LIMITS = { roles: 8, methods: 6, chars: 1_500, hints: 3 } as const;

const words = (m: string) => methodForm(m).split("_").filter((w) => w !== "");

function related(a: string[], b: string[]): boolean {
  if (a.length === b.length || a.length === 0 || b.length === 0) return false;
  const [s, l] = a.length < b.length ? [a, b] : [b, a];
  const prefix = s.every((w, i) => l[i] === w);
  const suffix = s.every((w, i) => l[l.length - s.length + i] === w);
  return prefix || suffix;
}

/** Every overlap of one role's methods (aliases included), in a stable order. */
export function overlapsOf(entry: ToolRoleEntry): MethodOverlap[] {
  const out: MethodOverlap[] = entry.aliases.map((a) => ({ role: entry.role, methods: [a.method, a.alias], kind: "alias" as const }));
  const ms = entry.methods;
  for (let i = 0; i < ms.length; i++) {
    for (let j = i + 1; j < ms.length; j++) {
      if (related(words(ms[i]), words(ms[j]))) out.push({ role: entry.role, methods: [ms[i], ms[j]], kind: "prefix" });
    }
  }
  return out;
}

/** The overlaps that involve `method` (after it was recorded on the entry). */
export function overlapsWith(entry: ToolRoleEntry, method: string): MethodOverlap[] {
  return overlapsOf(entry).filter((o) => o.methods.includes(method));
}

const clip = (s: string, n: number) => (s.length <= n ? s : `${s.slice(0, n - 1)}…`);

/**
 * The `<known_tools>` block (empty string when there is nothing to show).
 * Given `ownRoles` (the roles of the tools an agent is offered), only those
 * roles are listed, so an agent is never hinted about tools it cannot call
 * (an overlap elsewhere raises nothing in its prompt); without, every role.
 * Most calls first, then by name; one line per role with its methods and
 * aliases; the overlap hints of the listed roles after the list.
 */
export function knownToolsBlock(entries: readonly ToolRoleEntry[], ownRoles?: readonly string[]): string {
  const L = KNOWN_TOOLS_LIMITS;
  const own = ownRoles ? new Set(ownRoles) : null;
  const ranked = entries.filter((e) => e.methods.length > 0 && (!own || own.has(e.role))).sort((a, b) =>
    b.calls - a.calls || (a.role < b.role ? -1 : a.role > b.role ? 1 : 0)
  ).slice(0, L.roles);
  if (ranked.length === 0) return "";
  const lines = ranked.map((e) => {
    const ms = e.methods.slice(0, L.methods).map((m) => clip(m, 64));
    const more = e.methods.length > L.methods ? ` (+${e.methods.length - L.methods} more)` : "";
    const aliases = e.aliases.length > 0 ? `; aliases: ${e.aliases.slice(0, L.methods).map((a) => `${clip(a.alias, 64)}=${clip(a.method, 64)}`).join(", ")}` : "";
    return `- ${clip(e.role, 64)}: methods ${ms.join(", ")}${more}${aliases}`;
  });
  const hints = ranked.flatMap(overlapsOf).slice(0, L.hints).map((o) =>
    `<interface_overlap role="${clip(o.role, 64)}">${o.kind === "alias" ? `"${clip(o.methods[1], 64)}" is another spelling of "${clip(o.methods[0], 64)}"` : `"${clip(o.methods[0], 64)}" and "${clip(o.methods[1], 64)}" look like one capability`}; prefer one method (the first) and call it consistently.</interface_overlap>`
  );
  let body = lines.join("\n");
  const room = L.chars - "<known_tools>\n\n</known_tools>".length;
  if (body.length > room) body = `${body.slice(0, room - 2)}\n…`;
  return [`<known_tools>\n${body}\n</known_tools>`, ...hints].join("\n");
}

/** A registry entry as the HTTP surface and the CLI show it: the entry plus its overlaps. */
export interface ToolRoleView {
  role: string;
  methods: string[];
  aliases: Array<{ alias: string; method: string }>;
  calls: number;
  createdAt: number | null;
  updatedAt: number | null;
  overlaps: Array<{ methods: [string, string]; kind: "alias" | "prefix" }>;
}

export function toolRoleView(e: ToolRoleEntry): ToolRoleView {
  return {
    role: e.role,
    methods: [...e.methods],
    aliases: e.aliases.map((a) => ({ ...a })),
    calls: e.calls,
    createdAt: e.createdAt,
    updatedAt: e.updatedAt,
    overlaps: overlapsOf(e).map((o) => ({ methods: o.methods, kind: o.kind })),
  };
}

/** The text `gatehouse interfaces --role <role>` prints for one role. */
export function describeToolRole(v: ToolRoleView): string {
  const lines = [`role ${v.role}: ${v.calls} successful call${v.calls === 1 ? "" : "s"}`];
  lines.push(`  methods:  ${v.methods.length > 0 ? v.methods.join(", ") : "(none recorded)"}`);
  lines.push(`  aliases:  ${v.aliases.length > 0 ? v.aliases.map((a) => `${a.alias} -> ${a.method}`).join(", ") : "(none)"}`);
  lines.push(`  overlaps: ${v.overlaps.length > 0 ? v.overlaps.map((o) => `${o.methods.join(" / ")} (${o.kind})`).join("; ") : "(none)"}`);
  return lines.join("\n");
}
