// Starts and stops the local control plane (etcd + kube-apiserver +
// kube-controller-manager) through scripts/local-cluster.sh.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { repoRoot, requireComponents } from "./components.js";

const run = promisify(execFile);
const script = join(repoRoot, "scripts/local-cluster.sh");

export interface LocalNode {
  name: string;
  /** The node's address (the pod bridge's): the kubelet's API and CoreDNS listen there. */
  ip: string;
  /** The kubelet's API port, on `ip`. */
  kubeletPort: number;
  /** Pods get addresses in this /24 on the bridge; the host reaches them directly. */
  podSubnet: string;
  bridge: string;
  /** Cluster DNS (the kubelet's clusterDNS), port 53. */
  dns: string;
  clusterDomain: string;
  containerdSocket: string;
  /** Every DNS query CoreDNS answered, one line each. */
  corednsLog: string;
  podLogsDir: string;
  cgroupRoot: string;
  /** kube-proxy (nftables mode): ClusterIP and NodePort Services answer on the node and in pods. */
  kubeProxy: { mode: "nftables"; healthzPort: number; log: string };
  /** The NetworkPolicy enforcer: kube-router's firewall controller (iptables and ipset). */
  networkPolicy: { enforcer: string; healthzPort: number; log: string };
}

export interface LocalCluster {
  /** https://127.0.0.1:<port> of kube-apiserver. */
  server: string;
  /** Admin kubeconfig (group system:masters). */
  kubeconfig: string;
  /** Kubeconfig of "restricted-user": authenticated, without any RBAC binding. */
  restrictedKubeconfig: string;
  /** The state directory (certificates, logs, etcd data, the node's state). */
  stateDir: string;
  /** The node: kubelet, containerd, CoreDNS, kube-proxy and the pod network (scripts/local-node.sh). */
  node: LocalNode;
  ports: { etcd: number; etcdPeer: number; apiserver: number; controllerManager: number };
}

async function script_(args: string[]): Promise<{ stdout: string; stderr: string }> {
  try {
    return await run("bash", [script, ...args], { cwd: repoRoot, timeout: 240_000, maxBuffer: 16 << 20 });
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `scripts/local-cluster.sh ${args.join(" ")} failed: ${e.message}\n${e.stderr ?? ""}${e.stdout ?? ""}`,
      { cause: error },
    );
  }
}

export interface StartOptions {
  /** State directory; default a new temporary directory. */
  stateDir?: string;
  /** Write the API server's audit log (one JSON line per request) to logs/audit.log. */
  audit?: boolean;
}

/** Starts a fresh local cluster and waits until it is ready. */
export async function startLocalCluster(options: StartOptions = {}): Promise<LocalCluster> {
  requireComponents();
  const dir = options.stateDir ?? mkdtempSync(join(tmpdir(), "eg-cluster-"));
  try {
    await script_(["start", "--dir", dir, ...(options.audit ? ["--audit"] : [])]);
  } catch (e) {
    // A failed start stopped what it started (the node included); its temporary directory goes too.
    if (!options.stateDir) rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return JSON.parse(readFileSync(join(dir, "cluster.json"), "utf8")) as LocalCluster;
}

/** Stops every process of the cluster; with `removeState`, deletes its directory too. */
export async function stopLocalCluster(cluster: Pick<LocalCluster, "stateDir">, removeState = false): Promise<void> {
  await script_(["stop", "--dir", cluster.stateDir]);
  if (removeState) rmSync(cluster.stateDir, { recursive: true, force: true });
}

/** True when every process of the cluster runs and the API server is ready. */
export async function localClusterReady(cluster: Pick<LocalCluster, "stateDir">): Promise<boolean> {
  try {
    await run("bash", [script, "status", "--dir", cluster.stateDir], { cwd: repoRoot });
    return true;
  } catch {
    return false;
  }
}

/**
 * Stops the cluster's kube-apiserver (its whole process group), runs `whileStopped`,
 * then starts it again with the same command line and waits until it is ready. etcd
 * keeps the data, so everything is as before; local-cluster.sh stop still finds it
 * (the new process writes the same pid file, as the script's launcher does).
 */
export async function withApiServerStopped<T>(cluster: LocalCluster, whileStopped: () => Promise<T>): Promise<T> {
  const { readFileSync: read, existsSync: exists, openSync, closeSync } = await import("node:fs");
  const { spawn } = await import("node:child_process");
  const pidFile = join(cluster.stateDir, "run", "kube-apiserver.pid");
  const pid = Number(read(pidFile, "utf8").trim());
  const argv = read(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
  process.kill(-pid, "SIGTERM");
  for (let i = 0; i < 150 && exists(`/proc/${pid}`); i++) await new Promise((r) => setTimeout(r, 100));
  if (exists(`/proc/${pid}`)) process.kill(-pid, "SIGKILL");
  try {
    return await whileStopped();
  } finally {
    const log = openSync(join(cluster.stateDir, "logs", "kube-apiserver.log"), "a");
    const child = spawn("setsid", ["bash", "-c", 'echo $$ >"$0"; exec "$@"', pidFile, ...argv], {
      stdio: ["ignore", log, log],
      detached: true,
    });
    child.unref();
    closeSync(log);
    const deadline = Date.now() + 120_000;
    while (!(await apiServerReady(cluster))) {
      if (Date.now() > deadline)
        // eslint-disable-next-line no-unsafe-finally -- a server that did not come back must fail the test, whatever whileStopped gave
        throw new Error(
          `kube-apiserver did not come back within 120 s (see ${cluster.stateDir}/logs/kube-apiserver.log)`,
        );
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

async function apiServerReady(cluster: LocalCluster): Promise<boolean> {
  const { KubeConfig } = await import("@kubernetes/client-node");
  const kc = new KubeConfig();
  kc.loadFromFile(cluster.kubeconfig);
  const opts: { ca?: Buffer; cert?: Buffer; key?: Buffer } = {};
  await kc.applyToHTTPSOptions(opts as never);
  const https = await import("node:https");
  return new Promise((resolve) => {
    const req = https.get(`${cluster.server}/readyz`, { ...opts, timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on("error", () => resolve(false));
    req.on("timeout", () => req.destroy());
  });
}

/**
 * A kubeconfig for the local cluster as a ServiceAccount (a short-lived
 * token the admin requests for it): what an identity the program grants may
 * do, on the real API server.
 */
export async function serviceAccountKubeConfig(
  cluster: Pick<LocalCluster, "kubeconfig">,
  namespace: string,
  name: string,
): Promise<KubeConfig> {
  const admin = new KubeConfig();
  admin.loadFromFile(cluster.kubeconfig);
  const token = (
    await admin.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
      name,
      namespace,
      body: { spec: { audiences: [], expirationSeconds: 600 } },
    })
  ).status!.token;
  const as = new KubeConfig();
  as.loadFromOptions({
    clusters: [{ ...admin.getCurrentCluster()!, name: "local" }],
    users: [{ name, token }],
    contexts: [{ name, cluster: "local", user: name }],
    currentContext: name,
  });
  return as;
}
