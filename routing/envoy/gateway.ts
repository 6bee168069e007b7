// Translation of one gateway: stack config + routing table -> every Envoy
// document it loads. Pure: no I/O, no Pulumi.
import type { GatewayName, StackConfig } from "../config/schema.js";
import type { RoutingTable } from "../table.js";
import { bootstrap } from "./bootstrap.js";
import { serviceClusters } from "./clusters.js";
import { gatewayContext, type RenderOptions } from "./context.js";
import { routeConfiguration } from "./routes.js";
import { sdsDocuments } from "./tls.js";
import { discoveryResponse, type XdsDocument } from "./xds.js";
import type { Json } from "./types.js";

/** Everything one gateway loads, as JSON documents. */
export interface GatewayDocuments {
  gateway: GatewayName;
  /** envoy.yaml */
  bootstrap: Json;
  /** sds-*.yaml (file name -> document), next to envoy.yaml. */
  sds: Record<string, Json>;
  /** cds.yaml: the routed clusters. */
  cds: XdsDocument;
  /** rds.yaml: the TLS listener's route configuration. */
  rds: XdsDocument;
}

export function translateGateway(config: StackConfig, table: RoutingTable, gateway: GatewayName, options: RenderOptions = {}): GatewayDocuments {
  const ctx = gatewayContext(config, gateway, options);
  return {
    gateway,
    bootstrap: bootstrap(ctx),
    sds: sdsDocuments(ctx.paths),
    cds: discoveryResponse(serviceClusters(ctx, table)),
    rds: discoveryResponse([routeConfiguration(ctx, table)]),
  };
}
