// The policies' finer points, each with the exact message a user reads:
// which objects each policy looks at, what counts as a workload's replicas,
// exemptions by kind and namespace, values unknown during preview.
import { describe, expect, it } from "vitest";
import {
  envoyImagePinned,
  gatewayDisruptionBudget,
  gatewayPodsHardened,
  gatewayUpstreamsHeadlessOn443,
  hardeningGaps,
  multiReplicaWorkloadsHeadless,
  policies,
  serviceImagesPinned,
  xdsConfigMapsValid,
} from "../../policy/policies.js";
import { K, runResource, runStack, UNKNOWN, type Obj } from "./policy-engine.js";

const deployment = (
  name: string,
  replicas: number | undefined,
  labels: Record<string, string>,
  namespace = "default",
  kind = "Deployment",
): Obj => ({
  type: K(kind, "apps/v1"),
  name,
  props: {
    metadata: { name, namespace },
    spec: { replicas, template: { metadata: { labels }, spec: { containers: [{ name, image: "team/app:1.0.0" }] } } },
  },
});
const service = (name: string, selector: unknown, spec: Record<string, unknown> = {}, namespace = "default"): Obj => ({
  type: K("Service"),
  name,
  props: { metadata: { name, namespace }, spec: { selector, ports: [{ port: 443, targetPort: 443 }], ...spec } },
});
const hpa = (target: string, max: number, namespace = "default", version = "v2", kind = "Deployment"): Obj => ({
  type: K("HorizontalPodAutoscaler", `autoscaling/${version}`),
  name: target,
  props: {
    metadata: { name: target, namespace },
    spec: { scaleTargetRef: { kind, name: target }, minReplicas: 1, maxReplicas: max },
  },
});
const app = { app: "batch" };
const notHeadless = (
  svc: string,
  workload: string,
  replicas: string,
  clusterIP = "assigned by the cluster",
  ns = "default",
) =>
  `Service ${ns}/${svc} selects the pods of ${workload} (${replicas}) but is not headless (clusterIP: ${clusterIP}); set spec.clusterIP: None so every pod is reachable and balanced.`;

describe("multi-replica-workloads-headless, in detail", () => {
  it("counts the autoscalers of every API version, for their own workload kind and namespace only", () => {
    for (const version of ["v1", "v2", "v2beta2"]) {
      expect(
        runStack(multiReplicaWorkloadsHeadless, [
          deployment("batch", 1, app),
          hpa("batch", 4, "default", version),
          service("batch", app),
        ]).violations,
        version,
      ).toEqual([notHeadless("batch", "Deployment default/batch", "an autoscaler allowing up to 4 replicas")]);
    }
    expect(
      runStack(multiReplicaWorkloadsHeadless, [
        deployment("batch", 1, app),
        hpa("batch", 4, "staging"),
        service("batch", app),
      ]).violations,
    ).toEqual([]);
    expect(
      runStack(multiReplicaWorkloadsHeadless, [
        deployment("batch", 1, app),
        hpa("batch", 4, "default", "v2", "StatefulSet"),
        service("batch", app),
      ]).violations,
    ).toEqual([]);
    expect(
      runStack(multiReplicaWorkloadsHeadless, [
        deployment("batch", 1, app),
        { ...hpa("batch", 4), type: "kubernetes:keda.sh/v1alpha1:ScaledObject" },
        service("batch", app),
      ]).violations,
    ).toEqual([]);
  });

  it("says the declared replicas when an autoscaler allows fewer", () => {
    expect(
      runStack(multiReplicaWorkloadsHeadless, [deployment("batch", 5, app), hpa("batch", 3), service("batch", app)])
        .violations,
    ).toEqual([notHeadless("batch", "Deployment default/batch", "5 replicas")]);
  });

  it("only looks at workloads (not Pods, Jobs or DaemonSets) in the Service's namespace", () => {
    const objs = [
      deployment("batch", 3, app, "staging"),
      deployment("job", 3, app, "default", "DaemonSet"),
      service("batch", app),
    ];
    expect(runStack(multiReplicaWorkloadsHeadless, objs).violations).toEqual([]);
    expect(
      runStack(multiReplicaWorkloadsHeadless, [
        deployment("batch", 3, app, "staging"),
        service("batch", app, {}, "staging"),
      ]).violations,
    ).toEqual([notHeadless("batch", "Deployment staging/batch", "3 replicas", "assigned by the cluster", "staging")]);
  });

  it("treats a ClusterIP Service like an unset type, and says a cluster IP unknown during preview is assigned by the cluster", () => {
    expect(
      runStack(multiReplicaWorkloadsHeadless, [
        deployment("batch", 3, app),
        service("batch", app, { type: "ClusterIP" }),
      ]).violations,
    ).toHaveLength(1);
    expect(
      runStack(multiReplicaWorkloadsHeadless, [
        deployment("batch", 3, app),
        service("batch", app, { clusterIP: UNKNOWN }),
      ]).violations,
    ).toEqual([notHeadless("batch", "Deployment default/batch", "3 replicas", "(assigned by the cluster)")]);
  });

  it("exempts by kind, name and namespace (default namespace when not given), the Service or the workload", () => {
    const objs = [deployment("batch", 3, app), service("batch", app)];
    const exempt = (e: object) =>
      runStack(multiReplicaWorkloadsHeadless, objs, [{ name: "batch", reason: "until Q3", ...e }]).violations;
    expect(exempt({})).toEqual([]);
    expect(exempt({ kind: "Service" })).toEqual([]);
    expect(exempt({ kind: "Deployment" })).toEqual([]);
    expect(exempt({ kind: "Service", namespace: "default" })).toEqual([]);
    expect(exempt({ kind: "StatefulSet" })).toHaveLength(1);
    expect(exempt({ namespace: "staging" })).toHaveLength(1);
    expect(runStack(multiReplicaWorkloadsHeadless, objs, [{ name: "web", reason: "other" }]).violations).toHaveLength(
      1,
    );
  });

  it("skips a workload whose replicas are unknown during preview, and reports the rest", () => {
    const unknown = deployment("web", 3, { app: "web" });
    unknown.props.spec.replicas = UNKNOWN;
    const out = runStack(multiReplicaWorkloadsHeadless, [
      unknown,
      deployment("batch", 3, app),
      service("web", { app: "web" }),
      service("batch", app),
    ]);
    expect(out.violations).toEqual([notHeadless("batch", "Deployment default/batch", "3 replicas")]);
  });
});

describe("gateway-upstreams-headless-443, in detail", () => {
  const cluster = (name: string, host: string, port = 443) => ({
    name,
    load_assignment: {
      endpoints: [
        { lb_endpoints: [{ endpoint: { address: { socket_address: { address: host, port_value: port } } } }] },
      ],
    },
  });
  const xds = (clusters: unknown[], name = "gateway-xds", extra: Record<string, unknown> = {}): Obj => ({
    type: K("ConfigMap"),
    name,
    props: {
      metadata: { name, namespace: "edge" },
      data: { "cds.yaml": JSON.stringify({ version_info: "1", resources: clusters }), ...extra },
    },
  });

  it("checks the Service of every cluster address, its port 443 and where it leads, saying every problem of one Service at once", () => {
    const objs = [
      xds([
        cluster("pr-1_web", "web.pr-1.svc.cluster.local", 8443),
        cluster("default_api", "api.default.svc.cluster.local"),
        cluster("default_db", "db.default.svc.cluster.local"),
      ]),
      service("web", {}, { clusterIP: "10.0.0.1", ports: [{ port: 80 }] }, "pr-1"),
      service("api", {}, { clusterIP: "None", ports: [{ port: 443 }] }),
      service("db", {}, { clusterIP: "None", ports: [{ port: 443, targetPort: "https" }] }),
    ];
    expect(runStack(gatewayUpstreamsHeadlessOn443, objs).violations).toEqual([
      "Service pr-1/web, upstream of cluster pr-1_web in ConfigMap edge/gateway-xds, is not headless (set spec.clusterIP: None) and has no port 443 and is reached on port 8443, not 443.",
      'Service default/db, upstream of cluster default_db in ConfigMap edge/gateway-xds, maps port 443 to "https" on the pods, not 443.',
    ]);
  });

  it("ignores addresses that are not Service names, ConfigMaps without xDS files, clusters without endpoints, and exempt Services", () => {
    const objs = [
      xds([
        cluster("ip", "10.1.2.3"),
        cluster("external", "example.org"),
        { name: "empty" },
        { name: "no-address", load_assignment: { endpoints: [{ lb_endpoints: [{ endpoint: {} }] }] } },
        cluster("default_legacy", "legacy.default.svc.cluster.local"),
      ]),
      {
        type: K("ConfigMap"),
        name: "other",
        props: {
          metadata: { name: "other", namespace: "edge" },
          data: { "cds.yml": JSON.stringify({ resources: [cluster("x", "legacy.default.svc.cluster.local")] }) },
        },
      },
      { type: K("ConfigMap"), name: "empty", props: { metadata: { name: "empty", namespace: "edge" } } },
      {
        type: K("Secret"),
        name: "secret",
        props: {
          metadata: { name: "secret" },
          data: { "cds.yaml": JSON.stringify({ resources: [cluster("x", "legacy.default.svc.cluster.local")] }) },
        },
      },
      service("legacy", {}, { clusterIP: "10.0.0.9" }),
    ];
    expect(runStack(gatewayUpstreamsHeadlessOn443, objs).violations).toEqual([
      "Service default/legacy, upstream of cluster default_legacy in ConfigMap edge/gateway-xds, is not headless (set spec.clusterIP: None).",
    ]);
    expect(
      runStack(gatewayUpstreamsHeadlessOn443, objs, [{ kind: "Service", name: "legacy", reason: "migrating" }])
        .violations,
    ).toEqual([]);
    // An rds.yaml alone is an xDS ConfigMap too (with no clusters to check).
    expect(
      runStack(gatewayUpstreamsHeadlessOn443, [
        { ...xds([]), props: { metadata: { name: "x", namespace: "edge" }, data: { "rds.yaml": "resources: []" } } },
        service("legacy", {}),
      ]).violations,
    ).toEqual([]);
  });

  it("skips a ConfigMap whose data is unknown during preview with a note, and still checks the others", () => {
    const unknown: Obj = {
      type: K("ConfigMap"),
      name: "later",
      props: { metadata: { name: "later", namespace: "edge" }, data: { "cds.yaml": UNKNOWN } },
    };
    const out = runStack(gatewayUpstreamsHeadlessOn443, [
      unknown,
      xds([cluster("default_legacy", "legacy.default.svc.cluster.local")]),
      service("legacy", {}, { clusterIP: "10.0.0.9" }),
    ]);
    expect(out.violations).toHaveLength(1);
    expect(out.note).toMatch(/^can't run policy gateway-upstreams-headless-443 during preview: /);
  });
});

describe("xds-configmaps-valid, in detail", () => {
  const rds = JSON.stringify({
    version_info: "1",
    resources: [{ "@type": "type.googleapis.com/envoy.config.route.v3.RouteConfiguration", name: "https" }],
  });
  const cm = (data: Record<string, unknown>): Obj => ({
    type: K("ConfigMap"),
    name: "gateway-xds",
    props: { metadata: { name: "gateway-xds", namespace: "edge" }, data: { "rds.yaml": rds, ...data } },
  });
  const badClusters = (n: number) =>
    JSON.stringify({
      version_info: "1",
      resources: Array.from({ length: n }, (_, i) => ({
        "@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
        name: `c${i}`,
        conect_timeout: "1s",
      })),
    });

  it("says one problem as one, and lists at most 20, with how many more", () => {
    expect(runResource(xdsConfigMapsValid, cm({ "cds.yaml": badClusters(1) })).violations).toEqual([
      'ConfigMap edge/gateway-xds/cds.yaml cluster "c0" (resources[0]): conect_timeout: unknown field (envoy.config.cluster.v3.Cluster has no field conect_timeout)'.replace(
        /^/,
        "1 problem Envoy would reject:\n",
      ),
    ]);
    const [many] = runResource(xdsConfigMapsValid, cm({ "cds.yaml": badClusters(23) })).violations;
    const lines = many!.split("\n");
    expect(lines[0]).toBe("23 problems Envoy would reject:");
    expect(lines).toHaveLength(22);
    expect(lines[20]).toMatch(/cluster "c19"/);
    expect(lines[21]).toBe("... and 3 more");
    expect(
      runResource(xdsConfigMapsValid, cm({ "cds.yaml": badClusters(20) })).violations[0]!.split("\n"),
    ).toHaveLength(21);
  });

  it("reads only text values, and honours an exemption", () => {
    expect(runResource(xdsConfigMapsValid, cm({ "cds.yaml": badClusters(1), "extra.yaml": 7 })).violations[0]).toMatch(
      /^1 problem Envoy would reject:/,
    );
    expect(runResource(xdsConfigMapsValid, cm({ "cds.yaml": badClusters(0), "rds.yaml": 7 })).violations).toEqual([
      "1 problem Envoy would reject:\nConfigMap edge/gateway-xds/rds.yaml: is missing",
    ]);
    expect(
      runResource(xdsConfigMapsValid, cm({ "cds.yaml": badClusters(1) }), [
        { kind: "ConfigMap", namespace: "edge", name: "gateway-xds", reason: "being rewritten" },
      ]),
    ).toEqual({ violations: [] });
  });
});

describe("the image policies, in detail", () => {
  const pod = (containers: object[], initContainers: object[] = []): Obj => ({
    type: K("Pod"),
    name: "p",
    props: { metadata: { name: "p", namespace: "jobs" }, spec: { containers, initContainers } },
  });
  it("look at init containers and every workload kind, naming the container", () => {
    expect(
      runResource(
        envoyImagePinned,
        pod([{ name: "app", image: "team/app:1.0.0" }], [{ name: "init", image: "envoyproxy/envoy" }]),
      ).violations,
    ).toEqual([
      "Pod jobs/p container init runs envoyproxy/envoy: pin Envoy to a version tag (envoyproxy/envoy:v1.40.0) or a digest (@sha256:...).",
    ]);
    const cron: Obj = {
      type: K("CronJob", "batch/v1"),
      name: "c",
      props: {
        metadata: { name: "c" },
        spec: {
          jobTemplate: { spec: { template: { spec: { containers: [{ name: "job", image: "team/job:latest" }] } } } },
        },
      },
    };
    expect(runResource(serviceImagesPinned, cron).violations).toEqual([
      "CronJob default/c container job runs team/job:latest: pin it to a version tag (team/app:1.2.3) or a digest (@sha256:...).",
    ]);
    expect(
      runResource(serviceImagesPinned, {
        type: K("ConfigMap"),
        name: "x",
        props: { metadata: { name: "x" }, data: {} },
      }).violations,
    ).toEqual([]);
  });

  it("know Envoy images from any registry and variant, and nothing else", () => {
    const envoy = (image: string) => runResource(envoyImagePinned, pod([{ name: "c", image }])).violations.length;
    expect([
      envoy("registry.example.org:5000/mirror/envoy:latest"),
      envoy("envoyproxy/envoy-distroless:dev"),
      envoy("envoy"),
      envoy("envoyproxy/envoy@sha256:abc"),
    ]).toEqual([1, 1, 1, 1]);
    expect([
      envoy("team/envoyx:latest"),
      envoy("team/not-envoy:latest"),
      envoy("team/envoyproxy:latest"),
      envoy("envoyproxy/envoy:v1.40.0-dev"),
    ]).toEqual([0, 0, 0, 0]);
    expect(
      runResource(serviceImagesPinned, pod([{ name: "c", image: "registry.example.org:5000/mirror/envoy:latest" }]))
        .violations,
    ).toEqual([]);
  });

  it("honour exemptions, and leave containers without an image alone", () => {
    const objs = pod([{ name: "c", image: "team/app:main" }, { name: "d" }]);
    expect(runResource(serviceImagesPinned, objs).violations).toHaveLength(1);
    expect(
      runResource(serviceImagesPinned, objs, [{ kind: "Pod", namespace: "jobs", name: "p", reason: "debugging" }]),
    ).toEqual({ violations: [] });
    expect(
      runResource(envoyImagePinned, pod([{ name: "c", image: "envoy" }]), [
        { namespace: "jobs", name: "p", reason: "debugging" },
      ]),
    ).toEqual({ violations: [] });
  });
});

describe("gateway-pods-hardened, in detail", () => {
  const hardened = () => ({
    runAsNonRoot: true,
    runAsUser: 10001,
    readOnlyRootFilesystem: true,
    allowPrivilegeEscalation: false,
    capabilities: { drop: ["ALL"] },
    seccompProfile: { type: "RuntimeDefault" },
  });
  const resources = { requests: { cpu: "1", memory: "1Gi" }, limits: { cpu: "1", memory: "1Gi" } };

  it("lists each missing setting, container settings before the pod's", () => {
    expect(hardeningGaps({}, { securityContext: hardened(), resources })).toEqual([]);
    expect(hardeningGaps({}, { securityContext: { ...hardened(), privileged: true }, resources })).toEqual([
      "privileged: false",
    ]);
    expect(hardeningGaps({}, { securityContext: { ...hardened(), runAsNonRoot: false }, resources })).toEqual([
      "runAsNonRoot: true",
    ]);
    expect(
      hardeningGaps(
        { securityContext: { runAsNonRoot: true } },
        { securityContext: { ...hardened(), runAsNonRoot: false }, resources },
      ),
    ).toEqual(["runAsNonRoot: true"]);
    expect(
      hardeningGaps(
        { securityContext: { seccompProfile: { type: "Unconfined" } } },
        { securityContext: { ...hardened(), seccompProfile: undefined }, resources },
      ),
    ).toEqual(["seccompProfile.type: RuntimeDefault"]);
    // The user: above 10000, the container's before the pod's, and explicit (an image's USER is unseen here).
    expect(hardeningGaps({}, { securityContext: { ...hardened(), runAsUser: 10000 }, resources })).toEqual([
      "runAsUser above 10000",
    ]);
    expect(
      hardeningGaps(
        { securityContext: { runAsUser: 20000 } },
        { securityContext: { ...hardened(), runAsUser: 101 }, resources },
      ),
    ).toEqual(["runAsUser above 10000"]);
    expect(
      hardeningGaps(
        { securityContext: { runAsUser: 10001 } },
        { securityContext: { ...hardened(), runAsUser: undefined }, resources },
      ),
    ).toEqual([]);
    expect(hardeningGaps({}, { securityContext: { ...hardened(), runAsUser: "10001" }, resources })).toEqual([
      "runAsUser above 10000",
    ]);
    expect(
      hardeningGaps(
        {},
        {
          securityContext: { ...hardened(), capabilities: { drop: ["NET_RAW"] } },
          resources: { requests: { cpu: "1" }, limits: { memory: "1Gi" } },
        },
      ),
    ).toEqual(["capabilities.drop: [ALL]", "resources.requests.memory", "resources.limits.cpu"]);
    expect(hardeningGaps({}, {})).toEqual([
      "runAsNonRoot: true",
      "runAsUser above 10000",
      "readOnlyRootFilesystem: true",
      "allowPrivilegeEscalation: false",
      "capabilities.drop: [ALL]",
      "seccompProfile.type: RuntimeDefault",
      "resources.requests.cpu",
      "resources.requests.memory",
      "resources.limits.cpu",
      "resources.limits.memory",
    ]);
  });

  it("knows a gateway by its labels, on the pods or the workload, or by an Envoy image in any container", () => {
    const workload = (
      labels: Record<string, string>,
      metaLabels: Record<string, string> | undefined,
      image: string,
    ): Obj => ({
      type: K("Deployment", "apps/v1"),
      name: "w",
      props: {
        metadata: { name: "w", namespace: "edge", ...(metaLabels ? { labels: metaLabels } : {}) },
        spec: {
          template: {
            metadata: { labels },
            spec: {
              containers: [
                { name: "a", image: "team/a:1.0.0" },
                { name: "b", image },
              ],
            },
          },
        },
      },
    });
    const checked = (o: Obj) => runResource(gatewayPodsHardened, o).violations.length;
    expect(checked(workload({ "app.kubernetes.io/component": "gateway" }, undefined, "team/b:1.0.0"))).toBe(2);
    expect(checked(workload({}, undefined, "envoyproxy/envoy:v1.40.0"))).toBe(2);
    expect(checked(workload({}, undefined, "team/b:1.0.0"))).toBe(0);
    expect(
      checked(
        workload(
          { "app.kubernetes.io/component": "web" },
          { "app.kubernetes.io/component": "gateway" },
          "team/b:1.0.0",
        ),
      ),
    ).toBe(0);
    expect(runResource(gatewayPodsHardened, workload({}, undefined, "envoyproxy/envoy:v1.40.0")).violations[1]).toBe(
      "Deployment edge/w container b is missing runAsNonRoot: true, runAsUser above 10000, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities.drop: [ALL], seccompProfile.type: RuntimeDefault, resources.requests.cpu, resources.requests.memory, resources.limits.cpu, resources.limits.memory.",
    );
  });
});

describe("gateway-disruption-budget, in detail", () => {
  const envoy = (replicas: number, namespace = "edge") => {
    const d = deployment("gateway", replicas, { "app.kubernetes.io/name": "gateway", tier: "edge" }, namespace);
    d.props.spec.template.spec.containers[0].image = "envoyproxy/envoy:v1.40.0";
    return d;
  };
  const pdb = (matchLabels: Record<string, string>, namespace = "edge"): Obj => ({
    type: K("PodDisruptionBudget", "policy/v1"),
    name: "pdb",
    props: { metadata: { name: "pdb", namespace }, spec: { maxUnavailable: 1, selector: { matchLabels } } },
  });

  it("needs a budget in the gateway's namespace selecting its pods", () => {
    const missing = "Gateway Deployment edge/gateway (3 replicas) has no PodDisruptionBudget selecting its pods.";
    expect(runStack(gatewayDisruptionBudget, [envoy(3), pdb({ tier: "edge" })]).violations).toEqual([]);
    expect(runStack(gatewayDisruptionBudget, [envoy(3), pdb({ tier: "edge" }, "default")]).violations).toEqual([
      missing,
    ]);
    expect(runStack(gatewayDisruptionBudget, [envoy(3), pdb({ tier: "core" })]).violations).toEqual([missing]);
    expect(runStack(gatewayDisruptionBudget, [envoy(3), pdb({})]).violations).toEqual([missing]);
    expect(
      runStack(gatewayDisruptionBudget, [envoy(3)], [{ name: "gateway", namespace: "edge", reason: "canary" }])
        .violations,
    ).toEqual([]);
  });

  it("counts an autoscaler's maximum, and leaves other workloads alone", () => {
    expect(runStack(gatewayDisruptionBudget, [envoy(1), hpa("gateway", 3, "edge")]).violations).toEqual([
      "Gateway Deployment edge/gateway (an autoscaler allowing up to 3 replicas) has no PodDisruptionBudget selecting its pods.",
    ]);
    expect(runStack(gatewayDisruptionBudget, [deployment("batch", 3, app)]).violations).toEqual([]);
  });
});

describe("the pack, in detail", () => {
  it("blocks by default, except the image rules (advisory until a stack's config makes them mandatory)", () => {
    expect(Object.fromEntries(policies.map((p) => [p.name, p.enforcementLevel]))).toEqual({
      "multi-replica-workloads-headless": "mandatory",
      "gateway-upstreams-headless-443": "mandatory",
      "xds-configmaps-valid": "mandatory",
      "envoy-image-pinned": "advisory",
      "service-images-pinned": "advisory",
      "gateway-pods-hardened": "mandatory",
      "gateway-disruption-budget": "mandatory",
      "headless-in-place": "mandatory",
    });
  });

  it("takes exemptions as a list of kind, namespace, name and reason (name and reason required), nothing else", () => {
    for (const p of policies) {
      expect(p.configSchema!.properties.exemptions).toEqual({
        type: "array",
        default: [],
        items: {
          type: "object",
          properties: {
            kind: { type: "string" },
            namespace: { type: "string" },
            name: { type: "string", minLength: 1 },
            reason: { type: "string", minLength: 1 },
          },
          required: ["name", "reason"],
          additionalProperties: false,
        },
      });
    }
  });
});
