/**
 * The tool registry over HTTP (docs/contracts.md):
 *
 * - `GET /v1/tools`: every role with its methods, aliases, call count and
 *   overlaps, by role name.
 * - `GET /v1/tools/:role`: one role; 404 `tool_role_not_found` when the
 *   registry has no entry, 400 `invalid_tool_role` for a name that cannot be
 *   a role (the tool name pattern).
 *
 * Read only. The registry spans every agent, so under auth these need a
 * token over every tenant (routes/auth/access.ts).
 */
import { z } from "@hono/zod-openapi";
import { toolRoleView } from "../contracts/registry.ts";
import { defineRoute, json, routeApp } from "./define.ts";
import { ProblemError } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";

const ROLE = /^[a-zA-Z0-9_-]{1,64}$/;

const ToolRole = z.object({
  role: z.string(),
  methods: z.array(z.string()).describe("Method names (tool names) seen in successful calls, first spelling of each form first-seen first"),
  aliases: z.array(z.object({ alias: z.string(), method: z.string() })).describe("Other spellings of a method (same normalised form)"),
  calls: z.number().int().describe("Successful calls recorded"),
  createdAt: z.number().nullable(),
  updatedAt: z.number().nullable(),
  overlaps: z.array(z.object({
    methods: z.tuple([z.string(), z.string()]),
    kind: z.enum(["alias", "prefix"]),
  })).describe("Methods of this role that look like one capability (observations; nothing is renamed)"),
}).openapi("ToolRole");
const ToolRoleList = z.object({ tools: z.array(ToolRole) }).openapi("ToolRoleList");
/** The role is checked in the handler, so a bad one is `invalid_tool_role`, not `validation_failed`. */
const RoleParams = z.object({ role: z.string().openapi({ param: { name: "role", in: "path" }, example: "web_fetcher" }) });

const listToolRoles = defineRoute({
  method: "get",
  path: "/v1/tools",
  operationId: "listToolRoles",
  summary: "The tool registry: every role with its methods, aliases and overlaps",
  tags: ["tools"],
  responses: { 200: json("Every registry entry, by role", ToolRoleList) },
}, [], { verb: "read", global: true });

const getToolRole = defineRoute({
  method: "get",
  path: "/v1/tools/{role}",
  operationId: "getToolRole",
  summary: "One role of the tool registry",
  tags: ["tools"],
  request: { params: RoleParams },
  responses: { 200: json("The role's entry", ToolRole) },
}, ["invalid_tool_role", "tool_role_not_found"], { verb: "read", global: true });

export function toolRoutes(rt: RouteRuntime) {
  return routeApp(rt)
    .openapi(listToolRoles, async (c) => c.json({ tools: (await rt.store.listToolRoles()).map(toolRoleView) }, 200))
    .openapi(getToolRole, async (c) => {
      const { role } = c.req.valid("param");
      if (!ROLE.test(role)) throw new ProblemError("invalid_tool_role", `Cannot read tool role ${JSON.stringify(role.slice(0, 80))}: it must match ${ROLE}`);
      const e = await rt.store.getToolRole(role);
      if (!e) throw new ProblemError("tool_role_not_found", `Tool role "${role}" has no registry entry`);
      return c.json(toolRoleView(e), 200);
    });
}
