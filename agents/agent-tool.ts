/**
 * agentTool(): an agent callable as a tool (delegation). The parent's model
 * calls it like any tool; the call hands a task to a child agent and the
 * child's terminal result comes back as the call's outcome. How the call is
 * dispatched, delivered and recovered after a crash is in
 * actors/delegation/delegation.ts; this module only defines the tool.
 *
 * - Parameters: `{ input: string | object }`, the child's task input, unless
 *   `parameters` (a zod object schema) is given; then the whole argument
 *   object is the child's input.
 * - The tool is external-like: it has no `execute`; its calls are recorded
 *   pending with a deadline (`timeoutMs`, default the external tool timeout)
 *   and resolved by the child's delivery, or by the watchdog's timeout.
 * - `deliverable` (a contract on the child's result, checked at definition
 *   like any tool's) applies where the child's result is delivered to the
 *   parent (`deliverChildResult`): a child's `done` output that does not
 *   satisfy it reaches the parent as `contract_violation`.
 * - `needsApproval`: a call a person must approve is recorded like any
 *   delegation, but its child's task is enqueued only once the call is
 *   approved (actors/delegation/claim-hooks.ts); a rejected or timed-out
 *   call never creates the child.
 */
import { z } from "zod";
import { DefinitionError } from "../errors/errors.ts";
import { refuseUnknownKeys } from "../common/known-keys.ts";
import { type AnyTool, type Deliverable, defineTool, type ToolConfig, type ToolDefinition } from "../tools/define.ts";
import type { AnyAgent } from "./define.ts";

export interface AgentToolOptions<S extends z.ZodType = z.ZodType> {
  /** Tool name the model sees (default: the child's name, `.` turned into `_`). */
  name?: string;
  description?: string;
  /** Arguments of the call (a zod object schema); default `{ input: string | object }`. */
  parameters?: S;
  /** A contract on the child's result (contracts/deliverable.ts), checked where the result is delivered to the parent. */
  deliverable?: Deliverable;
  /** The call's resume deadline in ms (default: the external tool timeout of createGatehouse()). */
  timeoutMs?: number;
  /**
   * A person decides whether each call delegates, as `defineTool`'s
   * `needsApproval` (true, or a predicate of the call's arguments): the
   * call waits with `approval: "pending"`; approved, the child's task is
   * enqueued; rejected or timed out, no child runs and the model sees
   * `approval_rejected` / `approval_timeout`.
   */
  needsApproval?: ToolConfig<S>["needsApproval"];
  /** How long a call waits for the decision (ms), as `defineTool`'s; default the call's `timeoutMs`. */
  approvalTimeoutMs?: number;
}

/** The keys agentTool's options take (`satisfies` keeps the list and `AgentToolOptions` in step). */
export const AGENT_TOOL_KEYS: readonly string[] = Object.keys(
  { name: true, description: true, parameters: true, deliverable: true, timeoutMs: true, needsApproval: true, approvalTimeoutMs: true } satisfies Record<keyof AgentToolOptions, true>,
);

/** The type of `agentToolInput`, spelled out (published types are not inferred). */
export type AgentToolInput = z.ZodObject<{ input: z.ZodUnion<readonly [z.ZodString, z.ZodRecord<z.ZodString, z.ZodUnknown>]> }, z.core.$strip>;

/** The default parameters of an agent tool: the child's task input. */
export const agentToolInput: AgentToolInput = z.object({
  input: z.union([z.string(), z.record(z.string(), z.unknown())]).describe("The task for the agent: text or a JSON object"),
});

export interface AgentToolDefinition<S extends z.ZodType = z.ZodType> extends ToolDefinition<S> {
  /** The child agent a call delegates to. */
  readonly delegate: AnyAgent;
  /** True when `parameters` was left out: the child's input is the `input` argument. */
  readonly inputArgument: boolean;
}

/** Is this tool an agent tool (agentTool())? */
export function isAgentTool(tool: AnyTool | undefined): tool is AgentToolDefinition<any> {
  return !!tool && !!(tool as Partial<AgentToolDefinition>).delegate && (tool as AgentToolDefinition).delegate.kind === "agent";
}

/** The child's task input for a call's (prepared) arguments. */
export function childInputOf(tool: AgentToolDefinition<any>, args: unknown): unknown {
  if (!tool.inputArgument) return args;
  return args && typeof args === "object" ? (args as { input?: unknown }).input ?? null : null;
}

/**
 * The agents reachable from `agents` through agent tools, each once, parents
 * first. Two different definitions under one name are refused.
 */
export function withDelegates(agents: Iterable<AnyAgent>): AnyAgent[] {
  const byName = new Map<string, AnyAgent>();
  const visit = (a: AnyAgent) => {
    const prior = byName.get(a.name);
    if (prior) {
      if (prior !== a) throw new DefinitionError(`Two different agents are named "${a.name}" (one is delegated to by an agentTool)`, { key: "agents" });
      return;
    }
    byName.set(a.name, a);
    for (const t of a.tools) if (isAgentTool(t)) visit(t.delegate);
  };
  for (const a of agents) visit(a);
  return [...byName.values()];
}

/**
 * @example
 * const researcher = defineAgent({ name: "researcher", instructions: "Find facts.", model });
 * const lead = defineAgent({
 *   name: "lead", instructions: "Delegate research.", model: leadModel,
 *   tools: [agentTool(researcher, { description: "Ask the researcher" })],
 * });
 */
export function agentTool<S extends z.ZodType = AgentToolInput>(
  child: AnyAgent,
  options: AgentToolOptions<S> = {},
): AgentToolDefinition<S> {
  if (!child || child.kind !== "agent") throw new DefinitionError("agentTool() needs an agent from defineAgent()", { key: "child" });
  if (!options || typeof options !== "object") throw new DefinitionError(`agentTool("${child.name}"): options must be an object`);
  refuseUnknownKeys(options, AGENT_TOOL_KEYS, `agentTool("${child.name}")`, "options");
  const name = options.name ?? child.name.replace(/\./g, "_");
  const tool = defineTool({
    name,
    description: options.description ?? `Hand a task to the agent "${child.name}" and get its result`,
    parameters: (options.parameters ?? agentToolInput) as S,
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    // defineTool checks the contract's definition, as for any tool.
    ...(options.deliverable !== undefined ? { deliverable: options.deliverable } : {}),
    ...(options.needsApproval !== undefined ? { needsApproval: options.needsApproval } : {}),
    ...(options.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: options.approvalTimeoutMs } : {}),
  });
  return Object.freeze({
    ...tool,
    delegate: child,
    inputArgument: options.parameters === undefined,
  });
}
