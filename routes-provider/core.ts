// What the routes dynamic provider does, as plain functions: check inputs,
// diff, write the xDS ConfigMap (render, validate, size-check, then one
// server-side apply), read it back, and fall back to production routes on
// delete. The provider (routes.ts) loads this module inside each method, so
// the dynamic-provider host runs it without the program's module graph.
import { createHash } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { InputError, type Problem } from "../routing/config/errors.js";
import { parseStackConfig } from "../routing/config/load.js";
import { GATEWAYS, type GatewayName, type StackConfig } from "../routing/config/schema.js";
import { renderGateway } from "../routing/render.js";
import { productionOnly, routesInput, tableFromRoutes, type RouteEntry, type RoutesInput } from "../routing/routes-input.js";
import { buildRoutingTable, type DevNamespaces } from "../routing/table.js";
import { readRoutesFromXds } from "../routing/read-back.js";
import { applyConfigMapData, loadKubeConfig, readConfigMap } from "../kube/client.js";

/** The routes resource's inputs. */
export interface RoutesInputs {
  /** Which gateway's xDS ConfigMap this resource owns. */
  gateway: GatewayName;
  /** Namespace and name of that ConfigMap. */
  namespace: string;
  configMap: string;
  /** The stack config the routes are rendered with (no secrets in it). */
  config: Record<string, unknown>;
  /** The routing table, keyed by route id. */
  routes: RoutesInput;
  /** Kubeconfig (a secret); absent: the ambient one. */
  kubeconfig?: string;
  /** The instant the program computed shift weights at (check recomputes them for the same instant). */
  asOf?: string;
}

/** Outputs: the inputs, plus what was written. */
export interface RoutesOutputs extends RoutesInputs {
  /** sha256 of the ConfigMap data this resource last wrote (or found, after a refresh). */
  dataDigest: string;
  /** Set by a refresh when the ConfigMap holds something else than what was written. */
  drift?: string;
}

const DIGEST_ANNOTATION = "envoy-gateways.io/routes-digest";

export function configOf(inputs: Pick<RoutesInputs, "config">): StackConfig {
  return parseStackConfig(inputs.config, "routes resource config");
}

/** Problems with the inputs: bad config, ids that do not match their route, dev routes the table refuses, documents Envoy would refuse. */
export function checkRoutes(inputs: RoutesInputs): Problem[] {
  if (!GATEWAYS.includes(inputs.gateway)) return [{ key: "gateway", message: `must be ${GATEWAYS.join(" or ")}`, value: inputs.gateway }];
  let config: StackConfig;
  try {
    config = configOf(inputs);
  } catch (e) {
    return e instanceof InputError ? [...e.problems] : [{ key: "config", message: String(e) }];
  }
  const problems: Problem[] = [];
  const dev: Record<string, { name: string; stacks: { version: string; service: string; weight: number }[]; websocket: boolean; shift?: RouteEntry["shift"] }[]> = {};
  for (const [id, r] of Object.entries(inputs.routes ?? {})) {
    if (!r || typeof r !== "object" || id !== `${r.namespace}/${r.service}`) {
      problems.push({ key: `routes[${JSON.stringify(id)}]`, message: "the id must be <namespace>/<service> of its route", value: r && { namespace: r.namespace, service: r.service } });
      continue;
    }
    if (r.namespace === config.namespace) continue;
    (dev[r.namespace] ??= []).push({
      name: r.service,
      websocket: r.websocket,
      stacks: Object.values(r.clusters ?? {}).map((c) => ({ version: c.version, service: String(c.upstream).split(".")[0]!, weight: c.weight })),
      ...(r.shift ? { shift: r.shift } : {}),
    });
  }
  if (problems.length) return problems;
  let expected: RoutesInput;
  try {
    expected = routesInput(config, buildRoutingTable(config, dev as DevNamespaces, "routes", inputs.asOf ? new Date(inputs.asOf) : new Date()), inputs.gateway);
  } catch (e) {
    return e instanceof InputError ? [...e.problems] : [{ key: "routes", message: String(e) }];
  }
  for (const id of new Set([...Object.keys(expected), ...Object.keys(inputs.routes)])) {
    if (!isDeepStrictEqual(expected[id], inputs.routes[id])) {
      problems.push({ key: `routes[${JSON.stringify(id)}]`, message: expected[id] ? `does not match what the routing table gives for it: ${JSON.stringify(expected[id])}` : "is a production route the stack config does not declare", value: inputs.routes[id] });
    }
  }
  if (problems.length) return problems;
  try {
    render(inputs);
  } catch (e) {
    return e instanceof InputError ? [...e.problems] : [{ key: "routes", message: String(e) }];
  }
  return [];
}

/** check(): failures as the engine shows them, each on the input property it concerns (stack config keys are under `config`). */
export function checkFailures(inputs: RoutesInputs): { property: string; reason: string }[] {
  return checkRoutes(inputs).map((p) => ({
    property: p.key.startsWith("envoy-gateways:") || p.key.startsWith("routes resource config") ? "config" : p.key.split(/[.[ ]/)[0] || "routes",
    reason: `${p.key}: ${p.message}${"value" in p ? ` (got ${JSON.stringify(p.value)})` : ""}`,
  }));
}

/**
 * diff(): a change when the routes differ, when what these inputs render is
 * not what was written (a stack config change that reaches cds.yaml or
 * rds.yaml), or when a refresh found the ConfigMap edited out of band. Stack
 * config that does not change the rendered files (a service's replica count,
 * the bootstrap's settings) is not a change of this resource. Owning another
 * ConfigMap means replacing the resource.
 */
export function diffRoutes(olds: RoutesOutputs, news: RoutesInputs): { changes: boolean; replaces: string[]; deleteBeforeReplace: boolean } {
  const replaces = (["gateway", "namespace", "configMap"] as const).filter((k) => olds[k] !== news[k]);
  const changed =
    !isDeepStrictEqual(olds.routes, news.routes) ||
    (olds.kubeconfig ?? "") !== (news.kubeconfig ?? "") ||
    olds.drift !== undefined ||
    olds.dataDigest !== digest(render(news));
  return { changes: changed || replaces.length > 0, replaces: [...replaces], deleteBeforeReplace: false };
}

/** The xDS ConfigMap data for the inputs: rendered and validated (throws InputError listing every problem). */
export function render(inputs: RoutesInputs, routes: RoutesInput = inputs.routes): Record<string, string> {
  const config = configOf(inputs);
  return renderGateway(config, tableFromRoutes(config, routes), inputs.gateway).xds;
}

export function digest(data: Record<string, string>): string {
  const hash = createHash("sha256");
  for (const key of Object.keys(data).sort()) hash.update(key).update("\0").update(data[key]!).update("\0");
  return hash.digest("hex");
}

/** Writes the rendered routes into the ConfigMap (one server-side apply, guarded by the resourceVersion just read). */
export async function writeRoutes(inputs: RoutesInputs, routes: RoutesInput = inputs.routes): Promise<RoutesOutputs> {
  const data = render(inputs, routes);
  const kc = loadKubeConfig(inputs.kubeconfig);
  const current = await readConfigMap(kc, inputs.namespace, inputs.configMap);
  if (!current) {
    throw new Error(`ConfigMap ${inputs.namespace}/${inputs.configMap} does not exist: the EnvoyGateway component creates it with the production routes; run a full \`pulumi up\` first`);
  }
  const dataDigest = digest(data);
  if (current.annotations[DIGEST_ANNOTATION] !== dataDigest || digest(current.data) !== dataDigest) {
    await applyConfigMapData(kc, inputs.namespace, inputs.configMap, data, current.resourceVersion, { [DIGEST_ANNOTATION]: dataDigest });
  }
  return { ...inputs, routes, dataDigest };
}

/** What the ConfigMap holds now: unchanged state if it is what was written, otherwise the routes it actually serves. */
export async function readRoutes(state: RoutesOutputs): Promise<RoutesOutputs | undefined> {
  const kc = loadKubeConfig(state.kubeconfig);
  const current = await readConfigMap(kc, state.namespace, state.configMap);
  if (!current) return undefined;
  const found = digest(current.data);
  if (found === state.dataDigest) return state;
  const config = configOf(state);
  const read = readRoutesFromXds(config, state.gateway, current.data);
  return { ...state, routes: read.routes, dataDigest: found, drift: `the ConfigMap was changed outside this program${read.problems.length ? `: ${read.problems.join("; ")}` : ""}` };
}

/** On delete: the gateway keeps its production routes (never an empty or missing ConfigMap under a running Envoy). */
export async function removeRoutes(state: RoutesOutputs): Promise<void> {
  const kc = loadKubeConfig(state.kubeconfig);
  if (!(await readConfigMap(kc, state.namespace, state.configMap))) return;
  await writeRoutes(state, productionOnly(configOf(state), state.routes));
}
