// Rendering: stack config + dev namespaces -> the validated files of both
// gateways. Nothing is returned (so nothing can be written) unless every
// document of every gateway is valid and the xDS ConfigMaps fit.
import { InputError, type Problem } from "./config/errors.js";
import { GATEWAYS, type GatewayName, type StackConfig } from "./config/schema.js";
import type { RenderOptions } from "./envoy/context.js";
import { translateGateway, type GatewayDocuments } from "./envoy/gateway.js";
import { BOOTSTRAP_FILE, XDS_FILES } from "./envoy/types.js";
import { toReadableYaml, toXdsYaml } from "./envoy/xds.js";
import { tableCounts, type RoutingTable } from "./table.js";
import { validateGateway } from "./validation/index.js";

/** Kubernetes refuses a ConfigMap whose keys and values exceed 1 MiB. */
export const CONFIGMAP_LIMIT_BYTES = 1024 * 1024;

export interface GatewayFiles {
  gateway: GatewayName;
  /** Bootstrap ConfigMap data: envoy.yaml and the sds-*.yaml files. */
  bootstrap: Record<string, string>;
  /** xDS ConfigMap data: cds.yaml and rds.yaml. */
  xds: Record<string, string>;
  /** The documents the files were written from. */
  documents: GatewayDocuments;
}

/** Renders and validates one gateway; throws an `InputError` listing every problem. */
export function renderGateway(config: StackConfig, table: RoutingTable, gateway: GatewayName, options: RenderOptions = {}): GatewayFiles {
  const { files, problems } = tryRenderGateway(config, table, gateway, options);
  if (problems.length) throw new InputError(`Envoy documents of ${gateway}`, problems);
  return files;
}

/** Renders and validates both gateways; throws one `InputError` listing every problem of either. */
export function renderGateways(config: StackConfig, table: RoutingTable, options: RenderOptions = {}): GatewayFiles[] {
  const results = GATEWAYS.map((g) => tryRenderGateway(config, table, g, options));
  const problems = results.flatMap((r) => r.problems);
  if (problems.length) throw new InputError("Envoy documents", problems);
  return results.map((r) => r.files);
}

function tryRenderGateway(config: StackConfig, table: RoutingTable, gateway: GatewayName, options: RenderOptions): { files: GatewayFiles; problems: Problem[] } {
  const documents = translateGateway(config, table, gateway, options);
  const problems = validateGateway(documents);
  const xds = { [XDS_FILES.cds]: toXdsYaml(documents.cds), [XDS_FILES.rds]: toXdsYaml(documents.rds) };
  const bootstrap: Record<string, string> = { [BOOTSTRAP_FILE]: toReadableYaml(documents.bootstrap) };
  for (const [file, doc] of Object.entries(documents.sds)) bootstrap[file] = toReadableYaml(doc);
  const size = configMapBytes(xds);
  if (size > CONFIGMAP_LIMIT_BYTES) {
    const counts = tableCounts(table);
    problems.push({
      key: `${gateway}/xDS ConfigMap`,
      message:
        `would hold ${size.toLocaleString("en-US")} bytes (cds.yaml ${bytes(xds[XDS_FILES.cds]!)} + rds.yaml ${bytes(xds[XDS_FILES.rds]!)}) ` +
        `for ${(counts.production + counts.dev).toLocaleString("en-US")} routed services (${counts.production} production, ${counts.dev.toLocaleString("en-US")} dev in ${counts.namespaces.toLocaleString("en-US")} namespaces), ` +
        `over the ${CONFIGMAP_LIMIT_BYTES.toLocaleString("en-US")} bytes Kubernetes allows in a ConfigMap; nothing was written`,
    });
  }
  return { files: { gateway, bootstrap, xds, documents }, problems };
}

/** Bytes a ConfigMap's data counts against the limit: every key and value, UTF-8. */
export function configMapBytes(data: Record<string, string>): number {
  let total = 0;
  for (const [k, v] of Object.entries(data)) total += Buffer.byteLength(k) + Buffer.byteLength(v);
  return total;
}

function bytes(s: string): string {
  return Buffer.byteLength(s).toLocaleString("en-US");
}
