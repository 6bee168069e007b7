// vitest globalSetup of the e2e project: the CLIs compiled from the current
// sources (dist/, as `npm run build` does: the tests run them as the docs say),
// and one local cluster for the whole run, stopped (and its state directory
// removed) when the run ends.
import type { TestProject } from "vitest/node";
import { startLocalCluster, stopLocalCluster, type LocalCluster } from "./cluster.js";
import { buildCli } from "./program.js";

declare module "vitest" {
  export interface ProvidedContext {
    cluster: LocalCluster;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  buildCli();
  const cluster = await startLocalCluster();
  project.provide("cluster", cluster);
  return async () => {
    await stopLocalCluster(cluster, true);
  };
}
