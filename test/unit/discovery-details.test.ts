// Discovery's finer points: which namespaces and Services count, how the
// versions of one logical service are put together, and every way their
// labels and shift annotations can be wrong, each with its exact message.
import { describe, expect, it } from "vitest";
import {
  discoverRoutes,
  labelProblems,
  ROUTED_SERVICE_SELECTOR,
  routedNamespaces,
  type NamespaceObject,
  type ServiceObject,
} from "../../routing/discovery.js";
import { routingLabels } from "../../routing/labels.js";
import type { DevServiceFacts } from "../../routing/table.js";

const ns = (name?: string, extra: Partial<NamespaceObject> = {}): NamespaceObject => ({
  metadata: name === undefined ? {} : { name },
  status: { phase: "Active" },
  ...extra,
});
const routed = (service: string, extra: Partial<Parameters<typeof routingLabels>[0]> = {}) =>
  routingLabels({ service, weight: 100, replicas: 2, websocket: false, ...extra });
function svc(
  namespace: string | undefined,
  name: string | undefined,
  labels: Record<string, string>,
  more: {
    annotations?: Record<string, string>;
    clusterIP?: string;
    ports?: ServiceObject["spec"] extends infer S ? (S extends { ports?: infer P } ? P : never) : never;
  } = {},
): ServiceObject {
  return {
    metadata: {
      ...(namespace ? { namespace } : {}),
      ...(name ? { name } : {}),
      labels,
      ...(more.annotations ? { annotations: more.annotations } : {}),
    },
    spec: {
      ...("clusterIP" in more ? { clusterIP: more.clusterIP } : { clusterIP: "None" }),
      ports: more.ports ?? [{ name: "https", port: 443 }],
    },
  };
}
const shift = (from: string, extra: Record<string, string> = {}) => ({
  "envoy-gateways.io/shift-from": from,
  "envoy-gateways.io/shift-policy": "linear",
  "envoy-gateways.io/shift-start": "2026-11-30T10:00:00Z",
  "envoy-gateways.io/shift-duration": "10m",
  ...extra,
});
const versions = (green: Record<string, string> | undefined, blue: Record<string, string> | undefined = undefined) => [
  svc("pr-1", "web-green", routed("web", { version: "green" }), { ...(green ? { annotations: green } : {}) }),
  svc("pr-1", "web-blue", routed("web", { version: "blue" }), { ...(blue ? { annotations: blue } : {}) }),
];
const problemsOf = (services: ServiceObject[]) =>
  discoverRoutes([ns("pr-1")], services, "default").problems.map((p) => p.message);
const WEB = "service web in namespace pr-1 (Service pr-1/web-blue, Service pr-1/web-green)";

describe("routed namespaces", () => {
  it("are the named ones that are neither the production namespace, terminating, nor being deleted, in name order", () => {
    expect(
      routedNamespaces(
        [
          ns("pr-2"),
          ns(),
          ns("apps"),
          ns("pr-1"),
          ns("pr-3", { status: { phase: "Terminating" } }),
          ns("pr-4", { metadata: { name: "pr-4", deletionTimestamp: "2026-11-30T10:00:00Z" } }),
          ns("pr-5", { status: {} }),
          { metadata: { name: "pr-6" } },
        ],
        "apps",
      ),
    ).toEqual(["pr-1", "pr-2", "pr-5", "pr-6"]);
  });

  it("never include the gateways' own namespace or a protected one, each refused by name while the others are routed", () => {
    const found = discoverRoutes(
      [ns("pr-1"), ns("kube-system"), ns("default"), ns(), {}, ns("kube-public")],
      ["pr-1", "kube-system", "default", "kube-public"].map((n) => svc(n, "web", routed("web"))),
      "default",
      ["kube-system", "kube-public", "kube-node-lease"],
    );
    expect(Object.keys(found.devNamespaces)).toEqual(["pr-1"]);
    expect(new Set(found.problems.map((p) => p.source))).toEqual(new Set(["namespaces"]));
    expect(found.problems.map((p) => `${p.key}: ${p.message}`)).toEqual([
      "Namespace default: carries the dev routing label but is not routed: it is the gateways' own namespace, whose Services are production routes",
      "Namespace kube-public: carries the dev routing label but is not routed: it is protected (devNamespaces.protected)",
      "Namespace kube-system: carries the dev routing label but is not routed: it is protected (devNamespaces.protected)",
    ]);
    // A stack can route one of them by leaving it out of the list.
    const allowed = discoverRoutes([ns("kube-system")], [svc("kube-system", "web", routed("web"))], "default", []);
    expect({ routed: Object.keys(allowed.devNamespaces), problems: allowed.problems }).toEqual({
      routed: ["kube-system"],
      problems: [],
    });
  });

  it("are listed with the routing label selector for Services", () => {
    expect(ROUTED_SERVICE_SELECTOR).toBe("envoy-gateways.io/service");
  });
});

describe("discovered services", () => {
  it("ignore Services without a namespace or a name, and of namespaces not routed", () => {
    const found = discoverRoutes(
      [ns("pr-1")],
      [
        svc(undefined, "a", routed("a")),
        svc("pr-1", undefined, routed("b")),
        svc("pr-9", "c", routed("c")),
        svc("pr-1", "d", routed("d")),
      ],
      "default",
    );
    expect(found).toEqual({
      devNamespaces: { "pr-1": [{ name: "d", versions: [{ version: "", service: "d" }], websocket: false }] },
      // The namespace says no creation time.
      created: {},
      problems: [],
      warnings: [],
    });
  });

  it("list namespaces and services in name order, and versions in version order, a websocket if any version is one", () => {
    const found = discoverRoutes(
      [ns("pr-2"), ns("pr-1")],
      [
        svc("pr-2", "z", routed("z")),
        svc("pr-1", "web-b", routed("web", { version: "b", websocket: true }), { annotations: shift("a") }),
        svc("pr-1", "web-a", routed("web", { version: "a" })),
        svc("pr-1", "api", routed("api")),
        svc("pr-2", "m", routed("m")),
      ],
      "default",
    );
    expect(found.problems).toEqual([]);
    expect(Object.keys(found.devNamespaces)).toEqual(["pr-1", "pr-2"]);
    expect((found.devNamespaces["pr-1"] as DevServiceFacts[]).map((s) => s.name)).toEqual(["api", "web"]);
    expect((found.devNamespaces["pr-2"] as DevServiceFacts[]).map((s) => s.name)).toEqual(["m", "z"]);
    expect(found.devNamespaces["pr-1"]![1]).toEqual({
      name: "web",
      versions: [
        { version: "a", service: "web-a" },
        { version: "b", service: "web-b" },
      ],
      websocket: true,
      shifts: [{ from: "a", to: "b", policy: "linear", start: "2026-11-30T10:00:00Z", duration: "10m" }],
    });
  });

  it("leave out a namespace with nothing routable, and warn only about Services with a cluster IP", () => {
    const found = discoverRoutes(
      [ns("pr-1"), ns("pr-2")],
      [
        svc("pr-1", "bad", { ...routed("bad"), "envoy-gateways.io/port": "80" }),
        svc("pr-2", "a", routed("a"), { clusterIP: undefined }),
        svc("pr-2", "b", routed("b"), { clusterIP: "10.0.0.7" }),
      ],
      "default",
    );
    expect(Object.keys(found.devNamespaces)).toEqual(["pr-2"]);
    expect(found.warnings).toEqual([
      {
        key: "Service pr-2/b",
        source: "namespaces",
        message:
          "is not headless (clusterIP 10.0.0.7): the gateways reach one virtual IP instead of every pod; set clusterIP: None",
        objects: [{ kind: "Service", namespace: "pr-2", name: "b" }],
      },
    ]);
  });

  it("carry a shift's reversal, and the annotations as written (a missing start or duration is refused with its annotation)", () => {
    const reversed = discoverRoutes(
      [ns("pr-1")],
      versions(shift("blue", { "envoy-gateways.io/shift-reversed": "2026-11-30T10:05:00Z" })),
      "default",
    );
    expect((reversed.devNamespaces["pr-1"]![0] as DevServiceFacts).shifts).toEqual([
      {
        from: "blue",
        to: "green",
        policy: "linear",
        start: "2026-11-30T10:00:00Z",
        duration: "10m",
        reversed: "2026-11-30T10:05:00Z",
      },
    ]);
    const {
      "envoy-gateways.io/shift-start": _s,
      "envoy-gateways.io/shift-duration": _d,
      "envoy-gateways.io/shift-policy": _p,
      ...fromOnly
    } = shift("blue");
    expect(problemsOf(versions(fromOnly))).toEqual([
      'left out: annotation envoy-gateways.io/shift-policy="" must be linear or atomic; annotation envoy-gateways.io/shift-start="" must be an RFC 3339 time such as 2026-11-30T10:00:00Z; annotation envoy-gateways.io/shift-duration="" must be a duration from 1 minute to 5 days, such as 90s, 30m, 2h or 5d',
    ]);
  });
});

describe("the labels of a routed Service", () => {
  const service = svc("pr-1", "x", {});
  it("say each thing wrong with them", () => {
    expect(labelProblems({}, service)).toEqual([
      "label envoy-gateways.io/service=undefined must be a DNS label (lower-case letters, digits and '-', at most 63 characters)",
      'label envoy-gateways.io/port=undefined must be "443" (the gateways speak TLS to every pod on 443)',
      "label envoy-gateways.io/port-name is missing (the name of the Service's 443 port)",
    ]);
    expect(
      labelProblems(
        {
          ...routed("web"),
          "envoy-gateways.io/version": "V2",
          "envoy-gateways.io/protocol": "grpc",
          "envoy-gateways.io/weight": "101",
        },
        service,
      ),
    ).toEqual([
      'label envoy-gateways.io/version="V2" must be a DNS label',
      'label envoy-gateways.io/protocol="grpc" must be http or websocket',
      'label envoy-gateways.io/weight="101" must be a whole percentage from 0 to 100',
    ]);
    expect(labelProblems({ ...routed("w".repeat(64)) }, service)).toHaveLength(1);
  });

  it("accept every whole percentage, websocket and http, and a Service whose ports are not known", () => {
    for (const weight of ["0", "7", "42", "99", "100"])
      expect(labelProblems({ ...routed("web"), "envoy-gateways.io/weight": weight }, service), weight).toEqual([]);
    for (const weight of ["07", "-1", "1000", "50%", "x"])
      expect(labelProblems({ ...routed("web"), "envoy-gateways.io/weight": weight }, service), weight).toHaveLength(1);
    expect(labelProblems(routed("web", { websocket: true }), service)).toEqual([]);
    expect(labelProblems({ ...routed("web"), "envoy-gateways.io/protocol": "http" }, { metadata: {} })).toEqual([]);
  });

  it("need the named port to be the Service's port 443", () => {
    const ports = (p: { name?: string; port?: number }[]) =>
      labelProblems(routed("web"), svc("pr-1", "web", {}, { ports: p }));
    expect(ports([{ name: "https", port: 443 }])).toEqual([]);
    expect(ports([{ name: "https", port: 8443 }])).toEqual([
      'label envoy-gateways.io/port-name="https" names no port 443 of the Service',
    ]);
    expect(ports([{ name: "tls", port: 443 }])).toEqual([
      'label envoy-gateways.io/port-name="https" names no port 443 of the Service',
    ]);
    expect(
      ports([
        { name: "tls", port: 443 },
        { name: "https", port: 443 },
      ]),
    ).toEqual([]);
  });
});

describe("the versions of one logical service", () => {
  it("refuse a single Service's weight below 100 without a shift, naming its Services", () => {
    const found = discoverRoutes([ns("pr-1")], [svc("pr-1", "web", routed("web", { weight: 60 }))], "default");
    expect(found.problems).toEqual([
      {
        key: "service web in namespace pr-1 (Service pr-1/web)",
        source: "namespaces",
        message: "left out: its only Service has weight 60; a single version takes all the traffic (100)",
        objects: [{ kind: "Service", namespace: "pr-1", name: "web" }],
      },
    ]);
    expect(
      discoverRoutes([ns("pr-1")], [svc("pr-1", "web", routed("web", { weight: 100 }))], "default").problems,
    ).toEqual([]);
    const { "envoy-gateways.io/weight": _, ...unweighted } = routed("web");
    expect(discoverRoutes([ns("pr-1")], [svc("pr-1", "web", unweighted)], "default").problems).toEqual([]);
  });

  it("refuse two Services with one version, and several without a shift or weights", () => {
    const same = [
      svc("pr-1", "web-a", routed("web", { version: "a" })),
      svc("pr-1", "web-b", routed("web", { version: "a" }), { annotations: shift("a") }),
    ];
    expect(problemsOf(same)).toEqual(["left out: two Services carry the same envoy-gateways.io/version"]);
    const unweighted = (v: string) => {
      const { "envoy-gateways.io/weight": _, ...labels } = routed("web", { version: v });
      return svc("pr-1", `web-${v}`, labels);
    };
    expect(discoverRoutes([ns("pr-1")], [unweighted("blue"), unweighted("green")], "default").problems).toEqual([
      {
        key: WEB,
        source: "namespaces",
        message:
          "left out: it has 2 versions but no traffic shift says how to split its traffic (annotate the new version's Service with envoy-gateways.io/shift-from, ...)",
        objects: [
          { kind: "Service", namespace: "pr-1", name: "web-blue" },
          { kind: "Service", namespace: "pr-1", name: "web-green" },
        ],
      },
    ]);
    const partly = [unweighted("blue"), svc("pr-1", "web-green", routed("web", { version: "green", weight: 10 }))];
    expect(problemsOf(partly)).toEqual([
      "left out: it has weight labels (blue=none, green=10) but no traffic shift; annotate the new version's Service with envoy-gateways.io/shift-from, envoy-gateways.io/shift-policy, envoy-gateways.io/shift-start and envoy-gateways.io/shift-duration",
    ]);
  });

  it("take a shift on any of the Services, and check it against the versions found", () => {
    expect(
      (
        discoverRoutes([ns("pr-1")], versions(undefined, shift("green")), "default").devNamespaces[
          "pr-1"
        ]![0] as DevServiceFacts
      ).shifts,
    ).toEqual([{ from: "green", to: "blue", policy: "linear", start: "2026-11-30T10:00:00Z", duration: "10m" }]);
    expect(problemsOf(versions(shift("green")))).toEqual([
      "left out: shift of web: must differ from from (both are green)",
    ]);
  });

  it("refuse shifts on two Services that overlap, or a shift whose problems are many, saying each", () => {
    expect(
      problemsOf(versions(shift("blue"), shift("green", { "envoy-gateways.io/shift-start": "2026-11-30T10:05:00Z" }))),
    ).toEqual([
      "left out: shifts of web overlap (blue->green from 2026-11-30T10:00:00.000Z, green->blue from 2026-11-30T10:05:00.000Z); one service moves one way at a time",
    ]);
    expect(
      discoverRoutes(
        [ns("pr-1")],
        versions(shift("blue"), shift("green", { "envoy-gateways.io/shift-start": "2026-11-30T10:10:00Z" })),
        "default",
      ).problems,
    ).toEqual([]);
    expect(
      problemsOf(
        versions(
          shift("red", { "envoy-gateways.io/shift-policy": "canary", "envoy-gateways.io/shift-reversed": "soon" }),
        ),
      ),
    ).toEqual([
      'left out: annotation envoy-gateways.io/shift-from="red" must be a version of web (versions: blue, green); annotation envoy-gateways.io/shift-policy="canary" must be linear or atomic; annotation envoy-gateways.io/shift-reversed="soon" must be an RFC 3339 time such as 2026-11-30T10:00:00Z',
    ]);
  });

  it("leave out only the service that is wrong, keeping its namespace's others", () => {
    const found = discoverRoutes(
      [ns("pr-1")],
      [...versions(shift("red")), svc("pr-1", "api", routed("api"))],
      "default",
    );
    expect(found.devNamespaces).toEqual({
      "pr-1": [{ name: "api", versions: [{ version: "", service: "api" }], websocket: false }],
    });
    expect(found.problems.map((p) => p.key)).toEqual([
      "service web in namespace pr-1 (Service pr-1/web-green, Service pr-1/web-blue)",
    ]);
  });
});
