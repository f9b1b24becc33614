/**
 * The files git tracks under a directory, for the tests that read the source
 * tree (tests/repo/layers.test.ts, tests/docs/public-face.test.ts,
 * tests/pool/one-driver.test.ts).
 *
 * Invariant: a file that git does not track is never read. A scratch folder
 * in the checkout (an experiment, another tool's output) that imports the
 * sources changes no verdict of these tests; a new source file counts once it
 * is added (`git add`).
 *
 * @example
 * trackedFiles(ROOT)                  // every tracked file, absolute paths
 * trackedFiles(ROOT, "actors/steps")  // those under actors/steps/
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";

/**
 * Absolute paths of the files git tracks under `root` (or under `root/under`),
 * sorted; a tracked file deleted in the working tree is left out.
 */
export function trackedFiles(root: string, under = "."): string[] {
  const out = execFileSync("git", ["ls-files", "-z", "--", under], { cwd: root, encoding: "utf8", maxBuffer: 64 << 20 });
  return out
    .split("\0")
    .filter((f) => f !== "")
    .map((f) => join(root, f))
    .filter((p) => existsSync(p))
    .sort();
}
