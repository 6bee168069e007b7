// What each component declares in the cluster, field by field, and the
// options the engine is given for it (under Pulumi mocks).
import * as pulumi from "@pulumi/pulumi";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { EnvoyGateway, bootstrapConfigMapName, drainCommand } from "../../components/envoy-gateway.js";
import { HeadlessService } from "../../components/headless-service.js";
import { fromSubjects, RouteSyncAccess } from "../../components/route-sync-access.js";
import { parseStackConfig } from "../../routing/config/load.js";
import type { GatewayName } from "../../routing/config/schema.js";
import { renderGateway } from "../../routing/render.js";
import { buildRoutingTable } from "../../routing/table.js";
import { dataDigest } from "../../routing/units.js";
import { minimalRaw, withValue } from "./fixtures.js";
import { declaring, named, of, optionsOf, useMocks, value } from "./pulumi-mocks.js";

beforeAll(() => useMocks());

/** One gateway of a stack (minimalRaw with `change`), declared on its own. */
async function gateway(
  name: GatewayName = "gateway",
  change: (raw: Record<string, unknown>) => Record<string, unknown> = (r) => r,
  extra: { drainSeconds?: number; skipAwait?: boolean; adoptExisting?: boolean } = {},
) {
  const config = parseStackConfig(change(minimalRaw()));
  const files = renderGateway(config, buildRoutingTable(config), name);
  const declared = await declaring(
    () =>
      new EnvoyGateway(name, {
        gateway: name,
        namespace: "edge",
        image: config.envoyImage,
        settings: config.gateways[name],
        files,
        ...extra,
      }),
  );
  return { ...declared, files, config };
}
const pod = (rs: { type: string; inputs: Record<string, any> }[], name = "gateway") =>
  named(rs as never, "apps/v1:Deployment", name).inputs.spec.template;
const LABELS = {
  "app.kubernetes.io/name": "gateway",
  "app.kubernetes.io/component": "gateway",
  "app.kubernetes.io/managed-by": "envoy-gateways",
};
const POD_LABELS = { "app.kubernetes.io/name": "gateway", "app.kubernetes.io/component": "gateway" };

describe("an Envoy gateway", () => {
  it("declares its objects under the gateway's name in its namespace, labelled as a managed gateway", async () => {
    const { resources, files } = await gateway();
    expect(
      resources
        .map((r) => `${r.type} ${r.inputs.metadata?.namespace ?? "-"}/${r.inputs.metadata?.name ?? r.name}`)
        .sort(),
    ).toEqual([
      "envoy-gateways:gateway:EnvoyGateway -/gateway",
      "kubernetes:apps/v1:Deployment edge/gateway",
      "kubernetes:autoscaling/v2:HorizontalPodAutoscaler edge/gateway",
      `kubernetes:core/v1:ConfigMap edge/${bootstrapConfigMapName("gateway", files)}`,
      "kubernetes:core/v1:ConfigMap edge/gateway-xds",
      "kubernetes:core/v1:Service edge/gateway",
      "kubernetes:core/v1:Service edge/gateway-pods",
      "kubernetes:core/v1:ServiceAccount edge/gateway",
      "kubernetes:policy/v1:PodDisruptionBudget edge/gateway",
    ]);
    for (const r of resources.filter((r) => r.type.startsWith("kubernetes:")))
      expect(r.inputs.metadata.labels, r.type).toEqual(LABELS);
    expect(resources.some((r) => r.inputs.metadata?.annotations?.["pulumi.com/skipAwait"])).toBe(false);
    expect(named(resources, "core/v1:ServiceAccount", "gateway").inputs.automountServiceAccountToken).toBe(false);
  });

  it("loads the rendered files: the bootstrap ConfigMap, and the xDS ConfigMap whose data the routes resource owns from then on", async () => {
    const { resources, options, files } = await gateway();
    const bootstrap = bootstrapConfigMapName("gateway", files);
    expect(bootstrap).toMatch(/^gateway-bootstrap-[0-9a-f]{10}$/);
    expect(named(resources, "core/v1:ConfigMap", bootstrap).inputs.data).toEqual(files.bootstrap);
    expect(named(resources, "core/v1:ConfigMap", "gateway-xds").inputs.data).toEqual(files.xds);
    expect(optionsOf(options, "kubernetes:core/v1:ConfigMap", "gateway-xds").ignoreChanges).toEqual(["data"]);
    expect(optionsOf(options, "kubernetes:core/v1:ConfigMap", "gateway-bootstrap").ignoreChanges).toBeUndefined();
  });

  it("runs Envoy on the bootstrap with one worker per CPU of its limit (at least one), rejecting unknown fields, draining before it stops", async () => {
    for (const [cpu, workers] of [
      ["1", "1"],
      ["250m", "1"],
      ["2500m", "3"],
    ] as const) {
      const { resources } = await gateway(
        "gateway",
        (r) =>
          withValue(
            withValue(r, "gateways.gateway.resources.limits.cpu", cpu),
            "gateways.gateway.resources.requests.cpu",
            "100m",
          ),
        { drainSeconds: 45 },
      );
      const c = pod(resources).spec.containers[0];
      expect(c.command).toEqual(["/usr/local/bin/envoy"]);
      expect(c.args).toEqual([
        "--config-path",
        "/etc/envoy/bootstrap/envoy.yaml",
        "--service-node",
        "$(POD_NAME)",
        "--concurrency",
        workers,
        "--reject-unknown-dynamic-fields",
        "--disable-hot-restart",
        "--drain-time-s",
        "45",
        "--drain-strategy",
        "immediate",
        "--log-level",
        "info",
      ]);
    }
  });

  it("names its pod for Envoy, exposes the listener ports, and probes readiness, liveness and startup", async () => {
    const c = pod((await gateway()).resources).spec.containers[0];
    expect(c.name).toBe("envoy");
    expect(c.image).toBe("envoyproxy/envoy:v1.40.0");
    expect(c.env).toEqual([
      { name: "POD_NAME", valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "metadata.name" } } },
    ]);
    expect(c.ports).toEqual([
      { name: "http", containerPort: 8080 },
      { name: "https", containerPort: 8443 },
      { name: "health", containerPort: 8081 },
      { name: "metrics", containerPort: 9102 },
    ]);
    expect(c.readinessProbe).toEqual({
      httpGet: { path: "/ready", port: "health" },
      periodSeconds: 5,
      failureThreshold: 2,
    });
    expect(c.livenessProbe).toEqual({
      tcpSocket: { port: "health" },
      initialDelaySeconds: 10,
      periodSeconds: 10,
      failureThreshold: 3,
    });
    expect(c.startupProbe).toEqual({
      httpGet: { path: "/ready", port: "health" },
      periodSeconds: 2,
      failureThreshold: 60,
    });
    // CPU and memory from the settings; node disk bounded for its logs (kube-score's ephemeral-storage checks).
    expect(c.resources).toEqual({
      requests: { cpu: "100m", memory: "128Mi", "ephemeral-storage": "64Mi" },
      limits: { cpu: "1", memory: "512Mi", "ephemeral-storage": "256Mi" },
    });
  });

  it("drains on stop: fails health checks, drains listeners gracefully, waits, and gets that long plus 15 s before SIGTERM", async () => {
    const { resources } = await gateway("gateway", (r) => r, { drainSeconds: 45 });
    const p = pod(resources).spec;
    expect(p.terminationGracePeriodSeconds).toBe(60);
    expect(p.containers[0].lifecycle).toEqual({ preStop: { exec: { command: drainCommand(9901, 45) } } });
    const post = (path: string) =>
      `exec 3<>/dev/tcp/127.0.0.1/9901 && printf 'POST ${path} HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nContent-Length: 0\\r\\nConnection: close\\r\\n\\r\\n' >&3 && cat <&3 >/dev/null; exec 3>&-`;
    expect(drainCommand(9901, 45)).toEqual([
      "/bin/bash",
      "-c",
      `${post("/healthcheck/fail")}; ${post("/drain_listeners?graceful")}; sleep 45`,
    ]);
    // Without a drain time: 30 s.
    const defaults = pod((await gateway()).resources).spec;
    expect(defaults.terminationGracePeriodSeconds).toBe(45);
    expect(defaults.containers[0].args.slice(8, 10)).toEqual(["--drain-time-s", "30"]);
  });

  it("runs as user 10101 (above 10000) without privileges, on a read-only root with a small in-memory /tmp", async () => {
    const { resources, files } = await gateway();
    const p = pod(resources).spec;
    expect(p.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 10101,
      runAsGroup: 10101,
      fsGroup: 10101,
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(p.containers[0].securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 10101,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      privileged: false,
      capabilities: { drop: ["ALL"] },
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(p.automountServiceAccountToken).toBe(false);
    expect(p.serviceAccountName).toBe("gateway");
    expect(p.containers[0].volumeMounts).toEqual([
      { name: "bootstrap", mountPath: "/etc/envoy/bootstrap", readOnly: true },
      { name: "xds", mountPath: "/etc/envoy/xds", readOnly: true },
      { name: "server-tls", mountPath: "/etc/envoy/tls/server", readOnly: true },
      { name: "upstream-tls", mountPath: "/etc/envoy/tls/upstream", readOnly: true },
      { name: "tmp", mountPath: "/tmp" },
    ]);
    expect(p.volumes).toEqual([
      { name: "bootstrap", configMap: { name: bootstrapConfigMapName("gateway", files) } },
      { name: "xds", configMap: { name: "gateway-xds" } },
      { name: "server-tls", secret: { secretName: "gateway-tls" } },
      { name: "upstream-tls", secret: { secretName: "gateway-upstream-tls" } },
      { name: "tmp", emptyDir: { medium: "Memory", sizeLimit: "16Mi" } },
    ]);
  });

  it("spreads its pods over nodes and zones, rolls without losing capacity, and is scraped by Prometheus", async () => {
    const { resources, options, files } = await gateway();
    const d = named(resources, "apps/v1:Deployment", "gateway").inputs.spec;
    expect(d.replicas).toBe(2);
    expect(d.selector).toEqual({ matchLabels: POD_LABELS });
    expect(d.strategy).toEqual({ type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });
    expect(d.minReadySeconds).toBe(5);
    expect(d.template.metadata).toEqual({
      labels: POD_LABELS,
      annotations: {
        "envoy-gateways.io/bootstrap-checksum": dataDigest(files.bootstrap),
        "prometheus.io/scrape": "true",
        "prometheus.io/port": "9102",
        "prometheus.io/path": "/stats/prometheus",
      },
    });
    expect(d.template.spec.affinity).toEqual({
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: 100,
            podAffinityTerm: { topologyKey: "kubernetes.io/hostname", labelSelector: { matchLabels: POD_LABELS } },
          },
        ],
      },
    });
    expect(d.template.spec.topologySpreadConstraints).toEqual([
      {
        maxSkew: 1,
        topologyKey: "topology.kubernetes.io/zone",
        whenUnsatisfiable: "ScheduleAnyway",
        labelSelector: { matchLabels: POD_LABELS },
      },
    ]);
    // The autoscaler owns the replica count once the Deployment exists.
    expect(optionsOf(options, "kubernetes:apps/v1:Deployment", "gateway").ignoreChanges).toEqual(["spec.replicas"]);
  });

  it("keeps at most one pod down in a disruption, and scales on CPU between its replicas and its maximum, slowly down", async () => {
    const { resources } = await gateway("gateway", (r) =>
      withValue(withValue(r, "gateways.gateway.maxReplicas", 9), "gateways.gateway.targetCpuUtilization", 55),
    );
    expect(named(resources, "policy/v1:PodDisruptionBudget", "gateway").inputs.spec).toEqual({
      maxUnavailable: 1,
      selector: { matchLabels: POD_LABELS },
    });
    expect(named(resources, "autoscaling/v2:HorizontalPodAutoscaler", "gateway").inputs.spec).toEqual({
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "gateway" },
      minReplicas: 2,
      maxReplicas: 9,
      metrics: [
        { type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 55 } } },
      ],
      behavior: {
        scaleDown: { stabilizationWindowSeconds: 300, policies: [{ type: "Pods", value: 1, periodSeconds: 60 }] },
      },
    });
    expect(
      named((await gateway()).resources, "autoscaling/v2:HorizontalPodAutoscaler", "gateway").inputs.spec.maxReplicas,
    ).toBe(6);
  });

  it("exposes 80 and 443 through its Service, keeping client addresses behind a load balancer or node port, and its address", async () => {
    const lb = await gateway("gateway", (r) =>
      withValue(r, "gateways.gateway.service", {
        loadBalancerIP: "198.51.100.4",
        annotations: { "cloud.example/lb": "internal" },
      }),
    );
    const svc = named(lb.resources, "core/v1:Service", "gateway").inputs;
    expect(svc.metadata.annotations).toEqual({ "cloud.example/lb": "internal" });
    expect(svc.spec).toEqual({
      type: "LoadBalancer",
      selector: POD_LABELS,
      ports: [
        { name: "http", port: 80, targetPort: "http", protocol: "TCP" },
        { name: "https", port: 443, targetPort: "https", protocol: "TCP" },
      ],
      externalTrafficPolicy: "Local",
      loadBalancerIP: "198.51.100.4",
    });
    expect(await value(lb.result.address)).toBe("198.51.100.4");
    expect(optionsOf(lb.options, "kubernetes:core/v1:Service", "gateway").deleteBeforeReplace).toBe(true);
    const hostname = await gateway("gateway", (r) =>
      withValue(r, "gateways.gateway.service", { annotations: { "test/ingress-hostname": "lb.example.net" } }),
    );
    expect(await value(hostname.result.address)).toBe("lb.example.net");
    const nodePort = named(
      (await gateway("gateway", (r) => withValue(r, "gateways.gateway.service", { type: "NodePort" }))).resources,
      "core/v1:Service",
      "gateway",
    ).inputs.spec;
    expect(nodePort).toMatchObject({ type: "NodePort", externalTrafficPolicy: "Local" });
    const clusterIP = await gateway("gateway", (r) => withValue(r, "gateways.gateway.service", { type: "ClusterIP" }));
    expect(named(clusterIP.resources, "core/v1:Service", "gateway").inputs.spec).toEqual({
      type: "ClusterIP",
      selector: POD_LABELS,
      ports: expect.any(Array),
    });
    expect(await value(clusterIP.result.address)).toBeUndefined();
  });

  it("marks every object and the Service for the provider to skip readiness waits when told (local clusters only)", async () => {
    const { resources } = await gateway(
      "gateway",
      (r) => withValue(r, "gateways.gateway.service", { annotations: { "cloud.example/lb": "internal" } }),
      { skipAwait: true },
    );
    for (const r of resources.filter((r) => r.type.startsWith("kubernetes:")))
      expect(r.inputs.metadata.annotations?.["pulumi.com/skipAwait"], r.type).toBe("true");
    expect(named(resources, "core/v1:Service", "gateway").inputs.metadata.annotations).toEqual({
      "cloud.example/lb": "internal",
      "pulumi.com/skipAwait": "true",
    });
  });

  it("for the internal gateway: its own names, labels, Secrets and ConfigMaps", async () => {
    const { resources, files } = await gateway("internal-gateway");
    const p = pod(resources, "internal-gateway");
    expect(p.metadata.labels).toEqual({
      "app.kubernetes.io/name": "internal-gateway",
      "app.kubernetes.io/component": "gateway",
    });
    expect(p.spec.volumes.slice(0, 4).map((v: any) => v.configMap?.name ?? v.secret?.secretName)).toEqual([
      bootstrapConfigMapName("internal-gateway", files),
      "internal-gateway-xds",
      "internal-gateway-tls",
      "internal-gateway-upstream-tls",
    ]);
    expect(named(resources, "core/v1:Service", "internal-gateway").inputs.spec.selector).toEqual({
      "app.kubernetes.io/name": "internal-gateway",
      "app.kubernetes.io/component": "gateway",
    });
  });
});

describe("adopting a running cluster", () => {
  it("sends the gateway Service's traffic to the pods servedBy names (the old gateway's), or else to the Envoy pods", async () => {
    const served = await gateway("gateway", (r) =>
      withValue(r, "gateways.gateway.service", { type: "NodePort", servedBy: { app: "gateway-nginx" } }),
    );
    expect(named(served.resources, "core/v1:Service", "gateway").inputs.spec.selector).toEqual({
      app: "gateway-nginx",
    });
    // Only the entry point moves: the Envoy pods' own headless Service, the PDB and the Deployment still select them.
    expect(named(served.resources, "core/v1:Service", "gateway-pods").inputs.spec.selector).toEqual(POD_LABELS);
    expect(
      named(served.resources, "policy/v1:PodDisruptionBudget", "gateway").inputs.spec.selector.matchLabels,
    ).toEqual(POD_LABELS);
    expect(pod(served.resources).metadata.labels).toEqual(POD_LABELS);
  });

  it("with adoptExisting, force-applies the Services it may find already there, and nothing else", async () => {
    const adopting = await gateway("gateway", (r) => r, { adoptExisting: true });
    const forced = adopting.resources
      .filter((r) => r.inputs.metadata?.annotations?.["pulumi.com/patchForce"] === "true")
      .map((r) => `${r.type} ${r.inputs.metadata.name}`);
    expect(forced).toEqual(["kubernetes:core/v1:Service gateway"]);
    const plain = await gateway("gateway");
    expect(
      plain.resources.filter((r) => r.inputs.metadata?.annotations?.["pulumi.com/patchForce"] !== undefined),
    ).toEqual([]);
    const service = await declaring(
      () => new HeadlessService("www", { serviceName: "www", namespace: "default", replicas: 2, adoptExisting: true }),
    );
    expect(named(service.resources, "core/v1:Service", "www").inputs.metadata.annotations).toEqual({
      "pulumi.com/patchForce": "true",
    });
  });
});

describe("adopting a running cluster, in the preview's words", () => {
  afterEach(() => vi.restoreAllMocks());
  /** Each note logged while `declare` runs, with the name of the resource it is attached to. */
  async function notes(declare: () => Promise<unknown>): Promise<[string, unknown][]> {
    const info = vi.spyOn(pulumi.log, "info").mockResolvedValue();
    info.mockClear();
    await declare();
    return info.mock.calls.map(([text, resource]) => [text, resource]);
  }

  it("says at each Service taken over that it is applied over the running one, and at the gateway Service whose pods serve it", async () => {
    let declared: Awaited<ReturnType<typeof gateway>> | undefined;
    const said = await notes(
      async () =>
        (declared = await gateway(
          "gateway",
          (r) => withValue(r, "gateways.gateway.service", { servedBy: { app: "gateway-nginx", tier: "edge" } }),
          { adoptExisting: true },
        )),
    );
    expect(said).toEqual([
      [
        'Service edge/gateway is adopted if it runs already (adoptExisting): "create" applies the declared fields over it, in place; it is not created twice, replaced or deleted',
        declared!.result.service,
      ],
      [
        "Service edge/gateway sends its traffic to the pods app=gateway-nginx,tier=edge (servedBy), not to this gateway's Envoy pods; removing servedBy is the cutover to Envoy",
        declared!.result.service,
      ],
    ]);
    let www: HeadlessService | undefined;
    const aboutWww = await notes(async () => {
      await declaring(
        () =>
          (www = new HeadlessService("www", {
            serviceName: "www",
            namespace: "prod",
            replicas: 2,
            adoptExisting: true,
          })),
      );
    });
    expect(aboutWww).toEqual([
      [expect.stringMatching(/^Service prod\/www is adopted if it runs already/), www!.service],
    ]);
  });

  it("says nothing when nothing is adopted and Envoy serves", async () => {
    expect(await notes(() => gateway("gateway"))).toEqual([]);
    expect(
      await notes(() =>
        declaring(() => new HeadlessService("www", { serviceName: "www", namespace: "prod", replicas: 2 })),
      ),
    ).toEqual([]);
  });
});

describe("a routed service's headless Service", () => {
  const declare = (args: Partial<ConstructorParameters<typeof HeadlessService>[1]> = {}) =>
    declaring(() => new HeadlessService("batch", { serviceName: "batch", namespace: "default", replicas: 3, ...args }));

  it("is headless on 443 with only ready pods in DNS, labelled with the routing facts", async () => {
    const { resources, options } = await declare();
    expect(resources.map((r) => r.type).sort()).toEqual([
      "envoy-gateways:service:HeadlessService",
      "kubernetes:core/v1:Service",
    ]);
    const svc = named(resources, "core/v1:Service", "batch").inputs;
    expect(svc.metadata).toEqual({
      name: "batch",
      namespace: "default",
      labels: {
        "app.kubernetes.io/managed-by": "envoy-gateways",
        "app.kubernetes.io/component": "routed-service",
        "envoy-gateways.io/service": "batch",
        "envoy-gateways.io/port-name": "https",
        "envoy-gateways.io/port": "443",
        "envoy-gateways.io/protocol": "http",
        "envoy-gateways.io/weight": "100",
        "envoy-gateways.io/replicas": "3",
      },
    });
    expect(svc.spec).toEqual({
      clusterIP: "None",
      selector: { "app.kubernetes.io/name": "batch" },
      publishNotReadyAddresses: false,
      ports: [{ name: "https", port: 443, targetPort: 443, protocol: "TCP" }],
    });
    expect(optionsOf(options, "kubernetes:core/v1:Service", "batch").deleteBeforeReplace).toBe(true);
  });

  it("of one version carries the logical service, the version, its weight and websocket", async () => {
    const { resources } = await declaring(
      () =>
        new HeadlessService("web-green", {
          serviceName: "web-green",
          logicalName: "web",
          version: "green",
          weight: 30,
          websocket: true,
          namespace: "default",
          replicas: 1,
          skipAwait: true,
        }),
    );
    const svc = named(resources, "core/v1:Service", "web-green").inputs;
    expect(svc.metadata.labels).toMatchObject({
      "envoy-gateways.io/service": "web",
      "envoy-gateways.io/version": "green",
      "envoy-gateways.io/weight": "30",
      "envoy-gateways.io/protocol": "websocket",
      "envoy-gateways.io/replicas": "1",
    });
    expect(svc.metadata.annotations).toEqual({ "pulumi.com/skipAwait": "true" });
    expect(svc.spec.selector).toEqual({ "app.kubernetes.io/name": "web-green" });
  });

  it("with an image, also runs its pods: TLS on 443, hardened, bounded, spread, restarted when wedged, rolling without losing capacity, and a disruption budget for several", async () => {
    const { resources } = await declare({ image: "team/batch:1.2.3", skipAwait: true });
    const d = named(resources, "apps/v1:Deployment", "batch").inputs;
    expect(d.metadata).toMatchObject({
      name: "batch",
      namespace: "default",
      annotations: { "pulumi.com/skipAwait": "true" },
    });
    expect(d.metadata.labels["envoy-gateways.io/service"]).toBe("batch");
    expect(d.spec).toEqual({
      replicas: 3,
      selector: { matchLabels: { "app.kubernetes.io/name": "batch" } },
      strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template: {
        metadata: { labels: { "app.kubernetes.io/name": "batch" } },
        spec: {
          automountServiceAccountToken: false,
          securityContext: {
            runAsNonRoot: true,
            seccompProfile: { type: "RuntimeDefault" },
            sysctls: [{ name: "net.ipv4.ip_unprivileged_port_start", value: "443" }],
          },
          // One pod per node where the nodes allow.
          affinity: {
            podAntiAffinity: {
              preferredDuringSchedulingIgnoredDuringExecution: [
                {
                  weight: 100,
                  podAffinityTerm: {
                    topologyKey: "kubernetes.io/hostname",
                    labelSelector: { matchLabels: { "app.kubernetes.io/name": "batch" } },
                  },
                },
              ],
            },
          },
          topologySpreadConstraints: [
            {
              maxSkew: 1,
              topologyKey: "topology.kubernetes.io/zone",
              whenUnsatisfiable: "ScheduleAnyway",
              labelSelector: { matchLabels: { "app.kubernetes.io/name": "batch" } },
            },
          ],
          containers: [
            {
              name: "batch",
              image: "team/batch:1.2.3",
              ports: [{ name: "https", containerPort: 443 }],
              readinessProbe: { tcpSocket: { port: "https" }, periodSeconds: 5 },
              livenessProbe: { tcpSocket: { port: "https" }, periodSeconds: 10, failureThreshold: 3 },
              // The defaults, with no resources in the stack config.
              resources: { requests: { cpu: "100m", memory: "128Mi" }, limits: { cpu: "1", memory: "512Mi" } },
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ["ALL"] },
              },
              volumeMounts: [{ name: "tls", mountPath: "/etc/tls", readOnly: true }],
            },
          ],
          // Its serving certificate, for its Service name: the Secret <name>-tls.
          volumes: [{ name: "tls", secret: { secretName: "batch-tls" } }],
        },
      },
    });
    const pdb = named(resources, "policy/v1:PodDisruptionBudget", "batch").inputs;
    expect(pdb.metadata).toEqual({ name: "batch", namespace: "default", labels: d.metadata.labels });
    expect(pdb.spec).toEqual({ maxUnavailable: 1, selector: { matchLabels: { "app.kubernetes.io/name": "batch" } } });
    // Resources from the stack config.
    const sized = { requests: { cpu: "250m", memory: "1Gi" }, limits: { cpu: "2", memory: "2Gi" } };
    expect(
      named((await declare({ image: "team/batch:1.2.3", resources: sized })).resources, "apps/v1:Deployment", "batch")
        .inputs.spec.template.spec.containers[0].resources,
    ).toEqual(sized);
    // A single pod gets no disruption budget (it would block every drain).
    expect(
      of((await declare({ image: "team/batch:1.2.3", replicas: 1 })).resources, "policy/v1:PodDisruptionBudget"),
    ).toEqual([]);
  });
});

describe("the route-sync identity's access", () => {
  it("lists and watches namespaces and Services, and writes only the named ConfigMaps and the gateway pods, bound to its ServiceAccount", async () => {
    const { resources } = await declaring(
      () =>
        new RouteSyncAccess("route-sync", {
          namespace: "edge",
          protectedNamespaces: ["kube-system"],
          configMaps: ["gateway-xds"],
          gateways: ["gateway"],
        }),
    );
    const labels = { "app.kubernetes.io/managed-by": "envoy-gateways", "app.kubernetes.io/component": "route-sync" };
    const subjects = [{ kind: "ServiceAccount", name: "envoy-gateways-route-sync", namespace: "edge" }];
    expect(named(resources, "core/v1:ServiceAccount", "envoy-gateways-route-sync").inputs.metadata).toEqual({
      name: "envoy-gateways-route-sync",
      namespace: "edge",
      labels,
    });
    expect(
      named(resources, "rbac.authorization.k8s.io/v1:ClusterRole", "envoy-gateways-route-sync-discover-edge").inputs,
    ).toEqual({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "envoy-gateways-route-sync-discover-edge", labels },
      rules: [{ apiGroups: [""], resources: ["namespaces", "services"], verbs: ["list", "watch"] }],
    });
    expect(
      named(resources, "rbac.authorization.k8s.io/v1:ClusterRoleBinding", "envoy-gateways-route-sync-discover-edge")
        .inputs,
    ).toEqual({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: "envoy-gateways-route-sync-discover-edge", labels },
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: "envoy-gateways-route-sync-discover-edge",
      },
      subjects,
    });
    expect(named(resources, "rbac.authorization.k8s.io/v1:Role", "envoy-gateways-route-sync-write").inputs).toEqual({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "envoy-gateways-route-sync-write", namespace: "edge", labels },
      rules: [
        { apiGroups: [""], resources: ["configmaps"], resourceNames: ["gateway-xds"], verbs: ["get", "patch"] },
        { apiGroups: [""], resources: ["pods"], verbs: ["list", "patch"] },
      ],
    });
    expect(
      named(resources, "rbac.authorization.k8s.io/v1:RoleBinding", "envoy-gateways-route-sync-write").inputs,
    ).toEqual({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "envoy-gateways-route-sync-write", namespace: "edge", labels },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "envoy-gateways-route-sync-write" },
      subjects,
    });
  });

  it("binds other subjects instead when given", async () => {
    const ci = [{ kind: "User", name: "ci@example.org", apiGroup: "rbac.authorization.k8s.io" }];
    const { resources } = await declaring(
      () =>
        new RouteSyncAccess("route-sync", {
          namespace: "edge",
          protectedNamespaces: ["kube-system"],
          configMaps: [],
          gateways: ["gateway"],
          subjects: ci,
        }),
    );
    expect(
      named(resources, "rbac.authorization.k8s.io/v1:ClusterRoleBinding", "envoy-gateways-route-sync-discover-edge")
        .inputs.subjects,
    ).toEqual(ci);
    expect(
      named(resources, "rbac.authorization.k8s.io/v1:RoleBinding", "envoy-gateways-route-sync-write").inputs.subjects,
    ).toEqual(ci);
  });

  it("lets its pod patches through an admission policy on the gateways' namespace, bound before the Role that grants them", async () => {
    const { resources, options } = await declaring(
      () =>
        new RouteSyncAccess("route-sync", {
          namespace: "edge",
          protectedNamespaces: ["kube-system"],
          configMaps: [],
          gateways: ["gateway", "internal-gateway"],
        }),
    );
    const name = "envoy-gateways-route-sync-pods-edge";
    const policy = named(resources, "admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", name).inputs.spec;
    expect(policy.failurePolicy).toBe("Fail");
    expect(policy.matchConstraints).toEqual({
      namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "edge" } },
      resourceRules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["UPDATE"], resources: ["pods"] }],
    });
    expect(policy.matchConditions).toEqual([
      {
        name: "route-sync-identity",
        expression: 'request.userInfo.username == "system:serviceaccount:edge:envoy-gateways-route-sync"',
      },
    ]);
    // The CEL the real API server ran in test/e2e/gateway-pods.test.ts (its refusals asserted there).
    const only = "the route-sync identity may only set the envoy-gateways.io/xds-digest annotation on the gateway pods";
    expect(policy.variables).toEqual([
      { name: "labels", expression: "oldObject.metadata.?labels.orValue({})" },
      { name: "annotations", expression: "object.metadata.?annotations.orValue({})" },
      { name: "oldAnnotations", expression: "oldObject.metadata.?annotations.orValue({})" },
    ]);
    expect(policy.validations).toEqual([
      {
        expression:
          'variables.labels[?"app.kubernetes.io/component"].orValue("") == "gateway" && ' +
          'variables.labels[?"app.kubernetes.io/name"].orValue("") in ["gateway","internal-gateway"]',
        messageExpression: `"${only}; " + oldObject.metadata.name + " is not one"`,
        reason: "Forbidden",
      },
      {
        expression:
          "object.spec == oldObject.spec && object.metadata.?labels.orValue({}) == variables.labels && " +
          "object.metadata.?ownerReferences.orValue([]) == oldObject.metadata.?ownerReferences.orValue([]) && " +
          "object.metadata.?finalizers.orValue([]) == oldObject.metadata.?finalizers.orValue([])",
        message: `${only}; its spec, labels, owners and finalizers stay as they are`,
        reason: "Forbidden",
      },
      {
        expression:
          'variables.annotations.filter(k, k != "envoy-gateways.io/xds-digest").all(k, k in variables.oldAnnotations && variables.oldAnnotations[k] == variables.annotations[k]) && ' +
          'variables.oldAnnotations.filter(k, k != "envoy-gateways.io/xds-digest").all(k, k in variables.annotations)',
        message: `${only}; no other annotation changes`,
        reason: "Forbidden",
      },
    ]);
    expect(
      named(resources, "admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding", name).inputs.spec,
    ).toEqual({ policyName: name, validationActions: ["Deny"] });
    const dependsOn = optionsOf(options, "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "route-sync-write")
      .dependsOn as pulumi.Resource[];
    expect(await Promise.all(dependsOn.map((r) => value(r.urn)))).toEqual([
      expect.stringMatching(/ValidatingAdmissionPolicyBinding::route-sync-pods$/),
    ]);
  });

  it("may patch Services and create Events cluster-wide only through the status admission policy, bound before the ClusterRole", async () => {
    const { resources, options } = await declaring(
      () =>
        new RouteSyncAccess("route-sync", {
          namespace: "edge",
          protectedNamespaces: ["kube-system", "kube-public"],
          configMaps: [],
          gateways: ["gateway"],
        }),
    );
    const name = "envoy-gateways-route-sync-status-edge";
    expect(named(resources, "rbac.authorization.k8s.io/v1:ClusterRole", name).inputs.rules).toEqual([
      { apiGroups: [""], resources: ["services"], verbs: ["patch"] },
      { apiGroups: [""], resources: ["events"], verbs: ["create"] },
    ]);
    expect(named(resources, "rbac.authorization.k8s.io/v1:ClusterRoleBinding", name).inputs.subjects).toEqual([
      { kind: "ServiceAccount", name: "envoy-gateways-route-sync", namespace: "edge" },
    ]);
    const policy = named(resources, "admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", name).inputs.spec;
    expect(policy.failurePolicy).toBe("Fail");
    // Every namespace: dev/PR namespaces come and go.
    expect(policy.matchConstraints).toEqual({
      resourceRules: [
        { apiGroups: [""], apiVersions: ["v1"], operations: ["UPDATE"], resources: ["services"] },
        { apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["events"] },
      ],
    });
    expect(policy.matchConditions).toEqual([
      {
        name: "route-sync-identity",
        expression: 'request.userInfo.username == "system:serviceaccount:edge:envoy-gateways-route-sync"',
      },
    ]);
    // The CEL the real API server ran in test/e2e/routes.test.ts (its refusals asserted there).
    const validations = policy.validations as { expression: string; message?: string }[];
    expect(validations[0]!.expression).toBe(
      'request.resource.resource != "services" || (variables.labels[?"envoy-gateways.io/service"].hasValue() && ' +
        '!(oldObject.metadata.namespace in ["edge","kube-system","kube-public"]))',
    );
    expect(
      validations
        .slice(1, 3)
        .map((v) => [v.expression.startsWith('request.resource.resource != "services" || ('), v.message]),
    ).toEqual([
      [
        true,
        "the route-sync identity may only set the envoy-gateways.io/routes annotation on routed dev/PR Services; its spec, labels, owners and finalizers stay as they are",
      ],
      [
        true,
        "the route-sync identity may only set the envoy-gateways.io/routes annotation on routed dev/PR Services; no other annotation changes",
      ],
    ]);
    expect(validations[2]!.expression).toContain('variables.annotations.filter(k, k != "envoy-gateways.io/routes")');
    expect(validations[0]).toMatchObject({
      messageExpression:
        '"the route-sync identity may only set the envoy-gateways.io/routes annotation on routed dev/PR Services; " + oldObject.metadata.namespace + "/" + oldObject.metadata.name + " is not one"',
      reason: "Forbidden",
    });
    expect(validations[3]).toMatchObject({
      message:
        "the route-sync identity may only create route status Events (source envoy-gateways-route-sync, reason Routed, NotRouted, RouteWarning) about Services and namespaces",
      reason: "Forbidden",
    });
    // Events have no old object: the variables are read only for Services.
    expect(policy.variables).toEqual([
      {
        name: "labels",
        expression: 'request.resource.resource == "services" ? oldObject.metadata.?labels.orValue({}) : {}',
      },
      {
        name: "annotations",
        expression: 'request.resource.resource == "services" ? object.metadata.?annotations.orValue({}) : {}',
      },
      {
        name: "oldAnnotations",
        expression: 'request.resource.resource == "services" ? oldObject.metadata.?annotations.orValue({}) : {}',
      },
    ]);
    expect(validations[3]!.expression).toBe(
      'request.resource.resource != "events" || (object.?source.component.orValue("") == "envoy-gateways-route-sync" && ' +
        'object.reason in ["Routed","NotRouted","RouteWarning"] && object.involvedObject.kind in ["Service", "Namespace"])',
    );
    const dependsOn = optionsOf(
      options,
      "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
      "route-sync-status",
    ).dependsOn as pulumi.Resource[];
    expect(await Promise.all(dependsOn.map((r) => value(r.urn)))).toEqual([
      expect.stringMatching(/ValidatingAdmissionPolicyBinding::route-sync-status$/),
    ]);
  });

  it("recognises each kind of subject RBAC binds in the policy's condition on the request", async () => {
    const condition = await value(
      fromSubjects([
        { kind: "ServiceAccount", name: "sync", namespace: "ci" },
        { kind: "User", name: "ci@example.org", apiGroup: "rbac.authorization.k8s.io" },
        { kind: "Group", name: "ci-runners", apiGroup: "rbac.authorization.k8s.io" },
      ]),
    );
    expect(condition).toBe(
      'request.userInfo.username == "system:serviceaccount:ci:sync" || ' +
        'request.userInfo.username == "ci@example.org" || "ci-runners" in request.userInfo.groups',
    );
  });

  it("names its cluster-wide objects after the gateways' namespace, so two stacks on one cluster do not share them", async () => {
    const { resources } = await declaring(() => [
      new RouteSyncAccess("prod", {
        namespace: "edge",
        protectedNamespaces: ["kube-system"],
        configMaps: [],
        gateways: ["gateway"],
      }),
      new RouteSyncAccess("dev", {
        namespace: "edge-dev",
        protectedNamespaces: ["kube-system"],
        configMaps: [],
        gateways: ["gateway"],
      }),
    ]);
    const clusterWide = (type: string) =>
      of(resources, `rbac.authorization.k8s.io/v1:${type}`)
        .map((r) => r.inputs.metadata.name)
        .sort();
    const names = [
      "envoy-gateways-route-sync-discover-edge",
      "envoy-gateways-route-sync-discover-edge-dev",
      "envoy-gateways-route-sync-status-edge",
      "envoy-gateways-route-sync-status-edge-dev",
    ];
    expect(clusterWide("ClusterRole")).toEqual(names);
    expect(
      of(resources, "admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy")
        .map((r) => r.inputs.metadata.name)
        .sort(),
    ).toEqual([
      "envoy-gateways-route-sync-pods-edge",
      "envoy-gateways-route-sync-pods-edge-dev",
      "envoy-gateways-route-sync-status-edge",
      "envoy-gateways-route-sync-status-edge-dev",
    ]);
    expect(clusterWide("ClusterRoleBinding")).toEqual(names);
    expect(
      of(resources, "rbac.authorization.k8s.io/v1:ClusterRoleBinding")
        .map((r) => r.inputs.roleRef.name)
        .sort(),
    ).toEqual(names);
  });
});
