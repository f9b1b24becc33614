/**
 * No function on the wakeup path is longer than MAX_LINES without a written
 * reason. The wakeup path is what a task goes through from its route to its
 * commit: the task route (routes/agents.ts), the worker pool (actors/pool/),
 * then the claim: actors/host/, actors/claim/, actors/steps/ and
 * the parts beside the claim (actors/spend/, actors/delegation/,
 * actors/conversation/, actors/registry/, actors/observe/tracing.ts), and
 * the store operations they call (store/memory/, store/script/); and the
 * composition roots that wire them (gatehouse.ts, gatehouse-options.ts,
 * workers.ts).
 *
 * A function is measured from its first to its last line (a nested function
 * counts in its own right and inside its parent). One that must be longer
 * carries the reason in its leading comment (or the comment at the top of its
 * body), on a line that starts with the marker `Long because` (see
 * docs/architecture.md, "Function length").
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

export const MAX_LINES = 80;
export const MARKER = /^\s*(?:\/\/+|\/?\*+)?\s*Long because\b/m;

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "../..");
/** The wakeup path: folders (every .ts in them) and single files, from the root. */
const WAKEUP_PATH = [
  "routes/agents.ts",
  "actors/pool",
  "actors/host",
  "actors/claim",
  "actors/steps",
  "actors/spend",
  "actors/delegation",
  "actors/conversation",
  "actors/registry",
  "actors/observe/tracing.ts",
  // The store side of enqueue, claim and commit: the memory store and the script store (TCP Redis, Upstash).
  "store/memory",
  "store/script",
  // The composition roots: options checked, parts built, requests and invocations handed to them.
  "gatehouse.ts",
  "gatehouse-options.ts",
  "workers.ts",
];

function pathFiles(): string[] {
  const out: string[] = [];
  for (const p of WAKEUP_PATH) {
    const abs = join(ROOT, p);
    if (statSync(abs).isDirectory()) {
      for (const f of readdirSync(abs)) if (f.endsWith(".ts")) out.push(join(abs, f));
    } else out.push(abs);
  }
  return out;
}

export interface LongFunction {
  name: string;
  line: number;
  lines: number;
  reasoned: boolean;
}

const isFunction = (n: ts.Node): n is ts.FunctionLikeDeclaration =>
  ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n) || ts.isArrowFunction(n) || ts.isFunctionExpression(n) ||
  ts.isConstructorDeclaration(n) || ts.isGetAccessorDeclaration(n) || ts.isSetAccessorDeclaration(n);

/** The node whose leading comment documents `fn`: the declaration that holds it (const, property, export). */
function documentedNode(fn: ts.Node): ts.Node {
  let n: ts.Node = fn;
  for (;;) {
    const p = n.parent;
    if (!p) return n;
    if (ts.isVariableDeclaration(p) || ts.isVariableDeclarationList(p) || ts.isVariableStatement(p) || ts.isPropertyDeclaration(p) ||
      ts.isPropertyAssignment(p) || ts.isExportAssignment(p) || ts.isParenthesizedExpression(p)) {
      n = p;
      continue;
    }
    return n;
  }
}

function commentsOf(src: string, pos: number): string {
  return (ts.getLeadingCommentRanges(src, pos) ?? []).map((r) => src.slice(r.pos, r.end)).join("\n");
}

function nameOf(fn: ts.FunctionLikeDeclaration, holder: ts.Node): string {
  if (fn.name && ts.isIdentifier(fn.name)) return fn.name.text;
  if (ts.isVariableStatement(holder)) return holder.declarationList.declarations.map((d) => d.name.getText()).join(",");
  if ((ts.isPropertyAssignment(holder) || ts.isPropertyDeclaration(holder)) && holder.name) return holder.name.getText();
  if (ts.isConstructorDeclaration(fn)) return "constructor";
  return "(anonymous)";
}

/** Every function of `src` longer than `max` lines, with whether its comment gives the reason. */
export function longFunctions(fileName: string, src: string, max = MAX_LINES): LongFunction[] {
  const sf = ts.createSourceFile(fileName, src, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out: LongFunction[] = [];
  const visit = (n: ts.Node) => {
    if (isFunction(n) && n.body) {
      const first = sf.getLineAndCharacterOfPosition(n.getStart(sf)).line;
      const last = sf.getLineAndCharacterOfPosition(n.getEnd()).line;
      const lines = last - first + 1;
      if (lines > max) {
        const holder = documentedNode(n);
        const bodyTop = ts.isBlock(n.body) && n.body.statements.length > 0 ? commentsOf(src, n.body.statements[0].getFullStart()) : "";
        const comment = `${commentsOf(src, holder.getFullStart())}\n${commentsOf(src, n.getFullStart())}\n${bodyTop}`;
        out.push({ name: nameOf(n, holder), line: first + 1, lines, reasoned: MARKER.test(comment) });
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

describe("function length on the wakeup path", () => {
  it("measures functions, arrows and methods, and reads the reason from the leading or body-top comment", () => {
    const body = (n: number) => Array.from({ length: n }, (_, i) => `  x += ${i};`).join("\n");
    const src = [
      `export function short() {\n${body(3)}\n}`,
      `function long() {\n  let x = 0;\n${body(80)}\n}`,
      `/**\n * Does a lot.\n * Long because the table is one list.\n */\nexport const arrow = async () => {\n  let x = 0;\n${body(80)}\n};`,
      `class C {\n  method() {\n    // Long because one switch over every event.\n${body(80)}\n  }\n}`,
      `const route = { handler: (c: unknown) => {\n  let x = 0;\n${body(80)}\n} };`,
      `// long because lower case does not count\nfunction lower() {\n${body(85)}\n}`,
    ].join("\n");
    const found = longFunctions("sample.ts", src).map((f) => [f.name, f.reasoned]);
    expect(found).toEqual([["long", false], ["arrow", true], ["method", true], ["handler", false], ["lower", false]]);
  });

  it(`no function over ${MAX_LINES} lines without a "Long because" reason`, () => {
    const files = pathFiles();
    expect(files.length).toBeGreaterThan(15);
    const unreasoned: string[] = [];
    const reasoned: string[] = [];
    for (const f of files) {
      for (const l of longFunctions(f, readFileSync(f, "utf8"))) {
        const where = `${relative(ROOT, f)}:${l.line} ${l.name} (${l.lines} lines)`;
        (l.reasoned ? reasoned : unreasoned).push(where);
      }
    }
    if (reasoned.length > 0) console.log(`long with a reason:\n  ${reasoned.join("\n  ")}`);
    expect(unreasoned).toEqual([]);
  });
});
