// What the gateways are told to do, read from the generated documents.
import { describe, expect, it } from "vitest";
import type { Json } from "../../routing/envoy/types.js";
import { renderGateway, renderGateways } from "../../routing/render.js";
import { buildRoutingTable } from "../../routing/table.js";
import { parseStackConfig } from "../../routing/config/load.js";
import { eachTest } from "./each-test.js";
import { minimalRaw, minutesIntoShift, shiftedService, stackConfig, withValue } from "./fixtures.js";

const config = eachTest(() => stackConfig("prod"));
// Ten minutes into web's shift: blue 90, green 10.
const table = eachTest(() => buildRoutingTable(config(), { "pr-7": ["batch", "batch-driver"], "pr-9": [shiftedService("web")] }, "dev namespaces", minutesIntoShift(10)));
const rendered = eachTest(() => renderGateways(config(), table()));
const gateway = () => rendered()[0]!;
const internal = () => rendered()[1]!;

const routeConfig = (g = gateway()) => g.documents.rds.resources[0] as Json;
const hosts = (g = gateway()) => routeConfig(g).virtual_hosts as Json[];
const host = (name: string, g = gateway()) => hosts(g).find((h) => h.name === name)!;
const cluster = (name: string, g = gateway()) => (g.documents.cds.resources as Json[]).find((c) => c.name === name)!;
const listener = (name: string, g = gateway()) => ((g.documents.bootstrap.static_resources as Json).listeners as Json[]).find((l) => l.name === name)!;
const hcm = (l: Json) => ((l.filter_chains as Json[])[0]!.filters as Json[])[0]!.typed_config as Json;
const get = (v: unknown, path: string): unknown => path.split(".").reduce<unknown>((o, k) => (o as Record<string, unknown>)?.[k], v);

describe("routes", () => {
  it("serves production service s at s.<domain> on the gateway and s.<internalDomain> on the internal-gateway", () => {
    expect(host("batch").domains).toEqual(["batch.hail.is"]);
    expect(host("batch", internal()).domains).toEqual(["batch.hail"]);
    const route = (host("batch").routes as Json[])[0]!;
    expect(route.match).toEqual({ prefix: "/" });
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
    expect(routes.map((r) => get(r, "match.path_separated_prefix"))).toEqual(["/pr-7/batch", "/pr-7/batch-driver", "/pr-9/web"]);
    expect(routes.map((r) => get(r, "route.cluster") ?? "weighted")).toEqual(["pr-7_batch", "pr-7_batch-driver", "weighted"]);
    expect(routes.every((r) => get(r, "route.prefix_rewrite") === undefined && get(r, "route.regex_rewrite") === undefined)).toBe(true);
  });

  it("splits a service with several versions across weighted clusters", () => {
    const route = (host("dev").routes as Json[])[2]!;
    expect(get(route, "route.weighted_clusters.clusters")).toEqual([
      { name: "pr-9_web_blue", weight: 90 },
      { name: "pr-9_web_green", weight: 10 },
    ]);
    expect(get(cluster("pr-9_web_green"), "load_assignment.endpoints")).toEqual([
      { lb_endpoints: [{ endpoint: { address: { socket_address: { address: "web-green.pr-9.svc.cluster.local", port_value: 443 } } } }] },
    ]);
  });

  it("turns ext_authz off on production hosts and leaves it on for dev routes", () => {
    for (const h of hosts()) {
      const perFilter = (h.typed_per_filter_config ?? {}) as Json;
      if (h.name === "dev") expect(perFilter["envoy.filters.http.ext_authz"]).toBeUndefined();
      else expect(perFilter["envoy.filters.http.ext_authz"], String(h.name)).toMatchObject({ disabled: true });
    }
  });

  it("limits each production route to its rate limit divided by the gateway replicas (rounded up)", () => {
    const limit = (name: string) => get((host(name).routes as Json[])[0]!, "typed_per_filter_config") as Json;
    const bucket = (name: string) => get(limit(name)["envoy.filters.http.local_ratelimit"], "token_bucket");
    // prod: batch-driver 30 req/s over 3 replicas, www 600 over 3.
    expect(bucket("batch-driver")).toEqual({ max_tokens: 10, tokens_per_fill: 10, fill_interval: "1s" });
    expect(bucket("www")).toEqual({ max_tokens: 200, tokens_per_fill: 200, fill_interval: "1s" });
    const devBucket = get(((host("dev").routes as Json[])[0]!.typed_per_filter_config as Json)["envoy.filters.http.local_ratelimit"], "token_bucket");
    expect(devBucket).toEqual({ max_tokens: 67, tokens_per_fill: 67, fill_interval: "1s" }); // 200 / 3 replicas
  });

  it("gives websocket services a longer idle timeout", () => {
    expect(get((host("notebook").routes as Json[])[0]!, "route.idle_timeout")).toBe("3600s");
    expect(get((host("batch").routes as Json[])[0]!, "route.idle_timeout")).toBeUndefined();
  });

  it("sets X-Real-IP from the downstream address and rewrites Host to the Service name", () => {
    expect(routeConfig().request_headers_to_add).toEqual([
      { header: { key: "x-real-ip", value: "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%" }, append_action: "OVERWRITE_IF_EXISTS_OR_ADD" },
    ]);
    const action = get((host("batch").routes as Json[])[0]!, "route") as Json;
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
    for (const key of ["type", "respect_dns_ttl", "dns_refresh_rate", "dns_lookup_family", "typed_dns_resolver_config"]) expect(c, key).not.toHaveProperty(key);
    expect(c).not.toHaveProperty("cluster_type.typed_config.all_addresses_in_single_endpoint");
    expect(c).not.toHaveProperty("cluster_type.typed_config.typed_dns_resolver_config");
    expect(get(c, "load_assignment.endpoints")).toEqual([
      { lb_endpoints: [{ endpoint: { address: { socket_address: { address: "batch-driver.pr-7.svc.cluster.local", port_value: 443 } } } }] },
    ]);
  });

  it("asks DNS for the address family and refresh rate the stack config sets", () => {
    const c = withValue(withValue(minimalRaw(), "upstream.dnsLookupFamily", "V4_PREFERRED"), "upstream.dnsRefreshRate", "10s");
    const g = renderGateway(parseStackConfig(c), buildRoutingTable(parseStackConfig(c), { "pr-1": ["batch"] }), "gateway");
    for (const resource of g.documents.cds.resources as Json[]) {
      expect(get(resource, "cluster_type.typed_config.dns_lookup_family"), String(resource.name)).toBe("V4_PREFERRED");
      expect(get(resource, "cluster_type.typed_config.dns_refresh_rate"), String(resource.name)).toBe("10s");
    }
  });

  it("shares one DNS cluster type between every cluster, written once in cds.yaml", () => {
    const clusters = gateway().documents.cds.resources as Json[];
    const statics = (gateway().documents.bootstrap.static_resources as Json).clusters as Json[];
    const dnsStatics = statics.filter((c) => c.name !== "envoy-admin");
    expect(dnsStatics.map((c) => c.name)).toEqual(["ext-authz", "acme-solver"]);
    for (const c of [...clusters.slice(1), ...dnsStatics]) expect(c.cluster_type, String(c.name)).toBe(clusters[0]!.cluster_type);
    const cds = gateway().xds["cds.yaml"]!;
    expect(cds.match(/DnsCluster/g)).toHaveLength(1);
    const lines = cds.split("\n").filter((l) => l.startsWith("- "));
    expect(lines).toHaveLength(clusters.length);
    expect(lines.every((l) => /"cluster_type":\*o\d+,/.test(l))).toBe(true);
  });

  it("bounds every cluster: circuit breakers, outlier detection, buffer limits", () => {
    const c = cluster("default_batch");
    expect(get(c, "circuit_breakers.thresholds")).toEqual([{ max_connections: 1024, max_pending_requests: 1024, max_requests: 1024, track_remaining: true }]);
    expect(c.outlier_detection).toEqual({ consecutive_5xx: 5, base_ejection_time: "30s", max_ejection_percent: 50 });
    expect(c.per_connection_buffer_limit_bytes).toBe(32768);
  });

  it("verifies production upstreams against the CA with a client certificate, checking the Service name", () => {
    const tls = get(cluster("default_batch"), "transport_socket.typed_config.common_tls_context") as Json;
    expect(get(tls, "validation_context_sds_secret_config.name")).toBe("upstream-ca");
    expect((tls.tls_certificate_sds_secret_configs as Json[])[0]!.name).toBe("upstream-client-cert");
    // SNI is the Service's DNS name (the cluster's host); the certificate's SAN must match it.
    expect(get(cluster("default_batch"), "transport_socket.typed_config")).toMatchObject({ auto_host_sni: true, auto_sni_san_validation: true });
  });

  it("treats dev upstreams as the stack says: verify in prod, encrypt-only in dev", () => {
    const prodDev = get(cluster("pr-7_batch"), "transport_socket.typed_config.common_tls_context") as Json;
    expect(prodDev.validation_context_sds_secret_config).toBeDefined();
    const dev = stackConfig("dev");
    const devFiles = renderGateway(dev, buildRoutingTable(dev, { "pr-1": ["batch"] }), "gateway");
    const devCluster = (devFiles.documents.cds.resources as Json[]).find((c) => c.name === "pr-1_batch")!;
    expect(get(devCluster, "transport_socket.typed_config.common_tls_context.validation_context")).toEqual({ trust_chain_verification: "ACCEPT_UNTRUSTED" });
    expect(get(devCluster, "transport_socket.typed_config")).toMatchObject({ auto_host_sni: true });
    expect(get(devCluster, "transport_socket.typed_config.auto_sni_san_validation")).toBeUndefined();
  });

  it("names clusters <namespace>_<service>: no dots (stats tags) and no ambiguity", () => {
    const names = (gateway().documents.cds.resources as Json[]).map((c) => String(c.name));
    expect(names.every((n) => !n.includes(".") && /^[a-z0-9-]+_[a-z0-9-]+(_[a-z0-9-]+)?$/.test(n))).toBe(true);
  });
});

describe("bootstrap", () => {
  const bootstrap = () => gateway().documents.bootstrap;

  it("keeps listeners static, loads clusters and routes from the watched xDS directory", () => {
    expect(((bootstrap().static_resources as Json).listeners as Json[]).map((l) => l.name)).toEqual(["http", "https", "health", "metrics"]);
    expect(get(bootstrap(), "dynamic_resources.cds_config.path_config_source")).toEqual({ path: "/etc/envoy/xds/cds.yaml", watched_directory: { path: "/etc/envoy/xds" } });
    expect(get(hcm(listener("https")), "rds.config_source.path_config_source")).toEqual({ path: "/etc/envoy/xds/rds.yaml", watched_directory: { path: "/etc/envoy/xds" } });
    expect(bootstrap().node).toEqual({ id: "gateway", cluster: "gateway" });
  });

  it("resolves upstream names with one c-ares resolver for the gateway: the pod's DNS servers, no search-domain walk", () => {
    const cares = {
      name: "envoy.network.dns_resolver.cares",
      typed_config: { "@type": "type.googleapis.com/envoy.extensions.network.dns_resolver.cares.v3.CaresDnsResolverConfig", dns_resolver_options: { no_default_search_domain: true } },
    };
    // In the pod: no resolvers, so c-ares takes the cluster DNS from resolv.conf (a harness address must never leak in here).
    expect(bootstrap().typed_dns_resolver_config).toEqual(cares);
    // Where a DNS server is given (the Envoy harness), it replaces resolv.conf's servers and nothing else.
    const remapped = renderGateway(config(), table(), "gateway", { dnsResolver: { address: "127.0.0.1", port: 5353 } }).documents.bootstrap;
    expect(remapped.typed_dns_resolver_config).toEqual({
      ...cares,
      typed_config: { ...cares.typed_config, resolvers: [{ socket_address: { address: "127.0.0.1", port_value: 5353 } }] },
    });
  });

  it("runs ext_authz, then the local rate limit, then the router; the internal-gateway also compresses", () => {
    expect((hcm(listener("https")).http_filters as Json[]).map((f) => f.name)).toEqual([
      "envoy.filters.http.ext_authz",
      "envoy.filters.http.local_ratelimit",
      "envoy.filters.http.router",
    ]);
    expect((hcm(listener("https", internal())).http_filters as Json[]).map((f) => f.name)).toEqual([
      "envoy.filters.http.ext_authz",
      "envoy.filters.http.local_ratelimit",
      "envoy.filters.http.compressor",
      "envoy.filters.http.router",
    ]);
    const authz = (hcm(listener("https")).http_filters as Json[])[0]!.typed_config as Json;
    expect(authz).toMatchObject({ failure_mode_allow: false, status_on_error: { code: "ServiceUnavailable" } });
    expect(get(authz, "http_service.server_uri")).toMatchObject({ uri: "https://auth.default.svc.cluster.local:443", cluster: "ext-authz" });
  });

  it("turns a 401 from auth into a 302 to the login page with the original URL (substituted per request)", () => {
    const mapper = (get(hcm(listener("https")), "local_reply_config.mappers") as Json[])[0]!;
    expect(get(mapper, "filter.status_code_filter.comparison.value.default_value")).toBe(401);
    expect(mapper.status_code).toBe(302);
    expect(mapper.headers_to_add).toEqual([
      { header: { key: "location", value: "https://auth.hail.is/login?next=https://%REQ(:AUTHORITY)%%REQ(:PATH)%" }, append_action: "OVERWRITE_IF_EXISTS_OR_ADD" },
    ]);
  });

  it("escapes % in a configured login URL so Envoy does not read it as a command", () => {
    const raw = withValue(minimalRaw(), "auth", { loginUrl: "https://auth.example.org/login?from=a%20b" });
    const files = renderGateway(parseStackConfig(raw), buildRoutingTable(parseStackConfig(raw)), "gateway");
    const mapper = (get(hcm(((files.documents.bootstrap.static_resources as Json).listeners as Json[])[1]!), "local_reply_config.mappers") as Json[])[0]!;
    expect(get((mapper.headers_to_add as Json[])[0], "header.value")).toBe("https://auth.example.org/login?from=a%%20b&next=https://%REQ(:AUTHORITY)%%REQ(:PATH)%");
  });

  it("hardens the edge as Envoy's guidance lists", () => {
    const m = hcm(listener("https"));
    expect(m).toMatchObject({
      use_remote_address: true,
      normalize_path: true,
      merge_slashes: true,
      path_with_escaped_slashes_action: "UNESCAPE_AND_REDIRECT",
      common_http_protocol_options: { idle_timeout: "3600s", headers_with_underscores_action: "REJECT_REQUEST" },
      http2_protocol_options: { max_concurrent_streams: 100, initial_stream_window_size: 65536, initial_connection_window_size: 1048576 },
      max_request_headers_kb: 60,
      stream_idle_timeout: "300s",
      request_timeout: "300s",
      request_headers_timeout: "10s",
      upgrade_configs: [{ upgrade_type: "websocket" }],
    });
    expect(listener("https").per_connection_buffer_limit_bytes).toBe(32768);
    expect(get(bootstrap(), "overload_manager.resource_monitors")).toEqual([
      { name: "envoy.resource_monitors.fixed_heap", typed_config: expect.objectContaining({ max_heap_size_bytes: Math.floor(2 * 2 ** 30 * 0.8) }) },
      { name: "envoy.resource_monitors.global_downstream_max_connections", typed_config: expect.objectContaining({ max_active_downstream_connections: 50000 }) },
    ]);
  });

  it("accepts TLS 1.2+ with forward-secret AEAD ciphers only, certificate from the mounted Secret", () => {
    const tls = get(listener("https"), "filter_chains") as Json[];
    const ctx = get(tls[0], "transport_socket.typed_config.common_tls_context") as Json;
    expect(get(ctx, "tls_params.tls_minimum_protocol_version")).toBe("TLSv1_2");
    expect((get(ctx, "tls_params.cipher_suites") as string[]).every((c) => c.startsWith("ECDHE-") && /GCM|CHACHA20/.test(c))).toBe(true);
    expect(gateway().bootstrap["sds-server-cert.yaml"]).toContain('"/etc/envoy/tls/server/tls.crt"');
  });

  it("redirects plain HTTP to HTTPS but passes ACME challenges to the solver (external gateway)", () => {
    const routes = get(hcm(listener("http")), "route_config.virtual_hosts") as Json[];
    expect(routes[0]!.routes).toEqual([
      { match: { prefix: "/.well-known/acme-challenge/" }, route: { cluster: "acme-solver", timeout: "10s" } },
      { match: { prefix: "/" }, redirect: { https_redirect: true } },
    ]);
    const internalRoutes = (get(hcm(listener("http", internal())), "route_config.virtual_hosts") as Json[])[0]!.routes as Json[];
    expect(internalRoutes).toEqual([{ match: { prefix: "/" }, redirect: { https_redirect: true } }]);
  });

  it("keeps the admin interface on 127.0.0.1 and exposes only /stats/prometheus on the metrics listener", () => {
    expect(get(bootstrap(), "admin.address.socket_address.address")).toBe("127.0.0.1");
    const routes = (get(hcm(listener("metrics")), "route_config.virtual_hosts") as Json[])[0]!.routes as Json[];
    expect(routes).toEqual([
      { match: { path: "/stats/prometheus", headers: [{ name: ":method", string_match: { exact: "GET" } }] }, route: { cluster: "envoy-admin", timeout: "10s" } },
      { match: { prefix: "/" }, direct_response: { status: 404 } },
    ]);
  });
});
