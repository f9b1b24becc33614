/**
 * Renders the agent statechart's Mermaid text (`toMermaid(describeMachine())`)
 * to docs/machine.svg and docs/machine.png with Mermaid's browser bundle in
 * headless Chromium, offline (the page is set from a string; every request
 * is aborted). Also writes the text to docs/machine.mmd. Both images carry
 * the text's SHA-256 (scripts/machine-diagram.ts), which
 * tests/machines/machine-diagram.test.ts compares with the current machine. Run after
 * changing the machine or toMermaid:
 *
 *   npm run render:machine                       # Chromium at /usr/bin/chromium
 *   CHROMIUM=/path/to/chrome npm run render:machine
 */
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { DIAGRAM_FILES, machineMermaid, sha256Hex, stampPng, stampSvg } from "./machine-diagram.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const MERMAID_BUNDLE = createRequire(import.meta.url).resolve("mermaid/dist/mermaid.min.js");
const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--no-first-run",
];

/**
 * In-page check (plain JS text: tsx would add helpers to a compiled function
 * that the page does not have): the pairs of edge labels and state boxes
 * whose rectangles overlap by more than a pixel.
 */
const OVERLAPS = `(() => {
  const boxes = [
    ...[...document.querySelectorAll("#out g.edgeLabel")].map((el) => ({ kind: "label", el })),
    ...[...document.querySelectorAll("#out g.node")].map((el) => ({ kind: "state", el })),
  ].map(({ kind, el }) => ({ kind, text: (el.textContent || "").trim(), r: el.getBoundingClientRect() }))
    .filter((b) => b.text !== "" && b.r.width > 0 && b.r.height > 0);
  const hit = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  const found = [];
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      if (boxes[i].kind === "state" && boxes[j].kind === "state") continue;
      if (hit(boxes[i].r, boxes[j].r)) found.push('"' + boxes[i].text + '" overlaps "' + boxes[j].text + '"');
    }
  }
  return found;
})()`;

declare const mermaid: {
  initialize(config: Record<string, unknown>): void;
  render(id: string, text: string): Promise<{ svg: string }>;
};

async function main() {
  const text = machineMermaid();
  const hash = await sha256Hex(text);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: CHROMIUM_FLAGS,
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 }, deviceScaleFactor: 2 });
    await page.route("**/*", (route) => route.abort());
    await page.setContent(
      `<!doctype html><html><head><meta charset="utf-8"><style>body{margin:0;background:#fff}#out{display:inline-block;padding:16px}</style></head><body><div id="out"></div></body></html>`,
    );
    await page.addScriptTag({ content: readFileSync(MERMAID_BUNDLE, "utf8") });
    const svg = await page.evaluate(async (source) => {
      mermaid.initialize({ startOnLoad: false, securityLevel: "strict", theme: "default", fontFamily: "sans-serif" });
      const { svg } = await mermaid.render("agent-machine", source);
      const out = document.getElementById("out")!;
      out.innerHTML = svg;
      // Mermaid sizes the SVG to its container (max-width); show it at its own size.
      const el = out.querySelector("svg")!;
      el.style.maxWidth = "none";
      el.setAttribute("width", String(el.viewBox.baseVal.width));
      el.setAttribute("height", String(el.viewBox.baseVal.height));
      return svg;
    }, text);
    // Readability check: no edge label may overlap another label or a state's box.
    const overlaps = await page.evaluate(OVERLAPS) as string[];
    if (overlaps.length > 0) throw new Error(`Unreadable diagram, nothing written:\n${overlaps.join("\n")}`);
    const png = await page.locator("#out").screenshot({ type: "png", omitBackground: false });
    writeFileSync(join(ROOT, DIAGRAM_FILES.mermaid), text);
    writeFileSync(join(ROOT, DIAGRAM_FILES.svg), stampSvg(svg, hash) + "\n");
    writeFileSync(join(ROOT, DIAGRAM_FILES.png), stampPng(new Uint8Array(png), hash));
    console.log(`wrote ${Object.values(DIAGRAM_FILES).join(", ")} (source sha256 ${hash.slice(0, 12)}…)`);
  } finally {
    await browser.close();
  }
}

await main();
