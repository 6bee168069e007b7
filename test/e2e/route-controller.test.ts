// The route controller as real pods on the local node (routeSync.inCluster):
// its image built from this checkout (scripts/route-controller-image.sh) and
// imported into the node's containerd, `pulumi up` declaring it, then dev/PR
// namespaces routed through the gateway pod with no sync-routes run from
// outside; the leader killed (pod delete, SIGKILL of its process) and another
// taking over; the controller's identity no broader than the CI one; a
// preview that keeps what the controller wrote; switching it off again.
// Failover times are printed, not asserted (bench/route-controller.ts
// measures them).
import { CoordinationV1Api, CoreV1Api, KubeConfig, type V1Pod } from "@kubernetes/client-node";
import { execFile } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ROUTE_CONTROLLER } from "../../routes-provider/controller-config.js";
import { serviceAccountKubeConfig } from "../support/cluster.js";
import { GatewayClient } from "../support/gateway-client.js";
import { AUTH_TOKEN } from "../support/local-stack.js";
import { ProgramStack } from "../support/program.js";
import { DEV_LABEL, isReady, until, Workloads } from "../support/workloads.js";

const run = promisify(execFile);
const cluster = inject("cluster");
const AUTH = { authorization: `Bearer ${AUTH_TOKEN}` };
const DEV_HOST = "internal.dev.example.org";
const NS = "default";

let stack: ProgramStack;
let w: Workloads;
let gateway: GatewayClient;
let coordination: CoordinationV1Api;
let core: CoreV1Api;

async function controllerPods(): Promise<V1Pod[]> {
  const pods = await core.listNamespacedPod({
    namespace: NS,
    labelSelector: `app.kubernetes.io/name=${ROUTE_CONTROLLER}`,
  });
  return pods.items.filter((p) => !p.metadata?.deletionTimestamp);
}

/** The Lease's holder: the pod's name and a suffix new at each start of its process. */
async function holderIdentity(): Promise<string> {
  const lease = await coordination.readNamespacedLease({ name: ROUTE_CONTROLLER, namespace: NS });
  return lease.spec?.holderIdentity ?? "";
}

/** The pod holding the Lease ("" for none). */
async function holder(): Promise<string> {
  return (await holderIdentity()).replace(/_[0-9a-f]{8}$/, "");
}

/** The holder once it is one of the ready pods (and not `not`). */
async function readyHolder(not = "", timeoutMs = 120_000): Promise<string> {
  return until(`a ready route controller pod other than "${not}" to hold the Lease`, timeoutMs, async () => {
    const h = await holder();
    const ready = (await controllerPods()).filter(isReady).map((p) => p.metadata!.name!);
    return h && h !== not && ready.includes(h) ? h : undefined;
  });
}

/** A labelled namespace with a routed Service and its pod, answering through the gateway pod once routed. */
async function routedNamespace(name: string): Promise<number> {
  const started = Date.now();
  await stack.createNamespace(name, DEV_LABEL);
  await w.createService(name, { name: "web" });
  await until(
    `${DEV_HOST}/${name}/web/ to answer 200 through the gateway pod`,
    180_000,
    async () => {
      const r = await gateway.request(DEV_HOST, `/${name}/web/`, { headers: AUTH });
      return r.status === 200 && r.answer().namespace === name ? true : undefined;
    },
    undefined,
    500,
  );
  return (Date.now() - started) / 1000;
}

async function metrics(pod: V1Pod): Promise<string> {
  const r = await fetch(`http://${pod.status!.podIP}:8080/metrics`, { signal: AbortSignal.timeout(5000) });
  return r.text();
}

const metric = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? "NaN");

/** The route controller's Node process of `pod` on this node (its environment names the pod). */
function controllerPid(pod: string): number {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (!cmd.includes("route-controller.bundle.js")) continue;
      if (readFileSync(`/proc/${entry}/environ`, "utf8").split("\0").includes(`POD_NAME=${pod}`)) return Number(entry);
    } catch {
      // A process that exited meanwhile.
    }
  }
  throw new Error(`no route controller process of pod ${pod} on this node`);
}

beforeAll(async () => {
  const { stdout } = await run(
    "bash",
    ["scripts/route-controller-image.sh", "--import", cluster.node.containerdSocket],
    { maxBuffer: 1 << 20, timeout: 300_000 },
  );
  const image = stdout.trim().split("\n").pop()!;
  stack = await ProgramStack.create(cluster, {
    from: "dev",
    stack: "controller",
    edit: (raw) => ({
      ...raw,
      routeSync: { inCluster: { image, replicas: 2 } },
      // The local API server's port, as pods reach it behind the kubernetes Service.
      networkPolicy: { ...(raw.networkPolicy as object), apiServer: { ports: [cluster.ports.apiserver] } },
    }),
  });
  const kc = new KubeConfig();
  kc.loadFromFile(cluster.kubeconfig);
  coordination = kc.makeApiClient(CoordinationV1Api);
  core = kc.makeApiClient(CoreV1Api);
  w = new Workloads(cluster);
  await stack.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
  gateway = await GatewayClient.start(cluster, "gateway");
}, 900_000);

afterAll(async () => {
  await gateway?.stop();
  await stack?.dispose();
});

describe("the route controller in the cluster", () => {
  it("runs two pods, one holding the Lease, and routes a labelled namespace with no sync-routes from outside", async () => {
    const leader = await readyHolder();
    const pods = await controllerPods();
    expect(pods).toHaveLength(2);
    const seconds = await routedNamespace("pr-ctl-a");
    console.log(`route controller: pr-ctl-a routed through the gateway pod ${seconds.toFixed(1)} s after it was made`);
    const byName = Object.fromEntries(pods.map((p) => [p.metadata!.name!, p]));
    const leading = await metrics(byName[leader]!);
    expect(metric(leading, "envoy_gateways_route_controller_leader")).toBe(1);
    expect(metric(leading, "envoy_gateways_route_controller_routed_namespaces")).toBeGreaterThanOrEqual(1);
    expect(leading).toMatch(/^envoy_gateways_route_controller_write_seconds_count [1-9]/m);
    const standby = pods.find((p) => p.metadata!.name !== leader)!;
    expect(metric(await metrics(standby), "envoy_gateways_route_controller_leader")).toBe(0);
  });

  it("keeps what it wrote through a preview and an up: no change to the routes resources, the route still served", async () => {
    await routedNamespace("pr-ctl-b");
    const preview = await stack.ws.ok(["preview", "--diff", "--expect-no-changes"], 300_000);
    expect(preview.stdout).not.toMatch(/gateway-routes/);
    await stack.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
    const r = await gateway.request(DEV_HOST, "/pr-ctl-b/web/", { headers: AUTH });
    expect(r.status).toBe(200);
  });

  it("fails over when the leader's pod is deleted, and routes what was made meanwhile", async () => {
    const old = await readyHolder();
    const t0 = Date.now();
    await core.deleteNamespacedPod({ name: old, namespace: NS });
    const next = await readyHolder(old);
    console.log(`route controller: pod delete: ${next} leads ${((Date.now() - t0) / 1000).toFixed(1)} s later`);
    expect(next).not.toBe(old);
    await routedNamespace("pr-ctl-c");
  });

  it("fails over when the leader's process is killed (SIGKILL: no release), a new process in its place", async () => {
    const pod = await readyHolder();
    const old = await holderIdentity();
    expect(old).toMatch(new RegExp(`^${pod}_[0-9a-f]{8}$`));
    const t0 = Date.now();
    process.kill(controllerPid(pod), "SIGKILL");
    // Made while no one leads: the next leader's fresh list catches it up.
    await stack.createNamespace("pr-ctl-d", DEV_LABEL);
    await w.createService("pr-ctl-d", { name: "web" });
    // The other replica, or the killed one's restarted container as a new candidate: never the dead process.
    const next = await until("another process to take the Lease", 60_000, async () => {
      const h = await holderIdentity();
      return h && h !== old ? h : undefined;
    });
    console.log(`route controller: SIGKILL: ${next} took the Lease ${((Date.now() - t0) / 1000).toFixed(1)} s later`);
    await until(`${DEV_HOST}/pr-ctl-d/web/ through the gateway pod`, 180_000, async () => {
      const r = await gateway.request(DEV_HOST, "/pr-ctl-d/web/", { headers: AUTH });
      return r.status === 200 || undefined;
    });
  });

  it("runs as the route-sync identity, which may not touch another Lease or ConfigMap", async () => {
    const [pod] = await controllerPods();
    expect(pod!.spec!.serviceAccountName).toBe("envoy-gateways-route-sync");
    const as = await serviceAccountKubeConfig(cluster, NS, "envoy-gateways-route-sync");
    const refused = async (call: Promise<unknown>) =>
      call.then(
        () => "allowed",
        (e: { code?: number }) => e.code,
      );
    await coordination.createNamespacedLease({ namespace: NS, body: { metadata: { name: "other" }, spec: {} } });
    expect(
      await refused(as.makeApiClient(CoordinationV1Api).readNamespacedLease({ name: "other", namespace: NS })),
    ).toBe(403);
    expect(
      await refused(as.makeApiClient(CoreV1Api).readNamespacedConfigMap({ name: "gateway-bootstrap", namespace: NS })),
    ).toBe(403);
    expect(await refused(as.makeApiClient(CoreV1Api).listNamespacedConfigMap({ namespace: NS }))).toBe(403);
    await coordination.deleteNamespacedLease({ name: "other", namespace: NS });
  });

  it("makes sync-routes refuse to run while it writes", async () => {
    const r = await stack.runScript("sync-routes");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("not syncing, the route controller in the cluster writes the dev/PR routes");
  });

  it("switched off, leaves the routes in place for the routes resources, and sync-routes runs again", async () => {
    await stack.ws.ok(["config", "rm", "envoy-gateways:routeSync"]);
    await stack.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
    await until("the route controller's pods to be gone", 120_000, async () => (await controllerPods()).length === 0);
    for (const ns of ["pr-ctl-a", "pr-ctl-c", "pr-ctl-d"]) {
      const r = await gateway.request(DEV_HOST, `/${ns}/web/`, { headers: AUTH });
      expect(r.status, ns).toBe(200);
    }
    const sync = await stack.runScript("sync-routes");
    expect(sync.code, sync.stderr).toBe(0);
  });
});
