// The gateways' NetworkPolicies: the facts read from the stack config (who reaches each
// gateway, what it calls), the spec written from them, and the component declaring it.
import { beforeAll, describe, expect, it } from "vitest";
import { EnvoyGateway } from "../../components/envoy-gateway.js";
import { gatewayNetworkFacts, networkPolicySpec } from "../../components/network-policy.js";
import { labelSelectorObject } from "../../routing/config/kubernetes.js";
import { parseStackConfig } from "../../routing/config/load.js";
import { renderGateway } from "../../routing/render.js";
import { buildRoutingTable } from "../../routing/table.js";
import { minimalRaw, withValue } from "./fixtures.js";
import { declaring, named, useMocks } from "./pulumi-mocks.js";

beforeAll(() => useMocks());

const facts = (raw: Record<string, unknown>, gateway: "gateway" | "internal-gateway" = "gateway") =>
  gatewayNetworkFacts(parseStackConfig(raw), gateway);
const upstreams = (raw: Record<string, unknown>, gateway: "gateway" | "internal-gateway" = "gateway") =>
  facts(raw, gateway)!.upstreams.map((u) => `${u.what}: ${JSON.stringify(u.namespaces)} ${u.port}`);
const NOT_DEV = {
  key: "kubernetes.io/metadata.name",
  operator: "NotIn",
  values: ["default", "kube-node-lease", "kube-public", "kube-system"],
};

describe("a gateway's network facts", () => {
  it("for the internet-facing gateway: production and dev/PR pods on 443, the auth service and the ACME solver", () => {
    expect(upstreams(minimalRaw())).toEqual([
      `production services: {"matchLabels":{"kubernetes.io/metadata.name":"default"}} 443`,
      `dev/PR services: {"matchLabels":{"envoy-gateways.io/routes":"dev"},"matchExpressions":[${JSON.stringify(NOT_DEV)}]} 443`,
      `the auth service: {"matchLabels":{"kubernetes.io/metadata.name":"default"}} 443`,
      `the ACME solver: {"matchLabels":{"kubernetes.io/metadata.name":"default"}} 80`,
    ]);
    expect(facts(minimalRaw())).toMatchObject({
      gateway: "gateway",
      namespace: "default",
      listenerPorts: [8080, 8443],
      listenersFrom: [],
      metrics: {
        port: 9102,
        namespaces: { "kubernetes.io/metadata.name": "monitoring" },
        pods: { "app.kubernetes.io/name": "prometheus" },
      },
      dns: { namespace: "kube-system", pods: { "k8s-app": "kube-dns" }, cidrs: [] },
    });
  });

  it("for the internal gateway: no ACME solver (a setting of each gateway), the auth service for its dev/PR routes", () => {
    expect(upstreams(minimalRaw(), "internal-gateway").map((u) => u.split(":")[0])).toEqual([
      "production services",
      "dev/PR services",
      "the auth service",
    ]);
    expect(upstreams(withValue(minimalRaw(), "gateways.internal-gateway.acme", true), "internal-gateway")).toHaveLength(
      4,
    );
  });

  it("calls the auth service only when the gateway authenticates dev/PR routes or metrics", () => {
    const raw = withValue(minimalRaw(), "gateways.gateway.authenticateDevRoutes", false);
    expect(upstreams(raw).some((u) => u.startsWith("the auth service"))).toBe(true); // metrics still authenticated
    const none = withValue(raw, "gateways.gateway.authenticateMetrics", false);
    expect(upstreams(none).some((u) => u.startsWith("the auth service"))).toBe(false);
  });

  it("reaches the auth and ACME pods in their namespaces on the ports their pods listen on", () => {
    let raw = withValue(minimalRaw(), "auth", { namespace: "identity", port: 443, podPort: 8443 });
    raw = withValue(raw, "acme", { namespace: "cert-manager", service: "solver", port: 8089 });
    expect(upstreams(raw).slice(2)).toEqual([
      `the auth service: {"matchLabels":{"kubernetes.io/metadata.name":"identity"}} 8443`,
      `the ACME solver: {"matchLabels":{"kubernetes.io/metadata.name":"cert-manager"}} 8089`,
    ]);
  });

  it("selects dev/PR namespaces by the routing selector, never a protected namespace or the gateways' own", () => {
    let raw = withValue(minimalRaw(), "devNamespaces", { selector: "team=web,stage!=prod", protected: ["infra"] });
    raw = withValue(raw, "namespace", "edge");
    expect(facts(raw)!.upstreams[1]!.namespaces).toEqual({
      matchLabels: { team: "web" },
      matchExpressions: [
        { key: "stage", operator: "NotIn", values: ["prod"] },
        { key: "kubernetes.io/metadata.name", operator: "NotIn", values: ["edge", "infra"] },
      ],
    });
    expect(facts(raw)!.upstreams[0]!.namespaces).toEqual({ matchLabels: { "kubernetes.io/metadata.name": "edge" } });
  });

  it("takes listener ranges, scrapers and DNS from the stack, and declares nothing when turned off", () => {
    let raw = withValue(minimalRaw(), "gateways.internal-gateway.listenersFrom", ["10.0.0.0/8", "fd00::/8"]);
    raw = withValue(raw, "networkPolicy", {
      metricsScrapers: { namespaces: { team: "observability" }, pods: { app: "vmagent" } },
      clusterDns: { namespace: "dns", pods: { app: "coredns" }, cidrs: ["169.254.20.10/32"] },
    });
    expect(facts(raw, "internal-gateway")).toMatchObject({
      listenersFrom: ["10.0.0.0/8", "fd00::/8"],
      metrics: { namespaces: { team: "observability" }, pods: { app: "vmagent" } },
      dns: { namespace: "dns", pods: { app: "coredns" }, cidrs: ["169.254.20.10/32"] },
    });
    expect(facts(raw, "gateway")!.listenersFrom).toEqual([]);
    expect(facts(withValue(minimalRaw(), "networkPolicy.enabled", false))).toBeUndefined();
  });
});

describe("a gateway's NetworkPolicy spec", () => {
  it("allows the listeners from anywhere, metrics from the scrapers, DNS and each upstream on its port, nothing else", () => {
    expect(networkPolicySpec(facts(minimalRaw(), "internal-gateway")!)).toEqual({
      podSelector: {
        matchLabels: { "app.kubernetes.io/name": "internal-gateway", "app.kubernetes.io/component": "gateway" },
      },
      policyTypes: ["Ingress", "Egress"],
      ingress: [
        {
          ports: [
            { protocol: "TCP", port: 8080 },
            { protocol: "TCP", port: 8443 },
          ],
        },
        {
          from: [
            {
              namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } },
              podSelector: { matchLabels: { "app.kubernetes.io/name": "prometheus" } },
            },
          ],
          ports: [{ protocol: "TCP", port: 9102 }],
        },
      ],
      egress: [
        {
          to: [
            {
              namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "kube-system" } },
              podSelector: { matchLabels: { "k8s-app": "kube-dns" } },
            },
          ],
          ports: [
            { protocol: "UDP", port: 53 },
            { protocol: "TCP", port: 53 },
          ],
        },
        {
          to: [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "default" } } }],
          ports: [{ protocol: "TCP", port: 443 }],
        },
        {
          to: [
            { namespaceSelector: { matchLabels: { "envoy-gateways.io/routes": "dev" }, matchExpressions: [NOT_DEV] } },
          ],
          ports: [{ protocol: "TCP", port: 443 }],
        },
        {
          to: [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "default" } } }],
          ports: [{ protocol: "TCP", port: 443 }],
        },
      ],
    });
  });

  it("limits the listeners to the given ranges, and adds DNS address ranges beside the DNS pods", () => {
    let raw = withValue(minimalRaw(), "gateways.gateway.listenersFrom", ["203.0.113.0/24"]);
    raw = withValue(raw, "networkPolicy.clusterDns", { cidrs: ["169.254.20.10/32"] });
    const spec = networkPolicySpec(facts(raw)!);
    expect(spec.ingress).toContainEqual({
      from: [{ ipBlock: { cidr: "203.0.113.0/24" } }],
      ports: [
        { protocol: "TCP", port: 8080 },
        { protocol: "TCP", port: 8443 },
      ],
    });
    expect((spec.egress as { to: unknown[] }[])[0]!.to).toEqual([
      {
        namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "kube-system" } },
        podSelector: { matchLabels: { "k8s-app": "kube-dns" } },
      },
      { ipBlock: { cidr: "169.254.20.10/32" } },
    ]);
  });
});

describe("an equality-based label selector as a LabelSelector", () => {
  it("puts key=value and key==value terms in matchLabels and key!=value terms in NotIn expressions", () => {
    expect(labelSelectorObject(" a = b ,c!=d,e==f")).toEqual({
      matchLabels: { a: "b", e: "f" },
      matchExpressions: [{ key: "c", operator: "NotIn", values: ["d"] }],
    });
    expect(labelSelectorObject("envoy-gateways.io/routes=dev")).toEqual({
      matchLabels: { "envoy-gateways.io/routes": "dev" },
    });
    expect(labelSelectorObject("stage!=prod")).toEqual({
      matchExpressions: [{ key: "stage", operator: "NotIn", values: ["prod"] }],
    });
  });
});

describe("the gateway component", () => {
  const declare = (withPolicy: boolean) => {
    const config = parseStackConfig(minimalRaw());
    return declaring(
      () =>
        new EnvoyGateway("gateway", {
          gateway: "gateway",
          namespace: "edge",
          image: config.envoyImage,
          settings: config.gateways.gateway,
          files: renderGateway(config, buildRoutingTable(config), "gateway"),
          networkPolicy: withPolicy ? gatewayNetworkFacts(config, "gateway") : undefined,
        }),
    );
  };

  it("declares the NetworkPolicy beside its pods when given the facts, and none without", async () => {
    const { resources } = await declare(true);
    const policy = named(resources as never, "networking.k8s.io/v1:NetworkPolicy", "gateway");
    expect(policy.inputs.metadata).toMatchObject({ name: "gateway", namespace: "edge" });
    expect(policy.inputs.spec).toEqual(
      networkPolicySpec(gatewayNetworkFacts(parseStackConfig(minimalRaw()), "gateway")!),
    );
    const without = await declare(false);
    expect(without.resources.filter((r) => r.type.includes("NetworkPolicy"))).toEqual([]);
  });
});
