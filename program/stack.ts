// The whole program: stack config -> routing table -> validated Envoy files
// -> the Kubernetes objects of both gateways and every routed service, and a
// routes resource per gateway given the facts (routing config and the
// discovered dev/PR namespaces).
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { runError } from "./run-error.js";
import { InputError } from "../routing/config/errors.js";
import { fromPulumiConfig, KUBECONFIG_KEY, kubeconfigOf, parseStackConfig, PROJECT } from "../routing/config/load.js";
import { GATEWAYS, routingConfig, type GatewayName, type StackConfig } from "../routing/config/schema.js";
import { renderGateways } from "../routing/render.js";
import { describeRoutes, routesView } from "../routing/routes-view.js";
import { buildRoutingTable, type DevNamespaces } from "../routing/table.js";
import { EnvoyGateway, gatewayObjectNames } from "../components/envoy-gateway.js";
import { HeadlessService } from "../components/headless-service.js";
import { gatewayNetworkFacts } from "../components/network-policy.js";
import { RouteController } from "../components/route-controller.js";
import { RouteSyncAccess } from "../components/route-sync-access.js";
import { Routes } from "../components/routes.js";
import { routesInputs, type RouteControllerWrites, type SyncWrites } from "../routes-provider/core.js";
import {
  controllerConfigData,
  controllerConfigDigest,
  type RoutesTarget,
} from "../routes-provider/controller-config.js";

/** The stack's config, and its kubeconfig kept apart from it. */
export interface LoadedConfig {
  config: StackConfig;
  /** The config as written (before defaults), without the kubeconfig: what the route controller is given. */
  raw: Record<string, unknown>;
  /** The cluster's kubeconfig, when the stack sets one: the text for the program's own API calls, the secret for every resource input. */
  kubeconfig?: { text: string; secret: pulumi.Output<string> };
}

/** Stack config keys (without the project prefix) set with --secret. */
function secretKeys(all: Record<string, string>): Set<string> {
  const isSecret = (pulumi.runtime as unknown as { isConfigSecret(key: string): boolean }).isConfigSecret;
  const prefix = `${PROJECT}:`;
  return new Set(
    Object.keys(all)
      .filter((k) => k.startsWith(prefix) && isSecret(k))
      .map((k) => k.slice(prefix.length)),
  );
}

/**
 * Validated stack config from the engine; a bad value stops the program
 * before anything is declared. The kubeconfig must be a secret.
 */
export function loadStackConfig(): LoadedConfig {
  const all = pulumi.runtime.allConfig();
  const secrets = secretKeys(all);
  const subject = `stack ${pulumi.getStack()} config`;
  try {
    const raw = fromPulumiConfig(all);
    const config = parseStackConfig(raw, subject, { secretKeys: secrets });
    const text = kubeconfigOf(raw);
    const { [KUBECONFIG_KEY]: _, ...written } = raw;
    if (text === undefined) return { config, raw: written };
    if (!secrets.has(KUBECONFIG_KEY)) {
      throw new InputError(subject, [
        {
          key: `${PROJECT}:${KUBECONFIG_KEY}`,
          source: "config",
          message: `is plain text in the stack's config; set it as a secret: pulumi config set --secret ${PROJECT}:${KUBECONFIG_KEY} (value not shown)`,
        },
      ]);
    }
    return {
      config,
      raw: written,
      kubeconfig: { text, secret: new pulumi.Config(PROJECT).requireSecret(KUBECONFIG_KEY) },
    };
  } catch (e) {
    // RunError: Pulumi prints the message without a stack trace.
    if (e instanceof InputError) throw runError(e.message);
    throw e;
  }
}

/** The gateways whose xDS ConfigMaps the routes resources (or the route controller) write. */
export function routesTargets(config: StackConfig): RoutesTarget[] {
  return GATEWAYS.map((gateway) => ({
    name: `${gateway}-routes`,
    gateway,
    namespace: config.namespace,
    configMap: gatewayObjectNames(gateway).xds,
  }));
}

/**
 * The route controller, when the stack config sets routeSync.inCluster: its
 * component, and what the routes resources then expect of it (its config's
 * digest, its Deployment).
 */
function declareRouteController(
  loaded: LoadedConfig,
  access: RouteSyncAccess,
  provider: k8s.Provider,
): { component: RouteController; writes: RouteControllerWrites } | undefined {
  const { config } = loaded;
  const settings = config.routeSync.inCluster;
  if (!settings) return undefined;
  const data = controllerConfigData(loaded.raw, routesTargets(config));
  const policy = config.networkPolicy;
  const component = new RouteController(
    "route-controller",
    {
      namespace: config.namespace,
      settings,
      config: data,
      serviceAccount: access.serviceAccount.metadata.name,
      networkPolicy: policy.enabled
        ? { metrics: policy.metricsScrapers, dns: policy.clusterDns, apiServer: policy.apiServer }
        : undefined,
      skipAwait: config.skipAwait,
    },
    // Its identity's roles and admission policies are in place before it starts.
    { provider, dependsOn: [access] },
  );
  return { component, writes: { configDigest: controllerConfigDigest(data), deployment: component.deploymentName } };
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
 * own their data, given the dev/PR namespaces `devNamespaces` lists, and
 * `sync`: what a sync-routes run wrote, when this run records it.
 */
export function declareStack(
  loaded: LoadedConfig,
  devNamespaces: DevNamespaces = {},
  now: Date = new Date(),
  sync?: SyncWrites,
): StackOutputs {
  const { config } = loaded;
  const routing = routingConfig(config);
  let files;
  let table;
  try {
    files = renderGateways(config, buildRoutingTable(routing, {}, "stack config", now));
    table = buildRoutingTable(routing, devNamespaces, "discovered dev/PR namespaces", now);
  } catch (e) {
    if (e instanceof InputError) throw runError(e.message);
    throw e;
  }
  const kubeconfig = loaded.kubeconfig?.secret;
  const provider = new k8s.Provider("kubernetes", { kubeconfig, renderYamlToDirectory: config.renderYamlToDirectory });
  // One headless Service per version of each production service; a single version is the service itself.
  const services = table.production.flatMap((s) => {
    const spec = config.services.find((p) => p.name === s.name)!;
    return s.versions.map(
      (v) =>
        new HeadlessService(
          v.service,
          {
            serviceName: v.service,
            logicalName: s.name,
            version: v.version || undefined,
            weight: v.weight,
            namespace: s.namespace,
            replicas: spec.replicas,
            websocket: spec.websocket,
            image: spec.versions ? undefined : spec.image,
            resources: spec.resources,
            skipAwait: config.skipAwait,
            adoptExisting: config.adoptExisting,
          },
          { provider },
        ),
    );
  });
  const access = new RouteSyncAccess(
    "route-sync",
    {
      namespace: config.namespace,
      protectedNamespaces: [...config.devNamespaces.protected],
      configMaps: GATEWAYS.map((g) => gatewayObjectNames(g).xds),
      gateways: [...GATEWAYS],
    },
    { provider },
  );
  const controller = declareRouteController(loaded, access, provider);
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
        adoptExisting: config.adoptExisting,
        networkPolicy: gatewayNetworkFacts(config, gateway),
      },
      { provider, dependsOn: services },
    );
    gatewayResources[gateway] = g;
    gateways[gateway] = { service: `${config.namespace}/${gateway}`, address: g.address };
    routes[gateway] = describeRoutes(routesView(routing, table, gateway));
    // In render mode there is no cluster to write to: the ConfigMaps carry the production routes.
    if (!config.renderYamlToDirectory) {
      new Routes(
        `${gateway}-routes`,
        routesInputs(
          { gateway, namespace: config.namespace, configMap: g.xdsConfigMap.metadata.name },
          config,
          devNamespaces,
          { kubeconfig, sync, ...(controller ? { controller: controller.writes } : {}) },
        ),
        // With the route controller: its create and update wait for the controller's write, once it runs.
        { dependsOn: [g.xdsConfigMap, ...(controller ? [controller.component.deployment] : [])] },
      );
    }
  }
  return { gateways, routes, gatewayResources, services };
}
