// The envoy-gateways program itself on the local cluster, through the real
// engine: a workspace holding a copy of the project and a stack whose config
// is one of the repository's stack files made local (test/support/local-stack.ts:
// the stand-in pod images, NodePort gateway Services), pointed at the local
// cluster (kubeconfig as a secret), with the gateways' and pods' Secrets in the
// cluster. `pulumi up` waits for ready Deployments, as on any cluster.
import { CoreV1Api, KubeConfig, type V1Service } from "@kubernetes/client-node";
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { StackConfig } from "../../routing/config/schema.js";
import { routingLabels } from "../../routing/labels.js";
import type { LocalCluster } from "./cluster.js";
import { repoRoot } from "./components.js";
import { applyLocalSecrets, localStackConfigLines, parsedLocalStackConfig, type ConfigEdit } from "./local-stack.js";
import { PulumiWorkspace } from "./pulumi.js";

/** The CLIs compiled from the current sources into dist/, as `npm run build` does (about 10 s). */
export function buildCli(): void {
  execFileSync(process.execPath, [join(repoRoot, "scripts", "build-cli.mjs")], { stdio: "inherit" });
}

export interface ProgramStackOptions {
  /** Which stack file's config to start from (Pulumi.<from>.yaml). */
  from: "dev" | "prod";
  /** Name of the stack in the workspace (default: "local"). */
  stack?: string;
  /** Kubeconfig file for the program (default: the cluster's admin). */
  kubeconfig?: string;
  /** A change to the local config before it is written (default: none). */
  edit?: ConfigEdit;
}

export interface ScriptRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export class ProgramStack {
  /** Namespaces created through createNamespace(), deleted by dispose(). */
  private readonly namespaces = new Set<string>();

  private constructor(
    readonly ws: PulumiWorkspace,
    readonly cluster: LocalCluster,
    /** The stack's config (as validated by the program). */
    readonly config: StackConfig,
  ) {}

  static async create(cluster: LocalCluster, options: ProgramStackOptions): Promise<ProgramStack> {
    const ws = new PulumiWorkspace({ programDir: repoRoot, stack: options.stack ?? "local" });
    await ws.init();
    // The stack file's config made local (init wrote the stack's encryption salt into the file).
    const stackFile = join(ws.programDir, `Pulumi.${ws.stack}.yaml`);
    appendFileSync(stackFile, `${["", "config:", ...localStackConfigLines(options.from, options.edit)].join("\n")}\n`);
    await ws.setConfig(
      "envoy-gateways:kubeconfig",
      readFileSync(options.kubeconfig ?? cluster.kubeconfig, "utf8"),
      true,
    );
    const config = parsedLocalStackConfig(options.from, options.edit);
    await applyLocalSecrets(cluster, config);
    return new ProgramStack(ws, cluster, config);
  }

  /**
   * The same stack from another checkout at another path, sharing the
   * backend, selected there as a user would (dispose it with `ws.dispose()`).
   */
  async anotherCheckout(): Promise<ProgramStack> {
    const ws = this.ws.anotherCheckout();
    await ws.ok(["stack", "select", ws.stack]);
    return new ProgramStack(ws, this.cluster, this.config);
  }

  /**
   * This stack run from an earlier release's sources (PulumiWorkspace.atRelease), with the
   * stack file as it is now; dispose it with `ws.dispose()` (the stack stays).
   */
  async atRelease(commit: string): Promise<ProgramStack> {
    const ws = this.ws.atRelease(commit);
    await ws.ok(["stack", "select", ws.stack]);
    return new ProgramStack(ws, this.cluster, this.config);
  }

  /**
   * Starts one of the project's CLIs against this stack, with the engine's environment, as the docs say to
   * run it: the compiled `dist/<name>` (a launcher that execs Node on dist/<name>.js, so the child's pid is
   * the CLI's own; the e2e global setup builds dist/ from the sources).
   */
  spawnScript(name: string, args: string[]): ChildProcessWithoutNullStreams {
    const command = join(repoRoot, "dist", name);
    if (!existsSync(command)) throw new Error(`${command} not found: run \`npm run build\` (scripts/setup.sh does)`);
    return spawn(command, ["--stack", this.ws.stack, "--project-dir", this.ws.programDir, ...args], {
      cwd: repoRoot,
      env: this.ws.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
  }

  /** Runs one of the project's CLIs to its end (killed after `timeoutMs`); never throws on a non-zero exit. */
  runScript(name: string, args: string[] = [], timeoutMs = 300_000): Promise<ScriptRun> {
    return new Promise((resolve, reject) => {
      const child = this.spawnScript(name, args);
      child.stdin.end();
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d: Buffer) => (stdout += d));
      child.stderr.on("data", (d: Buffer) => (stderr += d));
      const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
      child.on("error", reject);
      child.on("close", (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
  }

  core(kubeconfig = this.cluster.kubeconfig): CoreV1Api {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    return kc.makeApiClient(CoreV1Api);
  }

  /**
   * Creates a namespace that dispose() deletes again, so that the test files sharing
   * the cluster do not see each other's dev/PR namespaces (or shifts in progress).
   */
  async createNamespace(name: string, labels: Record<string, string> = {}): Promise<void> {
    await this.core().createNamespace({ body: { metadata: { name, labels } } });
    this.namespaces.add(name);
  }

  async dispose(): Promise<void> {
    const core = this.core();
    for (const name of this.namespaces) {
      // Already gone is fine (a test may delete its own); anything else is a real failure.
      await core.deleteNamespace({ name }).catch((e: { code?: number }) => {
        if (e.code !== 404) throw e;
      });
    }
    // A checkout deleted on purpose (another one destroyed the stack).
    if (existsSync(this.ws.programDir)) await this.ws.run(["destroy", "--yes", "--stack", this.ws.stack], 300_000);
    await this.ws.dispose();
  }
}

/** A Service carrying the routing labels, headless on 443, with no pods: enough for a route. */
export function routedServiceBody(name: string): V1Service {
  return {
    metadata: { name, labels: routingLabels({ service: name, weight: 100, replicas: 2, websocket: false }) },
    spec: { clusterIP: "None", selector: { app: name }, ports: [{ name: "https", port: 443, targetPort: 443 }] },
  };
}
