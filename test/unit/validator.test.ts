// The validator must accept what the translation generates and reject, with
// the resource and field path named, documents Envoy would refuse. The corpus
// (test/fixtures/validator-corpus.ts) is also loaded into the real Envoy by
// test/envoy/validator.test.ts.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { create, equals, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { translateGateway } from "../../routing/envoy/gateway.js";
import type { Json } from "../../routing/envoy/types.js";
import { buildRoutingTable } from "../../routing/table.js";
import {
  checkMessage,
  checkXdsFile,
  documentProblem,
  validateGateway,
  validateXds,
  validateXdsData,
} from "../../routing/validation/index.js";
import { envoyRuleViolations, violationWhere, type GatewayView } from "../../routing/validation/envoy-rules.js";
import { explainDocumentProblems } from "../../routing/envoy/explain.js";
import type { Problem } from "../../routing/config/errors.js";
import type { GatewayDocuments } from "../../routing/envoy/gateway.js";
import { decode, SharedDecoder } from "../../routing/validation/decode.js";
import { DESCRIPTOR_FILE, envoyApi, loadEnvoyApi } from "../../routing/validation/descriptors.js";
import { tempDir } from "./temp-dir.js";
import { checkRules, compileEveryRule } from "../../routing/validation/rules.js";
import { eachTest } from "./each-test.js";
import { stackConfig } from "./fixtures.js";
import {
  ACCEPTED,
  BROKEN,
  BROKEN_BASE,
  brokenBaseDocuments,
  brokenBaseTable,
  CORPUS_NOW,
  documentFiles,
} from "../fixtures/validator-corpus.js";

describe("validator", () => {
  it.each(ACCEPTED)("accepts every generated document of both gateways: $name", ({ config, namespaces }) => {
    const c = config();
    const t = buildRoutingTable(c, namespaces, "dev namespaces", CORPUS_NOW);
    for (const g of ["gateway", "internal-gateway"] as const)
      expect(validateGateway(translateGateway(c, t, g)), g).toEqual([]);
  });

  it.each(BROKEN.map((b) => [b.name, b] as const))(
    "rejects %s, and reports nothing the break did not make wrong",
    (_, { breakIt, message, alsoReports }) => {
      const docs = brokenBaseDocuments();
      breakIt(docs);
      const problems = validateGateway(docs).map((p) => `${p.key}: ${p.message}`);
      expect(
        problems.some((p) => message.test(p)),
        problems.join("\n") || "no problems reported",
      ).toBe(true);
      expect(problems.filter((p) => !message.test(p) && !alsoReports?.test(p))).toEqual([]);
      if (alsoReports)
        expect(
          problems.some((p) => alsoReports.test(p)),
          problems.join("\n"),
        ).toBe(true);
    },
  );

  it("reports a problem in a shared part at every place it appears", () => {
    const docs = translateGateway(BROKEN_BASE.config(), brokenBaseTable(), "gateway"); // not copied: one outlier_detection object for all clusters
    const clusters = docs.cds.resources as Json[];
    const shared = clusters[0]!.outlier_detection as Json;
    shared.max_ejection_percent = 101;
    // The bootstrap's on-demand cluster shares it too.
    const statics = (docs.bootstrap.static_resources as Json).clusters as Json[];
    const sharing = statics.filter((c) => c.outlier_detection === shared);
    expect(sharing.map((c) => c.name)).toEqual(["dev-on-demand"]);
    const problems = validateGateway(docs).filter((p) => p.message.includes("max_ejection_percent"));
    expect(problems).toHaveLength(clusters.length + sharing.length);
    // The bootstrap is checked first, then cds.yaml in order.
    expect(problems[0]!.key).toContain("envoy.yaml");
    expect(problems[sharing.length + 5]!.key).toContain(`cluster "${clusters[5]!.name}"`);
  });

  /** Every problem found decoding and checking each document whole, nothing shared or cached: what validateGateway must find too. */
  function wholeDocumentProblems(docs: GatewayDocuments): string[] {
    const problems: Problem[] = [];
    const where = (file: string) => ({ gateway: docs.gateway, file });
    checkMessage("envoy.config.bootstrap.v3.Bootstrap", docs.bootstrap, where("envoy.yaml"), problems);
    for (const [file, doc] of Object.entries(docs.sds))
      checkXdsFile(doc, "envoy.extensions.transport_sockets.tls.v3.Secret", where(file), problems);
    checkXdsFile(docs.cds, "envoy.config.cluster.v3.Cluster", where("cds.yaml"), problems);
    checkXdsFile(docs.rds, "envoy.config.route.v3.RouteConfiguration", where("rds.yaml"), problems);
    const rules = envoyRuleViolations({
      bootstrap: docs.bootstrap,
      clusters: docs.cds.resources,
      routeConfigs: docs.rds.resources,
    }).map((v) => `${docs.gateway}/${violationWhere(v)}: ${v.path ? `${v.path}: ` : ""}${v.message}`);
    return [...problems.map((p) => `${p.key}: ${p.message}`), ...rules].sort();
  }

  it.each(BROKEN.map((b) => [b.name, b] as const))(
    "finds exactly what checking every document whole finds: %s",
    (_, { breakIt }) => {
      const docs = brokenBaseDocuments();
      breakIt(docs);
      expect(
        validateGateway(docs)
          .map((p) => `${p.key}: ${p.message}`)
          .sort(),
      ).toEqual(wholeDocumentProblems(docs));
    },
  );

  // Parts the translation shares between thousands of clusters and routes, broken in place (not copied): decoded and checked once, reported everywhere.
  const sharedBreaks: [string, (d: GatewayDocuments) => void][] = [
    [
      "an unknown field in the shared transport socket",
      (d) => ((((d.cds.resources[0] as Json).transport_socket as Json).typed_config as Json).snii = "x"),
    ],
    [
      "a bad value in the shared DNS cluster type",
      (d) => ((((d.cds.resources[0] as Json).cluster_type as Json).typed_config as Json).dns_refresh_rate = "0s"),
    ],
    [
      "a rule broken in the shared circuit breakers",
      (d) => ((((d.cds.resources[0] as Json).circuit_breakers as Json).thresholds as Json[])[0]!.priority = "NOPE"),
    ],
    [
      "a rule broken in the dev routes' shared rate limit",
      (d) => {
        // The dev host's: its default bucket is also each route's.
        const dev = ((d.rds.resources[0] as Json).virtual_hosts as Json[]).find((h) => h.name === "dev")!;
        (
          ((dev.typed_per_filter_config as Json)["envoy.filters.http.local_ratelimit"] as Json).token_bucket as Json
        ).tokens_per_fill = 0;
      },
    ],
    [
      "a deprecated field in the shared protocol options",
      (d) => {
        const options = ((d.cds.resources[0] as Json).typed_extension_protocol_options as Json)[
          "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
        ] as Json;
        ((options.explicit_http_config as Json).http_protocol_options as Json).use_balsa_parser = true;
      },
    ],
  ];
  it.each(sharedBreaks)("finds %s at every place it appears, as checking every document whole does", (_, breakIt) => {
    const docs = translateGateway(BROKEN_BASE.config(), brokenBaseTable(), "gateway");
    breakIt(docs);
    const found = validateGateway(docs)
      .map((p) => `${p.key}: ${p.message}`)
      .sort();
    expect(found.length).toBeGreaterThan(1);
    expect(found).toEqual(wholeDocumentProblems(docs));
  });

  it("leaves a message alone where the API says skip (validate.rules message.skip)", () => {
    // KeyValueAppend.entry is marked skip; KeyValue.key has rules of its own (and both are deprecated).
    const kv = decode("envoy.config.core.v3.KeyValue", { key: "" });
    const append = decode("envoy.config.core.v3.KeyValueAppend", { entry: { key: "" } });
    if (!kv.ok || !append.ok) throw new Error("did not decode");
    const registry = envoyApi().registry;
    expect(checkRules(registry.getMessage("envoy.config.core.v3.KeyValue")!, kv.message).map((v) => v.path)).toContain(
      "key",
    );
    expect(
      checkRules(registry.getMessage("envoy.config.core.v3.KeyValueAppend")!, append.message).map((v) => v.path),
    ).toEqual(["entry"]);
  });

  it("refuses a missing descriptor set, or one without the validate rules, naming the file and the command that builds it", () => {
    const dir = tempDir("descriptors-");
    expect(() => loadEnvoyApi(join(dir, "none.binpb"))).toThrow(
      `Envoy API descriptors not found at ${join(dir, "none.binpb")}: run \`bash scripts/build-components.sh --only envoy-api\``,
    );
    // A descriptor set of Envoy's API files alone, without protoc-gen-validate's: it lacks the rules' extensions.
    const withoutRules = create(FileDescriptorSetSchema, {
      file: [create(FileDescriptorProtoSchema, { name: "envoy/x.proto", package: "envoy.x", syntax: "proto3" })],
    });
    writeFileSync(join(dir, "no-rules.binpb"), toBinary(FileDescriptorSetSchema, withoutRules));
    expect(() => loadEnvoyApi(join(dir, "no-rules.binpb"))).toThrow(
      `Envoy API descriptors at ${join(dir, "no-rules.binpb")} lack validate.rules; rebuild them with \`bash scripts/build-components.sh --rebuild envoy-api\``,
    );
    // The installed one has them all.
    expect(loadEnvoyApi(DESCRIPTOR_FILE).fieldRules.typeName).toBe("validate.rules");
  });

  it("compiles every rule of Envoy 1.40's API, more than the older API copy had", () => {
    const compiled = compileEveryRule();
    console.log(
      `Envoy API rules compiled: ${compiled.fields} fields with rules, ${compiled.requiredOneofs} required oneofs, in ${compiled.messages} message types`,
    );
    // The descriptors built from @grpc/grpc-js-xds (about Envoy 1.31) gave 890 fields, 124 oneofs, 1,172 messages.
    expect(compiled.fields).toBeGreaterThanOrEqual(890);
    expect(compiled.requiredOneofs).toBeGreaterThanOrEqual(124);
    expect(compiled.messages).toBeGreaterThanOrEqual(1172);
  });
});

describe("the validator's problems, as the user reads them", () => {
  const table = eachTest(() => buildRoutingTable(stackConfig("prod", "per-service"), { "pr-1": ["batch"] }));
  /** A problem of the field `field` of cluster `name`, as the validator makes it. */
  const cluster = (name: string, i: number, field: string, message: string): Problem =>
    documentProblem(
      { gateway: "gateway", file: "cds.yaml", resource: { kind: "cluster", name, index: i }, field },
      `${field}: ${message}`,
    );
  it("says a problem every cluster shares once, with the count and the config key that set the field", () => {
    const names = table()
      .production.slice(0, 5)
      .map((s) => s.versions[0]!.cluster);
    const shared = names.map((n, i) => cluster(n, i, "connect_timeout", "must be greater than 0s"));
    expect(explainDocumentProblems(shared, table())).toEqual([
      {
        key: `gateway/cds.yaml cluster "${names[0]!}" (resources[0])`,
        source: "documents",
        place: {
          gateway: "gateway",
          file: "cds.yaml",
          resource: { kind: "cluster", name: names[0]!, index: 0 },
          field: "connect_timeout",
          configKey: "envoy-gateways:upstream.connectTimeout",
        },
        message: `connect_timeout: must be greater than 0s [set by envoy-gateways:upstream.connectTimeout] (the same in 4 more: ${names.slice(1, 4).join(", ")}, ...)`,
      },
    ]);
  });
  it("names the service of a problem of one cluster", () => {
    const [p] = explainDocumentProblems(
      [cluster("pr-1_batch", 30, "outlier_detection.max_ejection_percent", "must be at most 100")],
      table(),
    );
    expect(p!.message).toBe(
      "outlier_detection.max_ejection_percent: must be at most 100 [set by envoy-gateways:upstream.consecutive5xx, baseEjectionTime, maxEjectionPercent, the dev/PR service pr-1/batch]",
    );
    expect(p!.place!.configKey).toBe("envoy-gateways:upstream.consecutive5xx, baseEjectionTime, maxEjectionPercent");
  });
  it("names the on-demand routes for a problem of their shared cluster, not one service", () => {
    const onDemand = buildRoutingTable(stackConfig("prod", "on-demand"), { "pr-1": ["batch"], "pr-2": ["batch"] });
    const [p] = explainDocumentProblems(
      [cluster("dev-on-demand", 30, "outlier_detection.max_ejection_percent", "must be at most 100")],
      onDemand,
    );
    expect(p!.message).toBe(
      "outlier_detection.max_ejection_percent: must be at most 100 [set by envoy-gateways:upstream.consecutive5xx, baseEjectionTime, maxEjectionPercent, the on-demand dev/PR routes (envoy-gateways:devNamespaces.clusters)]",
    );
  });
  it("leaves a problem it cannot trace as it is", () => {
    const p = documentProblem(
      { gateway: "gateway", file: "envoy.yaml", field: "admin.address" },
      "admin.address: is required",
    );
    // Strictly: no place gains a configKey it does not have.
    expect(explainDocumentProblems([p], table())).toStrictEqual([p]);
  });
  it("says the same problem at a place that is not a resource once, without a count", () => {
    const p = documentProblem(
      { gateway: "gateway", file: "envoy.yaml", field: "admin.address" },
      "admin.address: is required",
    );
    expect(explainDocumentProblems([p, { ...p }, { ...p }], table())).toStrictEqual([p]);
  });
  it("leaves a problem with no place in the documents (one it could not decode) as it is", () => {
    const p: Problem = { key: "gateway/cds.yaml", source: "documents", message: "cannot be decoded: bad" };
    expect(explainDocumentProblems([p, { ...p }], table())).toStrictEqual([p]);
  });
  it("finds the config key from the field the validator names, never from the message's text", () => {
    // A message that reads like a config-set field, of a field that is not one: no config key.
    const [p] = explainDocumentProblems([cluster("elsewhere", 0, "lb_policy", "connect_timeout: x")], table());
    expect(p!.message).toBe("lb_policy: connect_timeout: x");
    expect(p!.place!.configKey).toBeUndefined();
  });
});

describe("the validator's entry points: what each checks and the key of each problem", () => {
  const keyed = (problems: Problem[]) => problems.map((p) => `${p.key}: ${p.message}`);
  /** The first route sent to a cluster that does not exist (its action is a copy: the translation shares actions between routes). */
  const routeNowhere = (d: GatewayDocuments) => {
    const route = (((d.rds.resources[0] as Json).virtual_hosts as Json[])[0]!.routes as Json[])[0]!;
    route.route = { ...(route.route as Json), cluster: "nowhere" };
  };
  /** The first cluster again, under the same name: a rule across resources that needs no routes. */
  const duplicateFirstCluster = (d: GatewayDocuments) =>
    d.cds.resources.push(structuredClone(d.cds.resources[0] as Json));
  const duplicate = (d: GatewayDocuments, prefix: string) =>
    `${prefix}/cds.yaml cluster "${(d.cds.resources[0] as Json).name}": name: duplicate cluster name "${(d.cds.resources[0] as Json).name}": cluster names must be unique across static clusters and CDS`;

  it("validateGateway checks each SDS file under its own name", () => {
    const docs = brokenBaseDocuments();
    const [file] = Object.keys(docs.sds);
    ((docs.sds[file!]!.resources as Json[])[0] as Json).bogus = 1;
    expect(keyed(validateGateway(docs))).toEqual([
      `gateway/${file} secret "server-cert" (resources[0]): bogus: unknown field (envoy.extensions.transport_sockets.tls.v3.Secret has no field bogus)`,
    ]);
  });

  it("validateXds checks cds.yaml, rds.yaml and the rules across them, keyed by gateway and file", () => {
    const docs = brokenBaseDocuments();
    (docs.rds.resources[0] as Json).bogus = 1;
    (docs.cds.resources[1] as Json).bogus = 2;
    routeNowhere(docs);
    duplicateFirstCluster(docs);
    const rc = `gateway/rds.yaml route configuration "https" (resources[0])`;
    const route = ((docs.rds.resources[0] as Json).virtual_hosts as Json[])[0]!;
    expect(keyed(validateXds(docs)).sort()).toEqual(
      [
        `gateway/cds.yaml cluster "${(docs.cds.resources[1] as Json).name}" (resources[1]): bogus: unknown field (envoy.config.cluster.v3.Cluster has no field bogus)`,
        duplicate(docs, "gateway"),
        `${rc}: bogus: unknown field (envoy.config.route.v3.RouteConfiguration has no field bogus)`,
        `gateway/rds.yaml route configuration "https": virtual_hosts[0](${route.name}).routes[0].route.cluster: cluster "nowhere" does not exist (Envoy would answer 503/404 at run time)`,
      ].sort(),
    );
    // Each problem's place, field by field: the gateway, the file and resource (or the place Envoy's rule names), the field.
    expect(validateXds(docs).map((p) => [p.source, p.place])).toEqual(
      expect.arrayContaining([
        [
          "documents",
          {
            gateway: "gateway",
            file: "cds.yaml",
            resource: { kind: "cluster", name: (docs.cds.resources[1] as Json).name, index: 1 },
            field: "bogus",
          },
        ],
        [
          "documents",
          {
            gateway: "gateway",
            file: "rds.yaml",
            resource: { kind: "route configuration", name: "https", index: 0 },
            field: "bogus",
          },
        ],
        [
          "documents",
          {
            gateway: "gateway",
            file: "rds.yaml",
            element: { kind: "route configuration", name: "https" },
            field: `virtual_hosts[0](${route.name}).routes[0].route.cluster`,
          },
        ],
        [
          "documents",
          {
            gateway: "gateway",
            file: "cds.yaml",
            element: { kind: "cluster", name: (docs.cds.resources[0] as Json).name },
            field: "name",
          },
        ],
      ]),
    );
  });

  describe("validateXdsData (a ConfigMap's files as written)", () => {
    const where = "ConfigMap envoy-gateways/gateway-xds";
    const data = (docs: GatewayDocuments) => {
      const files = documentFiles(docs);
      return { "cds.yaml": files["cds.yaml"]!, "rds.yaml": files["rds.yaml"]! };
    };

    it("accepts what the translation writes", () => {
      expect(validateXdsData(data(brokenBaseDocuments()), where)).toEqual([]);
    });

    it("checks each file and the rules across them, keyed by the ConfigMap", () => {
      const docs = brokenBaseDocuments();
      (docs.rds.resources[0] as Json).bogus = 1;
      routeNowhere(docs);
      duplicateFirstCluster(docs);
      const found = keyed(validateXdsData(data(docs), where));
      expect(found).toContain(
        `${where}/rds.yaml route configuration "https" (resources[0]): bogus: unknown field (envoy.config.route.v3.RouteConfiguration has no field bogus)`,
      );
      expect(found).toContain(duplicate(docs, where));
      expect(
        found.filter(
          (p) =>
            p.startsWith(`${where}/rds.yaml route configuration "https": `) &&
            p.includes(`cluster "nowhere" does not exist`),
        ),
      ).toHaveLength(1);
      expect(found).toHaveLength(3);
    });

    it.each([
      ["a list", "- 1\n", "not a mapping"],
      ["a scalar", "3\n", "not a mapping"],
      ["empty", "", "not a mapping"],
      ["broken YAML", "resources: [\n", ""],
    ])("says a file that is %s cannot be read, and still checks the other", (_, text, reason) => {
      const docs = brokenBaseDocuments();
      duplicateFirstCluster(docs);
      const found = validateXdsData({ ...data(docs), "rds.yaml": text }, where);
      expect(found[0]!.key).toBe(`${where}/rds.yaml`);
      expect(found[0]!.place).toEqual({ gateway: where, file: "rds.yaml" });
      expect(found[0]!.message).toMatch(/^cannot be read as Envoy reads it: /);
      expect(found[0]!.message).toContain(reason);
      expect(keyed(found.slice(1))).toEqual([duplicate(docs, where)]);
    });

    it("says a missing file is missing; without cds.yaml it does not call every route's cluster unknown", () => {
      const docs = brokenBaseDocuments();
      expect(validateXdsData({ "rds.yaml": data(docs)["rds.yaml"] }, where)).toEqual([
        {
          key: `${where}/cds.yaml`,
          source: "documents",
          place: { gateway: where, file: "cds.yaml" },
          message: "is missing",
        },
      ]);
      duplicateFirstCluster(docs);
      expect(keyed(validateXdsData({ "cds.yaml": data(docs)["cds.yaml"] }, where))).toEqual([
        `${where}/rds.yaml: is missing`,
        duplicate(docs, where),
      ]);
    });
  });

  it("checkXdsFile: resources must be a list of the file's type; a resource is named by its kind, name and index", () => {
    const listener = "envoy.config.listener.v3.Listener";
    const problems: Problem[] = [];
    const file = { gateway: "gateway", file: "f.yaml" };
    checkXdsFile({ resources: 3 }, listener, file, problems);
    checkXdsFile(
      {
        resources: [
          null,
          { "@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", name: "c" },
          { "@type": `type.googleapis.com/${listener}`, name: 5, bogus: 1 },
        ],
      },
      listener,
      file,
      problems,
    );
    expect(problems).toEqual([
      {
        key: "gateway/f.yaml",
        source: "documents",
        place: { ...file, field: "resources" },
        message: "resources: must be a list",
      },
      {
        key: "gateway/f.yaml resource (resources[0])",
        source: "documents",
        place: { ...file, resource: { kind: "resource", index: 0 }, field: "@type" },
        message: `@type: must be type.googleapis.com/${listener}`,
        value: undefined,
      },
      {
        key: `gateway/f.yaml resource "c" (resources[1])`,
        source: "documents",
        place: { ...file, resource: { kind: "resource", name: "c", index: 1 }, field: "@type" },
        message: `@type: must be type.googleapis.com/${listener}`,
        value: "type.googleapis.com/envoy.config.cluster.v3.Cluster",
      },
      {
        key: "gateway/f.yaml resource (resources[2])",
        source: "documents",
        place: { ...file, resource: { kind: "resource", index: 2 }, field: "bogus" },
        message: `bogus: unknown field (${listener} has no field bogus)`,
      },
    ]);
  });

  it("checkMessage: a document that is no message at all is one problem without a field path", () => {
    const problems: Problem[] = [];
    checkMessage("envoy.config.bootstrap.v3.Bootstrap", "x", { gateway: "gateway", file: "envoy.yaml" }, problems);
    expect(problems).toEqual([
      {
        key: "gateway/envoy.yaml",
        source: "documents",
        place: { gateway: "gateway", file: "envoy.yaml" },
        message: `cannot decode message envoy.config.bootstrap.v3.Bootstrap from JSON: "x"`,
      },
    ]);
  });
});

describe("the shared decoder", () => {
  // Decoding each shared part once must give what decoding every document whole gives: the same messages, field for field.
  it.each(ACCEPTED)(
    "decodes every resource of both gateways exactly as a whole decode does: $name",
    ({ config, namespaces }) => {
      const c = config();
      const t = buildRoutingTable(c, namespaces, "dev namespaces", CORPUS_NOW);
      const { registry } = envoyApi();
      for (const g of ["gateway", "internal-gateway"] as const) {
        const docs = translateGateway(c, t, g);
        const decoder = new SharedDecoder([docs.bootstrap, ...docs.cds.resources, ...docs.rds.resources]);
        const pairs: [string, Json, boolean][] = [
          ["envoy.config.bootstrap.v3.Bootstrap", docs.bootstrap, false],
          ...(docs.cds.resources as Json[]).map((r): [string, Json, boolean] => [
            "envoy.config.cluster.v3.Cluster",
            r,
            true,
          ]),
          ...(docs.rds.resources as Json[]).map((r): [string, Json, boolean] => [
            "envoy.config.route.v3.RouteConfiguration",
            r,
            true,
          ]),
        ];
        for (const [typeName, json, resource] of pairs) {
          const { "@type": _, ...body } = json;
          const whole = decode(typeName, resource ? body : json);
          const shared = resource ? decoder.decodeResource(typeName, json) : decoder.decode(typeName, json);
          if (!whole.ok || !shared.ok) throw new Error(`${g} ${typeName} ${String(json.name)} did not decode`);
          expect(
            equals(registry.getMessage(typeName)!, shared.message, whole.message),
            `${g} ${typeName} ${String(json.name)}`,
          ).toBe(true);
        }
        // Every valid document decodes on the shared path: a fallback to the whole decode would lose the sharing, and the speed.
        expect(decoder.fallbacks, g).toBe(0);
      }
    },
  );

  it("counts a part used twice as shared, and one used once as not", () => {
    const socket = {
      name: "envoy.transport_sockets.tls",
      typed_config: {
        "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
        sni: "a",
      },
    };
    const cluster = (name: string, transport_socket: Json) => ({
      "@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
      name,
      connect_timeout: "1s",
      transport_socket,
    });
    const [a, b, c] = [cluster("a", socket), cluster("b", socket), cluster("c", structuredClone(socket))];
    const decoder = new SharedDecoder([a, b, c]);
    const decoded = [a, b, c].map((r) => decoder.decodeResource("envoy.config.cluster.v3.Cluster", r));
    const sockets = decoded.map((d) =>
      d.ok ? (d.message as unknown as { transportSocket: object }).transportSocket : undefined,
    );
    expect(sockets[0]).toBe(sockets[1]);
    expect(decoder.shared.has(sockets[0]!)).toBe(true);
    expect(sockets[2]).not.toBe(sockets[0]);
    expect(decoder.shared.has(sockets[2]!)).toBe(false);
  });

  it("finds an unknown field or a oneof set twice inside a shared part, as a whole decode does", () => {
    const cluster = (name: string, part: Json) => ({
      "@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
      name,
      connect_timeout: "1s",
      ...part,
    });
    const dns = {
      name: "envoy.cluster.dns",
      typed_config: { "@type": "type.googleapis.com/envoy.extensions.clusters.dns.v3.DnsCluster" },
    };
    // An unknown field in a shared part; a shared part that sets the oneof (cluster_discovery_type) the resource's own `type` sets already.
    for (const [key, shared, own] of [
      ["circuit_breakers", { thresholdz: [] }, {}],
      ["cluster_type", dns, { type: "STATIC" }],
    ] as const) {
      const [a, b] = [cluster("a", { ...own, [key]: shared }), cluster("b", { ...own, [key]: shared })];
      const decoder = new SharedDecoder([a, b]);
      const { "@type": _, ...body } = a;
      const whole = decode("envoy.config.cluster.v3.Cluster", body);
      expect(whole.ok).toBe(false);
      expect(decoder.decodeResource("envoy.config.cluster.v3.Cluster", a)).toEqual(whole);
      expect(decoder.fallbacks).toBe(1);
    }
  });

  it("decodes each kind of shared part once: a message, a list of messages, a map of Anys", () => {
    const socket = {
      name: "envoy.transport_sockets.tls",
      typed_config: {
        "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
        sni: "a",
      },
    };
    const checks = [
      { timeout: "1s", interval: "5s", unhealthy_threshold: 1, healthy_threshold: 1, tcp_health_check: {} },
    ];
    const options = {
      "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
        "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
        explicit_http_config: { http2_protocol_options: {} },
      },
    };
    const cluster = (name: string) => ({
      "@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
      name,
      connect_timeout: "1s",
      transport_socket: socket,
      health_checks: checks,
      typed_extension_protocol_options: options,
    });
    const [a, b] = [cluster("a"), cluster("b")];
    const decoder = new SharedDecoder([a, b]);
    type Decoded = {
      transportSocket: object;
      healthChecks: object[];
      typedExtensionProtocolOptions: Record<string, object>;
    };
    const [da, db] = [a, b].map((r) => {
      const d = decoder.decodeResource("envoy.config.cluster.v3.Cluster", r);
      if (!d.ok) throw new Error(d.error);
      const { "@type": _, ...body } = r;
      const whole = decode("envoy.config.cluster.v3.Cluster", body);
      expect(
        whole.ok &&
          equals(envoyApi().registry.getMessage("envoy.config.cluster.v3.Cluster")!, d.message, whole.message),
      ).toBe(true);
      return d.message as unknown as Decoded;
    }) as [Decoded, Decoded];
    expect(decoder.fallbacks).toBe(0);
    // The same decoded value in both clusters; each message in it listed shared, so the rules check visits it once.
    expect(da.healthChecks).toBe(db.healthChecks);
    for (const part of [
      (d: Decoded) => d.transportSocket,
      (d: Decoded) => d.healthChecks[0]!,
      (d: Decoded) => d.typedExtensionProtocolOptions,
      (d: Decoded) => d.typedExtensionProtocolOptions["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]!,
    ]) {
      expect(part(da)).toBe(part(db));
      expect(decoder.shared.has(part(da))).toBe(true);
    }
  });

  it("finds a problem in a shared part of a document that is no resource (a bootstrap), as a whole decode does", () => {
    const address = { socket_address: { address: "0.0.0.0", port_value: 1, bogus: 1 } };
    const bootstrap = {
      node: { id: "a", cluster: "b" },
      admin: { address },
      static_resources: { listeners: [{ name: "l", address }] },
    };
    const decoder = new SharedDecoder([bootstrap]);
    expect(decoder.decode("envoy.config.bootstrap.v3.Bootstrap", bootstrap)).toEqual(
      decode("envoy.config.bootstrap.v3.Bootstrap", bootstrap),
    );
    expect(decoder.fallbacks).toBe(1);
  });

  it("names no type it does not know, without trying to decode it", () => {
    const decoder = new SharedDecoder([]);
    expect(decoder.decode("envoy.Nope", {})).toEqual({ ok: false, path: "", error: "unknown message type envoy.Nope" });
    expect(decoder.decodeResource("envoy.Nope", {})).toEqual({
      ok: false,
      path: "",
      error: "unknown message type envoy.Nope",
    });
    expect(decoder.fallbacks).toBe(0);
    expect(decode("envoy.Nope", {})).toEqual({ ok: false, path: "", error: "unknown message type envoy.Nope" });
  });
});

describe("where a document does not decode", () => {
  const at = (type: string, json: unknown) => {
    const d = decode(type, json);
    return d.ok ? "decodes" : `${d.path}: ${d.error}`;
  };
  it.each([
    [
      "an unknown field, named by its JSON name too",
      "envoy.config.cluster.v3.Cluster",
      { name: "c", connectTimeout: "1s", bogus: 1 },
      "bogus: unknown field (envoy.config.cluster.v3.Cluster has no field bogus)",
    ],
    [
      "inside a map of Anys, with the key and the type",
      "envoy.config.route.v3.RouteConfiguration",
      { typed_per_filter_config: { x: { "@type": "type.googleapis.com/envoy.type.v3.Percent", bogus: 1 } } },
      'typed_per_filter_config["x"]<Percent>.bogus: unknown field (envoy.type.v3.Percent has no field bogus)',
    ],
    [
      "inside a list of messages",
      "envoy.config.route.v3.RouteConfiguration",
      {
        virtual_hosts: [
          { name: "a", domains: ["a"] },
          { name: "b", domainz: [] },
        ],
      },
      "virtual_hosts[1].domainz: unknown field (envoy.config.route.v3.VirtualHost has no field domainz)",
    ],
    [
      "an Any that is no mapping",
      "envoy.config.core.v3.TypedExtensionConfig",
      { name: "x", typed_config: "y" },
      "typed_config: must be an object with @type",
    ],
    [
      "an Any of an unknown type",
      "envoy.config.core.v3.TypedExtensionConfig",
      { name: "x", typed_config: { "@type": "type.googleapis.com/nope.Nope" } },
      'typed_config.@type: unknown type "type.googleapis.com/nope.Nope" (not a message of Envoy\'s API)',
    ],
    [
      "an Any of a well-known type that does not decode: at the Any",
      "envoy.config.core.v3.TypedExtensionConfig",
      { name: "x", typed_config: { "@type": "type.googleapis.com/google.protobuf.Duration", value: "x" } },
      "typed_config: ",
    ],
    [
      "a well-known type that does not decode: at its field",
      "envoy.config.cluster.v3.Cluster",
      { name: "c", connect_timeout: "soon" },
      "connect_timeout: ",
    ],
    [
      "a message that is no mapping: at its field",
      "envoy.config.cluster.v3.Cluster",
      { name: "c", load_assignment: [] },
      "load_assignment: ",
    ],
    ["a null field is no error", "envoy.config.cluster.v3.Cluster", { name: "c", load_assignment: null }, "decodes"],
    [
      "a null in a map of Anys",
      "envoy.config.route.v3.RouteConfiguration",
      { typed_per_filter_config: { x: null } },
      'typed_per_filter_config["x"]: must be an object with @type',
    ],
    [
      "a null in a list of messages: at the entry",
      "envoy.config.route.v3.RouteConfiguration",
      { virtual_hosts: [null] },
      "virtual_hosts[0]: ",
    ],
  ])("%s", (_, type, json, expected) => {
    const found = at(type, json);
    if (expected.endsWith(": ")) expect(found.startsWith(expected), found).toBe(true);
    else expect(found).toBe(expected);
  });
});

describe("Envoy's load-time rules, each on a small view", () => {
  const found = (view: Partial<GatewayView>) =>
    envoyRuleViolations({ clusters: [], routeConfigs: [], ...view }).map(
      (v) => `${violationWhere(v)}: ${v.path}: ${v.message}`,
    );
  const node = { id: "gateway", cluster: "gateway" };
  const listener = (name: string, port: number, filters: Json[] = []) => ({
    name,
    address: { socket_address: { address: "0.0.0.0", port_value: port } },
    filter_chains: [{ filters }],
  });
  const bootstrap = (more: Json) => ({ node, ...more });
  const HCM = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager";
  const ROUTER = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router";
  const hcm = (more: Json) => ({ name: "hcm", typed_config: { "@type": HCM, ...more } });
  const filter = (name: string, type = "type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors") => ({
    name,
    typed_config: { "@type": type },
  });
  const HTTP = "filter_chains[0].filters[0].typed_config.http_filters";
  const LIMIT = "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit";

  it("listeners: unique names and addresses; a node with an id and a cluster", () => {
    expect(
      found({
        bootstrap: {
          node: { id: "a" },
          static_resources: { listeners: [listener("a", 1), listener("a", 2), listener("b", 2)] },
        },
      }),
    ).toEqual([
      "envoy.yaml: node: node.id and node.cluster must be set when xDS is used",
      'envoy.yaml listener "a": name: duplicate listener name',
      'envoy.yaml listener "b": address: another listener already binds 0.0.0.0:2',
    ]);
  });

  it("HTTP filters: at least the router, the router last, each name once; other network filters are not looked into", () => {
    expect(
      found({
        bootstrap: bootstrap({ static_resources: { listeners: [listener("l", 1, [hcm({ http_filters: [] })])] } }),
      }),
    ).toEqual([`envoy.yaml listener "l": ${HTTP}: an HTTP connection manager needs at least the router filter`]);
    const filters = [filter("x", ROUTER), filter("x")];
    expect(
      found({
        bootstrap: bootstrap({
          static_resources: {
            listeners: [
              listener("l", 1, [
                {
                  name: "tcp",
                  typed_config: {
                    "@type": "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy",
                  },
                },
                hcm({ http_filters: filters }),
              ]),
            ],
          },
        }),
      }),
    ).toEqual([
      `envoy.yaml listener "l": filter_chains[0].filters[1].typed_config.http_filters[0]: terminal filter "x" must be the last HTTP filter`,
      `envoy.yaml listener "l": filter_chains[0].filters[1].typed_config.http_filters[1]: the last HTTP filter must be the router (terminal), not "x"`,
      `envoy.yaml listener "l": filter_chains[0].filters[1].typed_config.http_filters[1]: duplicate HTTP filter name "x"`,
    ]);
  });

  it("an inline route configuration is checked like one from RDS", () => {
    const inline = hcm({
      http_filters: [filter("router", ROUTER)],
      route_config: { name: "r", virtual_hosts: [{ name: "v", domains: ["A.example.org"] }] },
    });
    expect(found({ bootstrap: bootstrap({ static_resources: { listeners: [listener("l", 1, [inline])] } }) })).toEqual([
      'envoy.yaml listener "l" inline route configuration: virtual_hosts[0](v).domains[0]: domain "A.example.org" must be lower-case',
    ]);
  });

  it("each violation names its file and element as fields, which its text is made from", () => {
    const inline = hcm({
      http_filters: [filter("router", ROUTER)],
      route_config: { name: "r", virtual_hosts: [{ name: "v", domains: ["A.example.org"] }] },
    });
    const violations = envoyRuleViolations({
      bootstrap: bootstrap({ static_resources: { listeners: [listener("l", 1, [inline]), listener("l", 2)] } }),
      clusters: [{ name: "c", type: "STATIC" }],
      routeConfigs: [{ name: "https", virtual_hosts: [{ name: "v", domains: ["B.example.org"] }] }],
    });
    expect(violations.map(({ file, element, path }) => ({ file, element, path }))).toEqual([
      {
        file: "envoy.yaml",
        element: { kind: "listener", name: "l", part: "inline route configuration" },
        path: "virtual_hosts[0](v).domains[0]",
      },
      { file: "envoy.yaml", element: { kind: "listener", name: "l" }, path: "name" },
      {
        file: "rds.yaml",
        element: { kind: "route configuration", name: "https" },
        path: "virtual_hosts[0](v).domains[0]",
      },
      // A cluster's endpoints are checked for static and CDS clusters alike: the rule does not tell the file.
      { element: { kind: "cluster", name: "c" }, path: "load_assignment" },
    ]);
    expect(violations.map(violationWhere)).toEqual([
      'envoy.yaml listener "l" inline route configuration',
      'envoy.yaml listener "l"',
      'rds.yaml route configuration "https"',
      'cluster "c"',
    ]);
  });

  it("weighted clusters: each named (or by a header) and weighted", () => {
    const route = {
      match: { prefix: "/" },
      route: { weighted_clusters: { clusters: [{ weight: 1 }, { name: "c" }, { cluster_header: "x-c", weight: 1 }] } },
    };
    expect(
      found({
        clusters: [{ name: "c" }],
        routeConfigs: [{ name: "r", virtual_hosts: [{ name: "v", domains: ["a"], routes: [route] }] }],
      }),
    ).toEqual([
      'rds.yaml route configuration "r": virtual_hosts[0](v).routes[0].route.weighted_clusters.clusters[0]: a weighted cluster needs a name',
      'rds.yaml route configuration "r": virtual_hosts[0](v).routes[0].route.weighted_clusters.clusters[1].weight: a weighted cluster needs a weight',
    ]);
  });

  it("domains: a wildcard as the whole domain, a prefix or a suffix only", () => {
    const hosts = (domains: string[]) =>
      found({ routeConfigs: [{ name: "r", virtual_hosts: [{ name: "v", domains }] }] });
    expect(hosts(["*", "*.example.org", "example.*"])).toEqual([]);
    expect(hosts(["a.*.org", "**"]).map((p) => p.replace(/: a wildcard.*/, ""))).toEqual([
      'rds.yaml route configuration "r": virtual_hosts[0](v).domains[0]: domain "a.*.org"',
      'rds.yaml route configuration "r": virtual_hosts[0](v).domains[1]: domain "**"',
    ]);
  });

  it("the local cluster, when named, is a static cluster", () => {
    expect(found({ bootstrap: bootstrap({ cluster_manager: { local_cluster_name: "" } }) })).toEqual([]);
    expect(found({ bootstrap: bootstrap({ cluster_manager: {} }) })).toEqual([]);
    expect(
      found({
        bootstrap: bootstrap({
          cluster_manager: { local_cluster_name: "pods" },
          static_resources: {
            clusters: [{ name: "pods", type: "STATIC", load_assignment: { endpoints: [{ lb_endpoints: [{}] }] } }],
          },
        }),
      }),
    ).toEqual([]);
  });

  it("endpoints: a logical DNS cluster has exactly one; a static or strict DNS cluster at least one; others are not looked at", () => {
    const cluster = (name: string, more: Json, endpoints: number[]) => ({
      name,
      ...more,
      load_assignment: { endpoints: endpoints.map((n) => ({ lb_endpoints: Array.from({ length: n }, () => ({})) })) },
    });
    const dnsExtension = (all: boolean) => ({
      cluster_type: {
        name: "envoy.cluster.dns",
        typed_config: {
          "@type": "type.googleapis.com/envoy.extensions.clusters.dns.v3.DnsCluster",
          all_addresses_in_single_endpoint: all,
        },
      },
    });
    expect(
      found({
        clusters: [
          cluster("l1", { type: "LOGICAL_DNS" }, [1]),
          cluster("l2", { type: "LOGICAL_DNS" }, [2]),
          cluster("l3", dnsExtension(true), [1, 1]),
          cluster("s", { type: "STATIC" }, []),
          cluster("d", { type: "STRICT_DNS" }, [0]),
          cluster("x", dnsExtension(false), []),
          cluster("e", { type: "EDS" }, []),
        ],
      }),
    ).toEqual([
      'cluster "l2": load_assignment: a logical DNS cluster needs exactly one locality with exactly one endpoint (got 2 endpoints in 1 localities)',
      'cluster "l3": load_assignment: a logical DNS cluster needs exactly one locality with exactly one endpoint (got 2 endpoints in 2 localities)',
      'cluster "s": load_assignment: a static cluster needs at least one endpoint (without one it can never serve a request)',
      'cluster "d": load_assignment: a strict DNS cluster needs at least one endpoint (without one it can never serve a request)',
      'cluster "x": load_assignment: a strict DNS cluster needs at least one endpoint (without one it can never serve a request)',
    ]);
  });

  it("an xDS file lies inside its watched directory (given with or without a trailing slash)", () => {
    const source = (path: string, dir: string) => ({ path_config_source: { path, watched_directory: { path: dir } } });
    expect(
      found({
        bootstrap: bootstrap({
          dynamic_resources: {
            cds_config: source("/etc/envoy/xds/cds.yaml", "/etc/envoy/xds/"),
            lds_config: source("/etc/envoy/xds/lds.yaml", "/etc/envoy/xds"),
          },
        }),
      }),
    ).toEqual([]);
    expect(
      found({
        bootstrap: bootstrap({
          dynamic_resources: { cds_config: source("/etc/envoy/xdsx/cds.yaml", "/etc/envoy/xds") },
        }),
      }),
    ).toEqual([
      "envoy.yaml: dynamic_resources.cds_config.path_config_source: path /etc/envoy/xdsx/cds.yaml is not inside its watched_directory /etc/envoy/xds",
    ]);
  });

  it("every regular expression compiles as RE2, named by its document and path", () => {
    const bad = { safe_regex: { regex: "(" } };
    expect(
      found({
        bootstrap: bootstrap({ a: [bad] }),
        clusters: [{ name: "c", b: bad }],
        routeConfigs: [{ name: "r", c: { d: bad } }],
      }).map((p) => p.replace(/ is not an RE2 regular expression: .*/, "")),
    ).toEqual([
      'envoy.yaml: a[0].safe_regex.regex: "("',
      'cds.yaml cluster "c": b.safe_regex.regex: "("',
      'rds.yaml route configuration "r": c.d.safe_regex.regex: "("',
    ]);
  });

  it("local rate limits: refilled every 50ms or slower; shared across pods only with a local cluster, and not per connection", () => {
    const limit = (fill: string, more: Json = {}) => ({
      "@type": LIMIT,
      token_bucket: { fill_interval: fill },
      ...more,
    });
    const rc = (limits: Json[]) => ({ name: "r", limits });
    expect(
      found({ routeConfigs: [rc([limit("0.05s"), limit("1.5s"), limit("60s", { local_cluster_rate_limit: null })])] }),
    ).toEqual([]);
    expect(
      found({
        routeConfigs: [
          rc([
            limit("0.049s"),
            limit("1s", { local_cluster_rate_limit: {}, local_rate_limit_per_downstream_connection: true }),
          ]),
        ],
      }),
    ).toEqual([
      'rds.yaml route configuration "r": limits[0].token_bucket.fill_interval: fill interval 0.049s is shorter than the 50ms Envoy allows',
      `rds.yaml route configuration "r": limits[1].local_rate_limit_per_downstream_connection: cannot be true together with local_cluster_rate_limit: a per-connection bucket is never shared across the gateway's pods`,
    ]);
    expect(found({ bootstrap: bootstrap({ x: limit("1s", { local_cluster_rate_limit: {} }) }) })).toEqual([
      "envoy.yaml: x.local_cluster_rate_limit: shares the limit across the gateway's pods, which needs the bootstrap's local cluster (cluster_manager.local_cluster_name); Envoy would refuse every route",
    ]);
  });
});
