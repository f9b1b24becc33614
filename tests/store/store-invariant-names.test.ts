/**
 * Store invariants are cited by name, and only by a name store/port.ts
 * defines (a `## <name>` heading). A citation by number ("invariant" and a
 * number) anywhere in the tree fails, as does a name port.ts does not
 * define. scripts/invariant-names.ts rewrites numbered citations.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { citingFiles, definedNames, NAMED, NUMBERED, NUMBERS, rewrite, ROOT } from "../../scripts/invariant-names.ts";

const names = definedNames();

/** The numbered citations and the unknown names cited in one text. */
function citations(text: string, defined: readonly string[]) {
  const numbered = [...text.matchAll(NUMBERED)].map((m) => m[0]);
  const unknown = [...text.matchAll(NAMED)]
    .flatMap((m) => [...m[2].matchAll(/`([a-z0-9-]+)`/g)].map((n) => n[1]))
    .filter((n) => !defined.includes(n));
  return { numbered, unknown };
}

describe("store invariants are cited by name", () => {
  it("port.ts defines each name once, and every old number has its name", () => {
    expect(names.length).toBeGreaterThanOrEqual(25);
    expect(new Set(names).size).toBe(names.length);
    for (const name of Object.values(NUMBERS)) expect(names).toContain(name);
  });

  it("no file cites an invariant by number or by a name port.ts does not define", () => {
    const bad: string[] = [];
    for (const file of citingFiles()) {
      const { numbered, unknown } = citations(readFileSync(join(ROOT, file), "utf8"), names);
      for (const c of numbered) bad.push(`${file}: by number: ${JSON.stringify(c)}`);
      for (const n of unknown) bad.push(`${file}: undefined name: ${n}`);
    }
    expect(bad).toEqual([]);
  });

  it("the check catches a citation by number, across a line break too, and an unknown name", () => {
    const word = "invariant";
    const text = `a (store ${word} 12) b (${word}s 2 and 3) c (${word}\n * 19) d (${word} \`no-such-name\`) e (${word} \`fencing\`)`;
    const found = citations(text, names);
    expect(found.numbered).toEqual([`${word} 12`, `${word}s 2 and 3`, `${word}\n * 19`]);
    expect(found.unknown).toEqual(["no-such-name"]);
  });

  it("the rewrite names each number, keeps the rest of the text, and corrects a known wrong number", () => {
    const word = "invariant";
    expect(rewrite("x.ts", `// (store ${word}s 2 and 3; ${word} 5b)`).text)
      .toBe(`// (store ${word}s \`exclusive-claims\` and \`fencing\`; ${word} \`delegated-by-child\`)`);
    expect(rewrite("store/port.ts", `/** One entry of the agents index (${word} 12). */`).text)
      .toBe(`/** One entry of the agents index (${word} \`agents-index\`). */`);
    expect(() => rewrite("x.ts", `${word} 99`)).toThrow(/no store invariant .*99/);
  });
});
