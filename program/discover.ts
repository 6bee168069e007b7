// Discovery at program time: the dev/PR namespaces labelled for routing and
// their labelled Services, read from the cluster in two list requests, as
// the routing facts the routes resources are given.
import * as pulumi from "@pulumi/pulumi";
import { runError } from "./run-error.js";
import type { LoadedConfig } from "./stack.js";
import { routedDevNamespaces } from "../routing/capacity.js";
import { ROUTED_SERVICE_SELECTOR } from "../routing/discovery.js";
import type { DevNamespaces } from "../routing/table.js";
import { listRoutedObjects, loadKubeConfig } from "../kube/client.js";

/** The dev/PR part of the routing table as the cluster has it at `now`; malformed Services, and namespaces past the ConfigMaps' capacity, are reported and left out. */
export async function discoverDevNamespaces({ config, kubeconfig }: LoadedConfig, now: Date): Promise<DevNamespaces> {
  if (config.renderYamlToDirectory) {
    void pulumi.log.info(
      "renderYamlToDirectory is set: no cluster to discover dev/PR namespaces from; rendering production routes only",
    );
    return {};
  }
  let listed;
  try {
    listed = await listRoutedObjects(
      loadKubeConfig(kubeconfig?.text),
      config.devNamespaces.selector,
      ROUTED_SERVICE_SELECTOR,
    );
  } catch (e) {
    throw runError(`discovering dev/PR namespaces failed; nothing was changed: ${(e as Error).message}`);
  }
  const found = routedDevNamespaces(config, listed.namespaces, listed.services, now);
  for (const p of [...found.problems, ...found.warnings]) void pulumi.log.warn(`${p.key} ${p.message}`);
  return found.devNamespaces;
}
