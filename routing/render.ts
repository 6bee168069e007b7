// Rendering: stack config + routing table -> the validated files of the
// gateways. Nothing is returned (so nothing can be written) unless every
// document is valid and the xDS ConfigMap fits.
import { InputError, type Problem } from "./config/errors.js";
import { GATEWAYS, type GatewayName, type RoutingConfig, type StackConfig } from "./config/schema.js";
import type { RenderOptions } from "./envoy/context.js";
import { translateGateway, translateXds, type GatewayDocuments, type XdsDocuments } from "./envoy/gateway.js";
import { explainDocumentProblems } from "./envoy/explain.js";
import { BOOTSTRAP_FILE, XDS_FILES } from "./envoy/types.js";
import { toReadableYaml, toXdsYaml } from "./envoy/xds.js";
import { tableCounts, type RoutingTable } from "./table.js";
import { validateGateway, validateXds } from "./validation/index.js";

/** Kubernetes refuses a ConfigMap whose keys and values exceed 1 MiB. */
export const CONFIGMAP_LIMIT_BYTES = 1024 * 1024;

/** A gateway's xDS ConfigMap data (cds.yaml, rds.yaml) and the documents it was written from. */
export interface XdsFiles {
  gateway: GatewayName;
  xds: Record<string, string>;
  documents: XdsDocuments;
}

export interface GatewayFiles extends XdsFiles {
  /** Bootstrap ConfigMap data: envoy.yaml and the sds-*.yaml files. */
  bootstrap: Record<string, string>;
  documents: GatewayDocuments;
}

/** Renders and validates one gateway's xDS files (what its routes resource writes); throws an `InputError` listing every problem. */
export function renderXds(
  config: RoutingConfig,
  table: RoutingTable,
  gateway: GatewayName,
  options: RenderOptions = {},
): XdsFiles {
  return checkXds(translateXdsFiles(config, table, gateway, options), table);
}

/**
 * One gateway's xDS files, rendered but not validated: enough to compare
 * their digest with what a ConfigMap holds. Nothing may be written from them
 * before `checkXds` has passed them.
 */
export function translateXdsFiles(
  config: RoutingConfig,
  table: RoutingTable,
  gateway: GatewayName,
  options: RenderOptions = {},
): XdsFiles {
  const documents = translateXds(config, table, gateway, options);
  return { gateway, xds: xdsData(documents), documents };
}

/** The files if Envoy would load them and they fit in a ConfigMap; otherwise an `InputError` listing every problem. */
export function checkXds(files: XdsFiles, table: RoutingTable): XdsFiles {
  const problems = [
    ...explainDocumentProblems(validateXds(files.documents), table),
    ...sizeProblems(files.gateway, files.xds, table),
  ];
  if (problems.length) throw new InputError(`Envoy documents of ${files.gateway}`, problems);
  return files;
}

/** Renders and validates all of one gateway's files; throws an `InputError` listing every problem. */
export function renderGateway(
  config: StackConfig,
  table: RoutingTable,
  gateway: GatewayName,
  options: RenderOptions = {},
): GatewayFiles {
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

function tryRenderGateway(
  config: StackConfig,
  table: RoutingTable,
  gateway: GatewayName,
  options: RenderOptions,
): { files: GatewayFiles; problems: Problem[] } {
  const documents = translateGateway(config, table, gateway, options);
  const xds = xdsData(documents);
  const problems = [
    ...explainDocumentProblems(validateGateway(documents), table),
    ...sizeProblems(gateway, xds, table),
  ];
  const bootstrap: Record<string, string> = { [BOOTSTRAP_FILE]: toReadableYaml(documents.bootstrap) };
  for (const [file, doc] of Object.entries(documents.sds)) bootstrap[file] = toReadableYaml(doc);
  return { files: { gateway, bootstrap, xds, documents }, problems };
}

/** The xDS ConfigMap data of the documents. */
function xdsData(documents: XdsDocuments): Record<string, string> {
  return { [XDS_FILES.cds]: toXdsYaml(documents.cds), [XDS_FILES.rds]: toXdsYaml(documents.rds) };
}

/** A problem when a gateway's xDS ConfigMap data would not fit in a ConfigMap. */
function sizeProblems(gateway: GatewayName, xds: Record<string, string>, table: RoutingTable): Problem[] {
  const size = configMapBytes(xds);
  if (size <= CONFIGMAP_LIMIT_BYTES) return [];
  const counts = tableCounts(table);
  return [
    {
      key: `${gateway}/xDS ConfigMap`,
      source: "documents",
      place: { gateway },
      message:
        `would hold ${size.toLocaleString("en-US")} bytes (cds.yaml ${bytes(xds[XDS_FILES.cds]!)} + rds.yaml ${bytes(xds[XDS_FILES.rds]!)}) ` +
        `for ${(counts.production + counts.dev).toLocaleString("en-US")} routed services (${counts.production} production, ${counts.dev.toLocaleString("en-US")} dev in ${counts.namespaces.toLocaleString("en-US")} namespaces), ` +
        `over the ${CONFIGMAP_LIMIT_BYTES.toLocaleString("en-US")} bytes Kubernetes allows in a ConfigMap; nothing was written`,
    },
  ];
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
