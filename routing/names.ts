// Names shared by the routing table, the Envoy translation and the components.
import { DNS_LABEL } from "./config/schema.js";

/** True for a Kubernetes name that is a DNS label (RFC 1123, at most 63 characters). */
export function isDnsLabel(name: string): boolean {
  return name.length <= 63 && DNS_LABEL.test(name);
}

/**
 * The Envoy cluster of one version of a service: `<namespace>_<service>`, plus
 * `_<version>` for one of several versions. `_` never appears in a Kubernetes
 * name, so the name is unambiguous, and it has no dot, so Envoy's stats tag
 * extraction keeps it whole in per-cluster Prometheus metrics.
 */
export function clusterName(namespace: string, service: string, version = ""): string {
  return version ? `${namespace}_${service}_${version}` : `${namespace}_${service}`;
}

/**
 * The cluster of on-demand dev/PR routes (devNamespaces.clusters: on-demand),
 * one for all of them. No `_`: it cannot collide with a cluster of a
 * service, and keeps all its stats, where Envoy counts the responses and
 * latency of every on-demand route.
 */
export const ON_DEMAND_CLUSTER = "dev-on-demand";

/** DNS name of a Service: with a headless Service it resolves to every ready pod IP. */
export function serviceHost(service: string, namespace: string, clusterDomain: string): string {
  return `${service}.${namespace}.svc.${clusterDomain}`;
}

/** The stable id of a routed service, used as the key of routes in previews and diffs. */
export function routeId(namespace: string, service: string): string {
  return `${namespace}/${service}`;
}

/** The headless Service of a gateway's own pods (`<gateway>-pods`), declared with the gateway. */
export { gatewayPodsService } from "./config/schema.js";

/** Port every routed pod serves TLS on, and every headless Service exposes. */
export const UPSTREAM_PORT = 443;

/** The Kubernetes Service of one version of a production service: <service>-<version>. */
export function versionServiceName(service: string, version: string): string {
  return `${service}-${version}`;
}
