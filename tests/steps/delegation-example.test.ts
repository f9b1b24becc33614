/**
 * The delegation example runs as written: examples/team.ts is imported and
 * run, and docs/contracts.md and docs/teams.md quote its agents exactly.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { main } from "../../examples/team.ts";

const read = (path: string) => readFileSync(new URL(path, import.meta.url), "utf8");
const region = (name: string) => new RegExp(`// #region ${name}[^\\n]*\\n([\\s\\S]*?)// #endregion ${name}`).exec(read("../../examples/team.ts"))?.[1];
const quoted = (doc: string, name: string) => new RegExp(`<!-- ${name}:start -->\\n\`\`\`ts\\n([\\s\\S]*?)\`\`\`\\n<!-- ${name}:end -->`).exec(doc)?.[1];

describe("examples/team.ts", () => {
  it("the lead receives the researcher's verified output; a task budget too small for the team fails the turn", async () => {
    const r = await main();
    expect(r.within).toMatchObject({ state: "done", output: { summary: "Sea otters hold hands while they sleep" } });
    // The researcher's 350 tokens count toward the lead's turn.
    expect(r.within.turnUsage).toMatchObject({ inputTokens: 750, outputTokens: 100, steps: 2 });
    expect(r.child).toMatchObject({ state: "done", output: { facts: ["Sea otters hold hands while they sleep"], checked: true } });
    expect(r.childEvents.find((e) => e.type === "delegated_by")!.data).toMatchObject({ parentAgentId: "lead-1", depth: 1 });

    expect(r.over).toMatchObject({ state: "failed", error: { reason: "budget_exhausted", message: "The turn crossed its spend limit maxTokensPerTurn = 500 (used 570)" } });
    expect(r.verdicts).toHaveLength(1);
    expect(r.verdicts[0]).toMatchObject({ guardianCode: "budget", status: "FAIL", evidence: { limit: "maxTokensPerTurn", max: 500, used: 570 } });
  });
});

describe("docs/contracts.md and docs/teams.md", () => {
  const doc = read("../../docs/contracts.md");
  const readme = read("../../docs/teams.md");
  it("quote the example's agents and run exactly as the file has them", () => {
    for (const name of ["team", "run"]) {
      expect(region(name)).toBeTruthy();
      expect(quoted(doc, name)).toBe(region(name));
    }
    expect(quoted(readme, "team")).toBe(region("team"));
  });
  it("name every delegation and spend-limit event and error type", () => {
    for (const word of ["delegation_started", "delegated_by", "budget_exhausted", "delegation_failed", "delegation_depth_exceeded", "delegation_conflict", "deliverChildResult"]) {
      expect(doc).toContain(`\`${word}\``);
    }
  });
});
