// The Pulumi program under mocks: what it declares for each stack.
import * as pulumi from "@pulumi/pulumi";
import { beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { StackConfig } from "../../routing/config/schema.js";
import { parseStackConfig } from "../../routing/config/load.js";
import { routingConfig } from "../../routing/config/schema.js";
import { renderGateways } from "../../routing/render.js";
import { buildRoutingTable } from "../../routing/table.js";
import { rawStack, withValue } from "./fixtures.js";
import { headlessInPlace, policies } from "../../policy/policies.js";
import { bootstrapConfigMapName } from "../../components/envoy-gateway.js";
import { runResource, runResourceAsync, runStack, type Obj } from "./policy-engine.js";

interface Declared {
  type: string;
  name: string;
  inputs: Record<string, any>;
}
let declared: Declared[] = [];

/** Discovery as the program runs it (the cluster's is tested in e2e): what it was asked, what it finds. */
const discovery = vi.hoisted(() => ({ calls: 0, found: { "pr-7": ["ci"] } as Record<string, string[]> }));
vi.mock("../../program/discover.js", () => ({
  discoverDevNamespaces: async () => {
    discovery.calls++;
    return discovery.found;
  },
}));

beforeAll(async () => {
  await pulumi.runtime.setMocks(
    {
      newResource(args) {
        declared.push({ type: args.type, name: args.name, inputs: args.inputs });
        const state = { ...args.inputs };
        if (args.type === "kubernetes:core/v1:Service" && args.inputs.spec?.type === "LoadBalancer") {
          state.status = { loadBalancer: { ingress: [{ ip: args.inputs.spec.loadBalancerIP ?? "203.0.113.7" }] } };
        }
        return { id: `${args.name}-id`, state };
      },
      call: (args) => args.inputs,
    },
    "envoy-gateways",
    "test",
    false,
  );
});

// The mocks' pending registrations; waitForRPCs is how the SDK itself waits for them.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a module path its package does not export
const settings = require("@pulumi/pulumi/runtime/settings") as { waitForRPCs(): Promise<void> };

async function run(raw: Record<string, unknown>) {
  declared = [];
  const all: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) all[`envoy-gateways:${k}`] = typeof v === "string" ? v : JSON.stringify(v);
  pulumi.runtime.setAllConfig(all, raw.kubeconfig ? ["envoy-gateways:kubeconfig"] : []);
  const { declareStack, loadStackConfig } = await import("../../program/stack.js");
  const outputs = declareStack(loadStackConfig());
  await settings.waitForRPCs();
  return { outputs, resources: declared };
}

/** The engine's config for raw stack config (objects as JSON text). */
function setConfig(raw: Record<string, unknown>) {
  const all: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) all[`envoy-gateways:${k}`] = typeof v === "string" ? v : JSON.stringify(v);
  pulumi.runtime.setAllConfig(all, []);
}

const of = (rs: Declared[], type: string) => rs.filter((r) => r.type === `kubernetes:${type}`);
const named = (rs: Declared[], type: string, name: string) =>
  of(rs, type).find((r) => r.inputs.metadata?.name === name)!;
const promise = <T>(o: pulumi.Output<T>) => new Promise<T>((resolve) => o.apply(resolve));

describe.each(["dev", "prod"] as const)("the %s stack", (stack) => {
  let resources: Declared[];
  let config: StackConfig;
  // Declared in each test (not once in a beforeAll): a mutation run then sees which tests reach which code.
  beforeEach(async () => {
    config = parseStackConfig(rawStack(stack));
    resources = (await run(rawStack(stack))).resources;
  });

  it("declares a headless Service on 443 with the routing labels for every routed service, and no other kind", () => {
    const routed = of(resources, "core/v1:Service").filter(
      (s) => s.inputs.metadata.labels["app.kubernetes.io/component"] === "routed-service",
    );
    expect(routed.map((s) => s.inputs.metadata.name).sort()).toEqual(config.services.map((s) => s.name).sort());
    for (const s of routed) {
      expect(s.inputs.spec.clusterIP).toBe("None");
      expect(s.inputs.spec.ports).toEqual([{ name: "https", port: 443, targetPort: 443, protocol: "TCP" }]);
      const spec = config.services.find((c) => c.name === s.inputs.metadata.name)!;
      expect(s.inputs.metadata.labels).toMatchObject({
        "envoy-gateways.io/service": spec.name,
        "envoy-gateways.io/port": "443",
        "envoy-gateways.io/port-name": "https",
        "envoy-gateways.io/weight": "100",
        "envoy-gateways.io/replicas": String(spec.replicas),
        "envoy-gateways.io/protocol": spec.websocket ? "websocket" : "http",
      });
    }
  });

  it("runs each gateway's Envoy hardened: non-root, read-only root, no escalation, no capabilities, seccomp, resources, probes", () => {
    for (const gateway of ["gateway", "internal-gateway"] as const) {
      const d = named(resources, "apps/v1:Deployment", gateway);
      const pod = d.inputs.spec.template.spec;
      const c = pod.containers[0];
      expect(c.image).toBe(config.envoyImage);
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } });
      expect(c.securityContext).toMatchObject({
        runAsNonRoot: true,
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ["ALL"] },
        seccompProfile: { type: "RuntimeDefault" },
      });
      const { requests, limits } = config.gateways[gateway].resources;
      expect(c.resources).toEqual({
        requests: { ...requests, "ephemeral-storage": "64Mi" },
        limits: { ...limits, "ephemeral-storage": "256Mi" },
      });
      expect(c.readinessProbe.httpGet).toEqual({ path: "/ready", port: "health" });
      expect(c.livenessProbe.tcpSocket).toEqual({ port: "health" });
      expect(c.ports.map((p: any) => p.containerPort)).toEqual([8080, 8443, 8081, 9102]);
      expect(c.ports.every((p: any) => p.containerPort > 1024)).toBe(true);
      expect(c.lifecycle.preStop.exec.command.join(" ")).toContain("drain_listeners?graceful");
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(config.edge.drainSeconds);
      expect(d.inputs.spec.strategy.rollingUpdate).toEqual({ maxUnavailable: 0, maxSurge: 1 });
      expect(
        pod.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey,
      ).toBe("kubernetes.io/hostname");
      expect(d.inputs.spec.template.metadata.annotations).toMatchObject({
        "prometheus.io/scrape": "true",
        "prometheus.io/port": "9102",
        "prometheus.io/path": "/stats/prometheus",
      });
    }
  });

  it("gives each gateway a PodDisruptionBudget and an autoscaler from its replicas", () => {
    for (const gateway of ["gateway", "internal-gateway"] as const) {
      expect(named(resources, "policy/v1:PodDisruptionBudget", gateway).inputs.spec).toEqual({
        maxUnavailable: 1,
        selector: { matchLabels: { "app.kubernetes.io/name": gateway, "app.kubernetes.io/component": "gateway" } },
      });
      const hpa = named(resources, "autoscaling/v2:HorizontalPodAutoscaler", gateway).inputs.spec;
      expect(hpa.minReplicas).toBe(config.gateways[gateway].replicas);
      expect(hpa.maxReplicas).toBe(config.gateways[gateway].maxReplicas ?? config.gateways[gateway].replicas * 3);
      expect(hpa.scaleTargetRef).toEqual({ apiVersion: "apps/v1", kind: "Deployment", name: gateway });
    }
  });

  it("fills the xDS ConfigMap with exactly the validated documents the routing core renders, and the bootstrap likewise", () => {
    const files = renderGateways(config, buildRoutingTable(config));
    for (const f of files) {
      expect(named(resources, "core/v1:ConfigMap", `${f.gateway}-xds`).inputs.data).toEqual(f.xds);
      expect(named(resources, "core/v1:ConfigMap", bootstrapConfigMapName(f.gateway, f)).inputs.data).toEqual(
        f.bootstrap,
      );
    }
  });

  it("exposes the gateway on 80 and 443 through its Service", () => {
    const s = named(resources, "core/v1:Service", "gateway").inputs.spec;
    expect(s.ports).toEqual([
      { name: "http", port: 80, targetPort: "http", protocol: "TCP" },
      { name: "https", port: 443, targetPort: "https", protocol: "TCP" },
    ]);
    expect(s.type).toBe(config.gateways.gateway.service.type);
    if (s.type === "LoadBalancer") expect(s.externalTrafficPolicy).toBe("Local");
  });

  it("declares the headless Service of each gateway's pods, the name its Envoys resolve to count them", () => {
    for (const gateway of ["gateway", "internal-gateway"]) {
      const s = named(resources, "core/v1:Service", `${gateway}-pods`).inputs;
      expect(s.metadata.namespace).toBe(config.namespace);
      expect(s.spec).toEqual({
        clusterIP: "None",
        selector: named(resources, "apps/v1:Deployment", gateway).inputs.spec.selector.matchLabels,
        publishNotReadyAddresses: false,
        ports: [{ name: "https", port: 443, targetPort: "https", protocol: "TCP" }],
      });
      const bootstrap = of(resources, "core/v1:ConfigMap").find((c) =>
        (c.inputs.metadata.name as string).startsWith(`${gateway}-bootstrap-`),
      )!.inputs.data["envoy.yaml"] as string;
      expect(bootstrap).toContain(`address: "${gateway}-pods.${config.namespace}.svc.${config.clusterDomain}"`);
    }
  });

  it("passes every policy of the pack (a gateway Service is an entry point; every routed Service is headless)", async () => {
    const objs: Obj[] = resources
      .filter((r) => r.type.startsWith("kubernetes:"))
      .map((r) => ({ type: r.type, name: r.name, props: r.inputs }));
    // The one policy that reads the cluster, on an empty one (the program's own objects, not there yet).
    const readsCluster = "headless-in-place";
    const emptyCluster = headlessInPlace(async () => undefined);
    for (const policy of [...policies.filter((p) => p.name !== readsCluster), emptyCluster]) {
      const outcome =
        "validateStack" in policy
          ? runStack(policy, objs)
          : policy.name === readsCluster
            ? (await Promise.all(objs.map((o) => runResourceAsync(policy, o)))).reduce(
                (a, b) => ({ violations: [...a.violations, ...b.violations] }),
                { violations: [] as string[] },
              )
            : objs
                .map((o) => runResource(policy, o))
                .reduce((a, b) => ({ violations: [...a.violations, ...b.violations] }), { violations: [] as string[] });
      expect(outcome.violations, policy.name).toEqual([]);
    }
  });

  it("never adds the skip-await annotation (meant only for a cluster without a kubelet)", () => {
    expect(resources.some((r) => r.inputs.metadata?.annotations?.["pulumi.com/skipAwait"])).toBe(false);
  });
});

describe("routes and route-sync access", () => {
  it("gives each gateway a routes resource owning its xDS ConfigMap, given the facts: routing config and the discovered dev/PR namespaces", async () => {
    declared = [];
    const all: Record<string, string> = {};
    for (const [k, v] of Object.entries(rawStack("dev")))
      all[`envoy-gateways:${k}`] = typeof v === "string" ? v : JSON.stringify(v);
    pulumi.runtime.setAllConfig(all, []);
    const { declareStack, loadStackConfig } = await import("../../program/stack.js");
    const discovered = { "pr-5": ["batch"] };
    declareStack(loadStackConfig(), discovered);
    await settings.waitForRPCs();
    const routes = declared.filter((r) => r.type.endsWith(":Routes"));
    expect(routes.map((r) => r.name).sort()).toEqual(["gateway-routes", "internal-gateway-routes"]);
    const gw = routes.find((r) => r.name === "gateway-routes")!.inputs;
    expect(gw).toMatchObject({ gateway: "gateway", namespace: "default", configMap: "gateway-xds" });
    expect(gw.devNamespaces).toEqual(discovered);
    expect(gw.config).toEqual(routingConfig(parseStackConfig(rawStack("dev"))));
    // The routes are derived by the provider's check, not given.
    expect(gw.routes).toBeUndefined();
    expect(gw.kubeconfig).toBeUndefined();
    // Only the engine run that records a sync gives what the sync wrote.
    expect(gw.syncWrite).toBeUndefined();
    // The component's ConfigMap starts with the production routes only.
    expect(named(declared, "core/v1:ConfigMap", "gateway-xds").inputs.data["rds.yaml"]).not.toContain("/pr-5/batch");
  });

  it("as the record step of a sync runs it: its namespaces, not a discovery, and each routes resource what the sync wrote into its ConfigMap", async () => {
    declared = [];
    setConfig(rawStack("dev"));
    const { runProgram } = await import("../../program/main.js");
    discovery.calls = 0;
    const sync = {
      devNamespaces: { "pr-5": ["batch"] },
      renderedAt: "2026-11-30T10:20:00.000Z",
      written: { gateway: "a".repeat(64), "internal-gateway": "b".repeat(64) },
    };
    // As the engine runs it: inside the stack resource.
    const outputs = (await pulumi.runtime.runInPulumiStack(() => runProgram(sync))) as Awaited<
      ReturnType<typeof runProgram>
    >;
    await settings.waitForRPCs();
    expect(discovery.calls).toBe(0);
    const routes = Object.fromEntries(
      declared.filter((r) => r.type.endsWith(":Routes")).map((r) => [r.name, r.inputs] as const),
    );
    expect(routes["gateway-routes"]!.devNamespaces).toEqual(sync.devNamespaces);
    expect(routes["gateway-routes"]!.syncWrite).toEqual({ renderedAt: sync.renderedAt, digest: "a".repeat(64) });
    expect(routes["internal-gateway-routes"]!.syncWrite).toEqual({
      renderedAt: sync.renderedAt,
      digest: "b".repeat(64),
    });
    expect(outputs.routes.gateway.some((l) => l.startsWith("https://internal.dev.example.org/pr-5/batch ->"))).toBe(
      true,
    );
  });

  it("as the engine runs it (index.ts): discovers the namespaces itself, and gives no syncWrite", async () => {
    declared = [];
    setConfig(rawStack("dev"));
    const { runProgram } = await import("../../program/main.js");
    discovery.calls = 0;
    const outputs = (await pulumi.runtime.runInPulumiStack(() => runProgram())) as Awaited<
      ReturnType<typeof runProgram>
    >;
    await settings.waitForRPCs();
    expect(discovery.calls).toBe(1);
    const routes = declared.filter((r) => r.type.endsWith(":Routes"));
    expect(routes).toHaveLength(2);
    for (const r of routes) {
      expect(r.inputs.devNamespaces).toEqual({ "pr-7": ["ci"] });
      expect(r.inputs).not.toHaveProperty("syncWrite");
    }
    expect(Object.keys(outputs).sort()).toEqual(["gateways", "routes"]);
  });

  it("passes the kubeconfig to the Kubernetes provider and both routes resources only as a secret, and never in their config", async () => {
    const kubeconfig = "apiVersion: v1\nkind: Config\nusers: [{name: u, user: {token: s3cr3t-t0ken}}]\n";
    const { resources } = await run({ ...rawStack("dev"), kubeconfig });
    const secret = { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", value: kubeconfig };
    const routes = resources.filter((r) => r.type.endsWith(":Routes"));
    expect(routes).toHaveLength(2);
    for (const r of routes) {
      expect(r.inputs.kubeconfig).toEqual(secret);
      expect(JSON.stringify(r.inputs.config)).not.toContain("s3cr3t");
    }
    expect(resources.find((r) => r.type === "pulumi:providers:kubernetes")!.inputs.kubeconfig).toEqual(secret);
  });

  it("refuses a kubeconfig set in plain text, without showing it", async () => {
    pulumi.runtime.setAllConfig(
      {
        ...Object.fromEntries(
          Object.entries(rawStack("dev")).map(([k, v]) => [
            `envoy-gateways:${k}`,
            typeof v === "string" ? v : JSON.stringify(v),
          ]),
        ),
        "envoy-gateways:kubeconfig": "token: s3cr3t-t0ken",
      },
      [],
    );
    const { loadStackConfig } = await import("../../program/stack.js");
    expect(() => loadStackConfig()).toThrow(
      /envoy-gateways:kubeconfig: is plain text in the stack's config; set it as a secret/,
    );
    expect(() => loadStackConfig()).not.toThrow(/s3cr3t/);
  });

  it("declares least-privilege RBAC for the route-sync identity", async () => {
    const { resources } = await run(rawStack("dev"));
    expect(
      named(resources, "rbac.authorization.k8s.io/v1:ClusterRole", "envoy-gateways-route-sync-discover-default").inputs
        .rules,
    ).toEqual([{ apiGroups: [""], resources: ["namespaces", "services"], verbs: ["list", "watch"] }]);
    expect(
      named(resources, "rbac.authorization.k8s.io/v1:Role", "envoy-gateways-route-sync-write").inputs.rules,
    ).toEqual([
      {
        apiGroups: [""],
        resources: ["configmaps"],
        resourceNames: ["gateway-xds", "internal-gateway-xds"],
        verbs: ["get", "patch"],
      },
      { apiGroups: [""], resources: ["pods"], verbs: ["list", "patch"] },
    ]);
    expect(
      named(resources, "rbac.authorization.k8s.io/v1:Role", "envoy-gateways-route-sync-write").inputs.metadata
        .namespace,
    ).toBe("default");
  });
});

describe("the prod stack's Services", () => {
  it("use a static IP on the external gateway and the internal load-balancer annotation on the internal one", async () => {
    const { resources, outputs } = await run(rawStack("prod"));
    expect(named(resources, "core/v1:Service", "gateway").inputs.spec.loadBalancerIP).toBe("35.188.91.25");
    expect(named(resources, "core/v1:Service", "internal-gateway").inputs.metadata.annotations).toEqual({
      "networking.gke.io/load-balancer-type": "Internal",
    });
    expect(await promise(outputs.gateways.gateway.address)).toBe("35.188.91.25");
    expect(outputs.routes.gateway).toContain(
      "https://batch.hail.is/ -> batch.default.svc.cluster.local:443 (default_batch)",
    );
    expect(outputs.routes.gateway).toContain("https://hail.is/ -> www.default.svc.cluster.local:443 (default_www)");
    expect(outputs.routes["internal-gateway"]).toContain(
      "https://batch.hail/ -> batch.default.svc.cluster.local:443 (default_batch)",
    );
  });
});

describe("rolling", () => {
  const checksum = (rs: Declared[]) =>
    named(rs, "apps/v1:Deployment", "gateway").inputs.spec.template.metadata.annotations[
      "envoy-gateways.io/bootstrap-checksum"
    ];

  it("rolls the pods when the bootstrap changes", async () => {
    const before = checksum((await run(rawStack("dev"))).resources);
    const after = checksum((await run(withValue(rawStack("dev"), "edge", { idleTimeout: "30m" }))).resources);
    expect(after).not.toBe(before);
  });

  it("names the bootstrap ConfigMap after its content, so a change creates a new one (the old pods keep theirs) instead of deleting it with the Deployment", async () => {
    const volume = (rs: Declared[]) =>
      named(rs, "apps/v1:Deployment", "gateway").inputs.spec.template.spec.volumes.find(
        (v: { name: string }) => v.name === "bootstrap",
      ).configMap.name;
    const first = (await run(rawStack("dev"))).resources;
    const changed = (await run(withValue(rawStack("dev"), "edge", { idleTimeout: "30m" }))).resources;
    const bootstraps = (rs: Declared[]) =>
      of(rs, "core/v1:ConfigMap")
        .map((c) => c.inputs.metadata.name as string)
        .filter((n) => n.startsWith("gateway-bootstrap-"));
    expect(bootstraps(first)).toEqual([volume(first)]);
    expect(volume(first)).toMatch(/^gateway-bootstrap-[0-9a-f]{10}$/);
    expect(volume(changed)).toMatch(/^gateway-bootstrap-[0-9a-f]{10}$/);
    expect(volume(changed)).not.toBe(volume(first));
    // The same content, the same name: an unchanged program changes nothing.
    expect(volume((await run(rawStack("dev"))).resources)).toBe(volume(first));
  });

  it("does not roll the pods when only routes change (Envoy reloads the xDS files live)", async () => {
    const first = await run(rawStack("dev"));
    const more = withValue(rawStack("dev"), "services", [
      ...(rawStack("dev").services as object[]),
      { name: "grafana", replicas: 2 },
    ]);
    const second = await run(more);
    expect(checksum(second.resources)).toBe(checksum(first.resources));
    expect(named(second.resources, "core/v1:ConfigMap", "gateway-xds").inputs.data).not.toEqual(
      named(first.resources, "core/v1:ConfigMap", "gateway-xds").inputs.data,
    );
  });
});

describe("stack options", () => {
  it("adds the skip-await annotation everywhere when skipAwait is set (local cluster only)", async () => {
    const { resources } = await run(withValue(rawStack("dev"), "skipAwait", true));
    for (const r of [...of(resources, "apps/v1:Deployment"), ...of(resources, "core/v1:Service")]) {
      expect(r.inputs.metadata.annotations["pulumi.com/skipAwait"]).toBe("true");
    }
  });

  it("with adoptExisting, force-applies every Service that routes traffic (the gateways' and the routed ones), nothing else", async () => {
    const { resources } = await run(withValue(rawStack("dev"), "adoptExisting", true));
    const forced = resources
      .filter((r) => r.inputs.metadata?.annotations?.["pulumi.com/patchForce"] === "true")
      .map((r) => `${r.type.replace("kubernetes:", "")} ${r.inputs.metadata.name}`)
      .sort();
    const routed = (rawStack("dev").services as { name: string }[]).map((s) => `core/v1:Service ${s.name}`);
    expect(forced).toEqual([...routed, "core/v1:Service gateway", "core/v1:Service internal-gateway"].sort());
  });

  it("declares the Deployment of a service with an image, its pods mounting their certificate Secret <service>-tls", async () => {
    const services = (rawStack("dev").services as { name: string }[]).map((s) =>
      s.name === "batch" ? { ...s, image: "example/batch:1.2.3" } : s,
    );
    const { resources } = await run(withValue(rawStack("dev"), "services", services));
    const deployments = of(resources, "apps/v1:Deployment").map((d) => d.inputs.metadata.name);
    expect(deployments.sort()).toEqual(["batch", "gateway", "internal-gateway"]);
    const pod = named(resources, "apps/v1:Deployment", "batch").inputs.spec.template.spec;
    expect(pod.containers[0].image).toBe("example/batch:1.2.3");
    expect(pod.containers[0].volumeMounts).toEqual([{ name: "tls", mountPath: "/etc/tls", readOnly: true }]);
    expect(pod.volumes).toEqual([{ name: "tls", secret: { secretName: "batch-tls" } }]);
  });

  it("renders manifests to a directory instead of applying them when renderYamlToDirectory is set", async () => {
    const { resources } = await run(withValue(rawStack("dev"), "renderYamlToDirectory", "out/manifests"));
    expect(resources.find((r) => r.type === "pulumi:providers:kubernetes")!.inputs.renderYamlToDirectory).toBe(
      "out/manifests",
    );
  });

  it("passes the stack's kubeconfig to the provider as a secret", async () => {
    const { resources } = await run(withValue(rawStack("dev"), "kubeconfig", "apiVersion: v1\nkind: Config\n"));
    const provider = resources.find((r) => r.type === "pulumi:providers:kubernetes")!;
    // A secret reaches the engine wrapped with the secret signature: it is stored encrypted.
    expect(provider.inputs.kubeconfig).toEqual({
      [pulumi.runtime.specialSigKey]: pulumi.runtime.specialSecretSig,
      value: "apiVersion: v1\nkind: Config\n",
    });
  });
});

describe("bad stack config", () => {
  it("fails the program with every error and declares nothing", async () => {
    let raw = withValue(rawStack("dev"), "envoyImage", "envoyproxy/envoy:latest");
    raw = withValue(raw, "gateways.gateway.replicas", 0);
    let error: unknown;
    try {
      await run(raw);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(pulumi.RunError);
    expect((error as Error).message).toMatch(/stack test config: 2 problems/);
    expect((error as Error).message).toMatch(/envoy-gateways:envoyImage: .*never latest/);
    expect((error as Error).message).toMatch(/envoy-gateways:gateways\.gateway\.replicas: .*\(got 0\)/);
    expect(declared).toEqual([]);
  });

  it("never prints a bad kubeconfig's value", async () => {
    let error: unknown;
    try {
      await run(withValue(rawStack("dev"), "kubeconfig", ""));
    } catch (e) {
      error = e;
    }
    expect((error as Error).message).toMatch(/envoy-gateways:kubeconfig: .*value not shown: it is a secret/);
  });
});

describe("registered", () => {
  const resource = (urn: Promise<string>) => ({ urn: { promise: () => urn } }) as unknown as pulumi.Resource;

  it("resolves once every resource is registered", async () => {
    let registeredLast!: (urn: string) => void;
    const last = new Promise<string>((r) => (registeredLast = r));
    const { registered } = await import("../../program/main.js");
    let done = false;
    const waiting = registered([resource(Promise.resolve("urn:a")), resource(last)]).then(() => (done = true));
    await new Promise((r) => setTimeout(r, 10));
    expect(done).toBe(false);
    registeredLast("urn:b");
    await waiting;
    expect(done).toBe(true);
  });

  it("fails the program with a registration that failed, so the engine deletes nothing", async () => {
    const { registered } = await import("../../program/main.js");
    await expect(
      registered([
        resource(Promise.resolve("urn:a")),
        resource(Promise.reject(new Error("Trace events are unavailable"))),
      ]),
    ).rejects.toThrow("Trace events are unavailable");
  });

  it("awaits the SDK's own resources (their URN under the mocks: Output.promise is still there)", async () => {
    const { registered } = await import("../../program/main.js");
    class Thing extends pulumi.CustomResource {
      constructor(name: string) {
        super("test:index:Thing", name, { value: 1 });
      }
    }
    await expect(registered([new Thing("thing")])).resolves.toBeUndefined();
  });
});
