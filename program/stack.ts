// The whole program: stack config -> routing table -> validated Envoy files
// -> the Kubernetes objects of both gateways and every routed service.
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { runError } from "./run-error.js";
import { InputError } from "../routing/config/errors.js";
import { fromPulumiConfig, parseStackConfig } from "../routing/config/load.js";
import { GATEWAYS, type GatewayName, type StackConfig } from "../routing/config/schema.js";
import { renderGateways } from "../routing/render.js";
import { buildRoutingTable, stackClusterName, type DevNamespaces, type RoutingTable } from "../routing/table.js";
import { routesInput } from "../routing/routes-input.js";
import { serviceHost } from "../routing/names.js";
import { EnvoyGateway } from "../components/envoy-gateway.js";
import { HeadlessService } from "../components/headless-service.js";
import { RouteSyncAccess } from "../components/route-sync-access.js";
import { Routes } from "../components/routes.js";

/** Validated stack config from the engine; a bad value stops the program before anything is declared. */
export function loadStackConfig(): StackConfig {
  try {
    return parseStackConfig(fromPulumiConfig(pulumi.runtime.allConfig()), `stack ${pulumi.getStack()} config`);
  } catch (e) {
    // RunError: Pulumi prints the message without a stack trace.
    if (e instanceof InputError) throw runError(e.message);
    throw e;
  }
}

/** What the program exports. */
export interface StackOutputs {
  /** Per gateway: its Service and external address. */
  gateways: Record<GatewayName, { service: string; address: pulumi.Output<string | undefined> }>;
  /** Per gateway: every routed host and path, and where it goes. */
  routes: Record<GatewayName, string[]>;
  gatewayResources: Record<GatewayName, EnvoyGateway>;
  services: HeadlessService[];
}

/**
 * Declares everything. The gateways' xDS ConfigMaps are created with the
 * production routes (so Envoy can start); from then on the routes resources
 * own their data, with the dev/PR routes `devNamespaces` gives.
 */
export function declareStack(config: StackConfig, devNamespaces: DevNamespaces = {}, now: Date = new Date()): StackOutputs {
  let files;
  let table: RoutingTable;
  try {
    files = renderGateways(config, buildRoutingTable(config, {}, "stack config", now));
    table = buildRoutingTable(config, devNamespaces, "discovered dev/PR namespaces", now);
  } catch (e) {
    if (e instanceof InputError) throw runError(e.message);
    throw e;
  }
  const provider = new k8s.Provider("kubernetes", {
    kubeconfig: config.kubeconfig === undefined ? undefined : pulumi.secret(config.kubeconfig),
    renderYamlToDirectory: config.renderYamlToDirectory,
  });
  // One headless Service per version (stack) of each production service; a single version is the service itself.
  const services = table.production.flatMap((s) => {
    const spec = config.services.find((p) => p.name === s.name)!;
    return s.stacks.map(
      (stack) =>
        new HeadlessService(
          stack.service,
          {
            serviceName: stack.service,
            logicalName: s.name,
            version: stack.version || undefined,
            weight: stack.weight,
            namespace: s.namespace,
            replicas: spec.replicas,
            websocket: spec.websocket,
            image: spec.versions ? undefined : spec.image,
            skipAwait: config.skipAwait,
          },
          { provider },
        ),
    );
  });
  const gatewayResources = {} as Record<GatewayName, EnvoyGateway>;
  const gateways = {} as StackOutputs["gateways"];
  const routes = {} as StackOutputs["routes"];
  for (const gateway of GATEWAYS) {
    const g = new EnvoyGateway(
      gateway,
      {
        gateway,
        namespace: config.namespace,
        image: config.envoyImage,
        settings: config.gateways[gateway],
        files: files.find((f) => f.gateway === gateway)!,
        drainSeconds: config.edge.drainSeconds,
        skipAwait: config.skipAwait,
      },
      { provider, dependsOn: services },
    );
    gatewayResources[gateway] = g;
    gateways[gateway] = { service: `${config.namespace}/${gateway}`, address: g.address };
    routes[gateway] = describeRoutes(config, table, gateway);
    // In render mode there is no cluster to write to: the ConfigMaps carry the production routes.
    if (!config.renderYamlToDirectory) {
      new Routes(
        `${gateway}-routes`,
        {
          gateway,
          namespace: config.namespace,
          configMap: g.xdsConfigMap.metadata.name,
          config: routesConfig(config),
          routes: routesInput(config, table, gateway),
          asOf: now.toISOString(),
          kubeconfig: config.kubeconfig === undefined ? undefined : pulumi.secret(config.kubeconfig),
        },
        { dependsOn: [g.xdsConfigMap] },
      );
    }
  }
  new RouteSyncAccess("route-sync", { namespace: config.namespace, configMaps: GATEWAYS.map((g) => gatewayResources[g].xdsConfigMap.metadata.name) }, { provider });
  return { gateways, routes, gatewayResources, services };
}

/** The stack config the routes resources render with: no kubeconfig (it is a separate secret input), no render directory. */
function routesConfig(config: StackConfig): Record<string, unknown> {
  const { kubeconfig: _k, renderYamlToDirectory: _r, ...rest } = config;
  return rest;
}

/** One line per route, for the stack outputs: "https://batch.example.org/ -> batch.default.svc.cluster.local:443 (default_batch)". */
export function describeRoutes(config: StackConfig, table: RoutingTable, gateway: GatewayName): string[] {
  const domain = gateway === "gateway" ? config.domain : config.internalDomain;
  const devHost = config.gateways[gateway].devHost ?? `internal.${domain}`;
  const target = (s: RoutingTable["production"][number]) =>
    s.stacks.map((st) => `${serviceHost(st.service, s.namespace, config.clusterDomain)}:443 (${stackClusterName(s, st)}${s.stacks.length > 1 ? `, ${st.weight}%` : ""})`).join(" + ");
  return [
    ...table.production.flatMap((s) => [`${s.name}.${domain}`, ...(gateway === "gateway" ? s.aliases : [])].map((h) => `https://${h}/ -> ${target(s)}`)),
    ...table.dev.map((s) => `https://${devHost}/${s.namespace}/${s.name}/ -> ${target(s)}`),
  ];
}
