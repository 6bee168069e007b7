// What a real cluster has and the old world runs on: ClusterIP and NodePort Services
// through kube-proxy (nftables mode) on the local node, reached from the node and from a
// pod by the Service's DNS name, as a batch driver calls batch.default.svc.<domain>.
// And the one rule the local node adds: kube-proxy's rules are machine-wide, so a
// second local cluster cannot start while this one runs, and leaves the rules alone.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { LABEL } from "../../routing/labels.js";
import { UPSTREAM_PORT } from "../../routing/names.js";
import { repoRoot } from "../support/components.js";
import { kubeProxyRules, untilKubeProxyServes } from "../support/kube-proxy.js";
import { servicesCa } from "../support/local-stack.js";
import { until, Workloads } from "../support/workloads.js";

const run = promisify(execFile);
const cluster = inject("cluster");
const NAMESPACE = `services-${process.pid}`;
const SERVICE = "batch";
const HOST = `${SERVICE}.${NAMESPACE}.svc.${cluster.node.clusterDomain}`;

let w: Workloads;
let clusterIp: string;

/** One HTTPS request on a new connection to address:port, with the Service's name as SNI. */
function get(address: string, port: number): Promise<{ status: number; pod: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: address, port, path: "/", servername: HOST, ca: servicesCa(cluster).cert, agent: false, timeout: 5000 },
      (res) => {
        res.resume();
        res.on("end", () => resolve({ status: res.statusCode ?? 0, pod: String(res.headers["x-pod"]) }));
      },
    );
    req.on("timeout", () => req.destroy(new Error(`no answer from ${address}:${port} within 5 s`)));
    req.on("error", reject);
    req.end();
  });
}

async function getMany(address: string, port: number, count: number): Promise<Map<string, number>> {
  const pods = new Map<string, number>();
  for (let i = 0; i < count; i++) {
    const r = await get(address, port);
    expect(r.status).toBe(200);
    pods.set(r.pod, (pods.get(r.pod) ?? 0) + 1);
  }
  return pods;
}

beforeAll(async () => {
  w = new Workloads(cluster);
  await w.createNamespace(NAMESPACE, false);
  await w.createWorkload(NAMESPACE, { name: SERVICE, replicas: 2 });
  const created = await w.core.createNamespacedService({
    namespace: NAMESPACE,
    body: {
      metadata: { name: SERVICE },
      spec: {
        selector: { [LABEL.app]: SERVICE },
        ports: [{ name: "https", port: UPSTREAM_PORT, targetPort: UPSTREAM_PORT, protocol: "TCP" }],
      },
    },
  });
  clusterIp = created.spec?.clusterIP ?? "";
  await w.waitReady(NAMESPACE, SERVICE, 2);
}, 240_000);

afterAll(async () => {
  await w?.deleteNamespace(NAMESPACE);
});

describe("Services through kube-proxy on the local node", () => {
  it("a ClusterIP Service answers on its cluster IP from the node, over every ready pod", async () => {
    expect(clusterIp).toMatch(/^10\.0\.0\.\d+$/);
    // kube-proxy writes the rules shortly after the EndpointSlice has the ready pods, and
    // may write them once per pod that turns ready: wait for an endpoint chain per pod.
    const ready = await w.pods(NAMESPACE, SERVICE);
    const endpoints = ready.map((p) => `${NAMESPACE}/${SERVICE}/tcp/https__${p.status?.podIP}/${UPSTREAM_PORT}`);
    await until("kube-proxy to send to every ready pod", 30_000, async () => {
      const rules = await kubeProxyRules();
      return endpoints.every((e) => rules.includes(e));
    });
    const pods = await getMany(clusterIp, UPSTREAM_PORT, 40);
    expect([...pods.keys()].sort()).toEqual(ready.map((p) => p.metadata?.name).sort());
    expect(await kubeProxyRules()).toContain(`${clusterIp} . tcp . ${UPSTREAM_PORT}`);
  });

  it("a NodePort Service answers on the node's address", async () => {
    const created = await w.core.createNamespacedService({
      namespace: NAMESPACE,
      body: {
        metadata: { name: `${SERVICE}-nodeport` },
        spec: {
          type: "NodePort",
          selector: { [LABEL.app]: SERVICE },
          ports: [{ name: "https", port: UPSTREAM_PORT, targetPort: UPSTREAM_PORT, protocol: "TCP" }],
        },
      },
    });
    const nodePort = created.spec?.ports?.[0]?.nodePort ?? 0;
    expect(nodePort).toBeGreaterThanOrEqual(30000);
    await untilKubeProxyServes(`node port ${nodePort}`, [{ nodePort }], 30_000);
    const pods = await getMany(cluster.node.ip, nodePort, 20);
    expect(pods.size).toBe(2);
  });

  it("a pod calls the Service by its DNS name through CoreDNS and kube-proxy, every request answered", async () => {
    await w.createClient(NAMESPACE, {
      name: "batch-driver",
      url: `https://${HOST}/jobs`,
      rate: 20,
      count: 100,
      keepAlive: false,
    });
    const tally = await until("the client's 100 requests", 120_000, async () => {
      const t = await w.clientTally(NAMESPACE, "batch-driver");
      return t.done ? t : undefined;
    });
    expect(tally.failures).toEqual([]);
    expect({ sent: tally.sent, ok: tally.ok, failed: tally.failed }).toEqual({ sent: 100, ok: 100, failed: 0 });
    // A connection per request: kube-proxy picks a pod for each, so both answer.
    expect(Object.keys(tally.pods)).toHaveLength(2);
  }, 180_000);

  it("a second local cluster refuses to start while this one owns the Service rules, and leaves them in place", async () => {
    const dir = mkdtempSync(join(tmpdir(), "eg-second-cluster-"));
    try {
      const start = await run("bash", [join(repoRoot, "scripts/local-cluster.sh"), "start", "--dir", dir], {
        timeout: 240_000,
      }).then(
        () => ({ failed: false, stderr: "" }),
        (e: { stderr?: string }) => ({ failed: true, stderr: e.stderr ?? "" }),
      );
      expect(start.failed).toBe(true);
      expect(start.stderr).toContain(`the local cluster in ${cluster.stateDir} runs kube-proxy`);
      expect(start.stderr).toContain(`scripts/local-cluster.sh stop --dir ${cluster.stateDir}`);
    } finally {
      await run("bash", [join(repoRoot, "scripts/local-cluster.sh"), "stop", "--dir", dir], { timeout: 120_000 });
      rmSync(dir, { recursive: true, force: true });
    }
    expect(await kubeProxyRules()).toContain(`${clusterIp} . tcp . ${UPSTREAM_PORT}`);
    expect((await get(clusterIp, UPSTREAM_PORT)).status).toBe(200);
  }, 300_000);
});
