// The validator must accept what the translation generates and reject, with
// the resource and field path named, documents Envoy would refuse.
import { describe, expect, it } from "vitest";
import type { GatewayDocuments } from "../../routing/envoy/gateway.js";
import { translateGateway } from "../../routing/envoy/gateway.js";
import type { Json } from "../../routing/envoy/types.js";
import { buildRoutingTable } from "../../routing/table.js";
import { validateGateway } from "../../routing/validation/index.js";
import { minutesIntoShift, shiftedService, stackConfig } from "./fixtures.js";

const config = stackConfig("prod");
// Half way through web's shift: blue 50, green 50.
const table = buildRoutingTable(config, { "pr-1": ["batch", "batch-driver"], "pr-2": [shiftedService("web")] }, "dev namespaces", minutesIntoShift(50));

function fresh(gateway: "gateway" | "internal-gateway" = "gateway"): GatewayDocuments {
  // A deep copy: the translation shares objects between resources on purpose, a case must break only one place.
  return structuredClone(translateGateway(config, table, gateway));
}
const clusters = (d: GatewayDocuments) => d.cds.resources as Json[];
const routeConfig = (d: GatewayDocuments) => d.rds.resources[0] as Json;
const vhost = (d: GatewayDocuments, name: string) => (routeConfig(d).virtual_hosts as Json[]).find((h) => h.name === name)!;
const httpsHcm = (d: GatewayDocuments) => {
  const l = ((d.bootstrap.static_resources as Json).listeners as Json[]).find((x) => x.name === "https")!;
  return ((l.filter_chains as Json[])[0]!.filters as Json[])[0]!.typed_config as Json;
};

describe("validator", () => {
  it("accepts every generated document of both stacks and both gateways", () => {
    for (const stack of ["dev", "prod"] as const) {
      const c = stackConfig(stack);
      const t = buildRoutingTable(c, { "pr-1": ["batch", "no", "on", "y"], "pr-2": ["www"] });
      for (const g of ["gateway", "internal-gateway"] as const) expect(validateGateway(translateGateway(c, t, g)), `${stack}/${g}`).toEqual([]);
    }
  });

  // Each case breaks one thing and names where the error must point and what it must say.
  const corpus: [string, (d: GatewayDocuments) => void, RegExp][] = [
    ["unknown field in a cluster", (d) => (clusters(d)[0]!.conect_timeout = "1s"), /cds\.yaml cluster "default_www" \(resources\[0\]\): conect_timeout: unknown field/],
    ["unknown field inside a typed config", (d) => ((clusters(d)[1]!.transport_socket as Json).typed_config as Json).snii = "x", /cluster "default_auth".*transport_socket\.typed_config<UpstreamTlsContext>\.snii: unknown field/],
    ["bad enum value", (d) => (clusters(d)[0]!.lb_policy = "FASTEST"), /cluster "default_www".*cannot decode enum envoy\.config\.cluster\.v3\.Cluster\.LbPolicy from JSON: "FASTEST"/],
    ["enum number not defined", (d) => (clusters(d)[0]!.lb_policy = 42), /cluster "default_www".*lb_policy: is not a defined LbPolicy value \(got 42\)/],
    ["wrong value type", (d) => (((((clusters(d)[0]!.load_assignment as Json).endpoints as Json[])[0]!.lb_endpoints as Json[])[0]!.endpoint as Json).address = { socket_address: { address: "x", port_value: "https" } }), /cluster "default_www".*load_assignment\.endpoints\[0\]\.lb_endpoints\[0\]\.endpoint\.address\.socket_address.*port_value/],
    ["oneof set twice", (d) => (((vhost(d, "batch").routes as Json[])[0]!.match as Json).path = "/x"), /rds\.yaml route configuration "https".*virtual_hosts\[\d+\]\.routes\[0\]\.match.*oneof .*path_specifier.*set multiple times/],
    ["unknown @type", (d) => (((clusters(d)[0]!.transport_socket as Json).typed_config as Json)["@type"] = "type.googleapis.com/envoy.Nope"), /cluster "default_www".*transport_socket\.typed_config\.@type: unknown type "type\.googleapis\.com\/envoy\.Nope"/],
    ["resource of the wrong type in cds.yaml", (d) => (clusters(d)[0]!["@type"] = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"), /cds\.yaml cluster "default_www" \(resources\[0\]\): @type: must be type\.googleapis\.com\/envoy\.config\.cluster\.v3\.Cluster/],
    ["empty cluster name", (d) => (clusters(d)[0]!.name = ""), /cds\.yaml cluster "" \(resources\[0\]\): name: must not be empty/],
    ["route without a match", (d) => delete (vhost(d, "batch").routes as Json[])[0]!.match, /routes\[0\]\.match: is required/],
    ["route action without a cluster", (d) => { const a = (vhost(d, "batch").routes as Json[])[0]!.route as Json; delete a.cluster; }, /routes\[0\]\.route\.cluster_specifier: exactly one of cluster, cluster_header, weighted_clusters/],
    ["connect timeout of zero", (d) => (clusters(d)[0]!.connect_timeout = "0s"), /cluster "default_www".*connect_timeout: must be greater than 0s/],
    ["ejection percent over 100", (d) => (clusters(d)[0]!.outlier_detection = { max_ejection_percent: 150 }), /outlier_detection\.max_ejection_percent: must be at most 100 \(got 150\)/],
    ["virtual host without domains", (d) => (vhost(d, "batch").domains = []), /virtual_hosts\[\d+\]\.domains: must have at least one entry/],
    ["header name with a line break", (d) => (((routeConfig(d).request_headers_to_add as Json[])[0]!.header as Json).key = "x-real\nip"), /request_headers_to_add\[0\]\.header\.key: must be a valid HTTP header name/],
    ["deprecated field", (d) => (clusters(d)[0]!.http2_protocol_options = {}), /cluster "default_www".*http2_protocol_options: is deprecated in Envoy's API/],
    ["route to a cluster that does not exist", (d) => (((vhost(d, "batch").routes as Json[])[0]!.route as Json).cluster = "default_btach"), /route\.cluster: cluster "default_btach" does not exist/],
    ["weighted cluster that does not exist", (d) => ((((vhost(d, "dev").routes as Json[])[2]!.route as Json).weighted_clusters as Json).clusters as Json[])[1]!.name = "pr-2_web_red", /weighted_clusters\.clusters\[1\]\.name: cluster "pr-2_web_red" does not exist/],
    ["weights summing to zero", (d) => { for (const c of (((vhost(d, "dev").routes as Json[])[2]!.route as Json).weighted_clusters as Json).clusters as Json[]) c.weight = 0; }, /weighted_clusters: weights must sum to more than 0/],
    ["duplicate domain", (d) => (vhost(d, "batch").domains = ["www.hail.is"]), /domain "www\.hail\.is" is already served by virtual host "www"/],
    ["upper-case domain", (d) => (vhost(d, "batch").domains = ["Batch.hail.is"]), /domain "Batch\.hail\.is" must be lower-case/],
    ["wildcard in the middle of a domain", (d) => (vhost(d, "batch").domains = ["batch.*.is"]), /domain "batch\.\*\.is": a wildcard is allowed only/],
    ["duplicate virtual host name", (d) => (vhost(d, "batch").name = "www"), /duplicate virtual host name "www"/],
    ["duplicate cluster name", (d) => (clusters(d)[1]!.name = "default_www"), /cds\.yaml cluster "default_www".*duplicate cluster name "default_www"/],
    ["CDS cluster named like a static one", (d) => (clusters(d)[0]!.name = "ext-authz"), /duplicate cluster name "ext-authz"/],
    ["bad regular expression", (d) => ((vhost(d, "batch").routes as Json[])[0]!.match = { safe_regex: { regex: "/(unclosed" } }), /match\.safe_regex\.regex: "\/\(unclosed" is not an RE2 regular expression/],
    ["lookahead (not RE2)", (d) => ((vhost(d, "batch").routes as Json[])[0]!.match = { safe_regex: { regex: "/(?=x)" } }), /is not an RE2 regular expression/],
    ["router not the last HTTP filter", (d) => (httpsHcm(d).http_filters as Json[]).reverse(), /envoy\.yaml listener "https".*terminal filter "envoy\.filters\.http\.router" must be the last HTTP filter/],
    ["rate limit refilled every 10ms", (d) => { const rl = ((vhost(d, "batch").routes as Json[])[0]!.typed_per_filter_config as Json)["envoy.filters.http.local_ratelimit"] as Json; (rl.token_bucket as Json).fill_interval = "0.010s"; }, /token_bucket\.fill_interval: fill interval 0\.010s is shorter than the 50ms Envoy allows/],
    ["STRICT_DNS cluster without endpoints", (d) => ((clusters(d)[0]!.load_assignment as Json).endpoints = []), /cluster "default_www": load_assignment: a STRICT_DNS cluster needs at least one endpoint/],
    ["node without an id", (d) => (d.bootstrap.node = { cluster: "gateway" }), /envoy\.yaml: node: node\.id and node\.cluster must be set/],
    ["two listeners on one port", (d) => { const ls = (d.bootstrap.static_resources as Json).listeners as Json[]; ls[2]!.address = structuredClone(ls[1]!.address); }, /listener "health": address: another listener already binds 0\.0\.0\.0:8443/],
    ["xDS file outside its watched directory", (d) => (((d.bootstrap.dynamic_resources as Json).cds_config as Json).path_config_source = { path: "/etc/envoy/cds.yaml", watched_directory: { path: "/etc/envoy/xds" } }), /path \/etc\/envoy\/cds\.yaml is not inside its watched_directory \/etc\/envoy\/xds/],
    ["ext_authz pointing at a missing cluster", (d) => ((((httpsHcm(d).http_filters as Json[])[0]!.typed_config as Json).http_service as Json).server_uri as Json).cluster = "auth", /server_uri\.cluster: cluster "auth" does not exist/],
    ["DiscoveryResponse with an unknown field", (d) => (d.cds.versoin = "1"), /gateway\/cds\.yaml: versoin: unknown field/],
  ];

  it.each(corpus)("rejects %s", (_, breakIt, message) => {
    const docs = fresh();
    breakIt(docs);
    const problems = validateGateway(docs).map((p) => `${p.key}: ${p.message}`);
    expect(problems.some((p) => message.test(p)), problems.join("\n") || "no problems reported").toBe(true);
  });

  it("reports a problem in a shared part at every place it appears", () => {
    const docs = translateGateway(config, table, "gateway"); // not copied: one outlier_detection object for all clusters
    (clusters(docs)[0]!.outlier_detection as Json).max_ejection_percent = 101;
    const problems = validateGateway(docs).filter((p) => p.message.includes("max_ejection_percent"));
    expect(problems).toHaveLength(clusters(docs).length);
    expect(problems[5]!.key).toContain(`cluster "${clusters(docs)[5]!.name}"`);
  });
});
