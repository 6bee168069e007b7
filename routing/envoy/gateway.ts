// Translation of one gateway: stack config + routing table -> every Envoy
// document it loads. Pure: no I/O, no Pulumi.
import type { GatewayName, RoutingConfig, StackConfig } from "../config/schema.js";
import type { RoutingTable } from "../table.js";
import { bootstrap } from "./bootstrap.js";
import { serviceClusters } from "./clusters.js";
import { gatewayContext, type RenderOptions, type XdsContext } from "./context.js";
import { routeConfiguration } from "./routes.js";
import { sdsDocuments } from "./tls.js";
import { discoveryResponse, type XdsDocument } from "./xds.js";
import type { Json } from "./types.js";

/** A gateway's xDS files (what its routes resource writes), as JSON documents. */
export type XdsDocuments = Pick<GatewayDocuments, "gateway" | "cds" | "rds">;

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

export function translateGateway(
  config: StackConfig,
  table: RoutingTable,
  gateway: GatewayName,
  options: RenderOptions = {},
): GatewayDocuments {
  const ctx = gatewayContext(config, gateway, options);
  return { gateway, bootstrap: bootstrap(ctx), sds: sdsDocuments(ctx.paths), ...xdsDocuments(ctx, table) };
}

/** The xDS files of one gateway: they need only the routing part of stack config. */
export function translateXds(
  config: RoutingConfig,
  table: RoutingTable,
  gateway: GatewayName,
  options: RenderOptions = {},
): XdsDocuments {
  return { gateway, ...xdsDocuments(gatewayContext(config, gateway, options), table) };
}

function xdsDocuments(ctx: XdsContext, table: RoutingTable): Pick<GatewayDocuments, "cds" | "rds"> {
  return {
    cds: discoveryResponse(serviceClusters(ctx, table)),
    rds: discoveryResponse([routeConfiguration(ctx, table)]),
  };
}
