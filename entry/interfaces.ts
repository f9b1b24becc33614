/**
 * `gatehouse interfaces [--role <role>]`: what the tool registry of the
 * configured store (entry/store-from-env.ts: GATEHOUSE_REDIS_URL,
 * UPSTASH_REDIS_REST_URL, or an empty memory store) knows: per role its
 * methods, aliases and overlaps (docs/contracts.md). Exit 0 with the text on
 * stdout; 1 when the named role has no entry; 2 on bad arguments.
 */
import type { Store } from "../store/port.ts";
import { describeToolRole, toolRoleView } from "../contracts/registry.ts";

export interface InterfacesResult {
  exitCode: 0 | 1 | 2;
  out: string;
  err: string;
}

export const INTERFACES_USAGE = "usage: gatehouse interfaces [--role <role>]";

/** Runs the command against `store` with the arguments after `interfaces`. */
export async function interfacesCommand(store: Store, args: string[]): Promise<InterfacesResult> {
  let role: string | undefined;
  if (args.length === 2 && args[0] === "--role") role = args[1];
  else if (args.length === 1 && args[0]!.startsWith("--role=")) role = args[0]!.slice("--role=".length);
  else if (args.length !== 0) return { exitCode: 2, out: "", err: `gatehouse interfaces: unknown arguments: ${args.join(" ")}\n${INTERFACES_USAGE}\n` };
  if (role !== undefined) {
    if (!/^[a-zA-Z0-9_-]{1,64}$/.test(role)) {
      return { exitCode: 2, out: "", err: `gatehouse interfaces: cannot read tool role ${JSON.stringify(role)}: it must match ^[a-zA-Z0-9_-]{1,64}$\n` };
    }
    const e = await store.getToolRole(role);
    if (!e) return { exitCode: 1, out: "", err: `gatehouse interfaces: the tool registry has no role "${role}"\n` };
    return { exitCode: 0, out: `${describeToolRole(toolRoleView(e))}\n`, err: "" };
  }
  const all = await store.listToolRoles();
  if (all.length === 0) return { exitCode: 0, out: "the tool registry is empty\n", err: "" };
  return { exitCode: 0, out: `${all.map((e) => describeToolRole(toolRoleView(e))).join("\n")}\n`, err: "" };
}
