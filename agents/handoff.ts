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
 * - `needsApproval`: the call waits for a person's decision like any tool's
 *   (actors/steps/approvals.ts); only an approved call transfers.
 * - `inputFilter`: what the target's model is shown of the conversation
 *   before the handoff (actors/steps/handoff-view.ts); the stored
 *   conversation is never changed.
 */
import { z } from "zod";
import { DefinitionError } from "../errors/errors.ts";
import { refuseUnknownKeys } from "../common/known-keys.ts";
import { type AnyTool, type ApprovalContext, defineTool, type ToolDefinition } from "../tools/define.ts";
import type { Message } from "../common/message.ts";
import type { AnyAgent } from "./define.ts";

/**
 * What the target of a handoff sees of the conversation before it: given the
 * messages up to the handoff (the summary of earlier ones first, when the
 * memory policy keeps one; never the system message, the target's
 * instructions always lead), it answers the messages the target's model is
 * shown in their place. The target's own steps after the handoff follow
 * unfiltered. It runs at each of the target's model steps, so it must be a
 * pure function of the messages (same messages, same answer); a filter that
 * throws or answers anything but an array of messages fails the step like a
 * model error.
 */
export type HandoffInputFilter = (messages: Message[]) => Message[];

/** An input filter that passes only the last user message (the task the turn started with): the target starts afresh. */
export const lastUserMessage: HandoffInputFilter = (messages) => {
  const last = messages.findLast((m) => m.role === "user");
  return last ? [last] : [];
};

export interface HandoffOptions {
  /** Tool name the model sees (default `transfer_to_<target name>`, `.` turned into `_`). */
  name?: string;
  /** What the model is told the tool does (default: it transfers the conversation to the target). */
  description?: string;
  /**
   * A person decides whether the handoff happens, as `defineTool`'s
   * `needsApproval` (true, or a predicate of the call's arguments, which are
   * `{}`): approved, the turn goes on under the target; rejected or timed out,
   * it stays with the caller, whose model sees `approval_rejected` /
   * `approval_timeout`.
   */
  needsApproval?: boolean | ((args: Record<string, unknown>, ctx: ApprovalContext) => boolean | Promise<boolean>);
  /** How long a call waits for the decision (ms), as `defineTool`'s; default the call's own window (`toolTimeoutMs`). */
  approvalTimeoutMs?: number;
  /** What the target sees of the conversation before the handoff (default: all of it); e.g. `lastUserMessage`. */
  inputFilter?: HandoffInputFilter;
}

/** The keys handoff's options take (`satisfies` keeps the list and `HandoffOptions` in step). */
export const HANDOFF_KEYS: readonly string[] = Object.keys(
  { name: true, description: true, needsApproval: true, approvalTimeoutMs: true, inputFilter: true } satisfies Record<keyof HandoffOptions, true>,
);

/** The type of a handoff tool's parameters, spelled out (published types are not inferred). */
export type HandoffParameters = z.ZodObject<Record<string, never>, z.core.$strip>;

export interface HandoffToolDefinition extends ToolDefinition<HandoffParameters> {
  /** The name of the definition the turn continues under. */
  readonly handoffTo: string;
  /** The target definition when it was given as one (checked against the runtime's at startup). */
  readonly handoffTarget: AnyAgent | null;
  /** What the target sees of the conversation before the handoff (null: all of it). */
  readonly inputFilter: HandoffInputFilter | null;
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
  if (options.inputFilter !== undefined && typeof options.inputFilter !== "function") {
    throw new DefinitionError(`handoff("${to}"): inputFilter must be a function of the messages`, { key: "inputFilter" });
  }
  const tool = defineTool({
    name: options.name ?? `transfer_to_${to.replace(/\./g, "_")}`,
    description: options.description ??
      `Transfer the conversation to the agent "${to}": it continues this task with its own instructions and tools`,
    parameters: z.object({}) as HandoffParameters,
    // Never called: the tool runner answers handoff calls (actors/steps/handoff.ts). It makes the tool in-process.
    execute: () => ({ handedOffTo: to }),
    // defineTool checks them as for any tool; the tool runner holds the call until a person approves (actors/steps/approvals.ts).
    ...(options.needsApproval !== undefined ? { needsApproval: options.needsApproval } : {}),
    ...(options.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: options.approvalTimeoutMs } : {}),
  });
  return Object.freeze({ ...tool, handoffTo: to, handoffTarget: byName ? null : target, inputFilter: options.inputFilter ?? null });
}
