// The route controller as real pods on the local node (routeSync.inCluster):
// its image built from this checkout (scripts/route-controller-image.sh) and
// imported into the node's containerd, `pulumi up` declaring it, then dev/PR
// namespaces routed through the gateway pod with no sync-routes run from
// outside; the leader killed (pod delete, SIGKILL of its process) and another
// taking over; the controller's identity no broader than the CI one; a
// preview that keeps what the controller wrote; a bad label's Event; the API
// server restarted under it; switching it off again.
// Failover times are printed, not asserted (bench/route-controller.ts
// measures them).
import { CoordinationV1Api, CoreV1Api, DiscoveryV1Api, KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { LABEL, ROUTE_STATUS_ANNOTATION } from "../../routing/labels.js";
import { serviceAccountKubeConfig, withApiServerStopped } from "../support/cluster.js";
import { GatewayClient } from "../support/gateway-client.js";
import { AUTH_TOKEN } from "../support/local-stack.js";
import { ProgramStack, routedServiceBody } from "../support/program.js";
import {
  controllerPid,
  importRouteControllerImage,
  inCluster,
  metric,
  RouteControllerPods,
} from "../support/route-controller.js";
import { DEV_LABEL, until, Workloads } from "../support/workloads.js";

const cluster = inject("cluster");
const AUTH = { authorization: `Bearer ${AUTH_TOKEN}` };
const DEV_HOST = "internal.dev.example.org";
const NS = "default";

let stack: ProgramStack;
let w: Workloads;
let gateway: GatewayClient;
let coordination: CoordinationV1Api;
let core: CoreV1Api;
let discovery: DiscoveryV1Api;
let controller: RouteControllerPods;

/**
 * When each step on the way to `name`'s route being served came, in seconds
 * after `started` ("route in gateway-xds 1.2 s, pod ready 4.0 s, ..."), polled
 * every 250 ms until `served` settles: what a slow namespace waited for, the
 * controller's write or the pod and its endpoints.
 */
async function stepsToServed(name: string, started: number, served: Promise<unknown>): Promise<string> {
  let settled = false;
  const settle = () => (settled = true);
  served.then(settle, settle);
  const steps: [string, () => Promise<boolean>][] = [
    [
      "route in gateway-xds",
      async () =>
        (
          (await core.readNamespacedConfigMap({ name: "gateway-xds", namespace: NS })).data?.["rds.yaml"] ?? ""
        ).includes(`/${name}/web`),
    ],
    [
      "pod ready",
      async () =>
        (await core.listNamespacedPod({ namespace: name })).items.some((p) =>
          p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
        ),
    ],
    [
      "EndpointSlice ready",
      async () =>
        (
          await discovery.listNamespacedEndpointSlice({
            namespace: name,
            labelSelector: "kubernetes.io/service-name=web",
          })
        ).items.some((slice) => slice.endpoints?.some((e) => e.conditions?.ready)),
    ],
  ];
  const seen = await Promise.all(
    steps.map(async ([what, holds]) => {
      while (!settled) {
        if (await holds().catch(() => false)) return `${what} ${((Date.now() - started) / 1000).toFixed(1)} s`;
        await new Promise((r) => setTimeout(r, 250));
      }
      return `${what} not seen`;
    }),
  );
  return seen.join(", ");
}

/** A labelled namespace with a routed Service and its pod, answering through the gateway pod once routed (printed: how long, and the steps). */
async function routedNamespace(name: string): Promise<void> {
  const started = Date.now();
  await stack.createNamespace(name, DEV_LABEL);
  await w.createService(name, { name: "web" });
  const served = until(
    `${DEV_HOST}/${name}/web/ to answer 200 through the gateway pod`,
    180_000,
    async () => {
      const r = await gateway.request(DEV_HOST, `/${name}/web/`, { headers: AUTH });
      return r.status === 200 && r.answer().namespace === name ? true : undefined;
    },
    undefined,
    500,
  );
  const steps = stepsToServed(name, started, served);
  await served;
  const seconds = (Date.now() - started) / 1000;
  console.log(`route controller: ${name} served ${seconds.toFixed(1)} s after it was made (${await steps})`);
}

beforeAll(async () => {
  const image = await importRouteControllerImage(cluster);
  stack = await ProgramStack.create(cluster, { from: "dev", stack: "controller", edit: inCluster(cluster, image) });
  const kc = new KubeConfig();
  kc.loadFromFile(cluster.kubeconfig);
  coordination = kc.makeApiClient(CoordinationV1Api);
  core = kc.makeApiClient(CoreV1Api);
  discovery = kc.makeApiClient(DiscoveryV1Api);
  w = new Workloads(cluster);
  controller = new RouteControllerPods(cluster.kubeconfig, NS);
  await stack.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
  gateway = await GatewayClient.start(cluster, "gateway");
}, 900_000);

afterAll(async () => {
  await gateway?.stop();
  await stack?.dispose();
});

describe("the route controller in the cluster", () => {
  it("runs two pods, one holding the Lease, and routes a labelled namespace with no sync-routes from outside", async () => {
    const leader = await controller.readyHolder();
    const pods = await controller.pods();
    expect(pods).toHaveLength(2);
    await routedNamespace("pr-ctl-a");
    const byName = Object.fromEntries(pods.map((p) => [p.metadata!.name!, p]));
    const leading = await controller.metrics(byName[leader]!);
    expect(metric(leading, "envoy_gateways_route_controller_leader")).toBe(1);
    expect(metric(leading, "envoy_gateways_route_controller_routed_namespaces")).toBeGreaterThanOrEqual(1);
    expect(leading).toMatch(/^envoy_gateways_route_controller_write_seconds_count [1-9]/m);
    const standby = pods.find((p) => p.metadata!.name !== leader)!;
    expect(metric(await controller.metrics(standby), "envoy_gateways_route_controller_leader")).toBe(0);
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
    const old = await controller.readyHolder();
    const t0 = Date.now();
    await core.deleteNamespacedPod({ name: old, namespace: NS });
    const next = await controller.readyHolder(old);
    console.log(`route controller: pod delete: ${next} leads ${((Date.now() - t0) / 1000).toFixed(1)} s later`);
    expect(next).not.toBe(old);
    await routedNamespace("pr-ctl-c");
  });

  it("fails over when the leader's process is killed (SIGKILL: no release), a new process in its place", async () => {
    const pod = await controller.readyHolder();
    const old = await controller.holderIdentity();
    expect(old).toMatch(new RegExp(`^${pod}_[0-9a-f]{8}$`));
    const t0 = Date.now();
    process.kill(controllerPid(pod), "SIGKILL");
    // Made while no one leads: the next leader's fresh list catches it up.
    await stack.createNamespace("pr-ctl-d", DEV_LABEL);
    await w.createService("pr-ctl-d", { name: "web" });
    // The other replica, or the killed one's restarted container as a new candidate: never the dead process.
    const next = await until("another process to take the Lease", 60_000, async () => {
      const h = await controller.holderIdentity();
      return h && h !== old ? h : undefined;
    });
    console.log(`route controller: SIGKILL: ${next} took the Lease ${((Date.now() - t0) / 1000).toFixed(1)} s later`);
    await until(`${DEV_HOST}/pr-ctl-d/web/ through the gateway pod`, 180_000, async () => {
      const r = await gateway.request(DEV_HOST, "/pr-ctl-d/web/", { headers: AUTH });
      return r.status === 200 || undefined;
    });
  });

  it("runs as the route-sync identity, which may not touch another Lease or ConfigMap", async () => {
    const [pod] = await controller.pods();
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

  it("gives a bad label its Warning Event and keeps its neighbour routed", async () => {
    const namespace = "pr-ctl-e";
    await routedNamespace(namespace);
    const bad = routedServiceBody("bad");
    bad.metadata!.labels![LABEL.port] = "444";
    await core.createNamespacedService({ namespace, body: bad });
    const why =
      'not routed: Service pr-ctl-e/bad left out: label envoy-gateways.io/port="444" must be "443" (the gateways speak TLS to every pod on 443)';
    const events = await until("the bad Service's Event", 60_000, async () => {
      const e = await core.listNamespacedEvent({
        namespace,
        fieldSelector: "involvedObject.kind=Service,involvedObject.name=bad",
      });
      return e.items.length ? e.items.map((i) => [i.type, i.reason, i.message]) : undefined;
    });
    expect(events).toEqual([["Warning", "NotRouted", why]]);
    const status = await core.readNamespacedService({ name: "bad", namespace });
    expect(status.metadata?.annotations?.[ROUTE_STATUS_ANNOTATION]).toBe(why);
    const r = await gateway.request(DEV_HOST, `/${namespace}/web/`, { headers: AUTH });
    expect(r.status).toBe(200);
    expect(r.answer().namespace).toBe(namespace);
  });

  it("recovers by itself when the API server is restarted under it: the routes served meanwhile, one leader after, a new namespace routed", async () => {
    const restarts = async () =>
      Object.fromEntries(
        (await controller.pods()).map((p) => [p.metadata!.name!, p.status?.containerStatuses?.[0]?.restartCount ?? 0]),
      );
    const before = await restarts();
    // Longer than the lease (10 s): the leader passes its renew deadline and stops writing.
    await withApiServerStopped(cluster, async () => {
      await new Promise((r) => setTimeout(r, 20_000));
      const r = await gateway.request(DEV_HOST, "/pr-ctl-a/web/", { headers: AUTH });
      expect(r.status, "an existing route while the API server is down").toBe(200);
    });
    const back = Date.now();
    // Renewed since: the Lease as it stood before the outage says nothing about now.
    const renewed = await until(
      "the Lease renewed after the API server came back",
      60_000,
      async () => (await controller.renewedSince(back)) || undefined,
    );
    console.log(
      `route controller: API server back, ${renewed} renewed the Lease ${((Date.now() - back) / 1000).toFixed(1)} s later`,
    );
    // Printed with the steps it waited for: the controller's write, the pod, its EndpointSlice.
    await routedNamespace("pr-ctl-f");
    expect(await restarts(), "the liveness probe held through the outage").toEqual(before);
    const leaders = await Promise.all(
      (await controller.pods()).map(async (p) =>
        metric(await controller.metrics(p), "envoy_gateways_route_controller_leader"),
      ),
    );
    expect(leaders.sort()).toEqual([0, 1]);
  });

  it("switched off, leaves the routes in place for the routes resources, and sync-routes runs again", async () => {
    await stack.ws.ok(["config", "rm", "envoy-gateways:routeSync"]);
    await stack.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
    await until("the route controller's pods to be gone", 120_000, async () => (await controller.pods()).length === 0);
    for (const ns of ["pr-ctl-a", "pr-ctl-c", "pr-ctl-d"]) {
      const r = await gateway.request(DEV_HOST, `/${ns}/web/`, { headers: AUTH });
      expect(r.status, ns).toBe(200);
    }
    const sync = await stack.runScript("sync-routes");
    expect(sync.code, sync.stderr).toBe(0);
  });
});
