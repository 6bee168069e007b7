// The policy pack's policies, run on resources shaped as the engine passes
// them: properties behind the engine's unknown-checking proxy, config with
// the schema's defaults, violations collected through reportViolation.
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  envoyImagePinned,
  serviceImagesPinned,
  gatewayDisruptionBudget,
  gatewayPodsHardened,
  gatewayUpstreamsHeadlessOn443,
  headlessInPlace,
  multiReplicaWorkloadsHeadless,
  policies,
  xdsConfigMapsValid,
} from "../../policy/policies.js";
import { renderGateway } from "../../routing/render.js";
import { buildRoutingTable } from "../../routing/table.js";
import { eachTest } from "./each-test.js";
import { ROOT, stackConfig } from "./fixtures.js";
import type { LiveService, ServiceLookup } from "../../policy/live.js";
import { K, runResource, runResourceAsync, runStack, UNKNOWN, type Obj } from "./policy-engine.js";

function deployment(
  name: string,
  replicas: number | undefined,
  labels: Record<string, string>,
  extra: Record<string, any> = {},
): Obj {
  return {
    type: K("Deployment", "apps/v1"),
    name,
    props: {
      metadata: { name, namespace: "default" },
      spec: {
        replicas,
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { containers: [{ name, image: "example/app:1.0.0" }] } },
        ...extra,
      },
    },
  };
}
function service(name: string, selector: unknown, spec: Record<string, any> = {}, namespace = "default"): Obj {
  return {
    type: K("Service"),
    name,
    props: {
      metadata: { name, namespace },
      spec: { selector, ports: [{ name: "https", port: 443, targetPort: 443 }], ...spec },
    },
  };
}

describe("multi-replica-workloads-headless", () => {
  const app = { app: "batch" };
  it("blocks a three-replica Deployment behind a ClusterIP Service, naming the Service, the workload and its replicas", () => {
    expect(
      runStack(multiReplicaWorkloadsHeadless, [deployment("batch", 3, app), service("batch", app)]).violations,
    ).toEqual([
      "Service default/batch selects the pods of Deployment default/batch (3 replicas) but is not headless (clusterIP: assigned by the cluster); set spec.clusterIP: None so every pod is reachable and balanced.",
    ]);
  });

  it("passes the same workload behind a headless Service", () => {
    expect(
      runStack(multiReplicaWorkloadsHeadless, [
        deployment("batch", 3, app),
        service("batch", app, { clusterIP: "None" }),
      ]),
    ).toEqual({ violations: [] });
  });

  it("lets a single-replica workload use a ClusterIP Service", () => {
    expect(runStack(multiReplicaWorkloadsHeadless, [deployment("batch", 1, app), service("batch", app)])).toEqual({
      violations: [],
    });
    expect(
      runStack(multiReplicaWorkloadsHeadless, [deployment("batch", undefined, app), service("batch", app)]),
    ).toEqual({ violations: [] });
  });

  it("counts an autoscaler's maximum as the replica count", () => {
    const hpa: Obj = {
      type: K("HorizontalPodAutoscaler", "autoscaling/v2"),
      name: "batch",
      props: {
        metadata: { name: "batch" },
        spec: { scaleTargetRef: { kind: "Deployment", name: "batch" }, minReplicas: 1, maxReplicas: 5 },
      },
    };
    expect(
      runStack(multiReplicaWorkloadsHeadless, [deployment("batch", 1, app), hpa, service("batch", app)]).violations,
    ).toEqual([
      "Service default/batch selects the pods of Deployment default/batch (an autoscaler allowing up to 5 replicas) but is not headless (clusterIP: assigned by the cluster); set spec.clusterIP: None so every pod is reachable and balanced.",
    ]);
  });

  it("covers StatefulSets and ReplicaSets, and shows an explicit cluster IP", () => {
    const sts = { ...deployment("db", 2, { app: "db" }), type: K("StatefulSet", "apps/v1") };
    const rs = { ...deployment("cache", 4, { app: "cache" }), type: K("ReplicaSet", "apps/v1") };
    expect(
      runStack(multiReplicaWorkloadsHeadless, [
        sts,
        rs,
        service("db", { app: "db" }, { clusterIP: "10.0.0.5" }),
        service("cache", { app: "cache" }),
      ]).violations,
    ).toEqual([
      "Service default/db selects the pods of StatefulSet default/db (2 replicas) but is not headless (clusterIP: 10.0.0.5); set spec.clusterIP: None so every pod is reachable and balanced.",
      "Service default/cache selects the pods of ReplicaSet default/cache (4 replicas) but is not headless (clusterIP: assigned by the cluster); set spec.clusterIP: None so every pod is reachable and balanced.",
    ]);
  });

  it("matches selectors to pod labels across resources: several Services, several workloads, partial matches, namespaces", () => {
    const web = deployment("web", 3, { app: "web", tier: "front" });
    const api = deployment("api", 2, { app: "api", tier: "back" });
    const objs = [
      web,
      api,
      service("web", { app: "web" }), // selects web
      service("front", { tier: "front" }), // selects web too
      service("api-v2", { app: "api", version: "v2" }), // partial: pods lack version=v2
      service("web-other-ns", { app: "web" }, {}, "staging"), // other namespace
      service("api", { app: "api" }, { clusterIP: "None" }), // headless
      service("legacy", { app: "web" }, { type: "ExternalName", externalName: "example.org" }),
      service("edge", { app: "web" }, { type: "LoadBalancer" }), // an entry point: the load balancer spreads connections
      service("node-edge", { app: "web" }, { type: "NodePort" }),
      service("no-selector", undefined),
    ];
    expect(runStack(multiReplicaWorkloadsHeadless, objs).violations.map((v) => v.slice(0, v.indexOf(" but")))).toEqual([
      "Service default/web selects the pods of Deployment default/web (3 replicas)",
      "Service default/front selects the pods of Deployment default/web (3 replicas)",
    ]);
  });

  it("treats a cluster IP unknown during preview as not headless (the cluster assigns it)", () => {
    expect(
      runStack(multiReplicaWorkloadsHeadless, [
        deployment("batch", 3, app),
        service("batch", app, { clusterIP: UNKNOWN }),
      ]).violations,
    ).toHaveLength(1);
  });

  it("skips a Service whose selector is unknown during preview with a note, and still checks the others", () => {
    const out = runStack(multiReplicaWorkloadsHeadless, [
      deployment("batch", 3, app),
      deployment("web", 2, { app: "web" }),
      service("batch", UNKNOWN),
      service("web", { app: "web" }),
    ]);
    expect(out.violations.map((v) => v.slice(0, 20))).toEqual(["Service default/web "]);
    expect(out.note).toMatch(
      /can't run policy multi-replica-workloads-headless during preview: .*\.spec\.selector can't be known during preview/,
    );
  });

  it("leaves an exempted Service alone", () => {
    const exemptions = [{ kind: "Service", name: "batch", reason: "legacy clients pin the ClusterIP until Q3" }];
    expect(
      runStack(multiReplicaWorkloadsHeadless, [deployment("batch", 3, app), service("batch", app)], exemptions),
    ).toEqual({ violations: [] });
  });

  it("ignores an exemption without a reason", () => {
    const exemptions = [{ kind: "Service", name: "batch", reason: " " }];
    expect(
      runStack(multiReplicaWorkloadsHeadless, [deployment("batch", 3, app), service("batch", app)], exemptions)
        .violations,
    ).toHaveLength(1);
  });
});

describe("gateway-upstreams-headless-443", () => {
  const config = eachTest(() => stackConfig("dev"));
  const xds = eachTest((): Obj => ({
    type: K("ConfigMap"),
    name: "gateway-xds",
    props: {
      metadata: { name: "gateway-xds", namespace: "default" },
      data: renderGateway(config(), buildRoutingTable(config()), "gateway").xds,
    },
  }));
  const headless = (name: string) => service(name, { "app.kubernetes.io/name": name }, { clusterIP: "None" });

  it("passes when every declared upstream is headless on 443", () => {
    expect(runStack(gatewayUpstreamsHeadlessOn443, [xds(), ...config().services.map((s) => headless(s.name))])).toEqual(
      { violations: [] },
    );
  });

  it("names the Service and the cluster that routes to it when it is not headless or maps 443 elsewhere", () => {
    const bad = [
      xds(),
      ...config()
        .services.filter((s) => !["batch", "auth"].includes(s.name))
        .map((s) => headless(s.name)),
      service("batch", { app: "batch" }),
      service("auth", { app: "auth" }, { clusterIP: "None", ports: [{ port: 443, targetPort: 8443 }] }),
    ];
    expect(runStack(gatewayUpstreamsHeadlessOn443, bad).violations).toEqual([
      "Service default/auth, upstream of cluster default_auth in ConfigMap default/gateway-xds, maps port 443 to 8443 on the pods, not 443.",
      "Service default/batch, upstream of cluster default_batch in ConfigMap default/gateway-xds, is not headless (set spec.clusterIP: None).",
    ]);
  });

  it("ignores upstreams the stack does not declare (services of other stacks)", () => {
    expect(runStack(gatewayUpstreamsHeadlessOn443, [xds()])).toEqual({ violations: [] });
  });
});

describe("xds-configmaps-valid", () => {
  const files = eachTest(() => {
    const config = stackConfig("prod", "per-service");
    return renderGateway(config, buildRoutingTable(config, { "pr-3": ["batch"] }), "gateway");
  });
  const cm = (data: Record<string, string>): Obj => ({
    type: K("ConfigMap"),
    name: "gateway-xds",
    props: { metadata: { name: "gateway-xds", namespace: "default" }, data },
  });

  it("passes the documents the routing core renders", () => {
    expect(runResource(xdsConfigMapsValid, cm(files().xds))).toEqual({ violations: [] });
  });

  it("rejects a route to a cluster that is not in cds.yaml, and a field Envoy does not know", () => {
    const cds = files()
      .xds["cds.yaml"]!.replace('"name":"pr-3_batch"', '"name":"pr-3_batch-old"')
      .replace('"connect_timeout":', '"conect_timeout":');
    const out = runResource(xdsConfigMapsValid, cm({ ...files().xds, "cds.yaml": cds }));
    expect(out.violations).toHaveLength(1);
    expect(out.violations[0]).toMatch(/^\d+ problems Envoy would reject:/);
    expect(out.violations[0]).toContain(
      'ConfigMap default/gateway-xds/cds.yaml cluster "default_www" (resources[0]): conect_timeout: unknown field',
    );
    expect(out.violations[0]).toMatch(/route\.cluster: cluster "pr-3_batch" does not exist/);
  });

  it("rejects a file that is not YAML Envoy can read", () => {
    expect(
      runResource(xdsConfigMapsValid, cm({ "cds.yaml": "resources: [", "rds.yaml": files().xds["rds.yaml"]! }))
        .violations[0],
    ).toMatch(/cds\.yaml: cannot be read as Envoy reads it/);
  });

  it("ignores other ConfigMaps", () => {
    expect(runResource(xdsConfigMapsValid, cm({ "app.conf": "x" }))).toEqual({ violations: [] });
  });
});

describe("envoy-image-pinned", () => {
  const gw = (image: string) => ({
    ...deployment("gateway", 2, { app: "gateway" }),
    props: {
      metadata: { name: "gateway", namespace: "default" },
      spec: { template: { metadata: { labels: {} }, spec: { containers: [{ name: "envoy", image }] } } },
    },
  });
  it("flags latest and untagged Envoy images", () => {
    expect(runResource(envoyImagePinned, gw("envoyproxy/envoy:latest")).violations).toEqual([
      "Deployment default/gateway container envoy runs envoyproxy/envoy:latest: pin Envoy to a version tag (envoyproxy/envoy:v1.40.0) or a digest (@sha256:...).",
    ]);
    expect(runResource(envoyImagePinned, gw("docker.io/envoyproxy/envoy-distroless")).violations).toHaveLength(1);
  });
  it("accepts a version tag or a digest, and ignores other images", () => {
    expect(runResource(envoyImagePinned, gw("envoyproxy/envoy:v1.40.0")).violations).toEqual([]);
    expect(runResource(envoyImagePinned, gw(`envoyproxy/envoy@sha256:${"a".repeat(64)}`)).violations).toEqual([]);
    expect(runResource(envoyImagePinned, gw("nginx:latest")).violations).toEqual([]);
  });
  it("with pinning: digest in the stack's policy config, accepts a digest only", () => {
    const digest = `envoyproxy/envoy:v1.40.0@sha256:${"b".repeat(64)}`;
    expect(runResource(envoyImagePinned, gw(digest), { pinning: "digest" }).violations).toEqual([]);
    expect(runResource(envoyImagePinned, gw("envoyproxy/envoy:v1.40.0"), { pinning: "digest" }).violations).toEqual([
      "Deployment default/gateway container envoy runs envoyproxy/envoy:v1.40.0: pin Envoy to a digest (envoyproxy/envoy:v1.40.0@sha256:...): this stack's policy config requires digests (pinning: digest).",
    ]);
    expect(runResource(envoyImagePinned, gw("envoyproxy/envoy:v1.40.0"), { pinning: "tag" }).violations).toEqual([]);
    expect(envoyImagePinned.configSchema?.properties?.pinning).toEqual({
      type: "string",
      enum: ["tag", "digest"],
      default: "tag",
    });
  });
  it("is advisory by default and mandatory with the production config", () => {
    expect(envoyImagePinned.enforcementLevel).toBe("advisory");
    expect(JSON.parse(readFileSync(join(ROOT, "policy", "prod.json"), "utf8"))["envoy-image-pinned"]).toEqual({
      enforcementLevel: "mandatory",
    });
  });
});

describe("service-images-pinned", () => {
  const svc = (image: string) => ({
    ...deployment("batch", 2, { app: "batch" }),
    props: {
      metadata: { name: "batch", namespace: "default" },
      spec: { template: { metadata: { labels: {} }, spec: { containers: [{ name: "batch", image }] } } },
    },
  });
  it("flags a service image that is latest, untagged or tagged with a word", () => {
    expect(runResource(serviceImagesPinned, svc("team/batch:latest")).violations).toEqual([
      "Deployment default/batch container batch runs team/batch:latest: pin it to a version tag (team/app:1.2.3) or a digest (@sha256:...).",
    ]);
    expect(runResource(serviceImagesPinned, svc("registry.example.org:5000/team/batch")).violations).toHaveLength(1);
    expect(runResource(serviceImagesPinned, svc("team/batch:main")).violations).toHaveLength(1);
  });
  it("accepts a version tag or a digest, and leaves Envoy to envoy-image-pinned", () => {
    expect(runResource(serviceImagesPinned, svc("team/batch:1.2.3")).violations).toEqual([]);
    expect(runResource(serviceImagesPinned, svc(`team/batch@sha256:${"b".repeat(64)}`)).violations).toEqual([]);
    expect(runResource(serviceImagesPinned, svc("envoyproxy/envoy:latest")).violations).toEqual([]);
  });
  it("with pinning: digest, refuses a version tag alone", () => {
    expect(runResource(serviceImagesPinned, svc("team/batch:1.2.3"), { pinning: "digest" }).violations).toEqual([
      "Deployment default/batch container batch runs team/batch:1.2.3: pin it to a digest (team/app:1.2.3@sha256:...): this stack's policy config requires digests (pinning: digest).",
    ]);
    const digest = `team/batch@sha256:${"b".repeat(64)}`;
    expect(runResource(serviceImagesPinned, svc(digest), { pinning: "digest" }).violations).toEqual([]);
  });
  it("is advisory by default and mandatory with the production config", () => {
    expect(serviceImagesPinned.enforcementLevel).toBe("advisory");
    expect(JSON.parse(readFileSync(join(ROOT, "policy", "prod.json"), "utf8"))["service-images-pinned"]).toEqual({
      enforcementLevel: "mandatory",
    });
  });
});

describe("gateway-pods-hardened", () => {
  const hardened = () => ({
    type: K("Deployment", "apps/v1"),
    name: "gateway",
    props: {
      metadata: { name: "gateway", namespace: "default" },
      spec: {
        replicas: 3,
        template: {
          metadata: { labels: { "app.kubernetes.io/name": "gateway", "app.kubernetes.io/component": "gateway" } },
          spec: {
            securityContext: { runAsNonRoot: true, runAsUser: 10101, seccompProfile: { type: "RuntimeDefault" } },
            containers: [
              {
                name: "envoy",
                image: "envoyproxy/envoy:v1.40.0",
                securityContext: {
                  readOnlyRootFilesystem: true,
                  allowPrivilegeEscalation: false,
                  capabilities: { drop: ["ALL"] },
                },
                resources: { requests: { cpu: "100m", memory: "128Mi" }, limits: { cpu: "1", memory: "512Mi" } },
              },
            ],
          },
        },
      },
    },
  });

  it("passes a hardened gateway (pod-level non-root, user and seccomp are inherited)", () => {
    expect(runResource(gatewayPodsHardened, hardened())).toEqual({ violations: [] });
  });

  it("lists everything a container is missing", () => {
    const d = hardened();
    const c = d.props.spec.template.spec.containers[0]!;
    c.securityContext = { readOnlyRootFilesystem: false, allowPrivilegeEscalation: true } as any;
    delete (c.resources as any).limits;
    d.props.spec.template.spec.securityContext = {} as any;
    expect(runResource(gatewayPodsHardened, d).violations).toEqual([
      "Deployment default/gateway container envoy is missing runAsNonRoot: true, runAsUser above 10000, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities.drop: [ALL], seccompProfile.type: RuntimeDefault, resources.limits.cpu, resources.limits.memory.",
    ]);
  });

  it("applies to anything running Envoy, labelled as a gateway or not, and honours exemptions", () => {
    const d = hardened();
    d.props.spec.template.metadata.labels = {} as any;
    d.props.spec.template.spec.securityContext = {} as any;
    expect(runResource(gatewayPodsHardened, d).violations).toHaveLength(1);
    expect(
      runResource(gatewayPodsHardened, d, [
        { kind: "Deployment", name: "gateway", reason: "debug build for an incident" },
      ]),
    ).toEqual({ violations: [] });
    expect(runResource(gatewayPodsHardened, deployment("batch", 3, { app: "batch" }))).toEqual({ violations: [] });
  });
});

describe("gateway-disruption-budget", () => {
  const envoy = (replicas: number) => {
    const d = deployment("gateway", replicas, { "app.kubernetes.io/name": "gateway" });
    d.props.spec.template.spec.containers[0].image = "envoyproxy/envoy:v1.40.0";
    return d;
  };
  const pdb: Obj = {
    type: K("PodDisruptionBudget", "policy/v1"),
    name: "gateway",
    props: {
      metadata: { name: "gateway" },
      spec: { maxUnavailable: 1, selector: { matchLabels: { "app.kubernetes.io/name": "gateway" } } },
    },
  };

  it("requires a PodDisruptionBudget for a multi-replica gateway", () => {
    expect(runStack(gatewayDisruptionBudget, [envoy(3)]).violations).toEqual([
      "Gateway Deployment default/gateway (3 replicas) has no PodDisruptionBudget selecting its pods.",
    ]);
    expect(runStack(gatewayDisruptionBudget, [envoy(3), pdb])).toEqual({ violations: [] });
    expect(runStack(gatewayDisruptionBudget, [envoy(1)])).toEqual({ violations: [] });
  });
});

describe("the pack", () => {
  it("has each policy once, with a description and the exemptions schema (each exemption needs a reason)", () => {
    expect(policies.map((p) => p.name)).toEqual([
      "multi-replica-workloads-headless",
      "gateway-upstreams-headless-443",
      "xds-configmaps-valid",
      "envoy-image-pinned",
      "service-images-pinned",
      "gateway-pods-hardened",
      "gateway-disruption-budget",
      "headless-in-place",
    ]);
    for (const p of policies) {
      expect(p.description.length).toBeGreaterThan(40);
      expect((p.configSchema!.properties.exemptions as any).items.required).toEqual(["name", "reason"]);
    }
  });
});

describe("headless-in-place", () => {
  const declared = (name = "www", namespace?: string): Obj => ({
    type: K("Service"),
    name,
    props: {
      metadata: { name, ...(namespace ? { namespace } : {}) },
      spec: { clusterIP: "None", selector: { app: name } },
    },
  });
  /** A lookup answering from `live`, recording what it was asked. */
  function cluster(live: Record<string, LiveService | Error | undefined>) {
    const asked: string[] = [];
    const lookup: ServiceLookup = async (provider, namespace, name) => {
      asked.push(`${String(provider?.kubeconfig ?? "ambient")} ${namespace}/${name}`);
      const answer = live[`${namespace}/${name}`];
      if (answer instanceof Error) throw answer;
      return answer;
    };
    return { asked, policy: headlessInPlace(lookup) };
  }

  it("blocks declaring headless a Service that runs with a cluster IP, naming it, the address and what to run instead", async () => {
    const c = cluster({ "prod/www": { type: "ClusterIP", clusterIP: "10.0.0.12", handingOver: false } });
    const out = await runResourceAsync(c.policy, declared("www", "prod"), { kubeconfig: "apiVersion: v1" });
    expect(out.violations).toEqual([
      "Service prod/www runs on the cluster as a ClusterIP Service with cluster IP 10.0.0.12; this update declares it headless, which Kubernetes allows only by deleting it and creating it again, and its name would resolve to nothing in between. Turn it headless in place first: dist/adopt --stack <this stack> headless (docs/adopting.md), then run this update again.",
    ]);
    // Through the provider's kubeconfig, in the Service's namespace ("default" when it names none).
    expect(c.asked).toEqual(["apiVersion: v1 prod/www"]);
    const d = cluster({});
    await runResourceAsync(d.policy, declared("batch"));
    expect(d.asked).toEqual(["ambient default/batch"]);
  });

  it("passes a Service that is headless on the cluster already, or not there yet", async () => {
    const c = cluster({ "default/www": { type: "ClusterIP", clusterIP: "None", handingOver: false } });
    expect((await runResourceAsync(c.policy, declared("www"))).violations).toEqual([]);
    expect((await runResourceAsync(c.policy, declared("notebook"))).violations).toEqual([]);
  });

  it("asks the cluster nothing about Services not declared headless, or other kinds", async () => {
    const c = cluster({});
    await runResourceAsync(c.policy, { type: K("Service"), name: "gateway", props: { spec: { type: "NodePort" } } });
    await runResourceAsync(c.policy, { type: K("ConfigMap"), name: "x", props: { spec: { clusterIP: "None" } } });
    expect(c.asked).toEqual([]);
  });

  it("says to finish a hand-over stopped in the middle", async () => {
    const c = cluster({ "default/www": { type: "ExternalName", handingOver: true } });
    expect((await runResourceAsync(c.policy, declared())).violations).toEqual([
      "Service default/www is being turned headless in place (dist/adopt was stopped in the middle): finish it with dist/adopt --stack <this stack> headless (docs/adopting.md), then run this update again.",
    ]);
  });

  it("blocks, saying why, when the cluster cannot be read", async () => {
    const c = cluster({
      "default/www": new Error(
        "reading Service default/www: cannot reach the Kubernetes API at https://k (ECONNREFUSED)",
      ),
    });
    expect((await runResourceAsync(c.policy, declared())).violations).toEqual([
      "Service default/www could not be compared with the cluster, so this update may replace it: reading Service default/www: cannot reach the Kubernetes API at https://k (ECONNREFUSED)",
    ]);
  });

  it("leaves an exempted Service alone, and skips rendering to a directory (no cluster)", async () => {
    const c = cluster({ "default/www": { type: "ClusterIP", clusterIP: "10.0.0.12", handingOver: false } });
    const exempt = [{ kind: "Service", name: "www", reason: "replaced on purpose in a window" }];
    expect((await runResourceAsync(c.policy, declared(), undefined, exempt)).violations).toEqual([]);
    expect((await runResourceAsync(c.policy, declared(), { renderYamlToDirectory: "out" })).violations).toEqual([]);
    expect(c.asked).toEqual([]);
  });
});
