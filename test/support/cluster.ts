// Starts and stops the local control plane (etcd + kube-apiserver +
// kube-controller-manager) through scripts/local-cluster.sh.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { repoRoot, requireComponents } from "./components.js";

const run = promisify(execFile);
const script = join(repoRoot, "scripts/local-cluster.sh");

export interface LocalCluster {
  /** https://127.0.0.1:<port> of kube-apiserver. */
  server: string;
  /** Admin kubeconfig (group system:masters). */
  kubeconfig: string;
  /** Kubeconfig of "restricted-user": authenticated, without any RBAC binding. */
  restrictedKubeconfig: string;
  /** The state directory (certificates, logs, etcd data). */
  stateDir: string;
  ports: { etcd: number; etcdPeer: number; apiserver: number; controllerManager: number };
}

async function script_(args: string[]): Promise<{ stdout: string; stderr: string }> {
  try {
    return await run("bash", [script, ...args], { cwd: repoRoot, timeout: 240_000, maxBuffer: 16 << 20 });
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`scripts/local-cluster.sh ${args.join(" ")} failed: ${e.message}\n${e.stderr ?? ""}${e.stdout ?? ""}`);
  }
}

/**
 * Starts a fresh local cluster in `stateDir` (default: a new temporary directory) and
 * waits until it is ready.
 */
export async function startLocalCluster(stateDir?: string): Promise<LocalCluster> {
  requireComponents();
  const dir = stateDir ?? mkdtempSync(join(tmpdir(), "eg-cluster-"));
  await script_(["start", "--dir", dir]);
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
