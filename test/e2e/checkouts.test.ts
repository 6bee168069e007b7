// The routes resource as a team uses it, on the local cluster through the
// real engine: the same stack driven from two checkouts at different paths
// (a CI runner and a laptop sharing one backend), also after the first
// checkout is deleted; a sync that starts while another update holds the
// stack lock; and no secret anywhere it should not be: state, outputs, logs,
// errors, or kubeconfig copies left in the temporary directory.
import { readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { routingLabels } from "../../routing/labels.js";
import { ProgramStack, type ScriptRun } from "../support/program.js";
import type { PulumiResult } from "../support/pulumi.js";

const cluster = inject("cluster");
const DEV = { "envoy-gateways.io/routes": "dev" };
const kubeconfig = readFileSync(cluster.kubeconfig, "utf8");
/** The admin's client key as it appears in the kubeconfig: it must never leave it. */
const clientKey = /client-key-data: (\S+)/.exec(kubeconfig)![1]!;

let a: ProgramStack;
/** The checkout the later tests go on from (checkout A is deleted on the way). */
let current: ProgramStack | undefined;
/** Everything the commands of this file printed, checked for secrets at the end. */
const printed: string[] = [];

async function ok(stack: ProgramStack, args: string[]): Promise<PulumiResult> {
  const r = await stack.ws.ok(args, 600_000);
  printed.push(r.stdout, r.stderr);
  return r;
}

async function script(stack: ProgramStack, name: string, args: string[] = []): Promise<ScriptRun> {
  const r = await stack.runScript(name, args);
  printed.push(r.stdout, r.stderr);
  return r;
}

async function routedNamespace(stack: ProgramStack, name: string, service: string): Promise<void> {
  await a.createNamespace(name, DEV);
  await stack.core().createNamespacedService({
    namespace: name,
    body: {
      metadata: { name: service, labels: routingLabels({ service, weight: 100, replicas: 1, websocket: false }) },
      spec: { clusterIP: "None", selector: { app: service }, ports: [{ name: "https", port: 443, targetPort: 443 }] },
    },
  });
}

async function rds(stack: ProgramStack): Promise<string> {
  return (
    (await stack.core().readNamespacedConfigMap({ name: "gateway-xds", namespace: "default" })).data?.["rds.yaml"] ?? ""
  );
}

/** Every file under `dir` whose content holds `needle`. */
function filesHolding(dir: string, needle: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    if (statSync(path).size < 10 << 20 && readFileSync(path, "utf8").includes(needle)) found.push(path);
  }
  return found;
}

beforeAll(async () => {
  a = await ProgramStack.create(cluster, { from: "dev", stack: "checkouts" });
});

afterAll(async () => {
  // The stack from the checkout that still exists, then A's namespaces and directories.
  if (current) {
    await current.ws.run(["destroy", "--yes", "--skip-preview"], 300_000);
    await current.ws.dispose();
  }
  await a?.dispose();
});

describe("from any checkout", () => {
  /** From checkout B: a preview with no changes, a refresh, a sync that adds a route, and a destroy, all succeeding. */
  async function driveFrom(b: ProgramStack, namespace: string): Promise<void> {
    const preview = await b.ws.run(["preview", "--expect-no-changes"], 300_000);
    printed.push(preview.stdout, preview.stderr);
    expect(preview.code, preview.stdout + preview.stderr).toBe(0);
    await ok(b, ["refresh", "--yes", "--skip-preview"]);
    await routedNamespace(b, namespace, "batch");
    const sync = await script(b, "sync-routes");
    expect(sync.code, sync.stderr).toBe(0);
    expect(sync.stdout).toContain(`+ ${namespace}/batch on gateway`);
    expect(await rds(b)).toContain(`"path_separated_prefix":"/${namespace}/batch"`);
    await ok(b, ["destroy", "--yes", "--skip-preview"]);
    await expect(b.core().readNamespacedConfigMap({ name: "gateway-xds", namespace: "default" })).rejects.toMatchObject(
      { code: 404 },
    );
  }

  it("runs the stack that checkout A deployed from checkout B at another path", async () => {
    await ok(a, ["up", "--yes", "--skip-preview"]);
    const state = (await ok(a, ["stack", "export"])).stdout;
    expect(state, "no absolute path of the checkout in state").not.toContain(a.ws.programDir);
    const b = await a.anotherCheckout();
    try {
      expect(b.ws.programDir).not.toBe(a.ws.programDir);
      await driveFrom(b, "pr-co-1");
    } finally {
      await b.ws.dispose();
    }
  });

  it("runs it from checkout B after checkout A is deleted", async () => {
    await ok(a, ["up", "--yes", "--skip-preview"]);
    current = await a.anotherCheckout();
    rmSync(a.ws.programDir, { recursive: true, force: true });
    await driveFrom(current, "pr-co-2");
  });
});

describe("the stack lock, and secrets", () => {
  let b: ProgramStack;
  beforeAll(async () => {
    // Checkout A is gone (above): go on from B.
    b = current!;
    await ok(b, ["up", "--yes", "--skip-preview"]);
  });

  it("a sync started while another update holds the stack writes the route live, then waits for the lock to record it, saying who holds it", async () => {
    // The other update: a refresh, stopped while it holds the lock.
    const holder = b.ws.spawn(["refresh", "--yes", "--skip-preview"]);
    const holderDone = new Promise<number | null>((resolve) => holder.on("close", resolve));
    const locks = join(b.ws.backendDir, ".pulumi", "locks");
    const deadline = Date.now() + 60_000;
    while (!existsDeep(locks)) {
      if (Date.now() > deadline) throw new Error("the refresh took no lock within 60 s");
      await new Promise((r) => setTimeout(r, 50));
    }
    process.kill(holder.pid!, "SIGSTOP");
    let out = "";
    let sync: ReturnType<ProgramStack["spawnScript"]> | undefined;
    let syncDone: Promise<number | null> = Promise.resolve(null);
    try {
      await routedNamespace(b, "pr-co-lock", "batch");
      sync = b.spawnScript("sync-routes", ["--lock-wait", "5m"]);
      sync.stdout.on("data", (d: Buffer) => (out += d));
      sync.stderr.on("data", (d: Buffer) => (out += d));
      syncDone = new Promise((resolve) => sync!.on("close", resolve));
      const waitUntil = Date.now() + 120_000;
      while (!/the stack is locked by \S+@\S+ \(pid \d+\) since \S+: waiting \d+s, then trying again/.test(out)) {
        if (Date.now() > waitUntil) throw new Error(`sync-routes never said it waits for the lock:\n${out}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(out).toContain(`(pid ${holder.pid})`);
      // Live already, while the record waits.
      expect(await rds(b)).toContain('"path_separated_prefix":"/pr-co-lock/batch"');
    } finally {
      process.kill(holder.pid!, "SIGCONT");
      // Both end before the next test: neither may hold the lock then.
      await Promise.all([holderDone, syncDone]);
    }
    expect(await holderDone).toBe(0);
    expect(await syncDone, out).toBe(0);
    printed.push(out);
    expect(out).toMatch(
      /\+ pr-co-lock\/batch on gateway[\s\S]*routes live in [\d.]+s, recorded in the state in [\d.]+s/,
    );
    const state = JSON.parse((await ok(b, ["stack", "export"])).stdout) as {
      deployment: { resources: { type: string; outputs?: { routes?: Record<string, unknown>; drift?: unknown } }[] };
    };
    const routes = state.deployment.resources.filter((r) => r.type.endsWith(":Routes"));
    expect(routes).toHaveLength(2);
    for (const r of routes) {
      expect(Object.keys(r.outputs!.routes!)).toContain("pr-co-lock/batch");
      expect(r.outputs!.drift).toBeUndefined();
    }
    const again = await b.ws.run(["preview", "--expect-no-changes"], 300_000);
    expect(again.code, again.stdout + again.stderr).toBe(0);
  });

  it("never lets the kubeconfig or a secret value reach state, outputs, logs or errors, and leaves no kubeconfig copy behind", async () => {
    // A secret under a misspelt key: the program refuses it, naming the key, without its value.
    const marker = "s3cr3t-under-a-misspelt-key";
    await b.ws.setConfig("envoy-gateways:kubeconfg", marker, true);
    const refused = await b.ws.run(["preview"], 300_000);
    printed.push(refused.stdout, refused.stderr);
    expect(refused.code).not.toBe(0);
    expect(refused.stdout + refused.stderr).toMatch(
      /envoy-gateways:kubeconfg: unknown key; allowed: .*\(value not shown: it is a secret\)/,
    );
    expect(refused.stdout + refused.stderr).not.toContain(marker);
    await ok(b, ["config", "rm", "envoy-gateways:kubeconfg"]);

    await ok(b, ["preview", "--diff"]);
    const state = (await ok(b, ["stack", "export"])).stdout;
    const outputs = (await ok(b, ["stack", "output", "--json"])).stdout;
    for (const [what, text] of [
      ["state", state],
      ["outputs", outputs],
      ["the commands' output", printed.join("\n")],
    ] as const) {
      expect(text.includes(clientKey), `the client key in ${what}`).toBe(false);
      expect(text.includes(kubeconfig), `the kubeconfig in ${what}`).toBe(false);
      expect(text.includes(marker), `the misspelt key's secret in ${what}`).toBe(false);
    }
    // In state the kubeconfig is ciphertext wherever a resource holds it.
    expect(state).toMatch(
      /"kubeconfig":\s*\{\s*"4dabf18193072939515e22adb298388d":\s*"1b47061264138c4ac30d75fd1eb44270",\s*"ciphertext"/,
    );
    await ok(b, ["destroy", "--yes", "--skip-preview"]);
    // Every command of both checkouts ran with its checkout's TMPDIR: the provider's copies are gone.
    expect(filesHolding(b.ws.tmpDir, clientKey)).toEqual([]);
    expect(filesHolding(a.ws.tmpDir, clientKey)).toEqual([]);
  });
});

function existsDeep(dir: string): boolean {
  try {
    return readdirSync(dir, { recursive: true, withFileTypes: true }).some(
      (e) => e.isFile() && e.name.endsWith(".json"),
    );
  } catch {
    return false;
  }
}
