/**
 * `npx tsx scripts/lock-platforms.ts` after `npm install`: lists in
 * package-lock.json the other platforms' optional builds (deno's and
 * rollup's) that the registry reachable here does not serve, so that
 * `npm ci` finds the lockfile in sync on a fresh clone.
 *
 * Why: `npm install` locks only the platform packages it could resolve, and
 * `npm ci` refuses a lockfile that misses any optional dependency
 * (`Missing: @deno/darwin-arm64@ from lock file`). Each added entry carries
 * the version the parent pins and the `os`/`cpu`/`libc` read from its name,
 * without `resolved`/`integrity`: `npm ci` skips it on every other platform
 * and, on its own platform, fetches that version from the registry.
 */
import { readFileSync, writeFileSync } from "node:fs";

type Entry = { version?: string; dev?: boolean; optional?: boolean; optionalDependencies?: Record<string, string> } & Record<string, unknown>;
const path = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(path, "utf8")) as { packages: Record<string, Entry> };

const OS = ["darwin", "linux", "win32", "android", "freebsd", "openbsd", "openharmony", "netbsd", "sunos", "aix"];
const CPU: Record<string, string> = { arm64: "arm64", x64: "x64", arm: "arm", ia32: "ia32", loong64: "loong64", ppc64: "ppc64", riscv64: "riscv64", s390x: "s390x" };

function platformOf(name: string): { os?: string[]; cpu?: string[]; libc?: string[] } {
  const tokens = name.split("/").pop()!.split("-");
  const os = tokens.find((t) => OS.includes(t));
  const cpu = tokens.map((t) => CPU[t]).find(Boolean);
  const libc = tokens.some((t) => t === "musl" || t.startsWith("musl")) ? "musl" : tokens.some((t) => t === "gnu" || t === "glibc" || t.startsWith("gnu")) ? "glibc" : undefined;
  return { ...(os ? { os: [os] } : {}), ...(cpu ? { cpu: [cpu] } : {}), ...(libc && os === "linux" ? { libc: [libc] } : {}) };
}

let added = 0;
for (const [key, entry] of Object.entries(lock.packages)) {
  for (const [dep, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const at = `node_modules/${dep}`;
    if (lock.packages[at] || lock.packages[`${key}/node_modules/${dep}`]) continue;
    lock.packages[at] = {
      version,
      ...platformOf(dep),
      ...(entry.dev ? { dev: true } : {}),
      optional: true,
    };
    added++;
  }
}
const sorted: Record<string, Entry> = {};
for (const k of Object.keys(lock.packages).sort((a, b) => (a === "" ? -1 : b === "" ? 1 : a < b ? -1 : a > b ? 1 : 0))) sorted[k] = lock.packages[k]!;
lock.packages = sorted;
writeFileSync(path, JSON.stringify(lock, null, 2) + "\n");
console.log(`package-lock.json: ${added} platform entries added`);
