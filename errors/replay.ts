/**
 * The error of replay bundles (routes/replay-bundle.ts).
 * @module
 */
import { GatehouseError } from "./base.ts";

/**
 * A bundle that this version cannot load (or could load but not serve);
 * `code` is the HTTP problem code, `field` the part of the bundle refused
 * (e.g. `agentId`, `head.snapshot`; absent when the whole shape is).
 */
export class ReplayBundleError extends GatehouseError {
  declare readonly code: "invalid_replay_bundle";
  readonly field?: string;
  constructor(message: string, field?: string) {
    super("invalid_replay_bundle", message);
    this.name = "ReplayBundleError";
    if (field !== undefined) this.field = field;
  }
}
