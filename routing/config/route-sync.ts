// How the routes follow the cluster's dev/PR namespaces: by `sync-routes`,
// run from outside (CI, or a `--watch` left running), or by the route
// controller the program declares in the gateways' namespace
// (`inCluster`). Only one of them writes the gateways' ConfigMaps:
// `sync-routes` refuses to run while the controller is declared.
import { z } from "zod";
import { routeControllerImage } from "./images.js";
import { containerResources, intIn } from "./primitives.js";

/**
 * A Node.js process: its code and a watch of its config (a replica that does not lead: 93 MiB
 * resident at 5,000 dev/PR pairs), and on the leader the informers' caches, the rendered files
 * and their model too (188-200 MiB resident at 5,000 pairs, bench/route-controller.ts on
 * 2026-12-07); the limit leaves room for a render's peak.
 */
export const CONTROLLER_RESOURCES = {
  requests: { cpu: "20m", memory: "256Mi" },
  limits: { cpu: "1", memory: "512Mi" },
};

export const inCluster = z.strictObject({
  /** Replicas of the route controller: one leads (holds the Lease and writes), the others wait to take over. */
  replicas: intIn(1, 5, "a whole number of replicas").default(2),
  /** The route controller's image, pinned (scripts/route-controller-image.sh builds it from this checkout). */
  image: routeControllerImage,
  /** Its container resources. */
  resources: containerResources.default(CONTROLLER_RESOURCES),
  /** How long after a namespace or Service change the controller writes; changes meanwhile join the write. */
  debounceMs: intIn(0, 10_000, "a number of milliseconds").default(100),
});

export const routeSync = z.strictObject({
  /** Set: the route controller runs in the cluster and writes the dev/PR routes; unset: `sync-routes` does, from outside. */
  inCluster: inCluster.optional(),
});

export type RouteControllerSettings = z.output<typeof inCluster>;
