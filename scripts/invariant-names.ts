/**
 * Rewrites citations of store invariants by number into citations by name
 * (the names are the `## <name>` headings of store/port.ts), in every
 * source and documentation file of the tree, then regenerates
 * store/lua/scripts.gen.ts. Safe to run again: a tree without numbered
 * citations is left as it is. Run it after merging a branch that still
 * cites by number:
 *
 *   npx tsx scripts/invariant-names.ts          (rewrite)
 *   npx tsx scripts/invariant-names.ts --check  (list, change nothing)
 *
 * `NUMBERS` is the old numbering. A few citations named the wrong number
 * (the numbering moved while they were written); `CORRECTIONS` names what
 * they meant, recognised by the text around them.
 * tests/store/store-invariant-names.test.ts fails while any numbered citation, or
 * a name port.ts does not define, is left.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleLua, GENERATED } from "./bundle-lua.ts";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/** The old numbers of the store invariants, by number. */
export const NUMBERS: Record<string, string> = {
  "1": "inbox-is-truth",
  "2": "exclusive-claims",
  "3": "fencing",
  "4": "mail-until-acked",
  "5": "first-result-wins",
  "5a": "in-process-by-watchdog",
  "5b": "delegated-by-child",
  "6": "first-idempotency-key",
  "7": "write-once-verdicts",
  "8": "caller-clock",
  "9": "aimed-cancels",
  "10": "all-or-nothing",
  "11": "input-stored-once",
  "12": "turn-end-without-machine",
  "13": "idempotency-entry-with-key",
  "14": "agents-index",
  "15": "fork-is-new-agent",
  "16": "tool-registry",
  "17": "contract-validation",
  "18": "retention",
  "19": "deletion",
  "20": "turn-chaining",
  "21": "firm-cancels",
  "22": "deletion-marker",
  "23": "definition-sets",
};

/** Citations whose number was wrong: in `file`, the number `number` cited next to `near` means `name`. */
export const CORRECTIONS: Array<{ file: string; near: string; number: string; name: string }> = [
  { file: "store/port.ts", near: "One entry of the agents index", number: "12", name: "agents-index" },
  { file: "store/port.ts", near: "Creates a fork", number: "13", name: "fork-is-new-agent" },
  { file: "store/port.ts", near: "on the source of a fork", number: "13", name: "fork-is-new-agent" },
  { file: "routes/agent-list.ts", near: "Backed by the store's agents index", number: "12", name: "agents-index" },
  { file: "store/script/turn-protocol.ts", near: "the names as the head stores them", number: "21", name: "definition-sets" },
  { file: "tests/host/time-travel-property.test.ts", near: "With retention cutting the log", number: "16", name: "retention" },
  { file: "tests/store/store-conformance.ts", near: "retention (", number: "16", name: "retention" },
  { file: "tests/store/store-conformance.ts", near: "retention and deletion (", number: "17", name: "deletion" },
  { file: "docs/store.md", near: "Retention bounds them", number: "16", name: "retention" },
];

/**
 * A citation by number: "invariant 12", "invariants 2 and 3", "invariants 16, 17", also across a
 * line break inside a comment ("invariant\n * 19").
 */
export const NUMBERED = /\b(invariants?)((?:\s|\*|--|\/\/)+)(\d+[ab]?)\b((?:(?:\s*,\s*|\s+and\s+|\s+or\s+)\d+[ab]?\b)*)/gi;

/** A citation by name: "invariant `fencing`", "invariants `a` and `b`". */
export const NAMED = /\binvariants?((?:\s|\*|--|\/\/)+)((?:`[a-z0-9-]+`(?:\s*,\s*|\s+and\s+|\s+or\s+)?)+)/gi;

const EXTENSIONS = [".ts", ".tsx", ".js", ".mjs", ".lua", ".md"];
const SKIP_DIRS = new Set(["node_modules", ".git", "dist", "coverage"]);
/** Generated (store/lua/scripts.gen.ts is rebuilt from the scripts) or the old numbering itself (this file). */
const SKIP_FILES = new Set(["store/lua/scripts.gen.ts", "scripts/invariant-names.ts"]);

/** Every file that may cite a store invariant, relative to `root`. */
export function citingFiles(root = ROOT): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.name.startsWith(".") && e.name !== ".") continue;
      const p = join(dir, e.name);
      if (e.isDirectory()) {
        if (!SKIP_DIRS.has(e.name)) walk(p);
      } else if (EXTENSIONS.some((x) => e.name.endsWith(x))) {
        const rel = relative(root, p).split("\\").join("/");
        if (!SKIP_FILES.has(rel)) out.push(rel);
      }
    }
  };
  walk(root);
  return out.sort();
}

/** The names of the invariants port.ts defines (its `## <name>` headings). */
export function definedNames(root = ROOT): string[] {
  const port = readFileSync(join(root, "store/port.ts"), "utf8");
  return [...port.matchAll(/^ \* ## ([a-z0-9-]+)$/gm)].map((m) => m[1]);
}

/** `text` (the file `file`) with its numbered citations rewritten; `changes` lists each. */
export function rewrite(file: string, text: string): { text: string; changes: string[] } {
  const changes: string[] = [];
  const out = text.replace(NUMBERED, (whole, word: string, sep: string, first: string, more: string, at: number) => {
    const near = text.slice(Math.max(0, at - 120), at + whole.length + 40);
    const nameOf = (n: string) => {
      const fix = CORRECTIONS.find((c) => c.file === file && c.number === n.toLowerCase() && near.includes(c.near));
      const name = fix?.name ?? NUMBERS[n.toLowerCase()];
      if (!name) throw new Error(`${file}: no store invariant ${n} (in ${JSON.stringify(whole)})`);
      return `\`${name}\``;
    };
    const rest = more.replace(/\d+[ab]?/gi, (n) => nameOf(n));
    const replaced = `${word}${sep}${nameOf(first)}${rest}`;
    changes.push(`${file}: ${JSON.stringify(whole)} -> ${JSON.stringify(replaced)}`);
    return replaced;
  });
  return { text: out, changes };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const check = process.argv.includes("--check");
  let count = 0;
  for (const file of citingFiles()) {
    const path = join(ROOT, file);
    const before = readFileSync(path, "utf8");
    const { text, changes } = rewrite(file, before);
    for (const c of changes) console.log(c);
    count += changes.length;
    if (!check && text !== before) writeFileSync(path, text);
  }
  if (!check) writeFileSync(GENERATED, bundleLua());
  console.log(`${count} citation(s) ${check ? "to rewrite" : "rewritten"}; ${check ? "" : "store/lua/scripts.gen.ts regenerated"}`);
}
