// The xDS files as Envoy reads them: same content as the documents, every
// string quoted, shared parts written once, the ConfigMap limit enforced.
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { InputError } from "../../routing/config/errors.js";
import { translateGateway } from "../../routing/envoy/gateway.js";
import { parseEnvoyYaml, toXdsYaml } from "../../routing/envoy/xds.js";
import { configMapBytes, CONFIGMAP_LIMIT_BYTES, renderGateway } from "../../routing/render.js";
import { buildRoutingTable } from "../../routing/table.js";
import { FIFTY_NAMESPACES_AT, fiftyNamespaces, syntheticNamespaces } from "../fixtures/namespaces.js";
import { eachTest } from "./each-test.js";
import { stackConfig } from "./fixtures.js";

// A cluster per dev/PR Service: the most each namespace adds to the files.
const config = eachTest(() => stackConfig("prod", "per-service"));

describe("xDS files", () => {
  it("read back (anchors expanded, !ignore dropped) exactly as the documents", () => {
    const docs = translateGateway(
      config(),
      buildRoutingTable(config(), fiftyNamespaces(), "dev namespaces", FIFTY_NAMESPACES_AT),
      "gateway",
    );
    for (const doc of [docs.cds, docs.rds])
      expect(parseEnvoyYaml(toXdsYaml(doc))).toEqual(JSON.parse(JSON.stringify(doc)));
  });

  it("quote every string, so names like no, on and y stay strings under YAML 1.1 rules (as Envoy reads them)", () => {
    const docs = translateGateway(config(), buildRoutingTable(config(), { no: ["on", "y"], off: ["yes"] }), "gateway");
    for (const doc of [docs.cds, docs.rds]) {
      const text = toXdsYaml(doc);
      const yaml11 = parse(text.replace(/^!ignore anchors:/m, "anchors:"), {
        version: "1.1",
        maxAliasCount: -1,
      }) as Record<string, unknown>;
      delete yaml11.anchors;
      expect(yaml11).toEqual(JSON.parse(JSON.stringify(doc)));
    }
  });

  it("write each shared part once and refer to it from every cluster", () => {
    const docs = translateGateway(config(), buildRoutingTable(config(), syntheticNamespaces(200)), "gateway");
    const text = toXdsYaml(docs.cds);
    expect(text.match(/"tls_certificate_sds_secret_configs"/g)).toHaveLength(1);
    const clusterLines = text.split("\n").filter((l) => l.startsWith("- "));
    expect(clusterLines).toHaveLength(docs.cds.resources.length);
    expect(clusterLines.every((l) => /"transport_socket":\*o\d+,/.test(l))).toBe(true);
  });

  it("put each route on its own line", () => {
    const docs = translateGateway(config(), buildRoutingTable(config(), { "pr-1": ["batch", "ci"] }), "gateway");
    const lines = toXdsYaml(docs.rds).split("\n");
    expect(lines.filter((l) => l.includes('"path_separated_prefix":"/pr-1/batch"'))).toHaveLength(1);
    expect(lines.filter((l) => l.includes('"path_separated_prefix":"/pr-1/'))).toHaveLength(2);
  });

  it("carry 1,500 dev routes on one gateway within one ConfigMap", () => {
    const files = renderGateway(config(), buildRoutingTable(config(), syntheticNamespaces(1500)), "gateway");
    expect(configMapBytes(files.xds)).toBeLessThanOrEqual(CONFIGMAP_LIMIT_BYTES);
  });

  it("refuse a table that would not fit, with the counts, before anything is written", () => {
    const table = buildRoutingTable(config(), syntheticNamespaces(1800));
    let error: unknown;
    try {
      renderGateway(config(), table, "gateway");
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InputError);
    expect((error as Error).message).toMatch(
      /gateway\/xDS ConfigMap: would hold [\d,]+ bytes \(cds\.yaml [\d,]+ \+ rds\.yaml [\d,]+\) for 1,822 routed services \(22 production, 1,800 dev in 450 namespaces\), over the 1,048,576 bytes Kubernetes allows in a ConfigMap/,
    );
  });

  it("version the content: same table, same version_info; one more route, a new one", () => {
    const a = translateGateway(config(), buildRoutingTable(config(), { "pr-1": ["batch"] }), "gateway");
    const b = translateGateway(config(), buildRoutingTable(config(), { "pr-1": ["batch"] }), "gateway");
    const c = translateGateway(config(), buildRoutingTable(config(), { "pr-1": ["batch", "ci"] }), "gateway");
    expect(a.cds.version_info).toBe(b.cds.version_info);
    expect(a.cds.version_info).not.toBe(c.cds.version_info);
  });
});
