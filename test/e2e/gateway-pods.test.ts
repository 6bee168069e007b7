// The gateways as real pods on the local node: `pulumi up` of the local stack
// (Pulumi.dev.yaml with the stand-in pod images) waits for ready Deployments,
// then requests go, from the host, to the gateway pods' IPs (a client that
// follows the gateway Service's ready endpoints, as a load balancer would),
// through Envoy as the Deployment runs it (ConfigMap and Secret volumes as the
// kubelet projects them, the pod's resolv.conf, CoreDNS), to the stand-in pods
// of headless Services. Every load loop is bounded in count and time; figures
// (recovery times, shares) are printed, not asserted.
import {
  ApiException,
  CoreV1Api,
  KubeConfig,
  NetworkingV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1Pod,
} from "@kubernetes/client-node";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { annotatePods, labelSelector } from "../../kube/client.js";
import { POD_PORTS } from "../../routing/envoy/types.js";
import { gatewayPodLabels, XDS_DIGEST_ANNOTATION } from "../../routing/labels.js";
import { UPSTREAM_PORT } from "../../routing/names.js";
import { applySecret, AUTH_TOKEN, WorkloadPki } from "../support/local-stack.js";
import {
  describeFailures,
  GatewayClient,
  startLoad,
  runLoad,
  type GatewayResponse,
  type Load,
} from "../support/gateway-client.js";
import { gatewayMetrics, metricSum } from "../support/gateway-metrics.js";
import { serviceAccountKubeConfig } from "../support/cluster.js";
import { ProgramStack } from "../support/program.js";
import { connectFrom, httpGetFrom, NODE, processInPod } from "../support/pod-network.js";
import { DEV_LABEL, isReady, until, Workloads } from "../support/workloads.js";

const run = promisify(execFile);
const cluster = inject("cluster");
const AUTH = { authorization: `Bearer ${AUTH_TOKEN}` };
const DOMAIN = "dev.example.org";
const DEV_HOST = `internal.${DOMAIN}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let stack: ProgramStack;
let w: Workloads;
let gateway: GatewayClient;
let internalGateway: GatewayClient;

/** Polls until a request answers `status` (the route reached Envoy, or left it). */
async function untilStatus(
  path: string,
  status: number,
  timeoutMs = 240_000,
  host = DEV_HOST,
): Promise<GatewayResponse> {
  return until(
    `${host}${path} to answer ${status}`,
    timeoutMs,
    async () => {
      const r = await gateway.request(host, path, { headers: AUTH });
      return r.status === status ? r : undefined;
    },
    undefined,
    1000,
  );
}

async function podNames(namespace: string, app: string): Promise<string[]> {
  return (await w.pods(namespace, app)).map((p) => p.metadata!.name!).sort();
}

/**
 * Sets the stack setting `key` to `value` and runs `pulumi up`, which rolls the gateway pods
 * (`old`); returns the new pods once the old are gone and `load`'s last 20 requests went
 * through the new ones only.
 */
async function rollGateway(key: string, value: string, old: string[], load: Load): Promise<string[]> {
  await stack.ws.ok(["config", "set", "--stack", stack.ws.stack, "--path", key, value]);
  await stack.ws.ok(["up", "--yes", "--skip-preview", "--stack", stack.ws.stack], 600_000);
  await until("the old gateway pods to be gone", 240_000, async () => {
    const now = await podNames("default", "gateway");
    return now.every((p) => !old.includes(p)) ? now : undefined;
  });
  const fresh = await podNames("default", "gateway");
  await until(
    "requests to go through the new pods",
    60_000,
    async () => load.samples.slice(-20).every((s) => fresh.includes(s.via ?? "")) || undefined,
  );
  return fresh;
}

async function devNamespace(name: string, services: { name: string; replicas?: number }[]): Promise<void> {
  await stack.createNamespace(name, DEV_LABEL);
  for (const s of services) await w.createService(name, s);
}

beforeAll(async () => {
  stack = await ProgramStack.create(cluster, { from: "dev", stack: "pods" });
  w = new Workloads(cluster);
  // Created before `pulumi up`: the program's discovery routes them from the start.
  await devNamespace("pr-pods", [{ name: "batch" }, { name: "batch-driver" }]);
  await devNamespace("pr-lb", [{ name: "web", replicas: 3 }]);
  await stack.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
  gateway = await GatewayClient.start(cluster, "gateway");
  internalGateway = await GatewayClient.start(cluster, "internal-gateway");
  // The xDS ConfigMap has the dev routes; the pod has them once the kubelet projected it.
  await untilStatus("/pr-lb/web/", 200);
  await untilStatus("/pr-pods/batch-driver/", 200);
});

afterAll(async () => {
  await gateway?.stop();
  await internalGateway?.stop();
  await stack?.dispose();
});

describe("routing through the gateway pod", () => {
  it("reaches a pod of a production host's Service over verified TLS: the Service's name as SNI and on the certificate, the gateway's client certificate", async () => {
    const r = await gateway.request(`www.${DOMAIN}`, "/some/path?q=1");
    expect(r.status, r.body).toBe(200);
    const a = r.answer();
    expect(await podNames("default", "www")).toContain(a.pod);
    expect(a).toMatchObject({
      namespace: "default",
      service: "www.default.svc.cluster.local",
      serverName: "www.default.svc.cluster.local",
      clientCertificate: "gateway.default.svc.cluster.local",
      path: "/some/path?q=1",
      host: "www.default.svc.cluster.local",
    });
    expect(a.headers["X-Forwarded-Host"]).toEqual([`www.${DOMAIN}`]);
    // The bare domain is www's alias; the internal gateway serves the internal domain with its own client certificate.
    expect(await podNames("default", "www")).toContain((await gateway.request(DOMAIN, "/")).answer().pod);
    const internal = (await internalGateway.request("batch.dev.hail", "/")).answer();
    expect(await podNames("default", "batch")).toContain(internal.pod);
    expect(internal.clientCertificate).toBe("internal-gateway.default.svc.cluster.local");
    expect((await gateway.request(`nothing.${DOMAIN}`, "/")).status).toBe(404);
  });

  it("runs each gateway pod's Envoy as user and group 10101 on the node, not the image's 101", async () => {
    const pods = [...(await podNames("default", "gateway")), ...(await podNames("default", "internal-gateway"))];
    const { stdout } = await run("ps", ["-eo", "uid=,gid=,args="]);
    const envoys = stdout
      .split("\n")
      .map((l) => l.trim().split(/\s+/))
      .filter((f) => f[2] === "/usr/local/bin/envoy" && pods.includes(f[f.indexOf("--service-node") + 1] ?? ""));
    expect(envoys.map((f) => f[f.indexOf("--service-node") + 1]).sort()).toEqual(pods.sort());
    expect(new Set(envoys.map((f) => `${f[0]}:${f[1]}`))).toEqual(new Set(["10101:10101"]));
  });

  it("sends dev/PR routes through ext_authz: no credentials is a 302 to the login page, credentials reach the namespace's pod with the path kept", async () => {
    const denied = await gateway.request(DEV_HOST, "/pr-pods/batch/jobs?limit=5");
    expect(denied.status).toBe(302);
    // The whole original URL comes back after login, percent-encoded.
    expect(denied.headers.location).toBe(
      `https://auth.${DOMAIN}/login?next=${encodeURIComponent(`https://${DEV_HOST}/pr-pods/batch/jobs?limit=5`)}`,
    );
    const bearer = await gateway.request(DEV_HOST, "/pr-pods/batch/jobs?limit=5", { headers: AUTH });
    expect(bearer.status, bearer.body).toBe(200);
    expect(bearer.answer()).toMatchObject({
      namespace: "pr-pods",
      path: "/pr-pods/batch/jobs?limit=5",
      service: "batch.pr-pods.svc.cluster.local",
    });
    expect(await podNames("pr-pods", "batch")).toContain(bearer.answer().pod);
    const cookie = await gateway.request(DEV_HOST, "/pr-pods/batch-driver/", {
      headers: { cookie: `session=${AUTH_TOKEN}` },
    });
    expect(cookie.status, cookie.body).toBe(200);
    expect(await podNames("pr-pods", "batch-driver")).toContain(cookie.answer().pod);
    // Production routes never ask auth: no credentials needed.
    expect((await gateway.request(`batch.${DOMAIN}`, "/")).status).toBe(200);
  });

  it("refuses a production pod whose certificate names another Service (503), and reaches it again with the right one", async () => {
    const pki = new WorkloadPki(cluster);
    const restart = async () => {
      const old = await podNames("default", "notebook");
      for (const name of old) await w.core.deleteNamespacedPod({ name, namespace: "default", gracePeriodSeconds: 0 });
      const fresh = await until("new notebook pods", 120_000, async () => {
        const pods = await w.waitReady("default", "notebook", 2, 120_000);
        return pods.every((p) => !old.includes(p.metadata!.name!)) ? pods : undefined;
      });
      return fresh.map((p) => p.metadata!.name!);
    };
    try {
      await applySecret(w.core, pki.secret("notebook-tls", "default", ["not-notebook.default.svc.cluster.local"]));
      const wrong = await restart();
      // 503 once Envoy resolved the new pods, and they saw the handshake the gateway aborted.
      await until(
        "the gateway to refuse the notebook pods' certificate",
        120_000,
        async () => {
          const r = await gateway.request(`notebook.${DOMAIN}`, "/");
          if (r.status !== 503) return undefined;
          for (const name of wrong) {
            const log = await w.core.readNamespacedPodLog({ name, namespace: "default" });
            if (/TLS handshake error/.test(log)) return true;
          }
          return undefined;
        },
        undefined,
        1000,
      );
    } finally {
      await applySecret(w.core, pki.podSecret("notebook", "default"));
    }
    const right = await restart();
    const r = await untilStatus("/", 200, 120_000, `notebook.${DOMAIN}`);
    expect(right).toContain(r.answer().pod);
  });
});

describe("load balancing across the pods of a headless Service", () => {
  it("gives each of 3 pods within 15% of a third of the requests", async () => {
    const pods = (await w.waitReady("pr-lb", "web", 3)).map((p) => p.metadata!.name!).sort();
    const r = await runLoad(() => gateway.request(DEV_HOST, "/pr-lb/web/", { headers: AUTH }), {
      rate: 120,
      maxRequests: 1500,
      maxMs: 60_000,
      concurrency: 8,
    });
    expect(r.failures, describeFailures(r)).toEqual([]);
    expect(r.samples.length).toBe(1500);
    expect([...r.byPod.keys()].sort()).toEqual(pods);
    const third = r.samples.length / 3;
    console.log(`3 pods: ${[...r.byPod.values()].join(" / ")} of ${r.samples.length} requests`);
    for (const count of r.byPod.values()) {
      expect(count).toBeGreaterThanOrEqual(third * 0.85);
      expect(count).toBeLessThanOrEqual(third * 1.15);
    }
  });

  it("follows DNS as the Service scales 3 -> 5 -> 2: new pods take their share, no request reaches a pod once it is gone", async () => {
    const load = startLoad(() => gateway.request(DEV_HOST, "/pr-lb/web/", { headers: AUTH }), {
      rate: 100,
      maxRequests: 30_000,
      maxMs: 280_000,
      concurrency: 8,
    });
    /** True once, over the last `n` answers, each of `pods` got at least half its share and nothing else answered. */
    const sharing = (pods: string[], n: number) => {
      const recent = load.samples.slice(-n);
      if (recent.length < n) return false;
      const counts = new Map<string, number>();
      for (const s of recent) if (s.pod) counts.set(s.pod, (counts.get(s.pod) ?? 0) + 1);
      return (
        [...counts.keys()].every((p) => pods.includes(p)) &&
        pods.every((p) => (counts.get(p) ?? 0) >= (n / pods.length) * 0.5)
      );
    };
    const gone = new Map<string, number>();
    let five: string[] = [];
    let two: string[] = [];
    const figures: string[] = [];
    try {
      await w.scale("pr-lb", "web", 5);
      five = (await w.waitReady("pr-lb", "web", 5)).map((p) => p.metadata!.name!);
      const ready = load.now();
      await until("5 pods to share the requests", 60_000, async () => sharing(five, 250));
      figures.push(
        `3 -> 5: the new pods took their share ${((load.now() - ready) / 1000).toFixed(1)} s after all 5 were ready`,
      );

      const scaledDown = load.now();
      await w.scale("pr-lb", "web", 2);
      // Pods leave: record when each one's object is gone (the kubelet confirmed it stopped).
      await until("3 of 5 pods to be gone", 120_000, async () => {
        const now = load.now();
        const left = await podNames("pr-lb", "web");
        for (const p of five) if (!left.includes(p) && !gone.has(p)) gone.set(p, now);
        return gone.size === 3 ? true : undefined;
      });
      two = five.filter((p) => !gone.has(p));
      await until("the 2 remaining pods to take every request", 60_000, async () => sharing(two, 250));
      const last = Math.max(...load.samples.filter((s) => s.pod && !two.includes(s.pod)).map((s) => s.sent));
      figures.push(
        `5 -> 2: the last request to a removed pod was sent ${((last - scaledDown) / 1000).toFixed(1)} s after the scale-down, the pods were gone after ${((Math.max(...gone.values()) - scaledDown) / 1000).toFixed(1)} s`,
      );
    } finally {
      load.stop();
    }
    const r = await load.result;
    console.log(`scaling under ${r.samples.length} requests: ${figures.join("; ")}; ${describeFailures(r)}`);
    expect(r.failures, describeFailures(r)).toEqual([]);
    expect([...r.byPod.keys()].sort()).toEqual([...five].sort());
    for (const [pod, at] of gone) {
      const late = r.samples.filter((s) => s.pod === pod && s.sent > at);
      expect(late, `requests sent after ${pod} was gone reached it`).toEqual([]);
    }
  });
});

describe("live reloads", () => {
  it("keeps production routes free of failed requests while 10 dev/PR namespaces come and go", async () => {
    const watch = stack.spawnScript("sync-routes", ["--watch", "--debounce", "2s"]);
    let out = "";
    watch.stdout.on("data", (d: Buffer) => (out += d));
    watch.stderr.on("data", (d: Buffer) => (out += d));
    const exited = new Promise<number | null>((resolve) => watch.on("close", resolve));
    const names = Array.from({ length: 10 }, (_, i) => `pr-churn-${i}`);
    const pod = gateway.endpoints[0]!.address;
    const cds = async () => metricSum(await gatewayMetrics(pod), "envoy_cluster_manager_cds_update_success");
    let load: Load | undefined;
    let before: number;
    const marks = { created: 0, routed: 0, removed: 0 };
    try {
      await until(
        "the watch's first sync",
        180_000,
        async () => /routes in step|routes live/.test(out) || undefined,
        async () => out,
      );
      before = await cds();
      let i = 0;
      load = startLoad(() => gateway.request(i++ % 2 ? `www.${DOMAIN}` : `batch.${DOMAIN}`, "/"), {
        rate: 40,
        maxRequests: 24_000,
        maxMs: 540_000,
      });
      await sleep(2000);
      marks.created = load.now();
      for (const name of names) await devNamespace(name, [{ name: "app" }]);
      for (const name of names) await untilStatus(`/${name}/app/`, 200, 300_000);
      marks.routed = load.now();
      for (const name of names) await w.deleteNamespace(name);
      for (const name of names) await untilStatus(`/${name}/app/`, 404, 300_000);
      marks.removed = load.now();
      await sleep(2000);
    } finally {
      load?.stop();
      watch.kill("SIGTERM");
      await Promise.race([exited, sleep(240_000)]);
      if (watch.exitCode === null) watch.kill("SIGKILL");
    }
    const r = await load!.result;
    const reloads = (await cds()) - before;
    console.log(
      `live reloads: ${describeFailures(r)} on production routes; ${reloads} CDS updates; 10 namespaces routed after ${((marks.routed - marks.created) / 1000).toFixed(0)} s, gone after ${((marks.removed - marks.routed) / 1000).toFixed(0)} s`,
    );
    expect(r.failures, describeFailures(r)).toEqual([]);
    // The load ran from before the first namespace until after the last route was gone, and Envoy reloaded meanwhile.
    expect(r.samples[0]!.sent).toBeLessThan(marks.created);
    expect(r.samples.at(-1)!.sent).toBeGreaterThan(marks.removed);
    expect(reloads).toBeGreaterThanOrEqual(2);
    expect(await exited).toBe(0);
  });
});

describe("a gateway rollout", () => {
  it("rolls the gateway pods for a bootstrap change under continuous load without a failed request", async () => {
    const old = await podNames("default", "gateway");
    const checksum = async () =>
      (await w.apps.readNamespacedDeployment({ name: "gateway", namespace: "default" })).spec!.template.metadata!
        .annotations!["envoy-gateways.io/bootstrap-checksum"];
    const before = await checksum();
    const load = startLoad(() => gateway.request(`www.${DOMAIN}`, "/"), {
      rate: 50,
      maxRequests: 30_000,
      maxMs: 540_000,
    });
    let fresh: string[];
    try {
      await sleep(2000);
      // A listener setting: it lives in the bootstrap, so the pods roll.
      fresh = await rollGateway("envoy-gateways:edge.idleTimeout", "30m", old, load);
    } finally {
      load.stop();
    }
    const r = await load.result;
    const via = new Set(r.samples.map((s) => s.via));
    console.log(`rollout: ${describeFailures(r)}, through ${[...via].join(", ")}`);
    expect(await checksum()).not.toBe(before);
    expect(r.failures, describeFailures(r)).toEqual([]);
    for (const p of [...old, ...fresh]) expect(via.has(p), `no request went through ${p}`).toBe(true);
  });
});

// The autoscaler owns the gateway's replica count once it has scaled it: the Deployment
// declares the count only when it is created (ignoreChanges on spec.replicas). The real
// HorizontalPodAutoscaler controller scales here without metrics: below its minimum, it
// scales to the minimum.
describe("the autoscaler's count across pulumi up", () => {
  it("keeps the count the autoscaler set when a pulumi up changes the Deployment", async () => {
    const deployment = () => w.apps.readNamespacedDeployment({ name: "gateway", namespace: "default" });
    const minimum = (minReplicas: number) =>
      w.autoscaling.patchNamespacedHorizontalPodAutoscaler(
        { name: "gateway", namespace: "default", body: { spec: { minReplicas } } },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
    const declared = (await deployment()).spec!.replicas!;
    const scaled = declared + 1;
    await minimum(scaled);
    await until(`the autoscaler to scale gateway to ${scaled}`, 120_000, async () =>
      (await deployment()).spec?.replicas === scaled ? true : undefined,
    );
    // Its minimum back as the stack declares it: from here the autoscaler leaves the count alone.
    await minimum(declared);
    const before = (await deployment()).spec!.template.metadata!.annotations!["envoy-gateways.io/bootstrap-checksum"];
    await stack.ws.ok(["config", "set", "--path", "envoy-gateways:edge.idleTimeout", "45m"]);
    await stack.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
    const after = await deployment();
    expect(after.spec!.template.metadata!.annotations!["envoy-gateways.io/bootstrap-checksum"]).not.toBe(before);
    expect(after.spec!.replicas).toBe(scaled);
    await w.waitReady("default", "gateway", scaled);
  });
});

describe("a service pod killed under load", () => {
  it("fails only requests Envoy answers 503, and recovers once the restarted pod is ready", async () => {
    const pods = await w.waitReady("default", "batch", 2);
    const victim = pods[0]!.metadata!.name!;
    const containerId = pods[0]!.status!.containerStatuses![0]!.containerID!.replace(/^containerd:\/\//, "");
    const load = startLoad(() => gateway.request(`batch.${DOMAIN}`, "/"), {
      rate: 100,
      maxRequests: 20_000,
      maxMs: 180_000,
      concurrency: 8,
    });
    let killedAt = 0;
    let readyAt = 0;
    let servingAt = 0;
    try {
      await sleep(3000);
      killedAt = load.now();
      await run("ctr", [
        "--address",
        cluster.node.containerdSocket,
        "--namespace",
        "k8s.io",
        "tasks",
        "kill",
        "--signal",
        "SIGKILL",
        containerId,
      ]);
      await until(`${victim} to restart and be ready`, 120_000, async () => {
        const p = await w.core.readNamespacedPod({ name: victim, namespace: "default" });
        const c = p.status?.containerStatuses?.[0];
        return (c?.restartCount ?? 0) >= 1 && c?.ready ? true : undefined;
      });
      readyAt = load.now();
      await until(
        `${victim} to answer again`,
        60_000,
        async () => load.samples.some((s) => s.pod === victim && s.sent > readyAt) || undefined,
      );
      servingAt = load.now();
      await sleep(3000);
    } finally {
      load.stop();
    }
    const r = await load.result;
    const last = r.failures.at(-1);
    console.log(
      `pod killed: ${r.failures.length} of ${r.samples.length} requests failed` +
        (last ? `, the last ${((last.sent - killedAt) / 1000).toFixed(2)} s after the kill` : "") +
        `; restarted and ready after ${((readyAt - killedAt) / 1000).toFixed(1)} s, answering again after ${((servingAt - killedAt) / 1000).toFixed(1)} s`,
    );
    expect(
      r.failures.map((f) => f.status || f.error).filter((s) => s !== 503),
      describeFailures(r),
    ).toEqual([]);
    expect(
      r.failures.filter((f) => f.sent < killedAt),
      "failures before the kill",
    ).toEqual([]);
    expect(
      r.failures.filter((f) => f.sent > servingAt),
      "failures after the pod answered again",
    ).toEqual([]);
  });
});

// RBAC cannot narrow a pod patch, and the gateways' namespace holds the production pods
// too: the admission policy the program declares next to the Role lets the route-sync
// identity's pod patches through only when they set the xDS digest on a gateway pod.
// Checked as that identity (a token of its ServiceAccount), on the real API server.
describe("the route-sync identity on the real API server", () => {
  const POLICY = "ValidatingAdmissionPolicy 'envoy-gateways-route-sync-pods-default'";
  let as: KubeConfig;
  let core: CoreV1Api;

  beforeAll(async () => {
    as = await serviceAccountKubeConfig(cluster, "default", "envoy-gateways-route-sync");
    core = as.makeApiClient(CoreV1Api);
  });

  /** What the API server answers the identity's patch: "allowed", or the status and message of the refusal. */
  async function answer(
    name: string,
    body: object,
    strategy: PatchStrategy = PatchStrategy.MergePatch,
  ): Promise<string> {
    try {
      await core.patchNamespacedPod({ name, namespace: "default", body }, setHeaderOptions("Content-Type", strategy));
      return "allowed";
    } catch (e) {
      if (!(e instanceof ApiException)) throw e;
      return `${e.code} ${(JSON.parse(String(e.body)) as { message: string }).message}`;
    }
  }

  it("sets the xDS digest on the gateway pods as the routes resource does, and nothing else there", async () => {
    const gatewayPods = await w.pods("default", "gateway");
    const before = new Map(
      gatewayPods.map((p) => [p.metadata!.name!, p.metadata?.annotations?.[XDS_DIGEST_ANNOTATION]]),
    );
    const patched = await annotatePods(as, "default", labelSelector(gatewayPodLabels("gateway")), {
      [XDS_DIGEST_ANNOTATION]: "e2e-check",
    });
    expect(patched).toBe(gatewayPods.length);
    for (const p of await w.pods("default", "gateway")) {
      expect(p.metadata?.annotations?.[XDS_DIGEST_ANNOTATION]).toBe("e2e-check");
      // Back to what the routes resource wrote, as the same identity.
      const digest = before.get(p.metadata!.name!);
      expect(await answer(p.metadata!.name!, { metadata: { annotations: { [XDS_DIGEST_ANNOTATION]: digest } } })).toBe(
        "allowed",
      );
    }
  });

  it("is refused a gateway pod's image, labels or another annotation, any other pod, and every other verb", async () => {
    const [gw] = await w.pods("default", "gateway");
    const [www] = await w.pods("default", "www");
    const name = gw!.metadata!.name!;
    const container = gw!.spec!.containers[0]!;
    const only = `the route-sync identity may only set the ${XDS_DIGEST_ANNOTATION} annotation on the gateway pods`;
    expect(
      await answer(
        name,
        { spec: { containers: [{ name: container.name, image: "registry.example/evil:1" }] } },
        PatchStrategy.StrategicMergePatch,
      ),
    ).toBe(
      `403 pods "${name}" is forbidden: ${POLICY} with binding 'envoy-gateways-route-sync-pods-default' denied request: ${only}; its spec, labels, owners and finalizers stay as they are`,
    );
    expect(await answer(name, { metadata: { labels: { "e2e-check": "x" } } })).toContain(
      `${only}; its spec, labels, owners and finalizers stay as they are`,
    );
    expect(await answer(name, { metadata: { annotations: { "e2e-check/other": "x" } } })).toContain(
      `${only}; no other annotation changes`,
    );
    const wwwName = www!.metadata!.name!;
    expect(await answer(wwwName, { metadata: { annotations: { [XDS_DIGEST_ANNOTATION]: "e2e-check" } } })).toContain(
      `${POLICY} with binding 'envoy-gateways-route-sync-pods-default' denied request: ${only}; ${wwwName} is not one`,
    );
    // RBAC: no pod patch outside the gateways' namespace, no delete, no Secret.
    const [dev] = await w.pods("pr-pods", "batch");
    await expect(
      core.patchNamespacedPod(
        { name: dev!.metadata!.name!, namespace: "pr-pods", body: { metadata: { annotations: { a: "b" } } } },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      ),
    ).rejects.toMatchObject({ code: 403 });
    await expect(core.deleteNamespacedPod({ name, namespace: "default" })).rejects.toMatchObject({ code: 403 });
    await expect(core.listNamespacedSecret({ namespace: "default" })).rejects.toMatchObject({ code: 403 });
    // Nothing of it reached the pods.
    const after = await w.core.readNamespacedPod({ name, namespace: "default" });
    expect(after.spec!.containers[0]!.image).toBe(container.image);
    expect(after.metadata?.labels).toEqual(gw!.metadata?.labels);
    expect(after.metadata?.annotations?.["e2e-check/other"]).toBeUndefined();
    expect(
      (await w.core.readNamespacedPod({ name: wwwName, namespace: "default" })).metadata?.annotations?.[
        XDS_DIGEST_ANNOTATION
      ],
    ).toBeUndefined();
  });
});

describe("the gateways' NetworkPolicies, enforced by kube-router on the node", () => {
  const UNROUTED = "np-unrouted";
  const MONITORING = "monitoring";
  const ENVOY = "/usr/local/bin/envoy";
  const ports = POD_PORTS;

  /** A ready pod of `app` in `namespace` (however many the earlier tests left running). */
  async function readyPod(namespace: string, app: string): Promise<V1Pod> {
    return until(`a ready pod of ${namespace}/${app}`, 180_000, async () =>
      (await w.pods(namespace, app)).find((p) => !p.metadata?.deletionTimestamp && isReady(p)),
    );
  }

  /** A ready gateway pod's address and its Envoy process (whose network namespace is the pod's). */
  async function gatewayPod(name: "gateway" | "internal-gateway"): Promise<{ ip: string; envoy: string }> {
    const ip = (await readyPod("default", name)).status!.podIP!;
    return { ip, envoy: await processInPod(ip, ENVOY) };
  }

  /** A stand-in pod in `namespace` with the app label `app`: its address and process. */
  async function standinPod(namespace: string, app: string): Promise<{ ip: string; pid: string }> {
    const ip = (await readyPod(namespace, app)).status!.podIP!;
    return { ip, pid: await processInPod(ip, "/standin echo") };
  }

  beforeAll(async () => {
    // Neither namespace carries the routing label; the scraper's has the name the policy's default selects.
    await stack.createNamespace(UNROUTED);
    await w.createWorkload(UNROUTED, { name: "web" });
    await stack.createNamespace(MONITORING);
    await w.createWorkload(MONITORING, { name: "prometheus" });
  });

  it("declares one for each gateway, selecting its pods", async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(cluster.kubeconfig);
    const net = kc.makeApiClient(NetworkingV1Api);
    for (const name of ["gateway", "internal-gateway"] as const) {
      const policy = await net.readNamespacedNetworkPolicy({ name, namespace: "default" });
      expect(policy.spec?.podSelector?.matchLabels).toEqual(gatewayPodLabels(name));
      expect(policy.spec?.policyTypes).toEqual(["Ingress", "Egress"]);
    }
  });

  // kube-router rejects what no rule allows (the client sees the connection refused at once), so
  // each refusal is checked against a source that reaches the same open port.
  it("lets a pod of an unrouted namespace reach the listeners, but not the health or metrics port the node reaches", async () => {
    const client = await standinPod(UNROUTED, "web");
    for (const name of ["gateway", "internal-gateway"] as const) {
      const gw = await gatewayPod(name);
      const from = async (pid: string) => ({
        http: await connectFrom(pid, gw.ip, ports.http),
        https: await connectFrom(pid, gw.ip, ports.https),
        health: await connectFrom(pid, gw.ip, ports.health),
        metrics: await connectFrom(pid, gw.ip, ports.metrics),
      });
      expect(await from(client.pid), name).toEqual({
        http: "connected",
        https: "connected",
        health: "refused",
        metrics: "refused",
      });
      // NetworkPolicy always lets the node reach its pods (the kubelet's probes).
      expect(await from(NODE), name).toEqual({
        http: "connected",
        https: "connected",
        health: "connected",
        metrics: "connected",
      });
    }
  });

  it("lets the scraper (prometheus pods in namespace monitoring) read the metrics, and nothing more", async () => {
    const scraper = await standinPod(MONITORING, "prometheus");
    for (const name of ["gateway", "internal-gateway"] as const) {
      const gw = await gatewayPod(name);
      expect(await httpGetFrom(scraper.pid, `http://${gw.ip}:${ports.metrics}/stats/prometheus`), name).toBe(200);
      expect(await connectFrom(scraper.pid, gw.ip, ports.health), name).toBe("refused");
    }
  });

  it("keeps the kubelet's probes working: every gateway pod ready, never restarted", async () => {
    for (const name of ["gateway", "internal-gateway"]) {
      const pods = await w.pods("default", name);
      expect(pods.length, name).toBeGreaterThan(0);
      for (const pod of pods.filter((p) => !p.metadata?.deletionTimestamp)) {
        expect(isReady(pod), pod.metadata?.name).toBe(true);
        expect(pod.status?.containerStatuses?.[0]?.restartCount, pod.metadata?.name).toBe(0);
      }
    }
  });

  it("lets the gateway connect to production and dev/PR pods on 443 and cluster DNS, not to what a pod without a policy reaches", async () => {
    const gw = await gatewayPod("gateway");
    const www = (await readyPod("default", "www")).status!.podIP!;
    const dev = (await readyPod("pr-lb", "web")).status!.podIP!;
    const unrouted = await standinPod(UNROUTED, "web");
    const from = async (pid: string) => ({
      production: await connectFrom(pid, www, UPSTREAM_PORT),
      dev: await connectFrom(pid, dev, UPSTREAM_PORT),
      dns: await connectFrom(pid, cluster.node.dns, 53),
      unrouted: await connectFrom(pid, unrouted.ip, UPSTREAM_PORT),
      kubelet: await connectFrom(pid, cluster.node.ip, cluster.node.kubeletPort),
    });
    expect(await from(gw.envoy)).toEqual({
      production: "connected",
      dev: "connected",
      dns: "connected",
      unrouted: "refused",
      kubelet: "refused",
    });
    // The unrouted pod has no policy: it reaches its own port and the kubelet's.
    expect(await from(unrouted.pid)).toMatchObject({ unrouted: "connected", kubelet: "connected" });
  });

  it("lets the gateway reach a namespace's pods once it carries the routing label, with no pulumi up", async () => {
    const gw = await gatewayPod("internal-gateway");
    const unrouted = await standinPod(UNROUTED, "web");
    expect(await connectFrom(gw.envoy, unrouted.ip, UPSTREAM_PORT)).toBe("refused");
    const start = Date.now();
    await w.labelNamespace(UNROUTED);
    await until(
      `the gateway to reach ${UNROUTED}/web once the namespace is labelled`,
      60_000,
      async () => (await connectFrom(gw.envoy, unrouted.ip, UPSTREAM_PORT, 1)) === "connected",
    );
    console.log(
      `[network-policy] ${UNROUTED} reachable from the gateway ${(Date.now() - start) / 1000} s after its label`,
    );
  });
});

// The prod stack's layout (devNamespaces.clusters: on-demand): one dynamic forward proxy
// cluster for every dev/PR route, a sub-cluster per Service made on its first request.
// Switched on here by `pulumi up` on the running stack, as a platform team would: the
// listener gains the forward proxy filters (bootstrap), so the pods roll. Last in the file:
// the stack stays on demand.
describe("dev/PR routes on demand, switched on by pulumi up", () => {
  it("rolls without a failed production request, then serves each dev/PR Service from a sub-cluster over all its pods", async () => {
    const old = await podNames("default", "gateway");
    /** The dev/PR clusters (names starting pr-) a pod's metrics name. */
    const devClusters = (metrics: Map<string, number>) =>
      [...metrics.keys()]
        .map((k) => /envoy_cluster_name="([^"]+)"/.exec(k)?.[1] ?? "")
        .filter((n) => n.startsWith("pr-"));
    // Before: a cluster per dev/PR Service (pr-lb_web, pr-pods_batch, ...).
    expect(devClusters(await gatewayMetrics(gateway.endpoints[0]!.address))).toContain("pr-lb_web");
    const production = startLoad(() => gateway.request(`www.${DOMAIN}`, "/"), {
      rate: 40,
      maxRequests: 20_000,
      maxMs: 480_000,
    });
    // Dev/PR requests during the switch: from the write of the new xDS files until the old pods
    // are gone, an old pod (its listener without the forward proxy filters) answers them 503.
    const dev = startLoad(() => gateway.request(DEV_HOST, "/pr-lb/web/", { headers: AUTH }), {
      rate: 10,
      maxRequests: 5_000,
      maxMs: 480_000,
    });
    let fresh: string[];
    try {
      await sleep(2000);
      fresh = await rollGateway("envoy-gateways:devNamespaces.clusters", "on-demand", old, production);
    } finally {
      production.stop();
      dev.stop();
    }
    const p = await production.result;
    const d = await dev.result;
    console.log(
      `switch to on-demand: production ${describeFailures(p)}; dev/PR during the roll ${describeFailures(d)}`,
    );
    expect(p.failures, describeFailures(p)).toEqual([]);
    expect(
      d.failures.filter((f) => f.status !== 503 || !old.includes(f.via ?? "")),
      "dev/PR failures other than an old pod's 503",
    ).toEqual([]);

    // Every pod of pr-lb/web answers through the new pods, on the on-demand cluster.
    const pods = await podNames("pr-lb", "web");
    const r = await runLoad(() => gateway.request(DEV_HOST, "/pr-lb/web/", { headers: AUTH }), {
      rate: 100,
      maxRequests: 600,
      maxMs: 60_000,
      concurrency: 4,
    });
    console.log(`on demand, ${pods.length} pods: ${[...r.byPod.values()].join(" / ")} of ${r.samples.length}`);
    expect(r.failures, describeFailures(r)).toEqual([]);
    expect([...r.byPod.keys()].sort()).toEqual(pods);
    for (const count of r.byPod.values()) expect(count).toBeGreaterThanOrEqual(r.samples.length / pods.length / 2);
    expect(
      r.samples.filter((s) => !fresh.includes(s.via ?? "")),
      "requests through another gateway pod than the new ones",
    ).toEqual([]);
    const ok = await gateway.request(DEV_HOST, "/pr-pods/batch/jobs", { headers: AUTH });
    expect(ok.status, ok.body).toBe(200);
    expect(ok.answer()).toMatchObject({ namespace: "pr-pods", service: "batch.pr-pods.svc.cluster.local" });

    // On the pods: a sub-cluster per requested Service, tagged with its namespace; no dev/PR cluster of its own.
    let subClusterRequests = 0;
    for (const pod of fresh) {
      const ip = (await w.core.readNamespacedPod({ name: pod, namespace: "default" })).status!.podIP!;
      const metrics = await gatewayMetrics(ip);
      subClusterRequests += metricSum(
        metrics,
        'envoy_cluster_upstream_rq_total{envoy_cluster_name="DFPCluster_web",dev_namespace="pr-lb"}',
      );
      expect(devClusters(metrics), pod).toEqual([]);
    }
    expect(subClusterRequests).toBeGreaterThanOrEqual(r.samples.length);
  });
});
