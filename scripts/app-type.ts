/**
 * Writes routes/app-type.gen.ts: the app's route schema (every path, method,
 * params, query, body, JSON responses and status) as one explicit type, read
 * by the TypeScript checker from what `buildApp` (routes/app.ts) infers.
 *
 * Why a generated file: JSR refuses inferred types on the public API (its
 * "slow types"), and `createApp` / `Gatehouse.app` are public. With the type
 * written out, `createApp` declares `GatehouseApp` as its return type, and
 * `hc<GatehouseApp>(url)` still sees every route precisely.
 *
 *   npm run app-type
 *
 * Run after changing a route. tests/routes/app-type.test.ts fails when the file is
 * out of date, and `tsc` fails when the app no longer fits the written type.
 */
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const GENERATED = join(ROOT, "routes", "app-type.gen.ts");
const PROBE = join(ROOT, "routes", "app-type.probe.ts");

const PROBE_TEXT = [
  `import type { OpenAPIHono } from "@hono/zod-openapi";`,
  `import type { buildApp } from "./app.ts";`,
  `export type Probe = ReturnType<typeof buildApp> extends OpenAPIHono<infer _E, infer S, infer _B> ? S : never;`,
  "",
].join("\n");

/** Module specifiers for the library types the checker names by file. */
const LIBRARY_TYPES: Array<[RegExp, string]> = [
  [/node_modules\/hono\/dist\/types\/types(\.d\.ts)?$/, "hono/types"],
  [/node_modules\/hono\/dist\/types\/utils\/types(\.d\.ts)?$/, "hono/utils/types"],
  [/node_modules\/hono\/dist\/types\/utils\/http-status(\.d\.ts)?$/, "hono/utils/http-status"],
];

/** Input parts a client may leave out when each of their fields is optional. */
const OPTIONAL_PARTS = new Set(["query", "header"]);

const nameOf = (m: ts.TypeElement) => m.name && (ts.isIdentifier(m.name) || ts.isStringLiteral(m.name)) ? m.name.text : undefined;

/**
 * Marks `query` and `header` of a route's `input` optional when every field
 * in them is: the library writes them as required keys, so `hc` would make
 * a caller pass `query: {}` to a route whose query fields are all optional
 * (the agents list, events, verdicts). With the key optional, `hc`'s call
 * takes no argument there.
 */
export function optionalInputParts(root: ts.TypeNode): ts.TypeNode {
  const f = ts.factory;
  const relaxMembers = (lit: ts.TypeLiteralNode) =>
    f.updateTypeLiteralNode(lit, f.createNodeArray(lit.members.map((m) => {
      const part = ts.isPropertySignature(m) ? nameOf(m) : undefined;
      if (!ts.isPropertySignature(m) || !part || !OPTIONAL_PARTS.has(part) || m.questionToken) return m;
      if (!m.type || !ts.isTypeLiteralNode(m.type) || !m.type.members.every((x) => ts.isPropertySignature(x) && x.questionToken)) return m;
      return f.updatePropertySignature(m, m.modifiers, m.name, f.createToken(ts.SyntaxKind.QuestionToken), m.type);
    })));
  // `input` is one object type or (several request parts) an intersection of them.
  const relax = (t: ts.TypeNode): ts.TypeNode =>
    ts.isTypeLiteralNode(t) ? relaxMembers(t)
    : ts.isIntersectionTypeNode(t) ? f.updateIntersectionTypeNode(t, f.createNodeArray(t.types.map(relax)))
    : t;
  const visit = (node: ts.Node): ts.Node => {
    if (ts.isPropertySignature(node) && nameOf(node) === "input" && node.type) {
      return f.updatePropertySignature(node, node.modifiers, node.name, node.questionToken, relax(node.type));
    }
    return ts.visitEachChild(node, visit, undefined);
  };
  return visit(root) as ts.TypeNode;
}

/** The text of routes/app-type.gen.ts for the routes as they are. */
export function generateAppType(): string {
  const parsed = ts.getParsedCommandLineOfConfigFile(join(ROOT, "tsconfig.json"), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    },
  });
  if (!parsed) throw new Error("Cannot read tsconfig.json");
  const host = ts.createCompilerHost(parsed.options);
  const getSourceFile = host.getSourceFile;
  host.getSourceFile = (file, lang, ...rest) =>
    file === PROBE ? ts.createSourceFile(file, PROBE_TEXT, lang) : getSourceFile(file, lang, ...rest);
  const fileExists = host.fileExists;
  host.fileExists = (file) => file === PROBE || fileExists(file);
  const program = ts.createProgram([PROBE], parsed.options, host);
  // The probe's own errors only: a stale generated file makes routes/app.ts fail, which is what this repairs.
  const errors = ts.getPreEmitDiagnostics(program, program.getSourceFile(PROBE)).filter((d) =>
    d.category === ts.DiagnosticCategory.Error
  );
  if (errors.length > 0) {
    throw new Error(`Cannot read the app type: ${ts.formatDiagnostics(errors.slice(0, 5), host)}`);
  }
  const checker = program.getTypeChecker();
  const probe = program.getSourceFile(PROBE)!;
  const alias = probe.statements.find(ts.isTypeAliasDeclaration)!;
  const type = checker.getTypeAtLocation(alias.name);
  const flags = ts.NodeBuilderFlags.NoTruncation | ts.NodeBuilderFlags.MultilineObjectLiterals |
    ts.NodeBuilderFlags.UseFullyQualifiedType | ts.NodeBuilderFlags.IgnoreErrors;
  const printed = checker.typeToTypeNode(type, undefined, flags);
  if (!printed) throw new Error("Cannot print the app type");
  const node = optionalInputParts(printed);
  const printer = ts.createPrinter({ newLine: ts.NewLineKind.LineFeed });
  let text = printer.printNode(ts.EmitHint.Unspecified, node, probe);

  // import("/abs/node_modules/hono/dist/types/types").X -> X, imported by name below.
  const imports = new Map<string, Set<string>>();
  text = text.replace(/import\("([^"]+)"\)\.([A-Za-z_$][\w$]*)/g, (_whole, file: string, name: string) => {
    const hit = LIBRARY_TYPES.find(([re]) => re.test(file));
    if (!hit) throw new Error(`The app type names ${name} of ${file}, which has no public module specifier here`);
    const names = imports.get(hit[1]) ?? new Set<string>();
    names.add(name);
    imports.set(hit[1], names);
    return name;
  });
  const loose = /\bany\b/.exec(text);
  if (loose) throw new Error(`The app type holds \`any\` (near "${text.slice(Math.max(0, loose.index - 80), loose.index + 20)}")`);
  const importLines = [...imports].sort(([a], [b]) => a.localeCompare(b)).map(([from, names]) =>
    `import type { ${[...names].sort().join(", ")} } from "${from}";`
  );
  return [
    "// Generated by scripts/app-type.ts from the routes (routes/app.ts). Do not edit;",
    "// run `npm run app-type` after changing a route.",
    `import type { OpenAPIHono } from "@hono/zod-openapi";`,
    `import type { Env } from "hono";`,
    ...importLines,
    "",
    "/** Every route of the app: path, method, input (param, query, json), JSON output and status. */",
    `export type GatehouseSchema = ${text};`,
    "",
    "/**",
    " * The type of the app `createGatehouse` builds (`Gatehouse.app`): `hc<GatehouseApp>(baseUrl)`",
    " * from `hono/client` types every route's params, query, body and JSON responses.",
    " */",
    `export type GatehouseApp = OpenAPIHono<Env, GatehouseSchema, "/">;`,
    "",
  ].join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(GENERATED, generateAppType());
  console.log(`wrote ${GENERATED}`);
}
