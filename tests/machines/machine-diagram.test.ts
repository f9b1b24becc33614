/**
 * The Mermaid text shows every transition of the machine exactly once, laid
 * out by toMermaid's rules (no self edges, no two edges between one pair of
 * states, none both ways), and the committed diagram (docs/machine.mmd,
 * .svg, .png) was rendered from the current text: each image carries the
 * text's SHA-256 (scripts/machine-diagram.ts). When this fails after a
 * change to the machine, run `npm run render:machine`.
 */
import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { setup } from "xstate";
import { describeMachine, type MachineDefinition, toMermaid } from "../../machines/definition.ts";
import {
  DIAGRAM_FILES,
  machineMermaid,
  pngStamp,
  sha256Hex,
  stampPng,
  stampSvg,
  svgStamp,
} from "../../scripts/machine-diagram.ts";

const root = new URL("../../", import.meta.url);
const read = (path: string) => readFile(new URL(path, root));

interface Parsed {
  edges: Array<{ from: string; to: string; label: string }>;
  boxes: Map<string, string[]>;
  names: Map<string, string>;
}

function parse(text: string): Parsed {
  const out: Parsed = { edges: [], boxes: new Map(), names: new Map() };
  for (const line of text.split("\n").map((l) => l.trim())) {
    let m = /^state "([^"]+)" as (\w+)$/.exec(line);
    if (m) {
      out.names.set(m[2], m[1]);
      continue;
    }
    m = /^(\w+) --> (\w+) : (.+)$/.exec(line);
    if (m) {
      out.edges.push({ from: out.names.get(m[1]) ?? m[1], to: out.names.get(m[2]) ?? m[2], label: m[3] });
      continue;
    }
    m = /^(\w+) : (.+)$/.exec(line);
    if (m) {
      const name = out.names.get(m[1]) ?? m[1];
      out.boxes.set(name, [...(out.boxes.get(name) ?? []), m[2]]);
    }
  }
  return out;
}

/** Where `t` appears in the text: on its edge's label, or as a line in its source's or target's box. */
function places(p: Parsed, t: MachineDefinition["transitions"][number]): string[] {
  const found: string[] = [];
  for (const e of p.edges) {
    if (e.from !== t.from || e.to !== t.to) continue;
    for (const part of e.label.split("<br/>")) {
      const m = /^(\S+)(?: \[(.+)\])?$/.exec(part);
      if (m && m[1] === t.event && (t.guard === undefined || (m[2] ?? "").split(" | ").includes(t.guard))) {
        found.push(`edge ${e.from} -> ${e.to}`);
      }
    }
  }
  const g = t.guard ? ` [${t.guard}]` : "";
  for (const line of p.boxes.get(t.from) ?? []) {
    const mark = t.targetless ? " (targetless)" : t.reenter ? " (reenter)" : "";
    const guards = t.guard ? [g] : ["", " [else]"];
    if (t.from === t.to && guards.some((gg) => line === `⟲ ${t.event}${gg}${mark}`)) found.push(`box ${t.from}`);
    if (t.from !== t.to && line === `${t.event}${g} → ${t.to}`) found.push(`box ${t.from}`);
  }
  for (const line of p.boxes.get(t.to) ?? []) {
    const m = /^← (\S+) from (.+)$/.exec(line);
    if (m && t.from !== t.to && m[1] === t.event && t.guard === undefined && m[2].split(", ").includes(t.from)) {
      found.push(`box ${t.to}`);
    }
  }
  return found;
}

describe("the Mermaid text", () => {
  it("shows every transition of the agent machine exactly once", () => {
    const def = describeMachine();
    const p = parse(toMermaid(def));
    for (const t of def.transitions) {
      expect(places(p, t), `${t.from} ${t.event}${t.guard ? ` [${t.guard}]` : ""} -> ${t.to}`).toHaveLength(1);
    }
    expect([...p.names.values()]).toEqual(def.states.map((s) => s.name));
  });

  it("draws no self edge, one edge per pair of states, none both ways", () => {
    const { edges } = parse(machineMermaid());
    const pairs = edges.map((e) => `${e.from} -> ${e.to}`);
    expect(edges.filter((e) => e.from === e.to)).toEqual([]);
    expect(new Set(pairs).size).toBe(pairs.length);
    expect(edges.filter((e) => pairs.includes(`${e.to} -> ${e.from}`))).toEqual([]);
  });

  it("follows the rules on another machine: back edge, fan-in to a turn-ending state, [else]", () => {
    const m = setup({ guards: { g: () => true } }).createMachine({
      id: "m",
      initial: "a",
      states: {
        a: { on: { GO: "b", STOP: "done", X: [{ guard: "g", target: "c" }, { target: "c" }] } },
        b: { on: { BACK: "a", STOP: "done" } },
        c: { on: { STOP: "done" } },
        done: {},
      },
    });
    const def = { ...describeMachine(m), states: describeMachine(m).states.map((s) => ({ ...s, endsTurn: s.name === "done" })) };
    const text = toMermaid(def);
    expect(text).toContain("  a --> b : GO\n");
    expect(text).toContain("  a --> c : X [g | else]\n");
    expect(text).toContain("  b : BACK → a\n");
    expect(text).toContain("  done : ← STOP from a, b, c\n");
    expect(text).not.toContain("--> done");
  });
});

describe("the committed diagram", () => {
  it("docs/machine.mmd, .svg and .png were rendered from the current Mermaid text", async () => {
    const text = machineMermaid();
    const hash = await sha256Hex(text);
    const hint = "stale diagram: run `npm run render:machine`";
    expect(new TextDecoder().decode(await read(DIAGRAM_FILES.mermaid)), hint).toBe(text);
    expect(svgStamp(new TextDecoder().decode(await read(DIAGRAM_FILES.svg))), hint).toBe(hash);
    expect(pngStamp(new Uint8Array(await read(DIAGRAM_FILES.png))), hint).toBe(hash);
  });

  it("the stamps are found only where written, and a PNG stamp with a broken CRC is not trusted", async () => {
    const hash = await sha256Hex("x");
    expect(svgStamp(stampSvg('<svg id="a"></svg>', hash))).toBe(hash);
    expect(svgStamp('<svg id="a"></svg>')).toBeNull();
    const png = new Uint8Array(await read(DIAGRAM_FILES.png));
    const stamped = stampPng(png, hash); // a new stamp goes right after IHDR, before the committed one

    expect(pngStamp(stamped)).toBe(hash);
    stamped[80] ^= 0x01; // inside the new stamp's hash text (IHDR ends at byte 33)
    expect(pngStamp(stamped)).toBeNull();
    expect(() => pngStamp(new TextEncoder().encode("not a png"))).toThrow(/Not a PNG/);
  });
});
