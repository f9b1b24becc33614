/**
 * handoff(): a tool that transfers the conversation to another agent
 * definition. Unlike an agent tool (agents/agent-tool.ts), no child agent
 * runs: the same agent goes on with the same turn under the target's
 * instructions, tools and model; the turn's gate is the binding's when the
 * binding declares `output` (else the target's). What a call does at run
 * time is in actors/steps/handoff.ts; this module only defines the tool.
 *
 * Rules (docs/architecture.md, "Handoffs"):
 * - The target is named by its definition (or by its name, for cycles: A
 *   hands to B and B back to A). It must be registered in the same runtime:
 *   createGatehouse refuses an unregistered target with a DefinitionError
 *   (`checkHandoffTargets`), and a target registered under the same name
 *   must be the same definition.
 * - An agent cannot hand off to itself (defineAgent refuses such a tool).
 * - The tool takes no arguments and runs in-process; the tool runner answers
 *   a call itself (its `execute` is never reached), deterministically, so a
 *   claim that dies before the result's commit re-runs nothing visible.
 * - A handoff lasts for the turn: the agent stays bound to its definition
 *   (the name its tasks are enqueued under) and each turn starts under it.
 */
import { z } from "zod";
import { DefinitionError } from "../errors/errors.ts";
import { refuseUnknownKeys } from "../common/known-keys.ts";
import { type AnyTool, defineTool, type ToolDefinition } from "../tools/define.ts";
import type { AnyAgent } from "./define.ts";

export interface HandoffOptions {
  /** Tool name the model sees (default `transfer_to_<target name>`, `.` turned into `_`). */
  name?: string;
  /** What the model is told the tool does (default: it transfers the conversation to the target). */
  description?: string;
}

/** The keys handoff's options take (`satisfies` keeps the list and `HandoffOptions` in step). */
export const HANDOFF_KEYS: readonly string[] = Object.keys({ name: true, description: true } satisfies Record<keyof HandoffOptions, true>);

/** The type of a handoff tool's parameters, spelled out (published types are not inferred). */
export type HandoffParameters = z.ZodObject<Record<string, never>, z.core.$strip>;

export interface HandoffToolDefinition extends ToolDefinition<HandoffParameters> {
  /** The name of the definition the turn continues under. */
  readonly handoffTo: string;
  /** The target definition when it was given as one (checked against the runtime's at startup). */
  readonly handoffTarget: AnyAgent | null;
}

/** Is this tool a handoff (handoff())? */
export function isHandoffTool(tool: AnyTool | undefined): tool is HandoffToolDefinition {
  return !!tool && typeof (tool as Partial<HandoffToolDefinition>).handoffTo === "string";
}

/**
 * Checks every handoff of the runtime's definitions against them: the target
 * is registered, and a target given as a definition is the one registered
 * under its name. Called by createGatehouse (a DefinitionError at startup).
 */
export function checkHandoffTargets(agents: ReadonlyMap<string, AnyAgent>): void {
  for (const a of agents.values()) {
    for (const t of a.tools) {
      if (!isHandoffTool(t)) continue;
      const registered = agents.get(t.handoffTo);
      if (!registered) {
        throw new DefinitionError(
          `Agent "${a.name}": tool "${t.name}" hands off to agent "${t.handoffTo}", which is not registered in this runtime ` +
            `(add it to createGatehouse's agents; registered: ${[...agents.keys()].join(", ")})`,
          { key: "agents" },
        );
      }
      if (t.handoffTarget && t.handoffTarget !== registered) {
        throw new DefinitionError(
          `Agent "${a.name}": tool "${t.name}" hands off to a definition named "${t.handoffTo}" that is not the one registered under that name`,
          { key: "agents" },
        );
      }
    }
  }
}

/**
 * @example
 * const billing = defineAgent({ name: "billing", instructions: "Handle invoices.", model });
 * const triage = defineAgent({
 *   name: "triage", instructions: "Route the customer.", model,
 *   tools: [handoff(billing, { description: "Billing questions" })],
 * });
 * // A cycle names the later definition: tools: [handoff("triage")] in billing.
 */
export function handoff(target: AnyAgent | string, options: HandoffOptions = {}): HandoffToolDefinition {
  const byName = typeof target === "string";
  if (!byName && (!target || target.kind !== "agent")) {
    throw new DefinitionError("handoff() needs an agent from defineAgent() or the name of one", { key: "target" });
  }
  const to = byName ? target : target.name;
  if (typeof to !== "string" || !/^[a-zA-Z0-9_.-]{1,64}$/.test(to)) {
    throw new DefinitionError(`handoff(): ${JSON.stringify(to)} is not an agent name`, { key: "target" });
  }
  if (!options || typeof options !== "object") throw new DefinitionError(`handoff("${to}"): options must be an object`);
  refuseUnknownKeys(options, HANDOFF_KEYS, `handoff("${to}")`, "options");
  const tool = defineTool({
    name: options.name ?? `transfer_to_${to.replace(/\./g, "_")}`,
    description: options.description ??
      `Transfer the conversation to the agent "${to}": it continues this task with its own instructions and tools`,
    parameters: z.object({}) as HandoffParameters,
    // Never called: the tool runner answers handoff calls (actors/steps/handoff.ts). It makes the tool in-process.
    execute: () => ({ handedOffTo: to }),
  });
  return Object.freeze({ ...tool, handoffTo: to, handoffTarget: byName ? null : target });
}
