// What the gateways are told to do, read from the generated documents.
import { describe, expect, it } from "vitest";
import type { Json } from "../../routing/envoy/types.js";
import { notStartingWith } from "../../routing/envoy/stats.js";
import { renderGateway, renderGateways, renderXds } from "../../routing/render.js";
import { maxOnDemandSubClusters } from "../../routing/envoy/heap.js";
import { withGatewayMemory } from "../fixtures/gateway-memory.js";
import { ON_DEMAND_CLUSTER } from "../../routing/names.js";
import { routingConfig, type StackConfig } from "../../routing/config/schema.js";
import { GATEWAYS } from "../../routing/config/schema.js";
import { buildRoutingTable } from "../../routing/table.js";
import { parseStackConfig } from "../../routing/config/load.js";
import { eachTest } from "./each-test.js";
import { minimalRaw, minutesIntoShift, shiftedService, stackConfig, withValue } from "./fixtures.js";

// The translation with a cluster per dev/PR Service; on-demand routes have their golden features and test/envoy/on-demand.test.ts.
const config = eachTest(() => stackConfig("prod", "per-service"));
// Ten minutes into web's shift: blue 90, green 10.
const table = eachTest(() =>
  buildRoutingTable(
    config(),
    { "pr-7": ["batch", "batch-driver"], "pr-9": [shiftedService("web")] },
    "dev namespaces",
    minutesIntoShift(10),
  ),
);
const rendered = eachTest(() => renderGateways(config(), table()));
const gateway = () => rendered()[0]!;
const internal = () => rendered()[1]!;

const routeConfig = (g = gateway()) => g.documents.rds.resources[0] as Json;
const hosts = (g = gateway()) => routeConfig(g).virtual_hosts as Json[];
const host = (name: string, g = gateway()) => hosts(g).find((h) => h.name === name)!;
const cluster = (name: string, g = gateway()) => (g.documents.cds.resources as Json[]).find((c) => c.name === name)!;
const listener = (name: string, g = gateway()) =>
  ((g.documents.bootstrap.static_resources as Json).listeners as Json[]).find((l) => l.name === name)!;
const networkFilters = (l: Json) => (l.filter_chains as Json[])[0]!.filters as Json[];
const hcm = (l: Json) =>
  networkFilters(l).find((f) => f.name === "envoy.filters.network.http_connection_manager")!.typed_config as Json;
const httpFilter = (l: Json, name: string) =>
  (hcm(l).http_filters as Json[]).find((f) => f.name === name)?.typed_config as Json | undefined;
const mainRoute = (name: string, g = gateway()) =>
  (host(name, g).routes as Json[]).find((r) => get(r, "match.prefix") === "/")!;
const get = (v: unknown, path: string): unknown =>
  path.split(".").reduce<unknown>((o, k) => (o as Record<string, unknown>)?.[k], v);

describe("routes", () => {
  it("serves production service s at s.<domain> on the gateway and s.<internalDomain> on the internal-gateway", () => {
    expect(host("batch").domains).toEqual(["batch.hail.is"]);
    expect(host("batch", internal()).domains).toEqual(["batch.hail"]);
    const route = mainRoute("batch");
    expect((host("batch").routes as Json[]).at(-1)).toBe(route);
    expect(get(route, "route.cluster")).toBe("default_batch");
  });

  it("adds a service's aliases on the external gateway only", () => {
    expect(host("www").domains).toEqual(["www.hail.is", "hail.is"]);
    expect(host("www", internal()).domains).toEqual(["www.hail"]);
  });

  it("routes /<namespace>/<service> on internal.<domain> with a path-separated prefix, keeping the path", () => {
    const dev = host("dev");
    expect(dev.domains).toEqual(["internal.hail.is"]);
    const routes = dev.routes as Json[];
    expect(routes.map((r) => get(r, "match.path_separated_prefix"))).toEqual([
      "/pr-7/batch",
      "/pr-7/batch-driver",
      "/pr-9/web",
    ]);
    expect(routes.map((r) => get(r, "route.cluster") ?? "weighted")).toEqual([
      "pr-7_batch",
      "pr-7_batch-driver",
      "weighted",
    ]);
    expect(
      routes.every((r) => get(r, "route.prefix_rewrite") === undefined && get(r, "route.regex_rewrite") === undefined),
    ).toBe(true);
  });

  it("splits a service with several versions across weighted clusters", () => {
    const route = (host("dev").routes as Json[])[2]!;
    expect(get(route, "route.weighted_clusters.clusters")).toEqual([
      { name: "pr-9_web_blue", weight: 90 },
      { name: "pr-9_web_green", weight: 10 },
    ]);
    expect(get(cluster("pr-9_web_green"), "load_assignment.endpoints")).toEqual([
      {
        lb_endpoints: [
          {
            endpoint: { address: { socket_address: { address: "web-green.pr-9.svc.cluster.local", port_value: 443 } } },
          },
        ],
      },
    ]);
  });

  it("turns ext_authz off on production hosts and leaves it on for dev routes", () => {
    for (const h of hosts()) {
      const perFilter = (h.typed_per_filter_config ?? {}) as Json;
      if (h.name === "dev") expect(perFilter["envoy.filters.http.ext_authz"]).toBeUndefined();
      else expect(perFilter["envoy.filters.http.ext_authz"], String(h.name)).toMatchObject({ disabled: true });
    }
  });

  it("limits each route to the service's rate limit shared across the gateway's pods, a pod's bucket holding its share at the minimum replicas", () => {
    const limit = (route: Json) =>
      (route.typed_per_filter_config as Json)["envoy.filters.http.local_ratelimit"] as Json;
    const prod = (name: string) => limit(mainRoute(name));
    // prod: batch-driver 30 req/s, www 600, gateway replicas 3 (the autoscaler's minimum).
    expect(prod("batch-driver").token_bucket).toEqual({ max_tokens: 10, tokens_per_fill: 30, fill_interval: "1s" });
    expect(prod("www").token_bucket).toEqual({ max_tokens: 200, tokens_per_fill: 600, fill_interval: "1s" });
    for (const name of ["batch-driver", "www"]) {
      // Envoy refills each pod's bucket with tokens_per_fill divided by the hosts of the local cluster (the gateway's pods).
      expect(prod(name).local_cluster_rate_limit).toEqual({});
      expect(prod(name).stat_prefix).toBe(`default_${name}`);
    }
    // Dev/PR routes: one config on their virtual host, a bucket per route (by the route's name), one set of
    // counters; none of their own (Envoy would build a limiter for each).
    const dev = limit(host("dev"));
    expect(dev.token_bucket).toEqual({ max_tokens: 67, tokens_per_fill: 200, fill_interval: "1s" }); // 200 over at least 3 pods
    expect(dev.descriptors).toEqual([{ entries: [{ key: expect.any(String) }], token_bucket: dev.token_bucket }]);
    expect(JSON.stringify(dev.rate_limits)).toContain('"text":"xds.route_name"');
    expect(dev.local_cluster_rate_limit).toEqual({});
    expect(dev.stat_prefix).toBe("dev");
    for (const r of host("dev").routes as Json[]) expect(r.typed_per_filter_config, String(r.name)).toBeUndefined();
  });

  it("names every route <namespace>/<service>, and a 429 names the route in x-ratelimit-route", () => {
    // batch's /metrics route (authenticated on this gateway) and its main route: the same service, one name.
    expect((host("batch").routes as Json[]).map((r) => r.name)).toEqual(["default/batch", "default/batch"]);
    expect((host("dev").routes as Json[]).map((r) => r.name)).toEqual(["pr-7/batch", "pr-7/batch-driver", "pr-9/web"]);
    const limit = ((host("batch").routes as Json[])[0]!.typed_per_filter_config as Json)[
      "envoy.filters.http.local_ratelimit"
    ] as Json;
    expect(limit.response_headers_to_add).toEqual([
      { header: { key: "x-ratelimit-route", value: "%ROUTE_NAME%" }, append_action: "OVERWRITE_IF_EXISTS_OR_ADD" },
    ]);
  });

  it("gives websocket services a longer idle timeout", () => {
    expect(get(mainRoute("notebook"), "route.idle_timeout")).toBe("3600s");
    expect(get(mainRoute("batch"), "route.idle_timeout")).toBeUndefined();
  });

  it("sets X-Real-IP from the downstream address and rewrites Host to the Service name", () => {
    expect(routeConfig().request_headers_to_add).toEqual([
      {
        header: { key: "x-real-ip", value: "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%" },
        append_action: "OVERWRITE_IF_EXISTS_OR_ADD",
      },
    ]);
    const action = get(mainRoute("batch"), "route") as Json;
    expect(action).toMatchObject({ auto_host_rewrite: true, append_x_forwarded_host: true });
  });
});

describe("clusters", () => {
  it("resolves every pod of the headless Service: strict DNS on <svc>.<ns>.svc.<clusterDomain>:443, TTL honoured, IPv4 only", () => {
    const c = cluster("pr-7_batch-driver");
    expect(c).toMatchObject({ lb_policy: "LEAST_REQUEST", connect_timeout: "3s" });
    // Envoy's DNS cluster extension, not the deprecated Cluster fields (Envoy 1.40 counts those in runtime.deprecated_feature_use).
    expect(c.cluster_type).toEqual({
      name: "envoy.cluster.dns",
      typed_config: {
        "@type": "type.googleapis.com/envoy.extensions.clusters.dns.v3.DnsCluster",
        respect_dns_ttl: true,
        dns_refresh_rate: "5s",
        dns_lookup_family: "V4_ONLY",
      },
    });
    // Strict DNS: every address is an endpoint (all_addresses_in_single_endpoint would keep one pod); the
    // resolver is the bootstrap's (one per cluster would be a c-ares channel each).
    for (const key of ["type", "respect_dns_ttl", "dns_refresh_rate", "dns_lookup_family", "typed_dns_resolver_config"])
      expect(c, key).not.toHaveProperty(key);
    expect(c).not.toHaveProperty("cluster_type.typed_config.all_addresses_in_single_endpoint");
    expect(c).not.toHaveProperty("cluster_type.typed_config.typed_dns_resolver_config");
    expect(get(c, "load_assignment.endpoints")).toEqual([
      {
        lb_endpoints: [
          {
            endpoint: {
              address: { socket_address: { address: "batch-driver.pr-7.svc.cluster.local", port_value: 443 } },
            },
          },
        ],
      },
    ]);
  });

  it("asks DNS for the address family and refresh rate the stack config sets", () => {
    const c = withValue(
      withValue(minimalRaw(), "upstream.dnsLookupFamily", "V4_PREFERRED"),
      "upstream.dnsRefreshRate",
      "10s",
    );
    const g = renderGateway(
      parseStackConfig(c),
      buildRoutingTable(parseStackConfig(c), { "pr-1": ["batch"] }),
      "gateway",
    );
    for (const resource of g.documents.cds.resources as Json[]) {
      expect(get(resource, "cluster_type.typed_config.dns_lookup_family"), String(resource.name)).toBe("V4_PREFERRED");
      expect(get(resource, "cluster_type.typed_config.dns_refresh_rate"), String(resource.name)).toBe("10s");
    }
  });

  it("shares one DNS cluster type between every cluster, written once in cds.yaml", () => {
    const clusters = gateway().documents.cds.resources as Json[];
    const statics = (gateway().documents.bootstrap.static_resources as Json).clusters as Json[];
    const dnsStatics = statics.filter((c) => c.name !== "envoy-admin");
    expect(dnsStatics.map((c) => c.name)).toEqual(["ext-authz", "acme-solver", "gateway-pods"]);
    for (const c of [...clusters.slice(1), ...dnsStatics])
      expect(c.cluster_type, String(c.name)).toBe(clusters[0]!.cluster_type);
    const cds = gateway().xds["cds.yaml"]!;
    expect(cds.match(/DnsCluster/g)).toHaveLength(1);
    const lines = cds.split("\n").filter((l) => l.startsWith("- "));
    expect(lines).toHaveLength(clusters.length);
    expect(lines.every((l) => /"cluster_type":\*o\d+,/.test(l))).toBe(true);
  });

  it("bounds every cluster: circuit breakers, outlier detection, buffer limits", () => {
    const c = cluster("default_batch");
    expect(get(c, "circuit_breakers.thresholds")).toEqual([
      {
        max_connections: 1024,
        max_pending_requests: 1024,
        max_requests: 1024,
        retry_budget: { budget_percent: { value: 20 }, min_retry_concurrency: 3 },
        track_remaining: true,
      },
    ]);
    expect(c.outlier_detection).toEqual({ consecutive_5xx: 5, base_ejection_time: "30s", max_ejection_percent: 50 });
    expect(c.per_connection_buffer_limit_bytes).toBe(32768);
  });

  it("bounds the buffers of the bootstrap's static clusters too (auth, ACME solver, admin)", () => {
    // A static cluster left out would buffer whatever its upstream sends (Envoy's default is 1 MiB per connection).
    const statics = (gateway().documents.bootstrap.static_resources as Json).clusters as Json[];
    expect(statics.map((c) => [c.name, c.per_connection_buffer_limit_bytes])).toEqual([
      ["ext-authz", 32768],
      ["acme-solver", 32768],
      ["envoy-admin", 32768],
      ["gateway-pods", 32768],
    ]);
  });

  it("verifies production upstreams against the CA with a client certificate, checking the Service name", () => {
    const tls = get(cluster("default_batch"), "transport_socket.typed_config.common_tls_context") as Json;
    expect(get(tls, "validation_context_sds_secret_config.name")).toBe("upstream-ca");
    expect((tls.tls_certificate_sds_secret_configs as Json[])[0]!.name).toBe("upstream-client-cert");
    // SNI is the Service's DNS name (the cluster's host); the certificate's SAN must match it.
    expect(get(cluster("default_batch"), "transport_socket.typed_config")).toMatchObject({
      auto_host_sni: true,
      auto_sni_san_validation: true,
    });
  });

  it("treats dev upstreams as the stack says: verify in prod, encrypt-only in dev", () => {
    const prodDev = get(cluster("pr-7_batch"), "transport_socket.typed_config.common_tls_context") as Json;
    expect(prodDev.validation_context_sds_secret_config).toBeDefined();
    const dev = stackConfig("dev");
    const devFiles = renderGateway(dev, buildRoutingTable(dev, { "pr-1": ["batch"] }), "gateway");
    const devCluster = (devFiles.documents.cds.resources as Json[]).find((c) => c.name === "pr-1_batch")!;
    expect(get(devCluster, "transport_socket.typed_config.common_tls_context.validation_context")).toEqual({
      trust_chain_verification: "ACCEPT_UNTRUSTED",
    });
    expect(get(devCluster, "transport_socket.typed_config")).toMatchObject({ auto_host_sni: true });
    expect(get(devCluster, "transport_socket.typed_config.auto_sni_san_validation")).toBeUndefined();
  });

  it("names clusters <namespace>_<service>: no dots (stats tags) and no ambiguity", () => {
    const names = (gateway().documents.cds.resources as Json[]).map((c) => String(c.name));
    expect(names.every((n) => !n.includes(".") && /^[a-z0-9-]+_[a-z0-9-]+(_[a-z0-9-]+)?$/.test(n))).toBe(true);
  });
});

describe("the on-demand cluster's sub-clusters, bounded by each gateway pod's memory", () => {
  const withMemory = (memory: Record<"gateway" | "internal-gateway", string>): StackConfig =>
    withGatewayMemory(stackConfig("prod", "on-demand"), memory);
  const staticClusters = (files: { documents: { bootstrap: Json } }) =>
    (files.documents.bootstrap.static_resources as Json).clusters as Json[];
  const maxSubClusters = (files: { documents: { bootstrap: Json } }) =>
    get(
      staticClusters(files).find((c) => c.name === ON_DEMAND_CLUSTER)!.cluster_type,
      "typed_config.sub_clusters_config.max_sub_clusters",
    );
  const fromStack = (config: StackConfig) =>
    renderGateways(config, buildRoutingTable(config, { "pr-1": ["web"] })).map(maxSubClusters);

  it("keeps as many as half of the heap holds at 64 KiB each (heap: 80% of the memory limit), per gateway", () => {
    // 2Gi: 1,717,986,918 bytes of heap, half of it 858,993,459: 13,107 of 65,536 bytes. 512Mi: 3,276.
    expect(fromStack(withMemory({ gateway: "2Gi", "internal-gateway": "512Mi" }))).toEqual([13_107, 3_276]);
    expect(fromStack(withMemory({ gateway: "1G", "internal-gateway": "3Gi" }))).toEqual([6_103, 16_384]);
  });

  it("keeps at least one and at most 16,384 (more than an xDS ConfigMap holds routes)", () => {
    expect(maxOnDemandSubClusters("100Ki")).toBe(1);
    expect(maxOnDemandSubClusters("319Ki")).toBe(1);
    expect(maxOnDemandSubClusters("320Ki")).toBe(2);
    expect(maxOnDemandSubClusters("2560Mi")).toBe(16_384);
    expect(maxOnDemandSubClusters("2559Mi")).toBe(16_377);
    expect(maxOnDemandSubClusters("64Gi")).toBe(16_384);
  });

  it("sizes it in the bootstrap only: the xDS files a sync renders are the same whatever the memory limit", () => {
    const xds = (memory: string) => {
      const config = withMemory({ gateway: memory, "internal-gateway": memory });
      const table = buildRoutingTable(config, { "pr-1": ["web"] });
      return GATEWAYS.map((g) => renderXds(routingConfig(config), table, g).xds);
    };
    expect(xds("768Mi")).toEqual(xds("2Gi"));
    expect(xds("768Mi")[0]!["cds.yaml"]).not.toContain(ON_DEMAND_CLUSTER);
    expect(fromStack(withMemory({ gateway: "768Mi", "internal-gateway": "1Gi" }))).toEqual([4_915, 6_553]);
  });

  it("names in the 503 past the bound the number the cluster has, the gateway's key and its limit; the only mapper without ext_authz", () => {
    const overflow = (files: { documents: { bootstrap: Json } }) => {
      const mappers = get(httpsHcm(files), "local_reply_config.mappers") as Json[];
      return mappers.map((m) => String(get(m, "body.inline_string") ?? "login redirect"));
    };
    const httpsHcm = (files: { documents: { bootstrap: Json } }) =>
      networkFilters(
        ((files.documents.bootstrap.static_resources as Json).listeners as Json[]).find((l) => l.name === "https")!,
      ).find((f) => f.name === "envoy.filters.network.http_connection_manager")!.typed_config as Json;
    for (const memory of ["300Mi", "1536Mi"]) {
      const config = withMemory({ gateway: memory, "internal-gateway": "2Gi" });
      const [g, i] = renderGateways(config, buildRoutingTable(config, { "pr-1": ["web"] }));
      const [max] = fromStack(config);
      expect(overflow(g!)).toEqual([
        "login redirect",
        expect.stringContaining(
          `serves ${max} dev/PR Services at once, as many as its memory limit allows (gateways.gateway.resources.limits.memory: ${memory}); this one is served once one of them has gone unused for 5 minutes.`,
        ),
      ]);
      expect(overflow(i!)[1]).toContain("gateways.internal-gateway.resources.limits.memory: 2Gi");
    }
    const noAuth = withMemory({ gateway: "1Gi", "internal-gateway": "1Gi" });
    noAuth.gateways = {
      gateway: { ...noAuth.gateways.gateway, authenticateDevRoutes: false, authenticateMetrics: false },
      "internal-gateway": {
        ...noAuth.gateways["internal-gateway"],
        authenticateDevRoutes: false,
        authenticateMetrics: false,
      },
    };
    noAuth.services = noAuth.services.map((s) => ({ ...s, authenticateMetrics: false }));
    const [g] = renderGateways(noAuth, buildRoutingTable(noAuth, { "pr-1": ["web"] }));
    expect(overflow(g!)).toEqual([expect.stringContaining("serves 6553 dev/PR Services at once")]);
    // Per-service dev/PR routes: no sub-clusters, so no such reply.
    const perService = { ...noAuth, devNamespaces: { ...noAuth.devNamespaces, clusters: "per-service" as const } };
    const [p] = renderGateways(perService, buildRoutingTable(perService, { "pr-1": ["web"] }));
    expect(get(httpsHcm(p!), "local_reply_config")).toBeUndefined();
    // Nor the on-demand cluster: the dev/PR Service has a cluster of its own.
    const clusterNames = (files: typeof p) => files!.documents.cds.resources.map((c) => (c as Json).name);
    const staticNames = (files: typeof p) => staticClusters(files!).map((c) => c.name);
    expect(staticNames(p)).not.toContain(ON_DEMAND_CLUSTER);
    expect(clusterNames(p)).toContain("pr-1_web");
    expect(staticNames(g)).toContain(ON_DEMAND_CLUSTER);
    expect(clusterNames(g)).not.toContain(ON_DEMAND_CLUSTER);
  });
});

describe("bootstrap", () => {
  const bootstrap = () => gateway().documents.bootstrap;

  it("keeps listeners static, loads clusters and routes from the watched xDS directory", () => {
    expect(((bootstrap().static_resources as Json).listeners as Json[]).map((l) => l.name)).toEqual([
      "http",
      "https",
      "health",
      "metrics",
    ]);
    expect(get(bootstrap(), "dynamic_resources.cds_config.path_config_source")).toEqual({
      path: "/etc/envoy/xds/cds.yaml",
      watched_directory: { path: "/etc/envoy/xds" },
    });
    expect(get(hcm(listener("https")), "rds.config_source.path_config_source")).toEqual({
      path: "/etc/envoy/xds/rds.yaml",
      watched_directory: { path: "/etc/envoy/xds" },
    });
    expect(bootstrap().node).toEqual({ id: "gateway", cluster: "gateway" });
  });

  it("counts the gateway's own pods in its local cluster: strict DNS on the headless Service <gateway>-pods", () => {
    expect(bootstrap().cluster_manager).toEqual({ local_cluster_name: "gateway-pods" });
    const pods = ((bootstrap().static_resources as Json).clusters as Json[]).find((c) => c.name === "gateway-pods")!;
    expect(get(pods, "cluster_type.typed_config.respect_dns_ttl")).toBe(true);
    expect(get(pods, "load_assignment.endpoints")).toEqual([
      {
        lb_endpoints: [
          {
            endpoint: {
              address: { socket_address: { address: "gateway-pods.default.svc.cluster.local", port_value: 8443 } },
            },
          },
        ],
      },
    ]);
    // Nothing is ever sent to it: no TLS, no route names it.
    expect(pods.transport_socket).toBeUndefined();
    const internalPods = ((internal().documents.bootstrap.static_resources as Json).clusters as Json[]).find(
      (c) => c.name === "gateway-pods",
    )!;
    expect(
      get(internalPods, "load_assignment.endpoints.0.lb_endpoints.0.endpoint.address.socket_address.address"),
    ).toBe("internal-gateway-pods.default.svc.cluster.local");
  });

  it("keeps every stat but those of dev/PR clusters beyond what dashboards use, and defers cluster traffic stats", () => {
    expect(bootstrap().deferred_stat_options).toEqual({ enable_deferred_creation_stats: true });
    const patterns = get(bootstrap(), "stats_config.stats_matcher.inclusion_list.patterns") as Json[];
    // What Envoy's StringMatcher does with each pattern (safe_regex: the whole name).
    const kept = (name: string) =>
      patterns.some((p) =>
        p.prefix !== undefined
          ? name.startsWith(String(p.prefix))
          : p.suffix !== undefined
            ? name.endsWith(String(p.suffix))
            : new RegExp(`^(?:${String((p.safe_regex as Json).regex)})$`).test(name),
      );
    for (const name of [
      "http.https.downstream_rq_total",
      "listener.0.0.0.0_8443.downstream_cx_total",
      "server.memory_allocated",
      "cluster_manager.active_clusters",
      "http_local_rate_limiter.http_local_rate_limit.ok",
      "dev.http_local_rate_limit.rate_limited",
      "runtime.deprecated_feature_use",
    ]) {
      expect(kept(name), name).toBe(true);
    }
    for (const name of [
      "cluster.default_www.upstream_rq_200",
      "cluster.default_batch_blue.ssl.handshake",
      "cluster.ext-authz.upstream_cx_total",
      "cluster.gateway-pods.membership_total",
      "cluster.envoy-admin.upstream_rq_time",
    ]) {
      expect(kept(name), name).toBe(true);
    }
    for (const stat of [
      "upstream_rq_total",
      "upstream_rq_2xx",
      "upstream_rq_5xx",
      "upstream_rq_time",
      "upstream_cx_active",
      "membership_healthy",
      "outlier_detection.ejections_active",
      "ClusterTrafficStats.initialized",
    ]) {
      expect(kept(`cluster.pr-7_batch.${stat}`), stat).toBe(true);
    }
    for (const stat of [
      "upstream_rq_200",
      "external.upstream_rq_2xx",
      "external.upstream_rq_time",
      "upstream_cx_total",
      "upstream_cx_connect_ms",
      "circuit_breakers.default.remaining_rq",
      "ssl.handshake",
      "lb_healthy_panic",
      "outlier_detection.ejections_enforced_total",
    ]) {
      expect(kept(`cluster.pr-7_batch.${stat}`), stat).toBe(false);
    }
    // A dev namespace whose name starts like the stack's namespace is still a dev one.
    expect(kept("cluster.default-2_batch.upstream_cx_total")).toBe(false);
  });

  it("matches, with one RE2-safe regex, exactly the names that do not start with a prefix, whatever characters the prefix has", () => {
    // Every name (never empty, as a stat's) up to one character longer than the prefix, over the prefix's characters and one other: the regex must agree with startsWith on each.
    for (const prefix of ["cluster.", "a]b", "x\\^", "-.*", "(a|b)?"]) {
      const re = new RegExp(`^(?:${notStartingWith(prefix)})$`);
      const alphabet = [...new Set([...prefix, "z"])];
      let names = [""];
      for (let length = 1; length <= Math.min(prefix.length + 1, 5); length++)
        names = [...names, ...names.filter((n) => n.length === length - 1).flatMap((n) => alphabet.map((c) => n + c))];
      for (const name of [...names.slice(1), prefix, `${prefix}rest`, prefix.slice(0, -1)])
        expect(re.test(name), `${JSON.stringify(prefix)} against ${JSON.stringify(name)}`).toBe(
          !name.startsWith(prefix),
        );
    }
  });

  it("keeps every stat of every cluster, created with it, when stack config says so", () => {
    const all = renderGateway(
      { ...config(), stats: { devClusters: "all", deferredCreation: false } },
      table(),
      "gateway",
    ).documents.bootstrap;
    expect(all.stats_config).toBeUndefined();
    expect(all.deferred_stat_options).toBeUndefined();
  });

  it("resolves upstream names with one c-ares resolver for the gateway: the pod's DNS servers, no search-domain walk", () => {
    const cares = {
      name: "envoy.network.dns_resolver.cares",
      typed_config: {
        "@type": "type.googleapis.com/envoy.extensions.network.dns_resolver.cares.v3.CaresDnsResolverConfig",
        dns_resolver_options: { no_default_search_domain: true },
      },
    };
    // In the pod: no resolvers, so c-ares takes the cluster DNS from resolv.conf (a harness address must never leak in here).
    expect(bootstrap().typed_dns_resolver_config).toEqual(cares);
    // Where a DNS server is given (the Envoy harness), it replaces resolv.conf's servers and nothing else.
    const remapped = renderGateway(config(), table(), "gateway", { dnsResolver: { address: "127.0.0.1", port: 5353 } })
      .documents.bootstrap;
    expect(remapped.typed_dns_resolver_config).toEqual({
      ...cares,
      typed_config: {
        ...cares.typed_config,
        resolvers: [{ socket_address: { address: "127.0.0.1", port_value: 5353 } }],
      },
    });
  });

  it("runs the login Location filter, ext_authz, then the local rate limit, then the router; the internal-gateway also compresses", () => {
    expect((hcm(listener("https")).http_filters as Json[]).map((f) => f.name)).toEqual([
      "envoy.filters.http.header_mutation",
      "envoy.filters.http.ext_authz",
      "envoy.filters.http.local_ratelimit",
      "envoy.filters.http.router",
    ]);
    expect((hcm(listener("https", internal())).http_filters as Json[]).map((f) => f.name)).toEqual([
      "envoy.filters.http.header_mutation",
      "envoy.filters.http.ext_authz",
      "envoy.filters.http.local_ratelimit",
      "envoy.filters.http.compressor",
      "envoy.filters.http.router",
    ]);
    const authz = httpFilter(listener("https"), "envoy.filters.http.ext_authz")!;
    expect(authz).toMatchObject({ failure_mode_allow: false, status_on_error: { code: "ServiceUnavailable" } });
    expect(get(authz, "http_service.server_uri")).toMatchObject({
      uri: "https://auth.default.svc.cluster.local:443",
      cluster: "ext-authz",
    });
  });

  it("turns a 401 from auth into a 302; the Location is added by the first filter, only to ext_authz denials", () => {
    const mapper = (get(hcm(listener("https")), "local_reply_config.mappers") as Json[])[0]!;
    expect(get(mapper, "filter.status_code_filter.comparison.value.default_value")).toBe(401);
    expect(mapper.status_code).toBe(302);
    // A Location here could not be encoded (header values have no string functions): the filter adds it.
    expect(mapper.headers_to_add).toBeUndefined();
    const mutation = httpFilter(listener("https"), "envoy.filters.http.header_mutation")!;
    const appended = get(mutation, "mutations.response_mutations") as Json[];
    expect(appended).toHaveLength(1);
    expect(get(appended[0], "append.header.key")).toBe("location");
    // A Location the auth service set itself is kept.
    expect(get(appended[0], "append.append_action")).toBe("ADD_IF_ABSENT");
    const value = get(appended[0], "append.header.value") as string;
    // One CEL command, so nothing else of the value is sent: empty (no header) unless ext_authz denied and the mapper made it a 302.
    expect(value).toMatch(
      /^%CEL\(response\.code == 302 && response\.code_details == 'ext_authz_denied' \? .* : ''\)%$/,
    );
    expect(value.indexOf(")%")).toBe(value.length - 2);
    expect(get(mutation, "mutations.formatters")).toEqual([
      {
        name: "envoy.formatter.cel",
        typed_config: {
          "@type": "type.googleapis.com/envoy.extensions.formatter.cel.v3.Cel",
          cel_config: { enable_string_concat: true, enable_string_functions: true },
        },
      },
    ]);
  });

  /** The login URL and the percent-encoding of the Location's CEL expression, read back as Envoy's CEL would evaluate them. */
  const locationOf = (g: ReturnType<typeof renderGateway>, url: string): string => {
    const https = ((g.documents.bootstrap.static_resources as Json).listeners as Json[]).find(
      (l) => l.name === "https",
    )!;
    const value = get(
      (get(httpFilter(https, "envoy.filters.http.header_mutation"), "mutations.response_mutations") as Json[])[0],
      "append.header.value",
    ) as string;
    const literal = (l: string) =>
      l
        .slice(1, -1)
        .replace(/\\u([0-9a-f]{4})|\\U([0-9a-f]{8})/g, (_, u: string, U: string) =>
          String.fromCodePoint(parseInt(u ?? U, 16)),
        );
    const m =
      /\? ('[^']*') \+ \('https:\/\/' \+ request\.host \+ request\.path\)((?:\.replace\('[^']*', '[^']*'\))+) : ''\)%$/.exec(
        value,
      );
    expect(m, value).not.toBeNull();
    const replaces = [...m![2]!.matchAll(/\.replace\(('[^']*'), ('[^']*')\)/g)].map(
      ([, from, to]) => [literal(from!), literal(to!)] as const,
    );
    return literal(m![1]!) + replaces.reduce((text, [from, to]) => text.replaceAll(from, to), url);
  };

  it("percent-encodes the whole original URL after next=, as encodeURIComponent does", () => {
    // What a request target can hold: printable ASCII (Envoy refuses the rest; browsers send UTF-8 percent-encoded).
    const printable = Array.from({ length: 0x7e - 0x20 }, (_, i) => String.fromCharCode(0x21 + i)).join("");
    for (const url of [
      "https://internal.hail.is/pr-7/batch/jobs?q=a&b=c%3Dd&pct=100%25&name=%C3%A9t%C3%A9&plus=a+b",
      `https://batch.hail.is/${printable}`,
    ]) {
      const location = locationOf(gateway(), url);
      expect(location).toBe(`https://auth.hail.is/login?next=${encodeURIComponent(url)}`);
      expect(new URL(location).searchParams.get("next")).toBe(url);
    }
  });

  it("keeps a configured login URL exactly, whatever it holds, and adds next= after its own query", () => {
    const loginUrl = "https://auth.example.org/log(in)%20'x'?from=a%20b";
    const raw = withValue(minimalRaw(), "auth", { loginUrl });
    const files = renderGateway(parseStackConfig(raw), buildRoutingTable(parseStackConfig(raw)), "gateway");
    expect(locationOf(files, "https://www.example.org/a?b=c")).toBe(
      `${loginUrl}&next=${encodeURIComponent("https://www.example.org/a?b=c")}`,
    );
    // Its ( ) % ' are CEL escapes: none can end the literal or the %CEL(...)% command early.
    const https = ((files.documents.bootstrap.static_resources as Json).listeners as Json[]).find(
      (l) => l.name === "https",
    )!;
    const value = get(
      (get(httpFilter(https, "envoy.filters.http.header_mutation"), "mutations.response_mutations") as Json[])[0],
      "append.header.value",
    ) as string;
    expect(value).toContain(
      "'https://auth.example.org/log\\u0028in\\u0029\\u002520\\u0027x\\u0027?from=a\\u002520b&next='",
    );
    // Beyond the Basic Multilingual Plane a character is one \U escape of 8 digits (CEL), not two of a surrogate pair.
    const astral = withValue(minimalRaw(), "auth", { loginUrl: "https://auth.example.org/login?from=\u{1F984}\u00e9" });
    const astralFiles = renderGateway(parseStackConfig(astral), buildRoutingTable(parseStackConfig(astral)), "gateway");
    const astralHttps = ((astralFiles.documents.bootstrap.static_resources as Json).listeners as Json[]).find(
      (l) => l.name === "https",
    )!;
    expect(
      get(
        (
          get(httpFilter(astralHttps, "envoy.filters.http.header_mutation"), "mutations.response_mutations") as Json[]
        )[0],
        "append.header.value",
      ),
    ).toContain("'https://auth.example.org/login?from=\\U0001f984\\u00e9&next='");
  });

  it("hardens the edge as Envoy's guidance lists", () => {
    const m = hcm(listener("https"));
    expect(m).toMatchObject({
      use_remote_address: true,
      normalize_path: true,
      merge_slashes: true,
      path_with_escaped_slashes_action: "UNESCAPE_AND_REDIRECT",
      common_http_protocol_options: { idle_timeout: "3600s", headers_with_underscores_action: "REJECT_REQUEST" },
      http2_protocol_options: {
        max_concurrent_streams: 100,
        initial_stream_window_size: 65536,
        initial_connection_window_size: 1048576,
      },
      max_request_headers_kb: 60,
      stream_idle_timeout: "300s",
      request_timeout: "300s",
      request_headers_timeout: "10s",
      upgrade_configs: [{ upgrade_type: "websocket" }],
    });
    expect(listener("https").per_connection_buffer_limit_bytes).toBe(32768);
    expect(get(bootstrap(), "overload_manager.resource_monitors")).toEqual([
      {
        name: "envoy.resource_monitors.fixed_heap",
        typed_config: expect.objectContaining({ max_heap_size_bytes: Math.floor(2 * 2 ** 30 * 0.8) }),
      },
      {
        name: "envoy.resource_monitors.global_downstream_max_connections",
        typed_config: expect.objectContaining({ max_active_downstream_connections: 50000 }),
      },
    ]);
  });

  it("logs a JSON line per request on the client-facing listeners, or nothing when edge.accessLog is off", () => {
    const log = (g: Json, name: string) =>
      get(hcm(((g.static_resources as Json).listeners as Json[]).find((l) => l.name === name)!), "access_log") as
        Json[] | undefined;
    for (const name of ["https", "http"]) {
      expect(log(bootstrap(), name)!.map((l) => get(l, "typed_config.@type"))).toEqual([
        "type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog",
      ]);
    }
    expect(get(log(bootstrap(), "https")![0], "typed_config.log_format.json_format.status")).toBe("%RESPONSE_CODE%");
    const off = renderGateway({ ...config(), edge: { ...config().edge, accessLog: "off" } }, table(), "gateway")
      .documents.bootstrap;
    for (const name of ["https", "http"]) expect(log(off, name), name).toBeUndefined();
  });

  it("accepts TLS 1.2+ with forward-secret AEAD ciphers only, certificate from the mounted Secret", () => {
    const tls = get(listener("https"), "filter_chains") as Json[];
    const ctx = get(tls[0], "transport_socket.typed_config.common_tls_context") as Json;
    expect(get(ctx, "tls_params.tls_minimum_protocol_version")).toBe("TLSv1_2");
    expect(
      (get(ctx, "tls_params.cipher_suites") as string[]).every((c) => c.startsWith("ECDHE-") && /GCM|CHACHA20/.test(c)),
    ).toBe(true);
    expect(gateway().bootstrap["sds-server-cert.yaml"]).toContain('"/etc/envoy/tls/server/tls.crt"');
  });

  it("redirects plain HTTP to HTTPS but passes ACME challenges to the solver (external gateway)", () => {
    const routes = get(hcm(listener("http")), "route_config.virtual_hosts") as Json[];
    expect(routes[0]!.routes).toEqual([
      { match: { prefix: "/.well-known/acme-challenge/" }, route: { cluster: "acme-solver", timeout: "10s" } },
      { match: { prefix: "/" }, redirect: { https_redirect: true } },
    ]);
    const internalRoutes = (get(hcm(listener("http", internal())), "route_config.virtual_hosts") as Json[])[0]!
      .routes as Json[];
    expect(internalRoutes).toEqual([{ match: { prefix: "/" }, redirect: { https_redirect: true } }]);
  });

  it("keeps the admin interface on 127.0.0.1 and exposes only /stats/prometheus on the metrics listener", () => {
    expect(get(bootstrap(), "admin.address.socket_address.address")).toBe("127.0.0.1");
    const routes = (get(hcm(listener("metrics")), "route_config.virtual_hosts") as Json[])[0]!.routes as Json[];
    expect(routes).toEqual([
      {
        match: { path: "/stats/prometheus", headers: [{ name: ":method", string_match: { exact: "GET" } }] },
        route: { cluster: "envoy-admin", timeout: "10s" },
      },
      { match: { prefix: "/" }, direct_response: { status: 404 } },
    ]);
  });
});

/** The gateway documents of the minimal stack with `changes` (dotted paths) applied. */
function renderWith(
  changes: Record<string, unknown>,
  namespaces: Record<string, string[]> = { "pr-1": ["batch"] },
  gatewayName: "gateway" | "internal-gateway" = "gateway",
) {
  let raw = minimalRaw();
  for (const [path, value] of Object.entries(changes)) raw = withValue(raw, path, value);
  const c = parseStackConfig(raw);
  return renderGateway(c, buildRoutingTable(c, namespaces), gatewayName);
}
const hostsOf = (g: ReturnType<typeof renderGateway>) => (g.documents.rds.resources[0] as Json).virtual_hosts as Json[];
const hostOf = (g: ReturnType<typeof renderGateway>, name: string) => hostsOf(g).find((h) => h.name === name)!;
const listenerOf = (g: ReturnType<typeof renderGateway>, name: string) =>
  ((g.documents.bootstrap.static_resources as Json).listeners as Json[]).find((l) => l.name === name)!;
const httpFilterNames = (g: ReturnType<typeof renderGateway>) =>
  (hcm(listenerOf(g, "https")).http_filters as Json[]).map((f) => f.name);

describe("a production service's /metrics", () => {
  it("requires ext_authz on the external gateway: a route before / with the same action and rate limit, ext_authz on again", () => {
    const routes = host("batch").routes as Json[];
    expect(routes.map((r) => r.match)).toEqual([{ path_separated_prefix: "/metrics" }, { prefix: "/" }]);
    // The same action object (written once): the metrics route cannot drift from the service's route.
    expect(routes[0]!.route).toBe(routes[1]!.route);
    expect(routes[0]!.typed_per_filter_config).toEqual({
      "envoy.filters.http.ext_authz": {
        "@type": "type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute",
        check_settings: {},
      },
      "envoy.filters.http.local_ratelimit": (routes[1]!.typed_per_filter_config as Json)[
        "envoy.filters.http.local_ratelimit"
      ],
    });
    // The rest of the host keeps ext_authz off.
    expect((host("batch").typed_per_filter_config as Json)["envoy.filters.http.ext_authz"]).toMatchObject({
      disabled: true,
    });
    // A service without a rate limit: ext_authz only.
    const unlimited = renderWith({}).documents;
    const notebook = ((unlimited.rds.resources[0] as Json).virtual_hosts as Json[]).find((h) => h.name === "notebook")!;
    expect(Object.keys((notebook.routes as Json[])[0]!.typed_per_filter_config as Json)).toEqual([
      "envoy.filters.http.ext_authz",
    ]);
  });

  it("is left alone on the internal gateway: a setting of each gateway (authenticateMetrics), not its name", () => {
    expect((host("batch", internal()).routes as Json[]).map((r) => r.match)).toEqual([{ prefix: "/" }]);
    const swapped = renderWith(
      { "gateways.gateway.authenticateMetrics": false, "gateways.internal-gateway.authenticateMetrics": true },
      {},
      "internal-gateway",
    );
    expect((hostOf(swapped, "batch").routes as Json[]).map((r) => r.match)).toEqual([
      { path_separated_prefix: "/metrics" },
      { prefix: "/" },
    ]);
    const off = renderWith({ "gateways.gateway.authenticateMetrics": false });
    expect((hostOf(off, "batch").routes as Json[]).map((r) => r.match)).toEqual([{ prefix: "/" }]);
  });

  it("follows a service's own authenticateMetrics on every gateway", () => {
    const raw = withValue(minimalRaw(), "services", [
      { name: "www", replicas: 2, authenticateMetrics: false },
      { name: "batch", replicas: 2, authenticateMetrics: true },
      { name: "ci", replicas: 2 },
    ]);
    const c = parseStackConfig(raw);
    const [g, i] = renderGateways(c, buildRoutingTable(c));
    const matches = (files: ReturnType<typeof renderGateway>, name: string) =>
      (hostOf(files, name).routes as Json[]).map((r) => Object.values(r.match as Json)[0]);
    expect([matches(g!, "www"), matches(g!, "batch"), matches(g!, "ci")]).toEqual([
      ["/"],
      ["/metrics", "/"],
      ["/metrics", "/"],
    ]);
    expect([matches(i!, "www"), matches(i!, "batch"), matches(i!, "ci")]).toEqual([["/"], ["/metrics", "/"], ["/"]]);
  });

  it("keeps ext_authz (its filter, cluster and login redirect) where only /metrics needs it, and turns it off for dev routes", () => {
    const files = renderWith({ "gateways.gateway.authenticateDevRoutes": false });
    expect(httpFilterNames(files)).toEqual([
      "envoy.filters.http.header_mutation",
      "envoy.filters.http.ext_authz",
      "envoy.filters.http.local_ratelimit",
      "envoy.filters.http.router",
    ]);
    expect(((files.documents.bootstrap.static_resources as Json).clusters as Json[]).map((c) => c.name)).toContain(
      "ext-authz",
    );
    expect(hcm(listenerOf(files, "https")).local_reply_config).toBeDefined();
    expect((hostOf(files, "dev").typed_per_filter_config as Json)["envoy.filters.http.ext_authz"]).toMatchObject({
      disabled: true,
    });
    // Dev routes authenticated (the default): no per-route config turns ext_authz off on the dev host.
    expect(
      (hostOf(renderWith({}), "dev").typed_per_filter_config as Json)["envoy.filters.http.ext_authz"],
    ).toBeUndefined();
    // Nothing needs it: no filter, no login redirect, no auth cluster, nothing turned off.
    const none = renderWith({
      "gateways.gateway.authenticateDevRoutes": false,
      "gateways.gateway.authenticateMetrics": false,
    });
    expect(httpFilterNames(none)).toEqual(["envoy.filters.http.local_ratelimit", "envoy.filters.http.router"]);
    expect(hcm(listenerOf(none, "https")).local_reply_config).toBeUndefined();
    expect(((none.documents.bootstrap.static_resources as Json).clusters as Json[]).map((c) => c.name)).not.toContain(
      "ext-authz",
    );
    expect(
      hostsOf(none).every(
        (h) => (h.typed_per_filter_config as Json | undefined)?.["envoy.filters.http.ext_authz"] === undefined,
      ),
    ).toBe(true);
  });
});

describe("browser security headers", () => {
  // In name order, whatever the order of the mapping's keys.
  const defaults = [
    { header: { key: "referrer-policy", value: "strict-origin-when-cross-origin" }, append_action: "ADD_IF_ABSENT" },
    { header: { key: "strict-transport-security", value: "max-age=31536000" }, append_action: "ADD_IF_ABSENT" },
    { header: { key: "x-content-type-options", value: "nosniff" }, append_action: "ADD_IF_ABSENT" },
  ];

  it("are added by the external gateway to every host's responses that lack them, from one shared list; none on the internal gateway", () => {
    for (const h of hosts()) expect(h.response_headers_to_add, String(h.name)).toEqual(defaults);
    // One object for every host: written once in rds.yaml, not once per host.
    expect(new Set(hosts().map((h) => h.response_headers_to_add)).size).toBe(1);
    expect(gateway().xds["rds.yaml"]!.match(/strict-transport-security/g)).toHaveLength(1);
    for (const h of hosts(internal())) expect(h.response_headers_to_add, String(h.name)).toBeUndefined();
  });

  it("take a service's overrides: another header, a default dropped, one replacing the service's own", () => {
    const files = renderWith({
      services: [
        {
          name: "www",
          replicas: 2,
          securityHeaders: {
            "x-frame-options": "DENY",
            "referrer-policy": false,
            "strict-transport-security": { value: "max-age=60", replace: true },
          },
        },
        { name: "batch", replicas: 2 },
      ],
    });
    expect(hostOf(files, "www").response_headers_to_add).toEqual([
      {
        header: { key: "strict-transport-security", value: "max-age=60" },
        append_action: "OVERWRITE_IF_EXISTS_OR_ADD",
      },
      { header: { key: "x-content-type-options", value: "nosniff" }, append_action: "ADD_IF_ABSENT" },
      { header: { key: "x-frame-options", value: "DENY" }, append_action: "ADD_IF_ABSENT" },
    ]);
    // The override stays with its service.
    expect(hostOf(files, "batch").response_headers_to_add).toEqual(defaults);
    expect(hostOf(files, "dev").response_headers_to_add).toEqual(defaults);
  });

  it("merge a gateway's own over the defaults, and escape % so Envoy does not read it as a command", () => {
    const files = renderWith({
      "gateways.gateway.securityHeaders": {
        "referrer-policy": false,
        "content-security-policy": "img-src data: 'self' https://x.org/a%20b",
      },
    });
    expect(hostOf(files, "batch").response_headers_to_add).toEqual([
      {
        header: { key: "content-security-policy", value: "img-src data: 'self' https://x.org/a%%20b" },
        append_action: "ADD_IF_ABSENT",
      },
      defaults[1],
      defaults[2],
    ]);
    expect(
      hostOf(
        renderWith({
          "gateways.gateway.securityHeaders": {
            "strict-transport-security": false,
            "x-content-type-options": false,
            "referrer-policy": false,
          },
        }),
        "batch",
      ).response_headers_to_add,
    ).toBeUndefined();
  });
});

describe("retries", () => {
  const safe = "connect-failure,refused-stream,reset-before-request";

  it("retry what never reached a pod for every method, on another pod, from one policy every host shares", () => {
    const policy = host("batch").retry_policy as Json;
    // Never `reset` or `5xx` for every method: a pod may have acted on a POST it then reset.
    expect(policy).toEqual({
      retry_on: safe,
      num_retries: 2,
      retry_host_predicate: [
        {
          name: "envoy.retry_host_predicates.previous_hosts",
          typed_config: {
            "@type": "type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate",
          },
        },
      ],
      host_selection_retry_max_attempts: 5,
    });
    for (const h of hosts()) expect(h.retry_policy, String(h.name)).toBe(policy);
    expect(gateway().xds["rds.yaml"]!.match(/reset-before-request/g)).toHaveLength(1);
    // Not per route: a dev route costs no bytes for it.
    expect((host("dev").routes as Json[]).every((r) => r.route && (r.route as Json).retry_policy === undefined)).toBe(
      true,
    );
  });

  it("retry resets before any response only for the idempotent methods, through x-envoy-retry-on added before the router reads its policy", () => {
    const headers = host("batch").request_headers_to_add as Json[];
    expect(headers).toEqual([
      {
        header: {
          key: "x-envoy-retry-on",
          value: "%CEL(request.method in ['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE'] ? 'reset' : '')%",
        },
        append_action: "OVERWRITE_IF_EXISTS_OR_ADD",
      },
    ]);
    expect(host("dev").request_headers_to_add).toBe(headers);
  });

  it("follow a service's own retries and methods; none at all where it has 0 (the header alone would turn Envoy's one retry on)", () => {
    const files = renderWith({
      services: [
        { name: "www", replicas: 2, retries: 0 },
        { name: "batch", replicas: 2, retries: 4, retryResetMethods: [] },
        { name: "ci", replicas: 2, retryResetMethods: ["GET"] },
      ],
      upstream: { retryBudgetPercent: 50 },
    });
    expect(hostOf(files, "www").retry_policy).toBeUndefined();
    expect(hostOf(files, "www").request_headers_to_add).toBeUndefined();
    expect(hostOf(files, "batch").retry_policy).toMatchObject({ retry_on: safe, num_retries: 4 });
    expect(hostOf(files, "batch").request_headers_to_add).toBeUndefined();
    expect(get((hostOf(files, "ci").request_headers_to_add as Json[])[0], "header.value")).toBe(
      "%CEL(request.method in ['GET'] ? 'reset' : '')%",
    );
    expect(get((files.documents.cds.resources as Json[])[0], "circuit_breakers.thresholds")).toMatchObject([
      { retry_budget: { budget_percent: { value: 50 }, min_retry_concurrency: 3 } },
    ]);
  });
  it("of the dev routes come from the routing table, which takes the stack's upstream retries for every dev service", () => {
    const up = config().upstream;
    expect(table().devRoutes).toEqual({
      retries: { count: up.retries, resetMethods: up.retryResetMethods },
      rateLimit: config().devNamespaces.rateLimit,
    });
    for (const s of table().dev) expect(s.retries).toEqual(table().devRoutes.retries);
    // The translation reads the table, not stack config: what the table says is what the dev host gets.
    const changed = { ...table(), devRoutes: { ...table().devRoutes, retries: { count: 5, resetMethods: ["GET"] } } };
    const dev = host("dev", renderGateway(config(), changed, "gateway"));
    expect(dev.retry_policy).toMatchObject({ retry_on: safe, num_retries: 5 });
    expect(get((dev.request_headers_to_add as Json[])[0], "header.value")).toBe(
      "%CEL(request.method in ['GET'] ? 'reset' : '')%",
    );
    const none = host(
      "dev",
      renderGateway(
        config(),
        { ...table(), devRoutes: { ...table().devRoutes, retries: { count: 0, resetMethods: [] } } },
        "gateway",
      ),
    );
    expect(none.retry_policy).toBeUndefined();
    expect(none.request_headers_to_add).toBeUndefined();
  });
});

describe("route timeouts", () => {
  it("bound every route by upstream.routeTimeout (300s), websockets too (Envoy does not apply it to an upgraded stream)", () => {
    const timeouts = hosts().flatMap((h) => (h.routes as Json[]).map((r) => get(r, "route.timeout")));
    expect(new Set(timeouts)).toEqual(new Set(["300s"]));
    expect(get(mainRoute("notebook"), "route.timeout")).toBe("300s");
  });

  it("let a service opt out with routeTimeout 0s, or set its own bound, leaving the others at the default", () => {
    const files = renderWith({
      services: [
        { name: "www", replicas: 2, routeTimeout: "0s" },
        { name: "batch", replicas: 2, routeTimeout: "30m" },
        { name: "ci", replicas: 2 },
      ],
      upstream: { routeTimeout: "45s" },
    });
    const timeout = (name: string) => (hostOf(files, name).routes as Json[]).map((r) => get(r, "route.timeout"));
    expect([timeout("www"), timeout("batch"), timeout("ci"), timeout("dev")]).toEqual([
      ["0s", "0s"],
      ["1800s", "1800s"],
      ["45s", "45s"],
      ["45s"],
    ]);
  });
});

describe("connection limits of the public listeners", () => {
  it("cap each public listener on its own, first in its filter chain: HTTPS the pod's limit less a tenth for plain HTTP", () => {
    // Last in the chain, after the connection manager, the filter would never see a connection.
    const first = (name: string, g = gateway()) => networkFilters(listener(name, g))[0]!;
    expect(first("https")).toEqual({
      name: "envoy.filters.network.connection_limit",
      typed_config: {
        "@type": "type.googleapis.com/envoy.extensions.filters.network.connection_limit.v3.ConnectionLimit",
        stat_prefix: "https",
        max_connections: 45000,
      },
    });
    expect(get(first("http"), "typed_config")).toMatchObject({ stat_prefix: "http", max_connections: 5000 });
    // Health and metrics are the kubelet's and Prometheus's: neither capped here nor by the overload manager.
    for (const name of ["health", "metrics"])
      expect(networkFilters(listener(name)).map((f) => f.name)).toEqual([
        "envoy.filters.network.http_connection_manager",
      ]);
    const files = renderWith({ edge: { maxConnections: 1000, httpMaxConnections: 20 } });
    expect(get(networkFilters(listenerOf(files, "https"))[0], "typed_config.max_connections")).toBe(980);
    expect(get(networkFilters(listenerOf(files, "http"))[0], "typed_config.max_connections")).toBe(20);
  });
});
