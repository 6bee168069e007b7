// Validation of a gateway's documents before anything is written anywhere:
// decoded against Envoy's API (unknown fields, enums, oneofs, types, every
// `@type`), the API's annotated rules, and Envoy's load-time checks.
import type { Problem } from "../config/errors.js";
import type { GatewayDocuments, XdsDocuments } from "../envoy/gateway.js";
import type { Json } from "../envoy/types.js";
import { decode, SharedDecoder, typeNameOf, type DecodeResult } from "./decode.js";
import { envoyApi } from "./descriptors.js";
import { envoyRuleViolations, type EnvoyViolation } from "./envoy-rules.js";
import { checkRules } from "./rules.js";
import { parseEnvoyYaml } from "../envoy/xds.js";

const BOOTSTRAP = "envoy.config.bootstrap.v3.Bootstrap";
const DISCOVERY_RESPONSE = "envoy.service.discovery.v3.DiscoveryResponse";
const CLUSTER = "envoy.config.cluster.v3.Cluster";
const ROUTE_CONFIGURATION = "envoy.config.route.v3.RouteConfiguration";
const SECRET = "envoy.extensions.transport_sockets.tls.v3.Secret";

/** Every problem in one gateway's documents (empty when Envoy would load them). */
export function validateGateway(docs: GatewayDocuments): Problem[] {
  const problems: Problem[] = [];
  const where = (file: string) => `${docs.gateway}/${file}`;
  // Stryker disable next-line ArrayDeclaration: speed only; with nothing counted, nothing is shared and every part is checked where it appears
  const decoder = new SharedDecoder([docs.bootstrap, ...docs.cds.resources, ...docs.rds.resources]);
  checkMessage(BOOTSTRAP, docs.bootstrap, where("envoy.yaml"), problems, decoder);
  for (const [file, doc] of Object.entries(docs.sds)) checkXdsFile(doc, SECRET, where(file), problems);
  checkXdsFile(docs.cds, CLUSTER, where("cds.yaml"), problems, decoder);
  checkXdsFile(docs.rds, ROUTE_CONFIGURATION, where("rds.yaml"), problems, decoder);
  pushRuleProblems(
    envoyRuleViolations({ bootstrap: docs.bootstrap, clusters: docs.cds.resources, routeConfigs: docs.rds.resources }),
    docs.gateway,
    problems,
  );
  return problems;
}

/** Every problem in one gateway's xDS documents (what its routes resource writes), minus what needs the bootstrap. */
export function validateXds(docs: XdsDocuments): Problem[] {
  const problems: Problem[] = [];
  const where = (file: string) => `${docs.gateway}/${file}`;
  // Stryker disable next-line ArrayDeclaration: speed only, as in validateGateway
  const decoder = new SharedDecoder([...docs.cds.resources, ...docs.rds.resources]);
  checkXdsFile(docs.cds, CLUSTER, where("cds.yaml"), problems, decoder);
  checkXdsFile(docs.rds, ROUTE_CONFIGURATION, where("rds.yaml"), problems, decoder);
  pushRuleProblems(
    envoyRuleViolations({ clusters: docs.cds.resources, routeConfigs: docs.rds.resources }),
    docs.gateway,
    problems,
  );
  return problems;
}

/**
 * Every problem in an xDS ConfigMap's data (cds.yaml, rds.yaml as written in
 * the cluster): each file read as Envoy reads it, then checked as above,
 * minus what needs the bootstrap. `where` names the ConfigMap. A file that is
 * missing or unreadable is one problem; the other is still checked.
 */
export function validateXdsData(data: Record<string, string>, where: string): Problem[] {
  const problems: Problem[] = [];
  const docs: Record<string, Json> = {};
  for (const file of ["cds.yaml", "rds.yaml"]) {
    const text = data[file];
    if (text === undefined) {
      problems.push({ key: `${where}/${file}`, message: "is missing" });
      continue;
    }
    try {
      const doc = parseEnvoyYaml(text);
      if (doc === null || typeof doc !== "object" || Array.isArray(doc)) throw new Error("not a mapping");
      docs[file] = doc as Json;
    } catch (e) {
      problems.push({ key: `${where}/${file}`, message: `cannot be read as Envoy reads it: ${(e as Error).message}` });
    }
  }
  const cds = docs["cds.yaml"];
  const rds = docs["rds.yaml"];
  const resources = (d: Json | undefined) => (Array.isArray(d?.resources) ? (d.resources as Json[]) : []);
  // Stryker disable next-line ArrayDeclaration: speed only, as in validateGateway
  const decoder = new SharedDecoder([...resources(cds), ...resources(rds)]);
  if (cds) checkXdsFile(cds, CLUSTER, `${where}/cds.yaml`, problems, decoder);
  if (rds) checkXdsFile(rds, ROUTE_CONFIGURATION, `${where}/rds.yaml`, problems, decoder);
  // Envoy's rules across the files need the clusters: without them every route's cluster would read as unknown.
  if (cds)
    pushRuleProblems(envoyRuleViolations({ clusters: resources(cds), routeConfigs: resources(rds) }), where, problems);
  return problems;
}

/** A DiscoveryResponse-shaped file whose resources must all be `typeName`. */
export function checkXdsFile(
  doc: Json,
  typeName: string,
  where: string,
  problems: Problem[],
  decoder?: SharedDecoder,
): void {
  const { resources, ...envelope } = doc;
  checkMessage(DISCOVERY_RESPONSE, envelope, where, problems);
  if (!Array.isArray(resources)) {
    problems.push({ key: where, message: "resources: must be a list" });
    return;
  }
  resources.forEach((resource: Json, i: number) => {
    const label = `${where} ${resourceLabel(typeName, resource, i)}`;
    const declared = typeNameOf(resource?.["@type"]);
    if (declared !== typeName) {
      problems.push({
        key: label,
        message: `@type: must be type.googleapis.com/${typeName}`,
        value: resource?.["@type"],
      });
      return;
    }
    // Stryker disable next-line ConditionalExpression: speed only; the shared decoder finds what decoding each resource whole finds (validator.test.ts)
    if (decoder) {
      checkDecoded(typeName, decoder.decodeResource(typeName, resource), label, problems, decoder);
    } else {
      const { "@type": _, ...body } = resource;
      checkMessage(typeName, body, label, problems);
    }
  });
}

/** Decodes one message and checks its rules; problems name `where` and the field path. */
export function checkMessage(
  typeName: string,
  json: unknown,
  where: string,
  problems: Problem[],
  decoder?: SharedDecoder,
): void {
  checkDecoded(typeName, decoder ? decoder.decode(typeName, json) : decode(typeName, json), where, problems, decoder);
}

function checkDecoded(
  typeName: string,
  decoded: DecodeResult,
  where: string,
  problems: Problem[],
  decoder?: SharedDecoder,
): void {
  if (!decoded.ok) {
    problems.push({ key: where, message: `${decoded.path ? `${decoded.path}: ` : ""}${decoded.error}` });
    return;
  }
  const desc = envoyApi().registry.getMessage(typeName)!;
  for (const v of checkRules(desc, decoded.message, decoder?.shared))
    problems.push({ key: where, message: `${v.path}: ${v.message}` });
}

/** Envoy's load-time rule violations as problems, each keyed under `prefix` (the gateway or the ConfigMap). */
function pushRuleProblems(violations: EnvoyViolation[], prefix: string, problems: Problem[]): void {
  for (const v of violations)
    problems.push({ key: `${prefix}/${v.where}`, message: `${v.path ? `${v.path}: ` : ""}${v.message}` });
}

function resourceLabel(typeName: string, resource: Json, index: number): string {
  const kind =
    typeName === CLUSTER
      ? "cluster"
      : typeName === ROUTE_CONFIGURATION
        ? "route configuration"
        : typeName === SECRET
          ? "secret"
          : "resource";
  const name =
    resource && typeof resource === "object" && typeof resource.name === "string"
      ? ` ${JSON.stringify(resource.name)}`
      : "";
  return `${kind}${name} (resources[${index}])`;
}
