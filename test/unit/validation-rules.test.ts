// The rules annotated in Envoy's API (protoc-gen-validate), as the
// validator checks them: one case per kind of rule Envoy's messages use,
// each with the path and message the user reads.
import { describe, expect, it } from "vitest";
import { decode, SharedDecoder } from "../../routing/validation/decode.js";
import { envoyApi } from "../../routing/validation/descriptors.js";
import { checkRules, uncheckedRules } from "../../routing/validation/rules.js";

function violations(type: string, json: unknown): string[] {
  const decoded = decode(type, json);
  if (!decoded.ok) throw new Error(`${type} does not decode: ${decoded.path}: ${decoded.error}`);
  return checkRules(envoyApi().registry.getMessage(type)!, decoded.message).map((v) => `${v.path}: ${v.message}`);
}

// Each case: the message type, a document, and exactly what is wrong with it.
const cases: [string, string, unknown, string[]][] = [
  [
    "string min_len, uint32 lte, enum defined_only",
    "envoy.config.core.v3.SocketAddress",
    { address: "", port_value: 70000, protocol: 7 },
    [
      "protocol: is not a defined Protocol value (got 7)",
      "address: must not be empty",
      "port_value: must be at most 65535 (got 70000)",
    ],
  ],
  [
    "string pattern",
    "envoy.config.route.v3.RouteMatch",
    { path_separated_prefix: "/a/" },
    ['path_separated_prefix: must match ^[^?#]+[^?#/]$ (got "/a/")'],
  ],
  ["string prefix", "envoy.config.route.v3.RateLimit.HitsAddend", { format: "x%" }, ['format: must start with "%"']],
  ["string suffix", "envoy.config.route.v3.RateLimit.HitsAddend", { format: "%x" }, ['format: must end with "%"']],
  ["string ignore_empty", "envoy.config.route.v3.RateLimit.HitsAddend", { format: "" }, []],
  [
    "string in",
    "envoy.config.core.v3.SchemeHeaderTransformation",
    { scheme_to_overwrite: "ftp" },
    ["scheme_to_overwrite: must be one of http, https"],
  ],
  [
    "header name and value, loose (no NUL, CR, LF)",
    "envoy.config.core.v3.HeaderValue",
    { key: "a\nb", value: "a\rb" },
    ['key: must be a valid HTTP header name (got "a\\nb")', "value: must be a valid HTTP header value"],
  ],
  ["header name, loose, allows a space", "envoy.config.core.v3.HeaderValue", { key: "a b", value: "v" }, []],
  [
    "bytes max_len",
    "envoy.config.core.v3.HeaderValue",
    { key: "k", raw_value: Buffer.alloc(16385).toString("base64") },
    ["raw_value: must be at most 16384 bytes"],
  ],
  [
    "bytes within max_len",
    "envoy.config.core.v3.HeaderValue",
    { key: "k", raw_value: Buffer.alloc(16384).toString("base64") },
    [],
  ],
  [
    "string max_bytes, and a deprecated field",
    "envoy.config.core.v3.KeyValue",
    { key: "k".repeat(16385) },
    [
      "key: is deprecated in Envoy's API (envoy.config.core.v3.KeyValue.key); use its replacement",
      "key: must be at most 16384 bytes",
    ],
  ],
  [
    "string items of a list",
    "envoy.config.route.v3.VirtualHost",
    { name: "v", domains: ["x"], request_headers_to_remove: ["ok", ""] },
    ["request_headers_to_remove[1]: must not be empty"],
  ],
  [
    "double gte and lte",
    "envoy.type.v3.Percent",
    { value: 101 },
    ["value: must be at least 0 and at most 100 (got 101)"],
  ],
  [
    "double gt",
    "envoy.config.core.v3.RateLimitSettings",
    { fill_rate: 0 },
    ["fill_rate: must be greater than 0 (got 0)"],
  ],
  [
    "double in range",
    "envoy.config.cluster.v3.Cluster.PreconnectPolicy",
    { per_upstream_preconnect_ratio: 0.5 },
    ["per_upstream_preconnect_ratio: must be at least 1 and at most 3 (got 0.5)"],
  ],
  [
    "duration gte and lt, and required",
    "envoy.config.core.v3.HttpUri",
    { uri: "x", cluster: "c", timeout: "4294967296s" },
    ["timeout: must be at least 0s and less than 4294967296s (got 4294967296s)"],
  ],
  ["duration required", "envoy.config.core.v3.HttpUri", { uri: "x", cluster: "c" }, ["timeout: is required"]],
  [
    "duration outside a range (lte below gte)",
    "envoy.config.core.v3.QuicKeepAliveSettings",
    { initial_interval: "0.0005s" },
    ["initial_interval: must be at most 0s or at least 0.001s (got 0.0005s)"],
  ],
  [
    "duration on either side of the range",
    "envoy.config.core.v3.QuicKeepAliveSettings",
    { initial_interval: "0s", max_interval: "1s" },
    [],
  ],
  [
    "enum not_in",
    "envoy.config.core.v3.HealthCheck.HttpHealthCheck",
    { path: "/", method: "CONNECT" },
    ["method: must not be CONNECT"],
  ],
  [
    "uint32 gte and lt",
    "envoy.config.route.v3.DirectResponseAction",
    { status: 99 },
    ["status: must be at least 200 and less than 600 (got 99)"],
  ],
  ["uint32 at the bounds", "envoy.config.route.v3.DirectResponseAction", { status: 200 }, []],
  ["uint32 lte", "envoy.config.core.v3.Pipe", { path: "p", mode: 512 }, ["mode: must be at most 511 (got 512)"]],
  [
    "int64 gt",
    "envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig",
    { max_active_downstream_connections: 0 },
    ["max_active_downstream_connections: must be greater than 0 (got 0)"],
  ],
  [
    "repeated min_items of one",
    "envoy.type.matcher.v3.ListStringMatcher",
    { patterns: [] },
    ["patterns: must have at least one entry"],
  ],
  [
    "repeated min_items of two",
    "envoy.type.matcher.v3.OrMatcher",
    { value_matchers: [{ null_match: {} }] },
    ["value_matchers: must have at least 2 entries"],
  ],
  [
    "repeated max_items",
    "envoy.config.route.v3.VirtualHost",
    {
      name: "v",
      domains: ["x"],
      request_headers_to_add: Array.from({ length: 1001 }, () => ({ header: { key: "a", value: "b" } })),
    },
    ["request_headers_to_add: must have at most 1000 entries"],
  ],
  [
    "repeated unique, and double items",
    "envoy.config.metrics.v3.HistogramBucketSettings",
    { match: { exact: "x" }, buckets: [1, 1, 0] },
    ["buckets: entries must be unique (1 repeats)", "buckets[2]: must be greater than 0 (got 0)"],
  ],
  [
    "uint32 items",
    "envoy.config.listener.v3.FilterChainMatch",
    { source_ports: [0, 80, 65536] },
    [
      "source_ports[0]: must be at least 1 and at most 65535 (got 0)",
      "source_ports[2]: must be at least 1 and at most 65535 (got 65536)",
    ],
  ],
  [
    "enum items",
    "envoy.config.core.v3.HealthStatusSet",
    { statuses: ["HEALTHY", 9] },
    ["statuses[1]: is not a defined HealthStatus value (got 9)"],
  ],
  [
    "map keys",
    "envoy.config.core.v3.Metadata",
    { filter_metadata: { "": {}, ok: {} } },
    ['filter_metadata[""]: key must not be empty'],
  ],
  [
    "map values",
    "envoy.service.rate_limit_quota.v3.BucketId",
    { bucket: { a: "", b: "x" } },
    ['bucket["a"]: must not be empty'],
  ],
  [
    "map min_pairs",
    "envoy.config.common.matcher.v3.Matcher.MatcherTree.MatchMap",
    { map: {} },
    ["map: needs at least 1 entries"],
  ],
  ["message required", "envoy.config.core.v3.HeaderValueOption", {}, ["header: is required"]],
  [
    "rules inside a required message",
    "envoy.config.core.v3.HeaderValueOption",
    { header: { key: "" } },
    ["header.key: must not be empty"],
  ],
  [
    "Any required",
    "envoy.config.core.v3.TypedExtensionConfig",
    { name: "" },
    ["name: must not be empty", "typed_config: is required"],
  ],
  [
    "rules inside an Any, with its type in the path",
    "envoy.config.core.v3.TypedExtensionConfig",
    { name: "x", typed_config: { "@type": "type.googleapis.com/envoy.type.v3.Percent", value: -1 } },
    ["typed_config<Percent>.value: must be at least 0 and at most 100 (got -1)"],
  ],
  [
    "a required oneof, and durations greater than zero",
    "envoy.config.core.v3.HealthCheck",
    { timeout: "0s", interval: "0s" },
    [
      "health_checker: exactly one of http_health_check, tcp_health_check, grpc_health_check, custom_health_check is required",
      "timeout: must be greater than 0s (got 0s)",
      "interval: must be greater than 0s (got 0s)",
      "unhealthy_threshold: is required",
      "healthy_threshold: is required",
    ],
  ],
  [
    "bool const",
    "envoy.config.bootstrap.v3.Bootstrap",
    { stats_flush_on_admin: false },
    ["stats_flush_on_admin: must be true"],
  ],
  ["bool const kept", "envoy.config.bootstrap.v3.Bootstrap", { stats_flush_on_admin: true }, []],
  [
    "uint32 ignore_empty: zero is not checked",
    "envoy.extensions.filters.http.ext_authz.v3.ShadowDecision",
    { status_code: 0 },
    [],
  ],
  [
    "uint32 ignore_empty: anything else is",
    "envoy.extensions.filters.http.ext_authz.v3.ShadowDecision",
    { status_code: 1 },
    ["status_code: must be at least 100 and at most 599 (got 1)"],
  ],
  [
    "deprecated enum and list of messages, set",
    "envoy.config.cluster.v3.Cluster",
    {
      name: "c",
      protocol_selection: "USE_DOWNSTREAM_PROTOCOL",
      dns_resolvers: [{ socket_address: { address: "1.1.1.1", port_value: 53 } }],
    },
    [
      "dns_resolvers: is deprecated in Envoy's API (envoy.config.cluster.v3.Cluster.dns_resolvers); use its replacement",
      "protocol_selection: is deprecated in Envoy's API (envoy.config.cluster.v3.Cluster.protocol_selection); use its replacement",
    ],
  ],
  [
    "deprecated enum at its default and an empty deprecated list: not used",
    "envoy.config.cluster.v3.Cluster",
    { name: "c", protocol_selection: "USE_CONFIGURED_PROTOCOL", dns_resolvers: [] },
    [],
  ],
  [
    "deprecated map, set",
    "envoy.service.ext_proc.v3.HttpHeaders",
    { attributes: { a: {} } },
    [
      "attributes: is deprecated in Envoy's API (envoy.service.ext_proc.v3.HttpHeaders.attributes); use its replacement",
    ],
  ],
  ["deprecated map, empty", "envoy.service.ext_proc.v3.HttpHeaders", { attributes: {} }, []],
  [
    "deprecated message (a wrapper)",
    "envoy.config.core.v3.HeaderValueOption",
    { header: { key: "k", value: "v" }, append: true },
    ["append: is deprecated in Envoy's API (envoy.config.core.v3.HeaderValueOption.append); use its replacement"],
  ],
  [
    "message skip: the message's own rules are not checked",
    "envoy.config.core.v3.KeyValueAppend",
    { entry: { key: "", value: "eA==" } },
    ["entry: is deprecated in Envoy's API (envoy.config.core.v3.KeyValueAppend.entry); use its replacement"],
  ],
  [
    "rules inside an Any in a map",
    "envoy.config.route.v3.RouteConfiguration",
    { typed_per_filter_config: { x: { "@type": "type.googleapis.com/envoy.type.v3.Percent", value: -1 } } },
    ['typed_per_filter_config["x"]<Percent>.value: must be at least 0 and at most 100 (got -1)'],
  ],
  [
    "string in, on a wrapper",
    "envoy.extensions.filters.http.mcp_json_rest_bridge.v3.ServerInfo",
    { max_supported_protocol_version: "x" },
    ["max_supported_protocol_version: must be one of 2025-11-25, 2026-07-28"],
  ],
  [
    "string in, on a wrapper, kept",
    "envoy.extensions.filters.http.mcp_json_rest_bridge.v3.ServerInfo",
    { max_supported_protocol_version: "2025-11-25" },
    [],
  ],
  [
    "float gte, on a wrapper",
    "envoy.extensions.load_balancing_policies.client_side_weighted_round_robin.v3.ClientSideWeightedRoundRobin",
    { error_utilization_penalty: -0.5 },
    ["error_utilization_penalty: must be at least 0 (got -0.5)"],
  ],
  [
    "uint64 lte, on a wrapper",
    "envoy.config.route.v3.RateLimit.HitsAddend",
    { number: 1000000001 },
    ["number: must be at most 1000000000 (got 1000000001)"],
  ],
  [
    "string in, on list items",
    "envoy.config.accesslog.v3.ResponseFlagFilter",
    { flags: ["UH", "XX"] },
    [
      "flags[1]: must be one of LH, UH, UT, LR, UR, UF, UC, UO, NR, DI, FI, RL, UAEX, RLSE, DC, URX, SI, IH, DPE, UMSDR, RFCF, NFCF, DT, UPE, NC, OM, DF, DO, DR, UDO",
    ],
  ],
  [
    "map key pattern",
    "envoy.extensions.filters.http.file_server.v3.FileServerConfig",
    { content_types: { "A B": "x", ok: "y" } },
    ["manager_config: is required", 'content_types["A B"]: key must match ^[a-z0-9_\\-]*$ (got "A B")'],
  ],
  [
    "bytes min_len",
    "envoy.config.common.matcher.v3.HttpGenericBodyMatch.GenericTextMatch",
    { binary_match: "" },
    ["binary_match: must be at least 1 bytes"],
  ],
  [
    "repeated unique strings",
    "envoy.config.route.v3.InternalRedirectPolicy",
    { response_headers_to_copy: ["a", "b", "a"] },
    ["response_headers_to_copy: entries must be unique (a repeats)"],
  ],
  [
    "repeated unique, all different",
    "envoy.config.metrics.v3.HistogramBucketSettings",
    { match: { exact: "x" }, buckets: [1, 2] },
    [],
  ],
  [
    "header value, loose, in a oneof member",
    "envoy.config.core.v3.GrpcService",
    { envoy_grpc: { cluster_name: "c", authority: "a\nb" } },
    ["envoy_grpc.authority: must be a valid HTTP header value"],
  ],
  [
    "header value, loose, allows a space",
    "envoy.config.core.v3.GrpcService",
    { envoy_grpc: { cluster_name: "c", authority: "a b" } },
    [],
  ],
  [
    "header name, strict, and ignore_empty",
    "envoy.config.core.v3.UpstreamHttpProtocolOptions",
    { override_auto_sni_header: "a b" },
    ['override_auto_sni_header: must be a valid HTTP header name (got "a b")'],
  ],
  [
    "header name, strict, a pseudo-header",
    "envoy.config.core.v3.UpstreamHttpProtocolOptions",
    { override_auto_sni_header: ":authority" },
    [],
  ],
  [
    "header value, strict",
    "envoy.config.core.v3.HealthCheck.HttpHealthCheck",
    { path: "/", host: "a\tb\u0001" },
    ["host: must be a valid HTTP header value"],
  ],
  [
    "string max_len counts characters, not UTF-16 units",
    "envoy.extensions.filters.common.jwks.v3.JwtHandshakeValidator",
    { issuer: "i", local_jwks: { inline_string: "{}" }, token_header: "😀".repeat(255) },
    [],
  ],
  [
    "string max_len",
    "envoy.extensions.filters.common.jwks.v3.JwtHandshakeValidator",
    { issuer: "i", local_jwks: { inline_string: "{}" }, token_header: "é".repeat(256) },
    ["token_header: must be at most 255 characters"],
  ],
  ["string max_bytes at the bound", "envoy.config.core.v3.KeyValuePair", { key: "k".repeat(16384) }, []],
  [
    "string max_bytes counts UTF-8 bytes",
    "envoy.config.core.v3.KeyValuePair",
    { key: "é".repeat(8193) },
    ["key: must be at most 16384 bytes"],
  ],
  ["string min_len counts characters", "envoy.config.core.v3.SocketAddress", { address: "😀", port_value: 1 }, []],
  [
    "a wrapper's rules, and a message in a list",
    "envoy.config.route.v3.VirtualHost",
    { name: "v", domains: ["x"], routes: [{ match: { prefix: "/" }, direct_response: { status: 700 } }] },
    ["routes[0].direct_response.status: must be at least 200 and less than 600 (got 700)"],
  ],
];

describe("Envoy's API rules", () => {
  it.each(cases)("%s", (_, type, json, expected) => {
    expect(violations(type, json)).toEqual(expected);
  });

  it("a message shared by two places is checked once and reported at each", () => {
    const outlier = { max_ejection_percent: 101 };
    const cluster = (name: string) => ({
      "@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
      name,
      outlier_detection: outlier,
    });
    const resources = [cluster("a"), cluster("b")];
    const decoder = new SharedDecoder(resources);
    const desc = envoyApi().registry.getMessage("envoy.config.cluster.v3.Cluster")!;
    const found = resources.map((r) => {
      const d = decoder.decodeResource(desc.typeName, r);
      if (!d.ok) throw new Error(d.error);
      return checkRules(desc, d.message, decoder.shared).map((v) => `${v.path}: ${v.message}`);
    });
    expect(found).toEqual([
      ["outlier_detection.max_ejection_percent: must be at most 100 (got 101)"],
      ["outlier_detection.max_ejection_percent: must be at most 100 (got 101)"],
    ]);
  });
});

describe("rules the validator does not check", () => {
  it("are named, inside list items and map keys and values too", () => {
    expect(
      uncheckedRules({
        string: { min_len: "1", hostname: true },
        repeated: { min_items: "1", items: { string: { uri: true }, timestamp: { required: true } } },
        map: { keys: { string: { ip: true } }, values: { uint32: { const: 1 } } },
      }),
    ).toEqual([
      "string.hostname",
      "repeated.items.string.uri",
      "repeated.items.timestamp.required",
      "map.keys.string.ip",
      "map.values.uint32.const",
    ]);
    expect(uncheckedRules({ duration: { gt: "0s", required: true }, message: { required: true } })).toEqual([]);
  });
});
