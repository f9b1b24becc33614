/**
 * The check of arguments a person edits when approving a tool call
 * (`POST /v1/agents/:agentId/approvals` `args`): the worker's own check of a
 * call's arguments (tools/specs.ts `prepareArgs`: defaults filled, fixed
 * values forced, the tool's `parameters` schema), run before anything is
 * decided, so an edit the tool would refuse is never stored.
 *
 * The tool is looked up by the call's recorded name in the definition the
 * turn runs under (the binding, or a handoff's target), then in the binding.
 */
import type { AnyTool } from "../tools/define.ts";
import { prepareArgs } from "../tools/specs.ts";
import type { AnyAgent } from "./define.ts";

/** One issue of an edit the schema refuses: `path` inside the arguments. */
export interface EditIssue {
  path: Array<string | number>;
  code: string;
  message: string;
}

/** The tool a call named `name` ran under `definition` (else the binding `agentName`); undefined when this process has neither. */
export function toolOfCall(agents: ReadonlyMap<string, AnyAgent>, definition: string | undefined, agentName: string, name: string): AnyTool | undefined {
  for (const d of definition !== undefined ? [definition, agentName] : [agentName]) {
    const tool = agents.get(d)?.tools.find((t) => t.name === name);
    if (tool) return tool;
  }
  return undefined;
}

/** The issues of `args` as arguments of `tool` (empty: the tool takes them). */
export function editIssues(tool: AnyTool, args: Record<string, unknown>): EditIssue[] {
  const r = prepareArgs(tool, args);
  if (r.ok) return [];
  const issues = Array.isArray(r.issues) ? r.issues as Array<{ path?: unknown[]; code?: unknown; message?: unknown }> : [];
  if (issues.length === 0) return [{ path: [], code: "custom", message: r.message }];
  return issues.map((i) => ({
    path: (i.path ?? []).map((p) => (typeof p === "number" ? p : String(p))),
    code: String(i.code ?? "custom"),
    message: String(i.message ?? r.message),
  }));
}
