// The NetworkPolicy of one gateway, in two layers: `gatewayNetworkFacts` reads from the
// stack config who reaches the gateway and what it calls (its listeners, scrapers, DNS and
// upstreams); `networkPolicySpec` writes those facts as a NetworkPolicy. What differs
// between the two gateways is in their settings (listenersFrom, acme, authentication).
import * as k8s from "@pulumi/kubernetes";
import { labelSelectorObject, type LabelSelector } from "../routing/config/kubernetes.js";
import type { GatewayName, StackConfig } from "../routing/config/schema.js";
import { POD_PORTS } from "../routing/envoy/types.js";
import { gatewayPodLabels } from "../routing/labels.js";
import { UPSTREAM_PORT } from "../routing/names.js";

/** The label the API server sets on every namespace: its name. */
const NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name";

/** Pods the gateway calls: any pod of the namespaces `namespaces` selects, on `port`. */
export interface Upstream {
  /** What it is, in the docs' words. */
  what: string;
  namespaces: LabelSelector;
  port: number;
}

/** Who reaches a gateway and what it may reach: everything its NetworkPolicy allows. */
export interface GatewayNetworkFacts {
  gateway: GatewayName;
  namespace: string;
  /** The listener container ports (plain HTTP and TLS). */
  listenerPorts: number[];
  /** Address ranges the listeners are reached from; empty: anywhere. */
  listenersFrom: string[];
  /** The metrics container port and who scrapes it. */
  metrics: { port: number; namespaces: Record<string, string>; pods: Record<string, string> };
  /** Cluster DNS: its pods, and address ranges outside the pod network. */
  dns: { namespace: string; pods: Record<string, string>; cidrs: string[] };
  upstreams: Upstream[];
}

const byName = (namespace: string): LabelSelector => ({ matchLabels: { [NAMESPACE_NAME_LABEL]: namespace } });

/**
 * The facts of `gateway`'s NetworkPolicy, or undefined when the stack declares none. Dev/PR
 * namespaces are selected by the routing label itself, so a new one is reachable at once
 * (no `pulumi up`), and never the protected namespaces or the gateways' own.
 */
export function gatewayNetworkFacts(config: StackConfig, gateway: GatewayName): GatewayNetworkFacts | undefined {
  const policy = config.networkPolicy;
  if (!policy.enabled) return undefined;
  const settings = config.gateways[gateway];
  const dev = labelSelectorObject(config.devNamespaces.selector);
  const notDev = [...new Set([...config.devNamespaces.protected, config.namespace])].sort();
  const upstreams: Upstream[] = [
    { what: "production services", namespaces: byName(config.namespace), port: UPSTREAM_PORT },
    {
      what: "dev/PR services",
      namespaces: {
        ...dev,
        matchExpressions: [
          ...(dev.matchExpressions ?? []),
          { key: NAMESPACE_NAME_LABEL, operator: "NotIn", values: notDev },
        ],
      },
      port: UPSTREAM_PORT,
    },
  ];
  if (settings.authenticateDevRoutes || settings.authenticateMetrics) {
    const auth = config.auth;
    upstreams.push({ what: "the auth service", namespaces: byName(auth.namespace), port: auth.podPort ?? auth.port });
  }
  if (settings.acme) {
    const acme = config.acme;
    upstreams.push({ what: "the ACME solver", namespaces: byName(acme.namespace), port: acme.podPort ?? acme.port });
  }
  return {
    gateway,
    namespace: config.namespace,
    listenerPorts: [POD_PORTS.http, POD_PORTS.https],
    listenersFrom: settings.listenersFrom ?? [],
    metrics: { port: POD_PORTS.metrics, ...policy.metricsScrapers },
    dns: policy.clusterDns,
    upstreams,
  };
}

const tcp = (port: number) => ({ protocol: "TCP", port });

/**
 * The NetworkPolicy spec of the facts. Ingress: the listeners from their ranges (or anywhere),
 * metrics from the scrapers; the health port has no rule: the kubelet's probes come from the
 * node, which NetworkPolicy always allows, and nothing else needs it. The admin port listens on
 * 127.0.0.1 only. Egress: DNS, then each upstream on its port, nothing else.
 */
export function networkPolicySpec(facts: GatewayNetworkFacts): k8s.types.input.networking.v1.NetworkPolicySpec {
  const listeners: k8s.types.input.networking.v1.NetworkPolicyIngressRule = {
    ports: facts.listenerPorts.map(tcp),
  };
  if (facts.listenersFrom.length) listeners.from = facts.listenersFrom.map((cidr) => ({ ipBlock: { cidr } }));
  const dns = facts.dns;
  return {
    podSelector: { matchLabels: gatewayPodLabels(facts.gateway) },
    policyTypes: ["Ingress", "Egress"],
    ingress: [
      listeners,
      {
        from: [
          {
            namespaceSelector: { matchLabels: facts.metrics.namespaces },
            podSelector: { matchLabels: facts.metrics.pods },
          },
        ],
        ports: [tcp(facts.metrics.port)],
      },
    ],
    egress: [
      {
        to: [
          { namespaceSelector: byName(dns.namespace), podSelector: { matchLabels: dns.pods } },
          ...dns.cidrs.map((cidr) => ({ ipBlock: { cidr } })),
        ],
        ports: [
          { protocol: "UDP", port: 53 },
          { protocol: "TCP", port: 53 },
        ],
      },
      ...facts.upstreams.map((u) => ({
        to: [{ namespaceSelector: u.namespaces }],
        ports: [tcp(u.port)],
      })),
    ],
  };
}
