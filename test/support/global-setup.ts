// vitest globalSetup of the e2e project: the CLIs compiled from the current
// sources (dist/, as `npm run build` does: the tests run them as the docs say),
// and one local cluster for the whole run, stopped (and its state directory
// removed) when the run ends.
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { repoRoot } from "./components.js";
import { startLocalCluster, stopLocalCluster, type LocalCluster } from "./cluster.js";

declare module "vitest" {
  export interface ProvidedContext {
    cluster: LocalCluster;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  execFileSync(process.execPath, [join(repoRoot, "scripts", "build-cli.mjs")], { stdio: "inherit" });
  const cluster = await startLocalCluster();
  project.provide("cluster", cluster);
  return async () => {
    await stopLocalCluster(cluster, true);
  };
}
