// Reading stack config: as the engine passes it, from a stack file (as
// Pulumi reads it, errors naming file and line), the routes resources'
// routing config, and the messages for unknown keys, missing keys and
// secrets.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { InputError } from "../../routing/config/errors.js";
import {
  configKey,
  fromPulumiConfig,
  kubeconfigOf,
  loadStackFile,
  parseRoutingConfig,
  parseStackConfig,
  readStackFile,
  readStackFileSource,
} from "../../routing/config/load.js";
import { routingConfig } from "../../routing/config/schema.js";
import { parseYamlSource, writtenFor } from "../../routing/config/yaml-source.js";
import { locatedInFile, parseNamespaces, readNamespacesFile, readNamespacesSource } from "../../routing/namespaces.js";
import { buildRoutingTable } from "../../routing/table.js";
import { minimalRaw, withValue } from "./fixtures.js";
import { tempDir } from "./temp-dir.js";

/** The lines of the error `f` throws, after its first; and its first. */
function refusal(f: () => unknown): { subject: string; lines: string[] } {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(InputError);
    const [first, ...rest] = (e as Error).message.split("\n");
    return { subject: first!, lines: rest.map((l) => l.replace(/^ {2}- /, "")) };
  }
  throw new Error("accepted");
}
const file = (name: string, text: string) => {
  const path = join(tempDir("config-"), name);
  writeFileSync(path, text);
  return path;
};

describe("config as the engine passes it", () => {
  it("takes this project's keys only, strings as they are, everything else as JSON (a bare word stays a string)", () => {
    expect(
      fromPulumiConfig({
        "envoy-gateways:domain": "example.org",
        "envoy-gateways:namespace": "123",
        "envoy-gateways:clusterDomain": "true",
        "envoy-gateways:renderYamlToDirectory": "[1]",
        "envoy-gateways:kubeconfig": "{}",
        "envoy-gateways:envoyImage": "null",
        "envoy-gateways:internalDomain": "7",
        "envoy-gateways:skipAwait": "true",
        "envoy-gateways:gateways": '{"gateway":{"replicas":2}}',
        "envoy-gateways:services": "batch",
        "kubernetes:context": "kind",
        nocolon: "x",
      }),
    ).toEqual({
      domain: "example.org",
      namespace: "123",
      clusterDomain: "true",
      renderYamlToDirectory: "[1]",
      kubeconfig: "{}",
      envoyImage: "null",
      internalDomain: "7",
      skipAwait: true,
      gateways: { gateway: { replicas: 2 } },
      services: "batch",
    });
  });

  it("keeps a key's own colons", () => {
    expect(fromPulumiConfig({ "envoy-gateways:a:b": "1" })).toEqual({ "a:b": 1 });
  });
});

describe("the kubeconfig", () => {
  it("is text when set, and never part of the stack config", () => {
    expect(kubeconfigOf({ kubeconfig: "apiVersion: v1" })).toBe("apiVersion: v1");
    expect(kubeconfigOf({ kubeconfig: "" })).toBeUndefined();
    expect(kubeconfigOf({ kubeconfig: 7 })).toBeUndefined();
    expect(kubeconfigOf({})).toBeUndefined();
  });

  it("must be text, and its value is never shown", () => {
    for (const bad of ["", 7, { a: 1 }, ["apiVersion: v1"]]) {
      expect(refusal(() => parseStackConfig({ ...minimalRaw(), kubeconfig: bad })).lines).toEqual([
        "envoy-gateways:kubeconfig: must be kubeconfig text, set with --secret (value not shown: it is a secret)",
      ]);
    }
  });
});

describe("secrets", () => {
  it("only the kubeconfig may be one: any other key of the stack config is refused as a secret, its value hidden everywhere", () => {
    const { lines } = refusal(() =>
      parseStackConfig({ ...minimalRaw(), namespace: "Bad_NS", unknownKey: "x" }, "stack config", {
        secretKeys: new Set(["namespace", "unknownKey", "kubeconfig", "absent"]),
      }),
    );
    expect(lines).toEqual([
      "envoy-gateways:namespace: must be a DNS label: lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters (value not shown: it is a secret)",
      "envoy-gateways:unknownKey: unknown key; allowed: domain, internalDomain, clusterDomain, namespace, envoyImage, gateways, services, shifts, devNamespaces, routeSync, auth, acme, upstream, edge, tls, stats, networkPolicy, skipAwait, adoptExisting, renderYamlToDirectory (value not shown: it is a secret)",
      "envoy-gateways:namespace: is set as a secret, but it is rendered into the gateways' ConfigMaps and the stack's state in plain text like every value but the kubeconfig; set it without --secret (value not shown)",
    ]);
  });

  it("a key the stack does not set is not called a secret, even when the engine lists it as one", () => {
    const raw = { ...minimalRaw(), namespace: "gateways" };
    const config = parseStackConfig(raw, "stack config", { secretKeys: new Set(["clusterDomain", "kubeconfig"]) });
    expect(config.clusterDomain).toBe("cluster.local");
  });
});

describe("problems", () => {
  it("are those of the stack config unless told what is being read", () => {
    expect(refusal(() => parseStackConfig({ ...minimalRaw(), namespace: "Bad_NS" })).subject).toBe(
      "stack config: 1 problem",
    );
  });

  it("of keys against each other refuse a config the schema alone accepts", () => {
    const raw = withValue(minimalRaw(), "services", [
      { name: "www", replicas: 2 },
      { name: "www", replicas: 2 },
    ]);
    expect(refusal(() => parseStackConfig(raw)).lines).toEqual([
      'envoy-gateways:services[1].name: duplicates services[0].name; service names must be unique (got "www")',
    ]);
  });

  it("about no single value show none", () => {
    const big = { annotations: { big: "x".repeat(300_000) } };
    const [problem] = (() => {
      try {
        parseStackConfig(withValue(minimalRaw(), "gateways.gateway.service", big));
      } catch (e) {
        return (e as InputError).problems;
      }
      throw new Error("accepted");
    })();
    expect(problem).toEqual({
      key: "envoy-gateways:gateways.gateway.service.annotations",
      source: "config",
      message: "hold 300,003 bytes; Kubernetes allows 262,144 in all",
    });
  });
});

describe("keys", () => {
  it("are written as Pulumi's --path syntax, with the project prefix", () => {
    expect(configKey(["gateways", "gateway", "replicas"])).toBe("envoy-gateways:gateways.gateway.replicas");
    expect(configKey(["services", 2, "aliases", 0])).toBe("envoy-gateways:services[2].aliases[0]");
    expect(configKey([])).toBe("envoy-gateways:");
  });

  it("unknown are named with what is allowed where they are, and a missing one as required", () => {
    expect(
      refusal(() => parseStackConfig(withValue(minimalRaw(), "services", [{ name: "a", replicas: 1, port: 80 }])))
        .lines,
    ).toEqual([
      "envoy-gateways:services[0].port: unknown key; allowed: name, replicas, rateLimit, websocket, aliases, image, resources, versions, routeTimeout, retries, retryResetMethods, authenticateMetrics, securityHeaders (got 80)",
    ]);
    expect(
      refusal(() => parseStackConfig(withValue(minimalRaw(), "gateways.gateway.service", { typ: "x" }))).lines,
    ).toEqual([
      'envoy-gateways:gateways.gateway.service.typ: unknown key; allowed: type, loadBalancerIP, annotations, servedBy (got "x")',
    ]);
    expect(
      refusal(() => parseStackConfig(withValue(minimalRaw(), "gateways.gateway.resources.requests.gpu", "1"))).lines,
    ).toEqual(['envoy-gateways:gateways.gateway.resources.requests.gpu: unknown key; allowed: cpu, memory (got "1")']);
    expect(
      refusal(() =>
        parseStackConfig(
          withValue(minimalRaw(), "shifts", [
            { service: "x", from: "a", to: "b", policy: "linear", start: "s", duration: "1h", weight: 1 },
          ]),
        ),
      ).lines[0],
    ).toBe(
      "envoy-gateways:shifts[0].weight: unknown key; allowed: service, from, to, policy, start, duration, reversed (got 1)",
    );
    expect(refusal(() => parseStackConfig(withValue(minimalRaw(), "envoyImage", undefined))).lines).toEqual([
      "envoy-gateways:envoyImage: is required (string; see the stack config reference in README.md)",
    ]);
    expect(refusal(() => parseStackConfig(withValue(minimalRaw(), "gateways.gateway.tls", undefined))).lines).toEqual([
      "envoy-gateways:gateways.gateway.tls: is required (object; see the stack config reference in README.md)",
    ]);
  });

  it("in a mapping of strings are named with the key", () => {
    expect(
      refusal(() =>
        parseStackConfig(withValue(minimalRaw(), "gateways.gateway.service", { annotations: { a: 1, b: "x" } })),
      ).lines,
    ).toEqual(["envoy-gateways:gateways.gateway.service.annotations.a: annotation values must be strings (got 1)"]);
  });
});

describe("the routes resources' routing config", () => {
  const routing = () => routingConfig(parseStackConfig(minimalRaw()));
  it("is accepted as the program gives it, and refused key by key otherwise", () => {
    expect(parseRoutingConfig(routing())).toEqual(routing());
    expect(refusal(() => parseRoutingConfig({ ...routing(), envoyImage: "x" }))).toEqual({
      subject: "routes resource config: 1 problem",
      lines: [
        'envoy-gateways:envoyImage: unknown key; allowed: clusterDomain, namespace, gateways, services, shifts, devNamespaces, upstream, edge (got "x")',
      ],
    });
    const twice = routing();
    twice.services.push(structuredClone(twice.services[0]!));
    expect(refusal(() => parseRoutingConfig(twice)).lines).toEqual([
      `envoy-gateways:services[3].name: duplicates services[0].name; service names must be unique (got "www")`,
    ]);
    expect(refusal(() => parseRoutingConfig({ ...routing(), namespace: "Bad" }, "state")).subject).toBe(
      "state: 1 problem",
    );
  });

  it("keeps each service's own settings, and has no key for one a service leaves to the stack's default", () => {
    const raw = withValue(minimalRaw(), "services.2.retryResetMethods", ["GET", "HEAD"]);
    const config = routingConfig(parseStackConfig(raw));
    expect(config.services.map((s) => s.retryResetMethods)).toEqual([undefined, undefined, ["GET", "HEAD"]]);
    expect(config.services.map((s) => s.rateLimit)).toEqual([300, 100, undefined]);
    // As the engine stores it (JSON): the same, key for key, so the state never differs from it by an absent key.
    expect(JSON.parse(JSON.stringify(config))).toStrictEqual(config);
  });

  it("must be a mapping", () => {
    for (const bad of [null, "config", ["a"], 3]) {
      expect(refusal(() => parseRoutingConfig(bad))).toEqual({
        subject: "routes resource config: 1 problem",
        lines: [`config: must be a mapping of the routing config (got ${JSON.stringify(bad)})`],
      });
    }
  });
});

describe("a stack file", () => {
  it("is read as Pulumi reads it: this project's keys, secure values left out", () => {
    const path = file(
      "Pulumi.s.yaml",
      "config:\n  envoy-gateways:domain: example.org\n  envoy-gateways:kubeconfig:\n    secure: AAAB\n  aws:region: eu\n",
    );
    expect(readStackFile(path)).toEqual({ domain: "example.org" });
    expect(readStackFile(file("Pulumi.t.yaml", "encryptionsalt: x\n"))).toEqual({});
    expect(readStackFile(file("Pulumi.u.yaml", "config:\n"))).toEqual({});
    expect(readStackFile(file("Pulumi.v.yaml", ""))).toEqual({});
    expect(
      readStackFile(file("Pulumi.w.yaml", "config:\n  envoy-gatewaysx:domain: y\n  envoy-gateways:a:b: 1\n")),
    ).toEqual({ "a:b": 1 });
  });

  it("refuses by name, with the values' own problems, the keys that mean nothing: without a namespace, or __proto__ at any depth", () => {
    const path = file(
      "Pulumi.k.yaml",
      [
        "config:",
        "  domain: example.org",
        "  envoy-gateways: x",
        "  envoy-gateways:__proto__: { polluted: true }",
        "  envoy-gateways:domain: example.org",
        "  envoy-gateways:gateways:",
        "    gateway:",
        "      securityHeaders: { __proto__: x }",
        "",
      ].join("\n"),
    );
    expect(refusal(() => readStackFile(path)).lines).toEqual([
      `${path}:2: config.domain: has no namespace, so it means nothing (Pulumi refuses such a key): write envoy-gateways:domain`,
      `${path}:3: config.envoy-gateways: has no namespace, so it means nothing (Pulumi refuses such a key): write envoy-gateways:envoy-gateways`,
    ]);
    const { lines } = refusal(() => loadStackFile(path));
    const refused = "is refused: no setting has that name, and a key named __proto__ would set an object's prototype";
    expect(lines.filter((l) => /proto|namespace/.test(l))).toEqual([
      `${path}:4: envoy-gateways:__proto__: ${refused}`,
      `${path}:8: envoy-gateways:gateways.gateway.securityHeaders.__proto__: ${refused}`,
      `${path}:2: config.domain: has no namespace, so it means nothing (Pulumi refuses such a key): write envoy-gateways:domain`,
      `${path}:3: config.envoy-gateways: has no namespace, so it means nothing (Pulumi refuses such a key): write envoy-gateways:envoy-gateways`,
    ]);
    // From the engine: the key stays a key of the values, never their prototype.
    const raw = fromPulumiConfig({ "envoy-gateways:__proto__": '{"polluted":true}', "envoy-gateways:domain": "a.org" });
    expect(Object.getPrototypeOf(raw)).toBe(Object.prototype);
    expect(Object.keys(raw)).toEqual(["__proto__", "domain"]);
    expect(refusal(() => parseStackConfig({ ...minimalRaw(), ...raw })).lines).toEqual([
      `envoy-gateways:__proto__: ${refused}`,
    ]);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });

  it("with aliases that expand past 1,000 nodes (an alias bomb) is one problem naming the key, not a stack trace", () => {
    const laughs = ["a", "b", "c", "d", "e", "f"];
    const path = file(
      "Pulumi.bomb.yaml",
      [
        "config:",
        "  envoy-gateways:domain: example.org",
        "  envoy-gateways:lol:",
        ...laughs.map((k, i) =>
          i === 0
            ? `    ${k}: &${k} [${Array(9).fill('"lol"').join(",")}]`
            : `    ${k}: &${k} [${Array(9)
                .fill(`*${laughs[i - 1]}`)
                .join(",")}]`,
        ),
        "",
      ].join("\n"),
    );
    expect(refusal(() => readStackFile(path))).toEqual({
      subject: `stack file ${path}: 1 problem`,
      lines: [
        `${path}:8: config.envoy-gateways:lol.e.0: expands its YAML aliases past 1,000 nodes (a resource exhaustion attack?); write the values out instead`,
      ],
    });
    // A few aliases are read as Pulumi reads them.
    expect(
      readStackFile(file("Pulumi.few.yaml", "config:\n  envoy-gateways:a: &x [1, 2]\n  envoy-gateways:b: *x\n")),
    ).toEqual({
      a: [1, 2],
      b: [1, 2],
    });
  });

  it("that is not valid YAML is one problem, the first with its line, saying how many follow", () => {
    const tabbed = file(
      "Pulumi.tab.yaml",
      "config:\n  envoy-gateways:domain: x\n\tenvoy-gateways:namespace: y\n  envoy-gateways:clusterDomain: z\n",
    );
    const { subject, lines } = refusal(() => readStackFile(tabbed));
    expect(subject).toBe(`stack file ${tabbed}: 1 problem`);
    expect(lines[0]).toMatch(
      new RegExp(
        `^${tabbed}:3: is not valid YAML \\(the first of \\d+ errors; the others mostly follow from it\\): Tabs are not allowed as indentation`,
      ),
    );
    const indented = file("Pulumi.ind.yaml", "config:\n  envoy-gateways:domain: x\n   envoy-gateways:namespace: y\n");
    expect(refusal(() => readStackFile(indented)).subject).toBe(`stack file ${indented}: 1 problem`);
    // One error alone says nothing of others.
    const one = file("Pulumi.one.yaml", "config:\n  envoy-gateways:domain: x\n  envoy-gateways:domain: y\n");
    expect(refusal(() => readStackFile(one)).lines[0]).toMatch(
      new RegExp(`^${one}:3: is not valid YAML: Map keys must be unique`),
    );
  });

  it("whose config is not a mapping, that does not exist or cannot be read, is refused with its path", () => {
    const list = file("Pulumi.l.yaml", "config: [a]\n");
    expect(refusal(() => readStackFile(list))).toEqual({
      subject: `stack file ${list}: 1 problem`,
      lines: [`${list}: config: must be a mapping of config keys (got ["a"])`],
    });
    const scalar = file("Pulumi.n.yaml", "config: 3\n");
    expect(refusal(() => readStackFile(scalar)).lines).toEqual([
      `${scalar}: config: must be a mapping of config keys (got 3)`,
    ]);
    const broken = file("Pulumi.b.yaml", "config: [\n");
    expect(refusal(() => readStackFile(broken)).subject).toBe(`stack file ${broken}: 1 problem`);
    expect(refusal(() => readStackFile("/nonexistent/Pulumi.x.yaml"))).toEqual({
      subject: "stack file /nonexistent/Pulumi.x.yaml: 1 problem",
      lines: ["/nonexistent/Pulumi.x.yaml: cannot be read: no such file"],
    });
    const dir = tempDir("config-");
    expect(refusal(() => readStackFile(dir)).lines).toEqual([
      `${dir}: cannot be read: EISDIR: illegal operation on a directory, read`,
    ]);
  });

  it("names the file, the line and the value as written in each error", () => {
    const path = file(
      "Pulumi.s.yaml",
      [
        "config:",
        "  envoy-gateways:domain: Example.org",
        "  envoy-gateways:internalDomain: example.internal",
        "  envoy-gateways:envoyImage: envoyproxy/envoy:v1.40.0",
        "  envoy-gateways:gateways:",
        "    gateway: { replicas: 1e3 }",
        "",
      ].join("\n"),
    );
    const { subject, lines } = refusal(() => loadStackFile(path));
    expect(subject).toBe(`stack config ${path}: 5 problems`);
    expect(lines).toEqual([
      `${path}:2: envoy-gateways:domain: must be a lower-case DNS name such as example.org (labels of at most 63 letters, digits and '-', joined by dots, at most 253 characters) (got Example.org)`,
      `${path}:6: envoy-gateways:gateways.gateway.replicas: must be a whole number of replicas from 1 to 100 (got 1e3)`,
      "envoy-gateways:gateways.gateway.resources: is required (object; see the stack config reference in README.md)",
      "envoy-gateways:gateways.gateway.tls: is required (object; see the stack config reference in README.md)",
      "envoy-gateways:gateways.internal-gateway: is required (object; see the stack config reference in README.md)",
    ]);
  });

  it("names the line of a problem about no single value (a mapping: its first entry), and shows nothing as written", () => {
    const lines = [
      "config:",
      "  envoy-gateways:domain: example.org",
      "  envoy-gateways:internalDomain: example.org",
      "",
    ];
    const path = file("Pulumi.s.yaml", lines.join("\n"));
    const raw = { ...minimalRaw(), ...readStackFile(path) };
    const { source } = readStackFileSource(path);
    expect(refusal(() => parseStackConfig(raw, "stack config", { source })).lines).toEqual([
      `${path}:3: envoy-gateways:internalDomain: must differ from domain (got example.org)`,
    ]);
    const sized = file(
      "Pulumi.a.yaml",
      [
        "config:",
        "  envoy-gateways:gateways:",
        "    gateway:",
        "      service:",
        "        annotations:",
        `          big: ${"x".repeat(300_000)}`,
        "",
      ].join("\n"),
    );
    const withAnnotations = withValue(
      minimalRaw(),
      "gateways.gateway.service",
      (readStackFile(sized).gateways as { gateway: { service: unknown } }).gateway.service,
    );
    expect(
      refusal(() => parseStackConfig(withAnnotations, "stack config", { source: readStackFileSource(sized).source }))
        .lines,
    ).toEqual([
      `${sized}:6: envoy-gateways:gateways.gateway.service.annotations: hold 300,003 bytes; Kubernetes allows 262,144 in all`,
    ]);
  });
});

describe("a problem about a mapping's key", () => {
  it("shows the key as got, not the value written beside it: labels, annotations, header names", () => {
    const path = file(
      "Pulumi.keys.yaml",
      [
        "config:",
        "  envoy-gateways:gateways:",
        "    gateway:",
        "      service:",
        '        annotations: { "bad key!": some-value }',
        "      securityHeaders:",
        "        Bad Header: nosniff",
        "  envoy-gateways:devNamespaces:",
        "    selector: team=web",
        "",
      ].join("\n"),
    );
    const { gateways } = readStackFile(path) as { gateways: { gateway: Record<string, unknown> } };
    const raw = withValue(
      withValue(minimalRaw(), "gateways.gateway.service", gateways.gateway.service),
      "gateways.gateway.securityHeaders",
      gateways.gateway.securityHeaders,
    );
    const lines = refusal(() =>
      parseStackConfig(raw, "stack config", { source: readStackFileSource(path).source }),
    ).lines;
    expect(lines).toEqual([
      expect.stringMatching(
        new RegExp(
          `^${path}:5: envoy-gateways:gateways\\.gateway\\.service\\.annotations\\.bad key!: the annotation key must be .* \\(got "bad key!"\\)$`,
        ),
      ),
      expect.stringMatching(
        new RegExp(
          `^${path}:7: envoy-gateways:gateways\\.gateway\\.securityHeaders\\.Bad Header: is not a header name.* \\(got "Bad Header"\\)$`,
        ),
      ),
    ]);
  });
});

describe("a namespaces file", () => {
  it("maps namespaces to their services; empty is none", () => {
    expect(readNamespacesFile(file("ns.yaml", "pr-1: [batch]\n"))).toEqual({ "pr-1": ["batch"] });
    expect(readNamespacesFile(file("ns.yaml", ""))).toEqual({});
    expect(readNamespacesFile(file("ns.yaml", "~\n"))).toEqual({});
  });

  it("that is not a mapping, does not exist or is not YAML, is refused with its path", () => {
    expect(refusal(() => parseNamespaces("- pr-1\n", "ns.yaml"))).toEqual({
      subject: "namespaces file ns.yaml: 1 problem",
      lines: ['ns.yaml: must be a mapping of namespace -> list of services (got ["pr-1"])'],
    });
    expect(refusal(() => parseNamespaces("pr-1\n", "ns.yaml")).lines).toEqual([
      'ns.yaml: must be a mapping of namespace -> list of services (got "pr-1")',
    ]);
    expect(refusal(() => readNamespacesSource("/nonexistent/ns.yaml"))).toEqual({
      subject: "namespaces file /nonexistent/ns.yaml: 1 problem",
      lines: ["/nonexistent/ns.yaml: cannot be read: no such file"],
    });
    const dir = tempDir("ns-");
    expect(refusal(() => readNamespacesSource(dir)).lines).toEqual([
      `${dir}: cannot be read: EISDIR: illegal operation on a directory, read`,
    ]);
    const { subject, lines } = refusal(() => parseNamespaces("a: [\nb: 1\n", "ns.yaml"));
    expect(subject).toMatch(/^namespaces file ns\.yaml: \d+ problems?$/);
    expect(lines[0]).toMatch(/^ns\.yaml:\d+: is not valid YAML: /);
    expect(refusal(() => parseNamespaces("a: 1\na: 2\n", "ns.yaml")).lines[0]).toMatch(
      /^ns\.yaml:2: is not valid YAML: Map keys must be unique/,
    );
  });

  it("resolves anchors and merge keys, and the routing table's problems name its lines and the values as written", () => {
    const text = [
      "common: &common",
      "  - batch",
      "pr-1: *common",
      "PR-2: [batch]",
      "pr-3:",
      "  - name: web",
      "    websocket: yes please",
      "",
    ].join("\n");
    const { devNamespaces, source } = parseNamespaces(text, "ns.yaml");
    expect(devNamespaces["pr-1"]).toEqual(["batch"]);
    let error: InputError | undefined;
    try {
      buildRoutingTable(routingConfig(parseStackConfig(minimalRaw())), devNamespaces, "namespaces file ns.yaml");
    } catch (e) {
      error = locatedInFile(e as InputError, source);
    }
    expect(error!.subject).toBe("namespaces file ns.yaml");
    expect(error!.message.split("\n").slice(1)).toEqual([
      `  - ns.yaml:4: PR-2: namespace must be a DNS label (lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters) (got "PR-2")`,
      `  - ns.yaml:7: pr-3[0] (web).websocket: must be true or false (got yes please)`,
    ]);
    // A problem without a place (or a place the file does not have) is kept as it was.
    const kept = locatedInFile(
      new InputError("x", [
        { key: "a", source: "namespaces", message: "m" },
        { key: "b", source: "namespaces", message: "n", value: 1, path: ["nowhere", 3] },
      ]),
      source,
    );
    expect(kept.problems).toEqual([
      { key: "a", source: "namespaces", message: "m" },
      { key: "b", source: "namespaces", message: "n", value: 1, path: ["nowhere", 3] },
    ]);
  });
});

describe("where a value was written in a YAML file", () => {
  it("is its line, and for a scalar its text", () => {
    const source = parseYamlSource("a:\n  b: [1, 2.50]\n  c: { d: .nan }\n", "f.yaml", "file f.yaml", "config");
    expect(source.file).toBe("f.yaml");
    expect(source.value).toEqual({ a: { b: [1, 2.5], c: { d: Number.NaN } } });
    expect(source.at(["a", "b", 1])).toEqual({ line: 2, written: "2.50", value: 2.5 });
    expect(source.at(["a", "c", "d"])).toEqual({ line: 3, written: ".nan", value: Number.NaN });
    // Shown as written for a problem about that value only.
    expect(writtenFor(source.at(["a", "b", 1]), 2.5)).toBe("2.50");
    expect(writtenFor(source.at(["a", "c", "d"]), Number.NaN)).toBe(".nan");
    expect(writtenFor(source.at(["a", "b", 1]), "b")).toBeUndefined();
    expect(writtenFor(source.at(["a", "b"]), [1, 2.5])).toBeUndefined();
    expect(writtenFor(undefined, 1)).toBeUndefined();
    expect(source.at(["a", "b"])).toEqual({ line: 2 });
    expect(source.at(["a", "x"])).toBeUndefined();
  });
});
