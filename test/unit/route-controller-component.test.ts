// What the program declares for the route controller (routeSync.inCluster),
// under Pulumi mocks: its objects, their hardening, its narrow Role, its
// NetworkPolicy, its ConfigMap (the config as written, without the
// kubeconfig), and the routes resources waiting for it with no dev/PR
// namespaces of their own.
import { beforeAll, describe, expect, it } from "vitest";
import { declareStack, loadStackConfig } from "../../program/stack.js";
import {
  CONTROLLER_CONFIG_FILES,
  controllerConfigDigest,
  readControllerConfig,
} from "../../routes-provider/controller-config.js";
import type { DevNamespaces } from "../../routing/table.js";
import { minimalRaw } from "./fixtures.js";
import { declaring, named, of, optionsOf, setStackConfig, useMocks } from "./pulumi-mocks.js";

beforeAll(() => useMocks("controller"));

const IMAGE = "registry.example.org/envoy-gateways/route-controller:0.1.0-abc";
const ROUTES = "pulumi-nodejs:dynamic/envoy-gateways:Routes";
const withController = (extra: Record<string, unknown> = {}) => ({
  ...minimalRaw(),
  routeSync: { inCluster: { image: IMAGE, replicas: 3, ...extra } },
});

function stack(raw: Record<string, unknown>, dev: DevNamespaces = {}) {
  setStackConfig(raw);
  return declaring(() => declareStack(loadStackConfig(), dev));
}

describe("the route controller the program declares", () => {
  it("declares nothing of it unless routeSync.inCluster is set", async () => {
    const { resources } = await stack(minimalRaw());
    expect(resources.filter((r) => r.inputs.metadata?.name === "route-controller")).toEqual([]);
  });

  it("declares its ConfigMap, Lease, Role, binding, Deployment, PDB and NetworkPolicy in the gateways' namespace", async () => {
    const { resources } = await stack(withController());
    expect(
      resources
        .filter((r) => r.inputs.metadata?.name === "route-controller")
        .map((r) => `${r.type} ${r.inputs.metadata.namespace}`)
        .sort(),
    ).toEqual([
      "kubernetes:apps/v1:Deployment default",
      "kubernetes:coordination.k8s.io/v1:Lease default",
      "kubernetes:core/v1:ConfigMap default",
      "kubernetes:networking.k8s.io/v1:NetworkPolicy default",
      "kubernetes:policy/v1:PodDisruptionBudget default",
      "kubernetes:rbac.authorization.k8s.io/v1:Role default",
      "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding default",
    ]);
  });

  it("grants only get/update of its Lease and reading its ConfigMap, by name, to the route-sync ServiceAccount", async () => {
    const { resources } = await stack(withController());
    expect(named(resources, "rbac.authorization.k8s.io/v1:Role", "route-controller").inputs.rules).toEqual([
      {
        apiGroups: ["coordination.k8s.io"],
        resources: ["leases"],
        resourceNames: ["route-controller"],
        verbs: ["get", "update"],
      },
      {
        apiGroups: [""],
        resources: ["configmaps"],
        resourceNames: ["route-controller"],
        verbs: ["get", "list", "watch"],
      },
    ]);
    const binding = named(resources, "rbac.authorization.k8s.io/v1:RoleBinding", "route-controller").inputs;
    expect(binding.roleRef).toEqual({ apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "route-controller" });
    expect(binding.subjects).toEqual([
      { kind: "ServiceAccount", name: "envoy-gateways-route-sync", namespace: "default" },
    ]);
  });

  it("runs its replicas as the route-sync identity, non-root, read-only, unprivileged, probed, spread over nodes", async () => {
    const { resources } = await stack(withController());
    const d = named(resources, "apps/v1:Deployment", "route-controller").inputs;
    expect(d.spec.replicas).toBe(3);
    expect(d.spec.strategy).toEqual({ type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });
    const pod = d.spec.template.spec;
    expect(pod.serviceAccountName).toBe("envoy-gateways-route-sync");
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001 });
    expect(pod.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm).toEqual({
      topologyKey: "kubernetes.io/hostname",
      labelSelector: { matchLabels: d.spec.selector.matchLabels },
    });
    const [c] = pod.containers;
    expect(c.image).toBe(IMAGE);
    expect(c.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 10001,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      privileged: false,
      capabilities: { drop: ["ALL"] },
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(c.resources).toEqual({ requests: { cpu: "20m", memory: "256Mi" }, limits: { cpu: "1", memory: "512Mi" } });
    expect(c.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "http" });
    expect(c.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "http" });
    expect(c.env.map((e: { name: string }) => e.name)).toEqual([
      "POD_NAME",
      "POD_NAMESPACE",
      "MALLOC_ARENA_MAX",
      "NODE_OPTIONS",
    ]);
    expect(named(resources, "policy/v1:PodDisruptionBudget", "route-controller").inputs.spec).toEqual({
      maxUnavailable: 1,
      selector: d.spec.selector,
    });
  });

  it("declares its container whole: the port, the downward API, the probes, a writable /tmp only", async () => {
    const { resources } = await stack(withController());
    const d = named(resources, "apps/v1:Deployment", "route-controller").inputs;
    const labels = { "app.kubernetes.io/name": "route-controller", "app.kubernetes.io/component": "route-sync" };
    expect(d.spec.selector).toEqual({ matchLabels: labels });
    expect(d.spec.template.metadata).toEqual({
      labels: { ...labels, "app.kubernetes.io/managed-by": "envoy-gateways" },
      annotations: { "prometheus.io/scrape": "true", "prometheus.io/port": "8080", "prometheus.io/path": "/metrics" },
    });
    const pod = d.spec.template.spec;
    expect(pod.automountServiceAccountToken).toBe(true);
    expect(pod.terminationGracePeriodSeconds).toBe(30);
    expect(pod.securityContext.seccompProfile).toEqual({ type: "RuntimeDefault" });
    expect(pod.topologySpreadConstraints[0].labelSelector).toEqual({ matchLabels: labels });
    const [c] = pod.containers;
    expect(c.name).toBe("route-controller");
    expect(c.args).toEqual(["--port", "8080"]);
    expect(c.ports).toEqual([{ name: "http", containerPort: 8080 }]);
    expect(c.env).toEqual([
      { name: "POD_NAME", valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "metadata.name" } } },
      { name: "POD_NAMESPACE", valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "metadata.namespace" } } },
      // The memory the benchmark measured with them: glibc's arenas and V8's young generation kept small.
      { name: "MALLOC_ARENA_MAX", value: "2" },
      { name: "NODE_OPTIONS", value: "--max-semi-space-size=2" },
    ]);
    expect(c.readinessProbe).toEqual({
      httpGet: { path: "/readyz", port: "http" },
      periodSeconds: 5,
      timeoutSeconds: 5,
      failureThreshold: 2,
    });
    expect(c.livenessProbe).toEqual({
      httpGet: { path: "/healthz", port: "http" },
      periodSeconds: 10,
      timeoutSeconds: 10,
      failureThreshold: 3,
    });
    expect(c.startupProbe).toEqual({
      httpGet: { path: "/healthz", port: "http" },
      periodSeconds: 2,
      timeoutSeconds: 2,
      failureThreshold: 30,
    });
    expect(c.volumeMounts).toEqual([{ name: "tmp", mountPath: "/tmp" }]);
    expect(pod.volumes).toEqual([{ name: "tmp", emptyDir: { sizeLimit: "64Mi" } }]);
    expect(d.metadata.annotations).toEqual({});
    const local = await stack({ ...withController(), skipAwait: true });
    expect(named(local.resources, "apps/v1:Deployment", "route-controller").inputs.metadata.annotations).toEqual({
      "pulumi.com/skipAwait": "true",
    });
  });

  it("lets DNS out to the cluster DNS pods and its extra ranges", async () => {
    const { resources } = await stack({
      ...withController(),
      networkPolicy: { clusterDns: { cidrs: ["169.254.20.10/32"] } },
    });
    const spec = named(resources, "networking.k8s.io/v1:NetworkPolicy", "route-controller").inputs.spec;
    expect(spec.podSelector).toEqual({
      matchLabels: { "app.kubernetes.io/name": "route-controller", "app.kubernetes.io/component": "route-sync" },
    });
    expect(spec.egress[0]).toEqual({
      to: [
        {
          namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "kube-system" } },
          podSelector: { matchLabels: { "k8s-app": "kube-dns" } },
        },
        { ipBlock: { cidr: "169.254.20.10/32" } },
      ],
      ports: [
        { protocol: "UDP", port: 53 },
        { protocol: "TCP", port: 53 },
      ],
    });
    expect(spec.egress).toHaveLength(2);
  });

  it("lets metrics in from the scrapers and only DNS and the API server's ports out", async () => {
    const { resources } = await stack(withController());
    const spec = named(resources, "networking.k8s.io/v1:NetworkPolicy", "route-controller").inputs.spec;
    expect(spec.policyTypes).toEqual(["Ingress", "Egress"]);
    expect(spec.ingress).toEqual([
      {
        from: [
          {
            namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } },
            podSelector: { matchLabels: { "app.kubernetes.io/name": "prometheus" } },
          },
        ],
        ports: [{ protocol: "TCP", port: 8080 }],
      },
    ]);
    expect(spec.egress[1]).toEqual({
      ports: [
        { protocol: "TCP", port: 443 },
        { protocol: "TCP", port: 6443 },
      ],
    });
    const narrowed = await stack({
      ...withController(),
      networkPolicy: { apiServer: { cidrs: ["192.0.2.10/32"], ports: [6443] } },
    });
    expect(
      named(narrowed.resources, "networking.k8s.io/v1:NetworkPolicy", "route-controller").inputs.spec.egress[1],
    ).toEqual({ to: [{ ipBlock: { cidr: "192.0.2.10/32" } }], ports: [{ protocol: "TCP", port: 6443 }] });
    const off = await stack({ ...withController(), networkPolicy: { enabled: false } });
    expect(of(off.resources, "networking.k8s.io/v1:NetworkPolicy")).toEqual([]);
  });

  it("writes the config as written, without the kubeconfig, into its ConfigMap, which reads back as the stack's", async () => {
    const raw = { ...withController(), kubeconfig: "token: s3cr3t" };
    const { resources } = await stack(raw);
    const data = named(resources, "core/v1:ConfigMap", "route-controller").inputs.data as Record<string, string>;
    expect(JSON.stringify(data)).not.toContain("s3cr3t");
    expect(JSON.parse(data[CONTROLLER_CONFIG_FILES.stackConfig]!)).toEqual(withController());
    const read = readControllerConfig(data, "default/route-controller");
    expect(read.config).toEqual(loadStackConfig().config);
    expect(read.targets).toEqual([
      { name: "gateway-routes", gateway: "gateway", namespace: "default", configMap: "gateway-xds" },
      {
        name: "internal-gateway-routes",
        gateway: "internal-gateway",
        namespace: "default",
        configMap: "internal-gateway-xds",
      },
    ]);
  });

  it("gives the routes resources no dev/PR namespaces and the controller's config digest, created after its Deployment", async () => {
    const { resources, options } = await stack(withController(), { "pr-5": ["batch"] });
    const data = named(resources, "core/v1:ConfigMap", "route-controller").inputs.data as Record<string, string>;
    for (const gateway of ["gateway", "internal-gateway"]) {
      const inputs = resources.find((r) => r.type === ROUTES && r.name === `${gateway}-routes`)!.inputs;
      expect(inputs.devNamespaces).toEqual({});
      expect(inputs.controller).toEqual({
        configDigest: controllerConfigDigest(data),
        deployment: "default/route-controller",
      });
      const deps = optionsOf(options, ROUTES, `${gateway}-routes`).dependsOn as unknown[];
      expect(deps).toHaveLength(2);
    }
    // A change to the config is a new digest: the routes resources wait for the controller's write of it.
    const other = await stack(withController({ debounceMs: 500 }));
    const otherData = named(other.resources, "core/v1:ConfigMap", "route-controller").inputs.data;
    expect(controllerConfigDigest(otherData)).not.toBe(controllerConfigDigest(data));
  });

  it("declares the Lease with its spec left to the replicas (never reset by an up)", async () => {
    const { options } = await stack(withController());
    expect(optionsOf(options, "kubernetes:coordination.k8s.io/v1:Lease", "route-controller").ignoreChanges).toEqual([
      "spec",
    ]);
  });
});
