// Routes: a Pulumi dynamic resource that owns the data of one gateway's xDS
// ConfigMap (production plus dev/PR routes). Its inputs are the routing table
// keyed by route id, so a preview shows which routes and clusters change.
//
// The dynamic-provider host deserializes these methods without the program's
// modules: each method loads routes-core.ts itself (through tsx, from the
// project directory captured below as a plain string).
import { resolve } from "node:path";
import * as pulumi from "@pulumi/pulumi";
import type { GatewayName } from "../routing/config/schema.js";
import type { RoutesInput } from "../routing/routes-input.js";
import type * as Core from "../routes-provider/core.js";

const PROJECT_DIR = resolve(__dirname, "..");

/**
 * routes-core.ts, loaded in whatever process runs the provider (tsx compiles
 * it on the fly). Everything is required here, at call time: the serialized
 * provider captures only this function and the PROJECT_DIR string.
 *
 * As in entry.cjs: @kubernetes/client-node (an ES module) is loaded natively
 * first, then tsx is registered for the whole process. Through tsx's
 * namespaced require it would be recompiled file by file on every start
 * (about 8 s of the provider's first call), and a second copy of undici would
 * refuse to construct.
 */
function routesCore(): typeof Core {
  const path = require("node:path") as typeof import("node:path");
  const registered = Symbol.for("envoy-gateways.tsx-registered");
  const host = globalThis as { [registered]?: boolean };
  if (!host[registered]) {
    require(require.resolve("@kubernetes/client-node", { paths: [PROJECT_DIR] }));
    require(require.resolve("tsx/cjs/api", { paths: [PROJECT_DIR] })).register();
    host[registered] = true;
  }
  return require(path.join(PROJECT_DIR, "routes-provider", "core.ts"));
}

export interface RoutesArgs {
  /** Which gateway's xDS ConfigMap this resource owns. */
  gateway: GatewayName;
  /** Namespace of the ConfigMap. */
  namespace: string;
  /** Name of the ConfigMap (an output of the EnvoyGateway component, so it is created first). */
  configMap: pulumi.Input<string>;
  /** Stack config the routes are rendered with (without the kubeconfig). */
  config: Record<string, unknown>;
  /** The routing table, keyed by route id (<namespace>/<service>). */
  routes: RoutesInput;
  /** Kubeconfig for writing the ConfigMap (a secret; default: the ambient one). */
  kubeconfig?: pulumi.Input<string>;
  /** The instant shift weights were computed at (ISO time). */
  asOf?: string;
}

/** Thin shells: every decision is in routes-core.ts (unit-tested there). */
export const routesProvider: pulumi.dynamic.ResourceProvider = {
  async check(_olds, news: Core.RoutesInputs) {
    return { inputs: news, failures: routesCore().checkFailures(news) };
  },
  async diff(_id, olds: Core.RoutesOutputs, news: Core.RoutesInputs) {
    return routesCore().diffRoutes(olds, news);
  },
  async create(inputs: Core.RoutesInputs) {
    return { id: `${inputs.namespace}/${inputs.configMap}`, outs: await routesCore().writeRoutes(inputs) };
  },
  async update(_id, _olds, news: Core.RoutesInputs) {
    return { outs: await routesCore().writeRoutes(news) };
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
  declare readonly routes: pulumi.Output<RoutesInput>;
  declare readonly dataDigest: pulumi.Output<string>;

  constructor(name: string, args: RoutesArgs, opts?: pulumi.CustomResourceOptions) {
    super(routesProvider, name, { ...args, dataDigest: undefined, drift: undefined }, { ...opts, additionalSecretOutputs: ["kubeconfig"] }, "envoy-gateways", "Routes");
  }
}
