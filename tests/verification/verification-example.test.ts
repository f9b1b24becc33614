/**
 * The documentation example runs as written: examples/fixer.ts is imported and
 * run, and docs/verification.md quotes its agent, the feedback its model
 * receives, and every gate event, exactly.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { main } from "../../examples/fixer.ts";

const read = (path: string) => readFileSync(new URL(path, import.meta.url), "utf8");

describe("examples/fixer.ts", () => {
  it("revises after the failing tests and completes with the verifier's result", async () => {
    const { agent, verdicts } = await main();
    expect(agent.state).toBe("done");
    expect(agent.output).toEqual({ summary: "Fixed generic parsing in the parser", verification: { testsRun: 12 } });
    expect(agent.verification).toMatchObject({ attemptsUsed: 2, maxAttempts: 5, lastOutcome: "passed" });
    expect(verdicts.map((v: { status: string; guardianCode: string }) => [v.guardianCode, v.status])).toEqual([
      ["output_verifier:fixer", "NEEDS_CHANGES"],
      ["output_verifier:fixer", "PASS"],
    ]);
  });

  it("runs the same way twice (the stub workspace is reset per run)", async () => {
    const a = await main();
    const b = await main();
    expect(b.messages.map((m) => m.content)).toEqual(a.messages.map((m) => m.content));
  });
});

describe("docs/verification.md", () => {
  const doc = read("../../docs/verification.md");

  it("quotes the example's agent exactly as the file has it", () => {
    const region = /\/\/ #region fixer[^\n]*\n([\s\S]*?)\/\/ #endregion fixer/.exec(read("../../examples/fixer.ts"))?.[1];
    const quoted = /<!-- fixer:start -->\n```ts\n([\s\S]*?)```\n<!-- fixer:end -->/.exec(doc)?.[1];
    expect(region).toContain("verifyAttempts: 5");
    expect(quoted).toBe(region);
  });

  it("the README quotes the same example, exactly as the file has it", () => {
    const region = /\/\/ #region fixer[^\n]*\n([\s\S]*?)\/\/ #endregion fixer/.exec(read("../../examples/fixer.ts"))?.[1];
    const quoted = /<!-- fixer:start -->\n```ts\n([\s\S]*?)```\n<!-- fixer:end -->/.exec(read("../../README.md"))?.[1];
    expect(region).toContain("VerificationRejected");
    expect(quoted).toBe(region);
  });

  it("shows the feedback message the example's model actually receives", async () => {
    const { messages } = await main();
    const feedback = messages.filter((m) => m.content.startsWith("<verification_rejected"));
    expect(feedback).toHaveLength(1);
    expect(doc).toContain("```\n" + feedback[0].content + "\n```");
  });

  it("has a row for every gate event type in its events table", () => {
    for (const type of [
      "verification_started", "verdict_recorded", "verification_passed", "verification_rejected",
      "verification_attempt_counted", "verification_exhausted", "verification_error",
    ]) {
      expect(doc).toContain(`| \`${type}\` |`);
    }
  });
});
