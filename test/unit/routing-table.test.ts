// The routing table: which services the gateways route, in which order, to
// which clusters with which weights, and every way the dev/PR namespaces
// (a namespaces file, or discovery) can be wrong, each said once with where.
import { describe, expect, it } from "vitest";
import { InputError } from "../../routing/config/errors.js";
import { parseStackConfig } from "../../routing/config/load.js";
import { routingConfig, type RoutingConfig } from "../../routing/config/schema.js";
import { buildRoutingTable, tableCounts, type DevNamespaces } from "../../routing/table.js";
import { minimalRaw, minutesIntoShift, SHIFT_START, shiftedService, withValue } from "./fixtures.js";

const T = SHIFT_START.toISOString();
const config = (raw: Record<string, unknown> = minimalRaw()): RoutingConfig => routingConfig(parseStackConfig(raw));

/** Two production services, each with two versions and a shift of its own: batch moves blue->green linearly over 100 minutes, web v1->v2 atomically over 10. */
function twoShiftedServices(): RoutingConfig {
  let raw = withValue(minimalRaw(), "services", [
    { name: "batch", replicas: 2, versions: ["blue", "green"], rateLimit: 50 },
    { name: "web", replicas: 2, versions: ["v1", "v2"], websocket: true, aliases: ["example.org"] },
  ]);
  raw = withValue(raw, "shifts", [
    { service: "web", from: "v1", to: "v2", policy: "atomic", start: T, duration: "10m" },
    { service: "batch", from: "blue", to: "green", policy: "linear", start: T, duration: "100m" },
  ]);
  return config(raw);
}

/** The problems the table refuses the namespaces with: the error's lines, after its first, and the input each problem is in. */
function refused(
  dev: unknown,
  routing = config(),
  subject?: string,
): { subject: string; lines: string[]; sources: string[] } {
  try {
    buildRoutingTable(routing, dev as DevNamespaces, subject, minutesIntoShift(30));
  } catch (e) {
    expect(e).toBeInstanceOf(InputError);
    const [first, ...lines] = (e as InputError).message.split("\n");
    return {
      subject: first!,
      lines: lines.map((l) => l.replace(/^ {2}- /, "")),
      sources: (e as InputError).problems.map((p) => p.source),
    };
  }
  throw new Error("the namespaces were accepted");
}

const LABEL =
  "a DNS label (lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)";

/** What every service takes from the stack's upstream defaults unless it says otherwise. */
const UPSTREAM_DEFAULTS = {
  retries: { count: 2, resetMethods: ["GET", "HEAD", "OPTIONS", "PUT", "DELETE"] },
  routeTimeout: "300s",
};

describe("production services", () => {
  it("are routed in config order, in the stack's namespace, with their own settings", () => {
    const table = buildRoutingTable(
      config(withValue(minimalRaw(), "namespace", "apps")),
      {},
      "dev namespaces",
      minutesIntoShift(0),
    );
    expect(table.production).toEqual([
      {
        id: "apps/www",
        namespace: "apps",
        name: "www",
        versions: [{ version: "", service: "www", cluster: "apps_www", weight: 100 }],
        rateLimit: 300,
        websocket: false,
        aliases: ["example.org"],
        ...UPSTREAM_DEFAULTS,
      },
      {
        id: "apps/batch",
        namespace: "apps",
        name: "batch",
        versions: [{ version: "", service: "batch", cluster: "apps_batch", weight: 100 }],
        rateLimit: 100,
        websocket: false,
        aliases: [],
        ...UPSTREAM_DEFAULTS,
      },
      {
        id: "apps/notebook",
        namespace: "apps",
        name: "notebook",
        versions: [{ version: "", service: "notebook", cluster: "apps_notebook", weight: 100 }],
        rateLimit: undefined,
        websocket: true,
        aliases: [],
        ...UPSTREAM_DEFAULTS,
      },
    ]);
    expect(table.dev).toEqual([]);
  });

  it("move each service's traffic by its own shift only", () => {
    const at = (m: number) =>
      buildRoutingTable(twoShiftedServices(), {}, "stack config", minutesIntoShift(m)).production;
    const weights = (m: number) => at(m).map((s) => s.versions.map((v) => `${v.cluster}=${v.weight}`).join(" "));
    expect(weights(5)).toEqual(["default_batch_blue=95 default_batch_green=5", "default_web_v1=100 default_web_v2=0"]);
    expect(weights(30)).toEqual([
      "default_batch_blue=70 default_batch_green=30",
      "default_web_v1=0 default_web_v2=100",
    ]);
    const [batch, web] = at(30);
    expect(batch!.versions.map((v) => v.service)).toEqual(["batch-blue", "batch-green"]);
    expect(batch!.shift).toEqual({
      from: "blue",
      to: "green",
      policy: "linear",
      start: "2026-11-30T10:00:00.000Z",
      duration: "100m",
    });
    expect(web!.shift).toEqual({
      from: "v1",
      to: "v2",
      policy: "atomic",
      start: "2026-11-30T10:00:00.000Z",
      duration: "10m",
    });
    expect(web).toMatchObject({ rateLimit: undefined, websocket: true, aliases: ["example.org"] });
    expect(batch).toMatchObject({ rateLimit: 50, websocket: false, aliases: [] });
  });

  it("are not changed by a change to the table (the aliases are the table's own copy)", () => {
    const routing = config();
    buildRoutingTable(routing).production[0]!.aliases.push("evil.example.org");
    expect(buildRoutingTable(routing).production[0]!.aliases).toEqual(["example.org"]);
  });

  it("with several versions but no shift (config not checked by the stack config's rules) are refused, naming the service, as stack config", () => {
    const routing = { ...twoShiftedServices(), shifts: [] };
    expect(refused({}, routing)).toEqual({
      subject: "stack config: 2 problems",
      lines: [
        "envoy-gateways:services (batch): batch has 2 versions (blue, green) but no traffic shift says how to split traffic between them",
        "envoy-gateways:services (web): web has 2 versions (v1, v2) but no traffic shift says how to split traffic between them",
      ],
      sources: ["config", "config"],
    });
  });
});

describe("dev/PR services", () => {
  it("are sorted by namespace, then by name, whatever order they are listed in", () => {
    const table = buildRoutingTable(config(), { "pr-2": ["web", "batch"], "pr-10": ["ci"], "pr-1": ["web", "api"] });
    expect(table.dev.map((s) => s.id)).toEqual(["pr-1/api", "pr-1/web", "pr-10/ci", "pr-2/batch", "pr-2/web"]);
    expect(tableCounts(table)).toEqual({ production: 3, dev: 5, namespaces: 3 });
  });

  it("get one version behind the Service of their name, the dev rate limit, no aliases, and websocket only when set", () => {
    const routing = config(withValue(minimalRaw(), "devNamespaces", { rateLimit: 40 }));
    const table = buildRoutingTable(routing, {
      "pr-1": ["batch", { name: "ws", websocket: true }, { name: "plain", websocket: false }],
    });
    expect(table.dev).toEqual([
      {
        id: "pr-1/batch",
        namespace: "pr-1",
        name: "batch",
        versions: [{ version: "", service: "batch", cluster: "pr-1_batch", weight: 100 }],
        rateLimit: 40,
        websocket: false,
        aliases: [],
        ...UPSTREAM_DEFAULTS,
      },
      {
        id: "pr-1/plain",
        namespace: "pr-1",
        name: "plain",
        versions: [{ version: "", service: "plain", cluster: "pr-1_plain", weight: 100 }],
        rateLimit: 40,
        websocket: false,
        aliases: [],
        ...UPSTREAM_DEFAULTS,
      },
      {
        id: "pr-1/ws",
        namespace: "pr-1",
        name: "ws",
        versions: [{ version: "", service: "ws", cluster: "pr-1_ws", weight: 100 }],
        rateLimit: 40,
        websocket: true,
        aliases: [],
        ...UPSTREAM_DEFAULTS,
      },
    ]);
  });

  it("with one named version route to that version's Service, on a cluster without the version", () => {
    const table = buildRoutingTable(config(), {
      "pr-1": [{ name: "web", versions: [{ version: "v2", service: "web-next" }] }],
    });
    expect(table.dev[0]!.versions).toEqual([{ version: "v2", service: "web-next", cluster: "pr-1_web", weight: 100 }]);
    expect(table.dev[0]!.shift).toBeUndefined();
  });

  it("with several versions split by their shift at the instant the table is built", () => {
    const table = buildRoutingTable(
      config(),
      { "pr-9": [shiftedService("web")] },
      "dev namespaces",
      minutesIntoShift(25),
    );
    expect(table.dev[0]).toEqual({
      id: "pr-9/web",
      namespace: "pr-9",
      name: "web",
      versions: [
        { version: "blue", service: "web-blue", cluster: "pr-9_web_blue", weight: 75 },
        { version: "green", service: "web-green", cluster: "pr-9_web_green", weight: 25 },
      ],
      rateLimit: 200,
      websocket: false,
      aliases: [],
      ...UPSTREAM_DEFAULTS,
      shift: { from: "blue", to: "green", policy: "linear", start: "2026-11-30T10:00:00.000Z", duration: "100m" },
    });
  });

  it("follow the latest of several shifts that follow one another", () => {
    const web = shiftedService("web");
    web.shifts!.push({
      from: "green",
      to: "blue",
      policy: "atomic",
      start: "2026-11-30T13:00:00Z",
      duration: "1h",
      reversed: "2026-11-30T13:30:00Z",
    });
    const table = buildRoutingTable(config(), { "pr-9": [web] }, "dev namespaces", new Date("2026-11-30T13:40:00Z"));
    expect(table.dev[0]!.versions.map((v) => v.weight)).toEqual([0, 100]);
    expect(table.dev[0]!.shift).toEqual({
      from: "green",
      to: "blue",
      policy: "atomic",
      start: "2026-11-30T13:00:00.000Z",
      duration: "1h",
      reversed: "2026-11-30T13:30:00.000Z",
    });
  });
});

describe("dev/PR namespaces the table refuses", () => {
  const versions = [
    { version: "blue", service: "web-blue" },
    { version: "green", service: "web-green" },
  ];
  const shift = { from: "blue", to: "green", policy: "linear", start: T, duration: "100m" };
  // Each case: the namespaces, and the problems they give (exactly these, in this order).
  const cases: [string, unknown, string[]][] = [
    ["a namespace that is not a DNS label", { PR_1: ["batch"] }, [`PR_1: namespace must be ${LABEL} (got "PR_1")`]],
    [
      "a namespace of 64 characters",
      { ["n".repeat(64)]: ["batch"] },
      [`${"n".repeat(64)}: namespace must be ${LABEL} (got "${"n".repeat(64)}")`],
    ],
    [
      "the production namespace",
      { default: ["batch"] },
      [
        'default: is the production namespace (envoy-gateways:namespace); its services are routed as production services, not dev routes (got "default")',
      ],
    ],
    [
      "services that are not a list",
      { "pr-1": "batch" },
      ['pr-1: must be a list of services (names, or mappings with name) (got "batch")'],
    ],
    [
      "a service that is neither a name nor a mapping",
      { "pr-1": [7, null, ["x"]] },
      [
        "pr-1[0]: must be a service name, or a mapping with name (and optionally websocket, versions, shifts) (got 7)",
        "pr-1[1]: must be a service name, or a mapping with name (and optionally websocket, versions, shifts) (got null)",
        'pr-1[2]: must be a service name, or a mapping with name (and optionally websocket, versions, shifts) (got ["x"])',
      ],
    ],
    [
      "a service name that is not a DNS label",
      { "pr-1": ["Batch", { name: 5 }, { websocket: true }] },
      [
        `pr-1[0]: service name must be ${LABEL} (got "Batch")`,
        `pr-1[1]: service name must be ${LABEL} (got 5)`,
        `pr-1[2]: service name must be ${LABEL} (got nothing)`,
      ],
    ],
    [
      "a service listed twice",
      { "pr-1": ["batch", "ci", { name: "batch" }] },
      ['pr-1[2]: service batch is listed twice in namespace pr-1 (got "batch")'],
    ],
    [
      "an unknown key and a websocket that is not a boolean",
      { "pr-1": [{ name: "web", port: 80, websocket: "yes" }] },
      [
        "pr-1[0] (web).port: unknown key; allowed: name, websocket, versions, shifts (got 80)",
        'pr-1[0] (web).websocket: must be true or false (got "yes")',
      ],
    ],
    [
      "versions that are not a list, or none",
      {
        "pr-1": [
          { name: "web", versions: "blue" },
          { name: "api", versions: [] },
        ],
      },
      [
        'pr-1[0] (web).versions: must list at least one version (got "blue")',
        "pr-1[1] (api).versions: must list at least one version (got [])",
      ],
    ],
    [
      "a version that is not a mapping, with an unknown key",
      {
        "pr-1": [
          { name: "web", versions: ["blue", { version: "green", service: "web-green", weight: 50 }], shifts: [shift] },
        ],
      },
      [
        'pr-1[0] (web).versions[0]: must be a mapping with version and service (got "blue")',
        "pr-1[0] (web).versions[1].weight: unknown key; allowed: version, service (got 50)",
        'pr-1[0] (web).shifts[0].from: must be a version of web (versions: green) (got "blue")',
      ],
    ],
    [
      "a version id that is not a DNS label, or listed twice",
      {
        "pr-1": [
          {
            name: "web",
            versions: [
              { version: "Blue", service: "web-blue" },
              { version: "green", service: "web-green" },
              { version: "green", service: "web-green-2" },
              { service: "web-x" },
            ],
          },
        ],
      },
      [
        `pr-1[0] (web).versions[0].version: a version of a service with several versions must be ${LABEL} (got "Blue")`,
        'pr-1[0] (web).versions[2].version: is listed twice (got "green")',
        `pr-1[0] (web).versions[3].version: a version of a service with several versions must be ${LABEL} (got nothing)`,
      ],
    ],
    [
      "a Service name that is not a DNS label",
      {
        "pr-1": [
          { name: "web", versions: [{ version: "", service: "Web" }] },
          { name: "api", versions: [{ version: "", service: 1 }] },
        ],
      },
      [
        `pr-1[0] (web).versions[0].service: Kubernetes Service name must be ${LABEL} (got "Web")`,
        `pr-1[1] (api).versions[0].service: Kubernetes Service name must be ${LABEL} (got 1)`,
      ],
    ],
    [
      "two versions behind one Service",
      {
        "pr-1": [
          {
            name: "web",
            versions: [
              { version: "blue", service: "web" },
              { version: "green", service: "web" },
            ],
            shifts: [shift],
          },
        ],
      },
      [
        'pr-1[0] (web).versions[1].service: is the Service of another version of this service; each version has its own (got "web")',
      ],
    ],
    [
      "shifts that are not a list, or not mappings",
      {
        "pr-1": [
          { name: "web", versions, shifts: "blue->green" },
          {
            name: "api",
            versions: [
              { version: "a", service: "api-a" },
              { version: "b", service: "api-b" },
            ],
            shifts: ["a->b", null],
          },
        ],
      },
      [
        'pr-1[0] (web).shifts: must be a list of traffic shifts (from, to, policy, start, duration) (got "blue->green")',
        'pr-1[1] (api).shifts[0]: must be a mapping with from, to, policy, start and duration (got "a->b")',
        "pr-1[1] (api).shifts[1]: must be a mapping with from, to, policy, start and duration (got null)",
      ],
    ],
    [
      "a shift with an unknown key and bad values, each on its field",
      { "pr-1": [{ name: "web", versions, shifts: [{ ...shift, to: "red", policy: "canary", weight: 5 }] }] },
      [
        "pr-1[0] (web).shifts[0].weight: unknown key; allowed: from, to, policy, start, duration, reversed (got 5)",
        'pr-1[0] (web).shifts[0].to: must be a version of web (versions: blue, green) (got "red")',
        'pr-1[0] (web).shifts[0].policy: must be linear or atomic (got "canary")',
      ],
    ],
    [
      "several versions without a shift",
      { "pr-1": [{ name: "web", versions }] },
      [
        "pr-1[0] (web).versions: web has 2 versions (blue, green) but no traffic shift says how to split traffic between them",
      ],
    ],
    [
      "overlapping shifts",
      {
        "pr-1": [
          {
            name: "web",
            versions,
            shifts: [shift, { ...shift, from: "green", to: "blue", start: "2026-11-30T11:00:00Z" }],
          },
        ],
      },
      [
        "pr-1[0] (web).versions: shifts of web overlap (blue->green from 2026-11-30T10:00:00.000Z, green->blue from 2026-11-30T11:00:00.000Z); one service moves one way at a time",
      ],
    ],
    [
      "a shift of a service whose versions are not a list, said once (with the versions)",
      { "pr-1": [{ name: "web", versions: {}, shifts: [shift] }] },
      ["pr-1[0] (web).versions: must list at least one version (got {})"],
    ],
    [
      "a shift between versions whose ids are bad, said once (with the versions)",
      {
        "pr-1": [
          {
            name: "web",
            versions: [
              { version: "B", service: "web-b" },
              { version: 2, service: "web-2" },
            ],
            shifts: [{ ...shift, from: "B", to: 2 }],
          },
        ],
      },
      [
        `pr-1[0] (web).versions[0].version: a version of a service with several versions must be ${LABEL} (got "B")`,
        `pr-1[0] (web).versions[1].version: a version of a service with several versions must be ${LABEL} (got 2)`,
      ],
    ],
  ];
  it.each(cases)("%s", (_, dev, expected) => {
    const { subject, lines, sources } = refused(dev);
    expect(lines).toEqual(expected);
    expect(sources).toEqual(expected.map(() => "namespaces"));
    expect(subject).toBe(`dev namespaces: ${expected.length} problem${expected.length === 1 ? "" : "s"}`);
  });

  it("refuses a single version's Service whose upstream host is longer than DNS allows", () => {
    const namespace = "n".repeat(63);
    const service = "s".repeat(63);
    const routing = config(withValue(minimalRaw(), "clusterDomain", `${"c".repeat(63)}.${"d".repeat(58)}`));
    const host = `${service}.${namespace}.svc.${"c".repeat(63)}.${"d".repeat(58)}`;
    expect(host).toHaveLength(254);
    expect(refused({ [namespace]: [{ name: "web", versions: [{ version: "", service }] }] }, routing).lines).toEqual([
      `${namespace}[0] (web).versions[0].service: upstream host ${host} is longer than the 253 characters DNS allows (got "${service}")`,
    ]);
    // One character less fits.
    expect(
      buildRoutingTable(routing, {
        [namespace]: [{ name: "web", versions: [{ version: "", service: service.slice(1) }] }],
      }).dev,
    ).toHaveLength(1);
  });

  it("says where the namespaces came from, and lists the problems of every namespace at once", () => {
    const { subject, lines } = refused(
      { "pr-2": ["Web"], default: ["batch"], "pr-1": ["ok", "ok"] },
      config(),
      "namespaces file ns.yaml",
    );
    expect(subject).toBe("namespaces file ns.yaml: 3 problems");
    expect(lines.map((l) => l.slice(0, l.indexOf(":")))).toEqual(["default", "pr-1[1]", "pr-2[0]"]);
  });

  it("keep the other services of a namespace when one is refused: only the problem is reported", () => {
    expect(refused({ "pr-1": ["batch", "Bad", "ci"] }).lines).toEqual([
      `pr-1[1]: service name must be ${LABEL} (got "Bad")`,
    ]);
  });
});

describe("where each refused value is, for a file's line numbers", () => {
  it("gives the path of the value in the namespaces", () => {
    let error: InputError | undefined;
    try {
      buildRoutingTable(config(), {
        "pr-1": ["ok", { name: "web", versions: [{ version: "", service: "Web" }] }],
        PR: [],
      } as DevNamespaces);
    } catch (e) {
      error = e as InputError;
    }
    expect(error!.problems.map((p) => p.path)).toEqual([["PR"], ["pr-1", 1, "versions", 0, "service"]]);
  });
});

describe("the routing table, at its edges", () => {
  it("sorts many namespaces and services listed in reverse", () => {
    const dev: DevNamespaces = {};
    for (const n of [9, 8, 7, 6, 5, 4, 3, 2, 1]) dev[`pr-${n}`] = ["z", "y", "x", "w", "v", "u", "t"];
    const ids = buildRoutingTable(config(), dev).dev.map((s) => s.id);
    expect(ids).toEqual([...ids].sort());
    expect(ids.slice(0, 3)).toEqual(["pr-1/t", "pr-1/u", "pr-1/v"]);
    expect(ids.at(-1)).toBe("pr-9/z");
  });

  it("reports a refused service once, not again as listed twice", () => {
    expect(refused({ "pr-1": [{ name: "web", port: 1 }, "web"] }).lines).toEqual([
      "pr-1[0] (web).port: unknown key; allowed: name, websocket, versions, shifts (got 1)",
    ]);
  });

  it("checks a shift of a service without versions against its one unnamed version", () => {
    expect(
      refused({
        "pr-1": [{ name: "web", shifts: [{ from: "a", to: "b", policy: "linear", start: T, duration: "10m" }] }],
      }).lines,
    ).toEqual([
      'pr-1[0] (web).shifts[0].from: must be a version of web (versions: none) (got "a")',
      'pr-1[0] (web).shifts[0].to: must be a version of web (versions: none) (got "b")',
    ]);
  });

  it("says a version that is null or has no Service is wrong, once", () => {
    const shift = { from: "blue", to: "green", policy: "linear", start: T, duration: "10m" };
    expect(
      refused({ "pr-1": [{ name: "web", versions: [null, { version: "green" }], shifts: [shift] }] }).lines,
    ).toEqual([
      "pr-1[0] (web).versions[0]: must be a mapping with version and service (got null)",
      `pr-1[0] (web).versions[1].service: Kubernetes Service name must be ${LABEL} (got nothing)`,
      'pr-1[0] (web).shifts[0].from: must be a version of web (versions: green) (got "blue")',
    ]);
  });

  it("names a namespaces file's place of each problem", () => {
    let error: InputError | undefined;
    try {
      buildRoutingTable(config(), { default: ["a"], "pr-1": "a", "pr-2": ["a", "a", { name: "B" }, "C"] } as never);
    } catch (e) {
      error = e as InputError;
    }
    expect(error!.problems.map((p) => p.path)).toEqual([
      ["default"],
      ["pr-1"],
      ["pr-2", 1],
      ["pr-2", 2, "name"],
      ["pr-2", 3],
    ]);
  });

  it("says dev namespaces, not stack config, when both are wrong", () => {
    const routing = { ...twoShiftedServices(), shifts: [] };
    const { subject, lines, sources } = refused({ PR: [] }, routing);
    expect(subject).toBe("dev namespaces: 3 problems");
    expect(lines[0]).toMatch(/^envoy-gateways:services \(batch\): /);
    expect(sources).toEqual(["config", "config", "namespaces"]);
  });

  it("says dev namespaces for a namespace whose name reads like a config key: the problem's source decides, not its key", () => {
    const { subject, lines, sources } = refused({ "envoy-gateways:services": ["web"] });
    expect(subject).toBe("dev namespaces: 1 problem");
    expect(lines).toEqual([`envoy-gateways:services: namespace must be ${LABEL} (got "envoy-gateways:services")`]);
    expect(sources).toEqual(["namespaces"]);
  });
});
