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
  if (loaded.config.routeSync.inCluster) {
    // The live ConfigMaps are the record of the dev/PR routes the route controller writes: the routes resources get none.
    void pulumi.log.info("dev/PR routes: written by the route controller in the cluster (routeSync.inCluster)");
    devNamespaces = {};
  } else if (sync) {
    void pulumi.log.info(`dev/PR namespaces as sync-routes discovered and wrote them (rendered at ${sync.renderedAt})`);
    devNamespaces = sync.devNamespaces;
  } else {
    devNamespaces = await discoverDevNamespaces(loaded, now);
  }
  const resources = declaredFromNowOn();
  const stack = declareStack(loaded, devNamespaces, now, sync);
  await registered(resources);
  return {
    /** Each gateway's Service and external address. */
    gateways: stack.gateways,
    /** Every routed host and path per gateway, and the upstream it reaches. */
    routes: stack.routes,
  };
}

/**
 * Every resource the program declares from now on, components' children
 * included: a stack transformation sees each one, and changes none.
 */
function declaredFromNowOn(): pulumi.Resource[] {
  const resources: pulumi.Resource[] = [];
  pulumi.runtime.registerStackTransformation(({ resource }) => {
    resources.push(resource);
    return undefined;
  });
  return resources;
}

/**
 * Resolves once the engine has registered each resource; rejects with the
 * first registration that failed (the SDK fails a resource's URN with it).
 * The engine deletes, at the end of a run, the resources the program did not
 * register, and a registration that fails after the program has returned is
 * reported only after those deletes (as the Automation API runs an inline
 * program, and as cmd/run runs index.ts; @pulumi/pulumi 3.x). A resource whose
 * registration failed so (a routes resource whose dynamic provider could not
 * be serialized, say) was deleted: for a routes resource, a delete that writes
 * the gateway's ConfigMap with the production routes alone. Awaited here, the
 * failure fails the program, and the engine deletes nothing.
 */
export async function registered(resources: readonly pulumi.Resource[]): Promise<void> {
  // Output.promise() is the SDK's own way to await a value; it is not in its type declarations.
  await Promise.all(resources.map((r) => (r.urn as unknown as { promise(): Promise<string> }).promise()));
}
