// Validation of a gateway's documents before anything is written anywhere:
// decoded against Envoy's API (unknown fields, enums, oneofs, types, every
// `@type`), the API's annotated rules, and Envoy's load-time checks.
import type { DocumentPlace, Problem } from "../config/errors.js";
import type { GatewayDocuments, XdsDocuments } from "../envoy/gateway.js";
import type { Json } from "../envoy/types.js";
import { decode, SharedDecoder, typeNameOf, type DecodeResult } from "./decode.js";
import { envoyApi } from "./descriptors.js";
import { envoyRuleViolations, violationWhere, type EnvoyViolation } from "./envoy-rules.js";
import { checkRules } from "./rules.js";
import { ON_DEMAND_CLUSTER } from "../names.js";
import { parseEnvoyYaml } from "../envoy/xds.js";

const BOOTSTRAP = "envoy.config.bootstrap.v3.Bootstrap";
const DISCOVERY_RESPONSE = "envoy.service.discovery.v3.DiscoveryResponse";
const CLUSTER = "envoy.config.cluster.v3.Cluster";
const ROUTE_CONFIGURATION = "envoy.config.route.v3.RouteConfiguration";
const SECRET = "envoy.extensions.transport_sockets.tls.v3.Secret";

/** A file of a gateway (or of a ConfigMap read from the cluster): where its problems are. */
export interface FilePlace {
  gateway: string;
  file: string;
}

/** A problem of the documents at `place`, keyed for people as `<gateway>/<file> <resource>`. */
export function documentProblem(place: DocumentPlace, message: string, value?: { value: unknown }): Problem {
  const where = place.resource
    ? `${place.file} ${resourceLabel(place.resource)}`
    : violationWhere({
        ...(place.file !== undefined ? { file: place.file } : {}),
        ...(place.element ? { element: place.element } : {}),
      });
  return {
    key: where ? `${place.gateway}/${where}` : place.gateway,
    source: "documents",
    place,
    message,
    ...value,
  };
}

/** Every problem in one gateway's documents (empty when Envoy would load them). */
export function validateGateway(docs: GatewayDocuments): Problem[] {
  const problems: Problem[] = [];
  const where = (file: string): FilePlace => ({ gateway: docs.gateway, file });
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

/**
 * The bootstrap's static clusters that xDS routes may name: the on-demand
 * cluster of dev/PR routes (routing/envoy/clusters.ts onDemandCluster). The
 * xDS files alone are checked as routing to it; whether the bootstrap has it
 * is checked with the bootstrap (validateGateway).
 */
const BOOTSTRAP_ROUTE_CLUSTERS = [ON_DEMAND_CLUSTER];

/** Every problem in one gateway's xDS documents (what its routes resource writes), minus what needs the bootstrap. */
export function validateXds(docs: XdsDocuments): Problem[] {
  const problems: Problem[] = [];
  const where = (file: string): FilePlace => ({ gateway: docs.gateway, file });
  // Stryker disable next-line ArrayDeclaration: speed only, as in validateGateway
  const decoder = new SharedDecoder([...docs.cds.resources, ...docs.rds.resources]);
  checkXdsFile(docs.cds, CLUSTER, where("cds.yaml"), problems, decoder);
  checkXdsFile(docs.rds, ROUTE_CONFIGURATION, where("rds.yaml"), problems, decoder);
  pushRuleProblems(
    envoyRuleViolations({
      clusters: docs.cds.resources,
      routeConfigs: docs.rds.resources,
      bootstrapClusters: BOOTSTRAP_ROUTE_CLUSTERS,
    }),
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
      problems.push(documentProblem({ gateway: where, file }, "is missing"));
      continue;
    }
    try {
      const doc = parseEnvoyYaml(text);
      if (doc === null || typeof doc !== "object" || Array.isArray(doc)) throw new Error("not a mapping");
      docs[file] = doc as Json;
    } catch (e) {
      problems.push(
        documentProblem({ gateway: where, file }, `cannot be read as Envoy reads it: ${(e as Error).message}`),
      );
    }
  }
  const cds = docs["cds.yaml"];
  const rds = docs["rds.yaml"];
  const resources = (d: Json | undefined) => (Array.isArray(d?.resources) ? (d.resources as Json[]) : []);
  // Stryker disable next-line ArrayDeclaration: speed only, as in validateGateway
  const decoder = new SharedDecoder([...resources(cds), ...resources(rds)]);
  if (cds) checkXdsFile(cds, CLUSTER, { gateway: where, file: "cds.yaml" }, problems, decoder);
  if (rds) checkXdsFile(rds, ROUTE_CONFIGURATION, { gateway: where, file: "rds.yaml" }, problems, decoder);
  // Envoy's rules across the files need the clusters: without them every route's cluster would read as unknown.
  if (cds)
    pushRuleProblems(
      envoyRuleViolations({
        clusters: resources(cds),
        routeConfigs: resources(rds),
        bootstrapClusters: BOOTSTRAP_ROUTE_CLUSTERS,
      }),
      where,
      problems,
    );
  return problems;
}

/** A DiscoveryResponse-shaped file whose resources must all be `typeName`. */
export function checkXdsFile(
  doc: Json,
  typeName: string,
  where: FilePlace,
  problems: Problem[],
  decoder?: SharedDecoder,
): void {
  const { resources, ...envelope } = doc;
  checkMessage(DISCOVERY_RESPONSE, envelope, where, problems);
  if (!Array.isArray(resources)) {
    problems.push(documentProblem({ ...where, field: "resources" }, "resources: must be a list"));
    return;
  }
  resources.forEach((resource: Json, i: number) => {
    const label: DocumentPlace = { ...where, resource: resourceOf(typeName, resource, i) };
    const declared = typeNameOf(resource?.["@type"]);
    if (declared !== typeName) {
      problems.push(
        documentProblem({ ...label, field: "@type" }, `@type: must be type.googleapis.com/${typeName}`, {
          value: resource?.["@type"],
        }),
      );
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

/** Decodes one message and checks its rules; problems name `where` (a file, or a resource of one) and the field path. */
export function checkMessage(
  typeName: string,
  json: unknown,
  where: FilePlace | DocumentPlace,
  problems: Problem[],
  decoder?: SharedDecoder,
): void {
  checkDecoded(typeName, decoder ? decoder.decode(typeName, json) : decode(typeName, json), where, problems, decoder);
}

function checkDecoded(
  typeName: string,
  decoded: DecodeResult,
  where: DocumentPlace,
  problems: Problem[],
  decoder?: SharedDecoder,
): void {
  if (!decoded.ok) {
    problems.push(
      documentProblem(
        decoded.path ? { ...where, field: decoded.path } : where,
        `${decoded.path ? `${decoded.path}: ` : ""}${decoded.error}`,
      ),
    );
    return;
  }
  const desc = envoyApi().registry.getMessage(typeName)!;
  for (const v of checkRules(desc, decoded.message, decoder?.shared))
    problems.push(documentProblem({ ...where, field: v.path }, `${v.path}: ${v.message}`));
}

/** Envoy's load-time rule violations as problems, each under `gateway` (the gateway or the ConfigMap). */
function pushRuleProblems(violations: EnvoyViolation[], gateway: string, problems: Problem[]): void {
  for (const v of violations)
    problems.push(
      documentProblem(
        {
          gateway,
          ...(v.file !== undefined ? { file: v.file } : {}),
          ...(v.element ? { element: v.element } : {}),
          ...(v.path ? { field: v.path } : {}),
        },
        `${v.path ? `${v.path}: ` : ""}${v.message}`,
      ),
    );
}

function resourceOf(typeName: string, resource: Json, index: number): NonNullable<DocumentPlace["resource"]> {
  const kind =
    typeName === CLUSTER
      ? "cluster"
      : typeName === ROUTE_CONFIGURATION
        ? "route configuration"
        : typeName === SECRET
          ? "secret"
          : "resource";
  return resource && typeof resource === "object" && typeof resource.name === "string"
    ? { kind, name: resource.name, index }
    : { kind, index };
}

/** A resource as the key names it: `cluster "x" (resources[3])`. */
function resourceLabel(resource: NonNullable<DocumentPlace["resource"]>): string {
  const name = resource.name !== undefined ? ` ${JSON.stringify(resource.name)}` : "";
  return `${resource.kind}${name} (resources[${resource.index}])`;
}
