// Routes: a Pulumi dynamic resource that owns the data of one gateway's xDS
// ConfigMap (production plus dev/PR routes). Its inputs are facts (the
// routing part of stack config and the discovered dev/PR namespaces); check
// adds the routes they give, keyed by route id, so a preview shows which
// routes, clusters and weights change.
//
// The engine stores these methods in the stack's state and runs them from
// there (refresh and destroy run what the state holds), in a provider process
// whose working directory is the project's. So they capture nothing of this
// checkout: each call loads routes-provider/core.ts from the directory the
// engine runs it in, whichever clone or machine that is.
import * as pulumi from "@pulumi/pulumi";
import type { GatewayName, RoutingConfig } from "../routing/config/schema.js";
import type { RouteLines } from "../routing/routes-view.js";
import type { DevNamespaces } from "../routing/table.js";
import type * as Core from "../routes-provider/core.js";

/**
 * routes-provider/core.ts of the project the provider runs in (tsx compiles
 * it on the fly). Everything is required here, at call time, relative to the
 * working directory: the serialized provider holds no path.
 *
 * As in entry.cjs: @kubernetes/client-node (an ES module) is loaded natively
 * first, then tsx is registered once for the whole process (through tsx's
 * namespaced require client-node would be recompiled file by file on every
 * start, about 8 s, and a second copy of undici would refuse to construct).
 */
function routesCore(): typeof Core {
  const path = require("node:path") as typeof import("node:path");
  const fs = require("node:fs") as typeof import("node:fs");
  const project = process.cwd();
  const core = path.join(project, "routes-provider", "core.ts");
  if (!fs.existsSync(core)) {
    throw new Error(
      `the routes provider runs in the envoy-gateways project directory, but ${project} has no routes-provider/core.ts: run pulumi from a checkout of the project`,
    );
  }
  const registered = Symbol.for("envoy-gateways.tsx-registered");
  const host = globalThis as { [registered]?: boolean };
  if (!host[registered]) {
    require(require.resolve("@kubernetes/client-node", { paths: [project] }));
    require(require.resolve("tsx/cjs/api", { paths: [project] })).register();
    host[registered] = true;
  }
  return require(core);
}

export interface RoutesArgs {
  /** Which gateway's xDS ConfigMap this resource owns. */
  gateway: GatewayName;
  /** Namespace of the ConfigMap. */
  namespace: string;
  /** Name of the ConfigMap (an output of the EnvoyGateway component, so it is created first). */
  configMap: pulumi.Input<string>;
  /** The routing part of stack config (`routingConfig`: an allow-list, no secrets). */
  config: RoutingConfig;
  /** The dev/PR namespaces discovered in the cluster: their services, versions and shifts. */
  devNamespaces: DevNamespaces;
  /** Kubeconfig for writing the ConfigMap (a secret; default: the ambient one). */
  kubeconfig?: pulumi.Input<string>;
  /** Set when the route controller writes the ConfigMap: the config it must have written from (then no dev/PR namespaces are given). */
  controller?: Core.RouteControllerWrites;
  /** Only in the engine run that records a sync-routes run: what it wrote into this ConfigMap, and when it rendered. */
  syncWrite?: Core.SyncWrite;
}

/** Thin shells: every decision is in routes-provider/core.ts (unit-tested there). */
export const routesProvider: pulumi.dynamic.ResourceProvider = {
  async check(_olds, news: Core.RoutesGiven) {
    const core = routesCore();
    const checked = core.checkRoutes(news);
    return { inputs: checked.inputs ?? news, failures: core.checkFailures(checked.problems) };
  },
  async diff(_id, olds: Core.RoutesOutputs, news: Core.RoutesInputs) {
    return routesCore().diffRoutes(olds, news);
  },
  async create(inputs: Core.RoutesInputs) {
    return { id: `${inputs.namespace}/${inputs.configMap}`, outs: await routesCore().applyRoutes(inputs) };
  },
  async update(_id, _olds, news: Core.RoutesInputs) {
    return { outs: await routesCore().applyRoutes(news) };
  },
  async read(id, props: Core.RoutesOutputs) {
    const state = await routesCore().readRoutes(props);
    // No id: the ConfigMap is gone, and so is what this resource wrote.
    return state ? { id, props: state } : {};
  },
  async delete(_id, props: Core.RoutesOutputs) {
    await routesCore().removeRoutes(props);
  },
};

/** Owns one gateway's xDS ConfigMap data: production and dev/PR routes, rendered and validated. */
export class Routes extends pulumi.dynamic.Resource {
  /** The routes written, keyed by route id: a line each. */
  declare readonly routes: pulumi.Output<RouteLines>;
  declare readonly dataDigest: pulumi.Output<string>;

  constructor(name: string, args: RoutesArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      routesProvider,
      name,
      { ...args, routes: undefined, dataDigest: undefined, renderedAt: undefined, drift: undefined },
      { ...opts, additionalSecretOutputs: ["kubeconfig"] },
      "envoy-gateways",
      "Routes",
    );
  }
}
