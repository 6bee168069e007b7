// The program as a function of what it is given: run by the engine through
// index.ts (it discovers the dev/PR namespaces itself), or inline by
// sync-routes' record step (route-sync/sync.ts), given what the sync
// discovered and wrote.
import * as pulumi from "@pulumi/pulumi";
import { discoverDevNamespaces } from "./discover.js";
import { declareStack, loadStackConfig } from "./stack.js";
import type { SyncWrites } from "../routes-provider/core.js";
import type { DevNamespaces } from "../routing/table.js";

/** What a sync-routes run discovered and wrote, for the engine run that records it. */
export interface SyncRecord extends SyncWrites {
  /** The dev/PR namespaces it discovered (the program takes them instead of discovering again). */
  devNamespaces: DevNamespaces;
}

/** Declares the stack; with `sync`, as that sync discovered and wrote it. Returns the stack's outputs. */
export async function runProgram(sync?: SyncRecord) {
  const loaded = loadStackConfig();
  const now = new Date();
  let devNamespaces: DevNamespaces;
  if (sync) {
    void pulumi.log.info(`dev/PR namespaces as sync-routes discovered and wrote them (rendered at ${sync.renderedAt})`);
    devNamespaces = sync.devNamespaces;
  } else {
    devNamespaces = await discoverDevNamespaces(loaded, now);
  }
  const stack = declareStack(loaded, devNamespaces, now, sync);
  return {
    /** Each gateway's Service and external address. */
    gateways: stack.gateways,
    /** Every routed host and path per gateway, and the upstream it reaches. */
    routes: stack.routes,
  };
}
