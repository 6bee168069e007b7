// What the routes dynamic provider does, as plain functions. The resource's
// inputs are facts: the routing part of stack config and the discovered
// dev/PR namespaces (with their services, versions and shifts). Everything
// else is derived from them, forward only: check adds the routes they give
// (what previews show); create/update render, validate and size-check the
// xDS files and write them in one server-side apply; read (refresh) compares
// the ConfigMap with what the facts rendered and names the routes that
// differ; delete leaves the gateway its production routes. The provider
// (components/routes.ts) loads this module in whatever process runs it.
import { isDeepStrictEqual } from "node:util";
import { formatProblem, InputError, type Problem } from "../routing/config/errors.js";
import { parseRoutingConfig } from "../routing/config/load.js";
import {
  GATEWAYS,
  routingConfig,
  type GatewayName,
  type RoutingConfig,
  type StackConfig,
} from "../routing/config/schema.js";
import { xdsDrift } from "../routing/envoy/drift.js";
import { parseEnvoyYaml } from "../routing/envoy/xds.js";
import { checkXds, renderXds, translateXdsFiles, type XdsFiles } from "../routing/render.js";
import { routeLines, routesView, type RouteLines, type RoutesView } from "../routing/routes-view.js";
import { buildRoutingTable, type DevNamespaces, type RoutingTable } from "../routing/table.js";
import { dataDigest } from "../routing/units.js";
import { annotatePods, applyConfigMapData, labelSelector, loadKubeConfig, readConfigMap } from "../kube/client.js";
import { gatewayPodLabels, XDS_DIGEST_ANNOTATION } from "../routing/labels.js";

/** What the program gives the routes resource of one gateway: facts only. */
export interface RoutesFacts {
  /** Which gateway's xDS ConfigMap this resource owns. */
  gateway: GatewayName;
  /** Namespace and name of that ConfigMap. */
  namespace: string;
  configMap: string;
  /** The routing part of stack config (an allow-list of keys: `routingConfig`). */
  config: RoutingConfig;
  /** The dev/PR namespaces discovered in the cluster, with their services, versions and shifts. */
  devNamespaces: DevNamespaces;
  /** Kubeconfig (a secret); absent: the ambient one. */
  kubeconfig?: string;
  /**
   * Set when the route controller in the cluster writes the ConfigMap
   * (`routeSync.inCluster`): the resource is then given no dev/PR namespaces
   * (the live ConfigMap is their record, so a preview shows none of the
   * controller's writes as a change) and writes nothing; its create and update
   * wait until the controller has written with this config.
   */
  controller?: RouteControllerWrites;
}

/** What the routes resource expects of the route controller that writes its ConfigMap. */
export interface RouteControllerWrites {
  /** Digest of the route controller's ConfigMap data (its stack config and routes resources) the ConfigMap must be written from. */
  configDigest: string;
  /** The controller's Deployment (namespace/name), named when it does not write in time. */
  deployment: string;
}

/**
 * What a sync-routes run wrote into this gateway's ConfigMap. Given only by
 * the engine run that records that sync (route-sync/sync.ts runs the program
 * with it): check, diff and write render at the sync's instant, and the write
 * goes only over the data the sync left (anything else is newer: a later
 * sync, whose own record writes it, or an edit). Not a fact: it never makes a
 * change by itself, and it is not among the outputs.
 */
export interface SyncWrite {
  /** The instant the sync rendered at (it sets shift weights). */
  renderedAt: string;
  /** The digest of the ConfigMap data the sync wrote (or found in place). */
  digest: string;
}

/** What a sync-routes run wrote, for every gateway: the instant it rendered at, and the digest it left in each ConfigMap. */
export interface SyncWrites {
  renderedAt: string;
  written: Partial<Record<GatewayName, string>>;
}

/** What the routes resource is given: the facts, and what a sync wrote when its engine run records that sync. */
export interface RoutesGiven extends RoutesFacts {
  syncWrite?: SyncWrite;
}

/** The inputs after check: what was given, plus the routes the facts give, a line each (derived; what previews show). */
export interface RoutesInputs extends RoutesGiven {
  routes: RouteLines;
}

/** The routes resource's inputs with `S` for the ConfigMap's name and the kubeconfig (the program's are Pulumi inputs). */
export type RoutesGivenOf<S> = Omit<RoutesGiven, "configMap" | "kubeconfig"> & { configMap: S; kubeconfig?: S };

/**
 * The inputs of one gateway's routes resource, built here for the program
 * (program/stack.ts) and for sync-routes (route-sync/sync.ts) alike: the
 * gateway and its ConfigMap, the routing part of the stack config, the
 * discovered dev/PR namespaces, the kubeconfig when there is one and, in the
 * engine run recording a sync, what that sync wrote into this gateway's
 * ConfigMap.
 */
export function routesInputs<S>(
  target: { gateway: GatewayName; namespace: string; configMap: S },
  config: StackConfig,
  devNamespaces: DevNamespaces,
  { kubeconfig, sync, controller }: { kubeconfig?: S; sync?: SyncWrites; controller?: RouteControllerWrites } = {},
): RoutesGivenOf<S> {
  const digest = sync?.written[target.gateway];
  return {
    gateway: target.gateway,
    namespace: target.namespace,
    configMap: target.configMap,
    config: routingConfig(config),
    // The route controller's namespaces are the live ConfigMap's, not the state's.
    devNamespaces: controller ? {} : devNamespaces,
    ...(kubeconfig !== undefined ? { kubeconfig } : {}),
    ...(controller !== undefined ? { controller } : {}),
    ...(sync !== undefined && digest !== undefined ? { syncWrite: { renderedAt: sync.renderedAt, digest } } : {}),
  };
}

/** Outputs: the facts, and what was written (not what a sync wrote: that is an input of its record only). */
export interface RoutesOutputs extends RoutesFacts {
  /**
   * The routes written (the facts at `renderedAt`), a line each. State
   * written before routes were lines holds an object per route here: it
   * differs from any lines, so the next run records lines (writing the
   * ConfigMap only if its files differ).
   */
  routes: RouteLines;
  /** Digest of the ConfigMap data this resource last wrote (or found, after a refresh). */
  dataDigest: string;
  /** The instant the written files were rendered at (it sets shift weights); refresh re-renders the same. */
  renderedAt: string;
  /** Set by a refresh that found the ConfigMap changed out of band: route id -> what differs. */
  drift?: Record<string, string>;
}

const DIGEST_ANNOTATION = "envoy-gateways.io/routes-digest";

/** The facts of any inputs or state (what the resource is given). */
export function factsOf(x: RoutesFacts): RoutesFacts {
  return {
    gateway: x.gateway,
    namespace: x.namespace,
    configMap: x.configMap,
    config: x.config,
    devNamespaces: x.devNamespaces,
    ...(x.kubeconfig !== undefined ? { kubeconfig: x.kubeconfig } : {}),
    ...(x.controller !== undefined ? { controller: x.controller } : {}),
  };
}

/** One problem of the inputs, on the input property it concerns. */
export interface InputProblem {
  property: "gateway" | "config" | "devNamespaces";
  problem: Problem;
}

/** What the facts give at an instant: the table, the files and the routes. */
export interface RenderedRoutes {
  table: RoutingTable;
  files: XdsFiles;
  routes: RoutesView;
  /** Whether the files passed validation (only validated files are ever written). */
  validated: boolean;
}

/**
 * The routing table, files and routes the facts give at `now`; throws
 * `RoutesInputError` listing every problem. With `validate: false` the
 * documents are not validated (to compare digests only; `validated` says so).
 */
export function renderRoutes(facts: RoutesFacts, now: Date, { validate = true } = {}): RenderedRoutes {
  const stage = <T>(
    property: InputProblem["property"] | ((p: Problem) => InputProblem["property"]),
    run: () => T,
  ): T => {
    try {
      return run();
    } catch (e) {
      if (!(e instanceof InputError)) throw e;
      throw new RoutesInputError(
        e.problems.map((problem) => ({
          property: typeof property === "function" ? property(problem) : property,
          problem,
        })),
      );
    }
  };
  if (!GATEWAYS.includes(facts.gateway))
    throw new RoutesInputError([
      {
        property: "gateway",
        problem: {
          key: "gateway",
          source: "gateway",
          message: `must be ${GATEWAYS.join(" or ")}`,
          value: facts.gateway,
        },
      },
    ]);
  const config = stage("config", () => parseRoutingConfig(facts.config));
  const table = stage(
    (p) => (p.source === "config" ? "config" : "devNamespaces"),
    () => buildRoutingTable(config, facts.devNamespaces ?? {}, "discovered dev/PR namespaces", now),
  );
  // Documents Envoy would refuse are a safety net under the config checks: they come from the config's values.
  const files = stage("config", () =>
    validate ? renderXds(config, table, facts.gateway) : translateXdsFiles(config, table, facts.gateway),
  );
  return { table, files, routes: routesView(config, table, facts.gateway), validated: validate };
}

/** Validates what `renderRoutes(..., { validate: false })` gave (throws `RoutesInputError`). */
export function validated(rendered: RenderedRoutes): RenderedRoutes {
  if (rendered.validated) return rendered;
  try {
    checkXds(rendered.files, rendered.table);
  } catch (e) {
    if (!(e instanceof InputError)) throw e;
    throw new RoutesInputError(e.problems.map((problem) => ({ property: "config" as const, problem })));
  }
  return { ...rendered, validated: true };
}

/** Inputs the routes resource refuses: every problem, each on its input property. */
export class RoutesInputError extends Error {
  constructor(readonly problems: readonly InputProblem[]) {
    super(
      `routes resource inputs: ${problems.length} problem${problems.length === 1 ? "" : "s"}\n${problems.map((p) => `  - ${formatProblem(p.problem)}`).join("\n")}`,
    );
    this.name = "RoutesInputError";
  }
}

/** check(): the inputs with the routes they give, or every problem (bad config, dev routes the table refuses, documents Envoy would refuse). */
export function checkRoutes(
  given: RoutesGiven,
  now: Date = renderInstant(given),
): { inputs?: RoutesInputs; problems: InputProblem[] } {
  try {
    const syncWrite = given.syncWrite !== undefined ? { syncWrite: given.syncWrite } : {};
    return {
      inputs: { ...factsOf(given), ...syncWrite, routes: routeLines(renderRoutes(given, now).routes) },
      problems: [],
    };
  } catch (e) {
    if (e instanceof RoutesInputError) return { problems: [...e.problems] };
    throw e;
  }
}

/** check()'s failures as the engine shows them. */
export function checkFailures(problems: readonly InputProblem[]): { property: string; reason: string }[] {
  return problems.map((p) => ({ property: p.property, reason: formatProblem(p.problem) }));
}

/**
 * diff(): owning another ConfigMap means replacing the resource. Otherwise a
 * change when the facts differ, when the routes they give now differ from
 * those written (a shift moved the weights), when what they render is not
 * what was written (a new version of the translation), or when a refresh
 * found the ConfigMap edited out of band.
 */
export function diffRoutes(
  olds: Partial<RoutesOutputs>,
  news: RoutesInputs,
  now: Date = renderInstant(news),
): { changes: boolean; replaces: string[]; deleteBeforeReplace: boolean } {
  const replaces = (["gateway", "namespace", "configMap"] as const).filter((k) => olds[k] !== news[k]);
  const changed =
    olds.devNamespaces === undefined || // state written before the resource's inputs were facts
    !isDeepStrictEqual(factsOf(olds as RoutesFacts), factsOf(news)) ||
    !isDeepStrictEqual(olds.routes, news.routes) ||
    olds.drift !== undefined ||
    // The route controller's ConfigMap holds its dev/PR routes too: the facts and routes above are the change.
    (news.controller === undefined &&
      // check validated these inputs: the digest needs no second validation.
      olds.dataDigest !== dataDigest(renderRoutes(news, now, { validate: false }).files.xds));
  return { changes: changed || replaces.length > 0, replaces, deleteBeforeReplace: false };
}

/** The instant to render at: the sync's this engine run records (its `syncWrite`), else now. */
export function renderInstant(given: Pick<RoutesGiven, "syncWrite">): Date {
  return given.syncWrite !== undefined ? new Date(given.syncWrite.renderedAt) : new Date();
}

export interface WriteOptions {
  /** Write only if the ConfigMap still holds this digest (what a sync wrote; anything else is newer or an edit). */
  onlyOver?: string;
  /** What `renderRoutes(facts, now)` gave, when the caller has it already (validated here if it was not). */
  rendered?: RenderedRoutes;
  /** The route controller's guard: write only while leading, never over a newer leader's epoch. */
  fence?: WriteFence;
}

/** What guards the route controller's writes (route-sync/controller.ts). */
export interface WriteFence {
  /** The leader's epoch (the Lease's transitions when it took it); the ConfigMap records the epoch of its writer. */
  epoch: number;
  /** Whether this process still leads (holds the Lease and renewed it within the renew deadline), asked just before the write. */
  leading(): boolean;
  /** The digest of the route controller's config rendered from, recorded for the routes resources that wait for it. */
  configDigest: string;
}

/** The annotation on an xDS ConfigMap with the route controller's epoch that wrote it last. */
export const WRITER_EPOCH_ANNOTATION = "envoy-gateways.io/writer-epoch";
/** The annotation on an xDS ConfigMap with the digest of the route controller's config it was written from. */
export const CONTROLLER_CONFIG_ANNOTATION = "envoy-gateways.io/route-controller-config";

/** A write the fence refused: another leader's (newer) epoch is in the ConfigMap, or this process no longer leads. */
export class FencedError extends Error {
  override name = "FencedError";
}

/** The annotations a write sets: the data's digest and, for the route controller, its epoch and config. */
function writeAnnotations(digest: string, fence: WriteFence | undefined): Record<string, string> {
  return {
    [DIGEST_ANNOTATION]: digest,
    ...(fence
      ? { [WRITER_EPOCH_ANNOTATION]: String(fence.epoch), [CONTROLLER_CONFIG_ANNOTATION]: fence.configDigest }
      : {}),
  };
}

/** Throws FencedError unless the fence lets a write over `current` through. */
function checkFence(fence: WriteFence, current: { annotations: Record<string, string> }, where: string): void {
  const theirs = Number(current.annotations[WRITER_EPOCH_ANNOTATION] ?? "0");
  if (theirs > fence.epoch)
    throw new FencedError(
      `not written: ConfigMap ${where} was written by a newer route controller leader (epoch ${theirs}; this one's is ${fence.epoch})`,
    );
  if (!fence.leading())
    throw new FencedError(`not written: this route controller no longer holds the Lease (epoch ${fence.epoch})`);
}

/**
 * Writes the files the facts give at `now` into the ConfigMap: one
 * server-side apply guarded by the resourceVersion just read, skipped when
 * the ConfigMap already holds them. Then the gateway's pods are annotated
 * with the digest, so their kubelets project the new files at once.
 */
export async function writeRoutes(
  facts: RoutesGiven,
  now: Date = renderInstant(facts),
  options: WriteOptions = writeOptionsOf(facts),
): Promise<RoutesOutputs> {
  const { files, routes } = options.rendered ? validated(options.rendered) : renderRoutes(facts, now);
  const kc = loadKubeConfig(facts.kubeconfig);
  const where = `${facts.namespace}/${facts.configMap}`;
  const current = await readConfigMap(kc, facts.namespace, facts.configMap);
  if (!current) {
    throw new Error(
      `ConfigMap ${where} does not exist: the EnvoyGateway component creates it with the production routes; run a full \`pulumi up\` first`,
    );
  }
  const digest = dataDigest(files.xds);
  const found = dataDigest(current.data);
  const annotations = writeAnnotations(digest, options.fence);
  const holds = found === digest && Object.entries(annotations).every(([k, v]) => current.annotations[k] === v);
  const superseded = options.onlyOver !== undefined && found !== options.onlyOver && !holds;
  if (!holds && !superseded) {
    if (options.fence) checkFence(options.fence, current, where);
    // The resourceVersion just read: a write by anyone since then is a 409, and nothing is overwritten.
    await applyConfigMapData(kc, facts.namespace, facts.configMap, files.xds, current.resourceVersion, annotations);
  }
  if (!superseded) {
    try {
      await annotatePods(kc, facts.namespace, labelSelector(gatewayPodLabels(facts.gateway)), {
        [XDS_DIGEST_ANNOTATION]: digest,
      });
    } catch (e) {
      throw new Error(
        `wrote ConfigMap ${where}, but telling the gateway's pods failed (their kubelets project it at their next periodic sync instead): ${(e as Error).message}`,
        { cause: e },
      );
    }
  }
  return { ...factsOf(facts), routes: routeLines(routes), dataDigest: digest, renderedAt: now.toISOString() };
}

/**
 * create() and update(): the files written, or, when the route controller
 * writes the ConfigMap, the controller's write of this config waited for.
 */
export async function applyRoutes(given: RoutesGiven): Promise<RoutesOutputs> {
  return given.controller ? awaitController(given) : writeRoutes(given);
}

/** How long a routes resource waits for the route controller, and how often it looks. */
export const CONTROLLER_WAIT = { timeoutMs: 120_000, pollMs: 500 };

/**
 * Waits until the gateway's ConfigMap was written by the route controller
 * from the config `facts.controller` names (its annotation); the outputs are
 * the production routes the facts give and the digest of what the controller
 * wrote. A controller that does not write in time is an error that says
 * where to look, and nothing is recorded.
 */
export async function awaitController(
  facts: RoutesGiven,
  wait: { timeoutMs: number; pollMs: number } = CONTROLLER_WAIT,
): Promise<RoutesOutputs> {
  const controller = facts.controller!;
  const now = new Date();
  const { routes } = renderRoutes(facts, now);
  const kc = loadKubeConfig(facts.kubeconfig);
  const where = `${facts.namespace}/${facts.configMap}`;
  const deadline = Date.now() + wait.timeoutMs;
  let current = await readConfigMap(kc, facts.namespace, facts.configMap);
  while (current?.annotations[CONTROLLER_CONFIG_ANNOTATION] !== controller.configDigest) {
    if (Date.now() >= deadline) {
      const [ns, name] = controller.deployment.split("/");
      throw new Error(
        `the route controller did not write ConfigMap ${where} from its current config (${controller.configDigest}) within ${wait.timeoutMs / 1000}s` +
          (current
            ? ` (it holds ${current.annotations[CONTROLLER_CONFIG_ANNOTATION] ?? "no route controller write"})`
            : " (it does not exist)") +
          `: is Deployment ${controller.deployment} running? kubectl -n ${ns} logs deploy/${name}`,
      );
    }
    await new Promise((r) => setTimeout(r, wait.pollMs));
    current = await readConfigMap(kc, facts.namespace, facts.configMap);
  }
  return {
    ...factsOf(facts),
    routes: routeLines(routes),
    dataDigest: dataDigest(current.data),
    renderedAt: now.toISOString(),
  };
}

/** In an engine run that records a sync: write only over what that sync wrote. */
export function writeOptionsOf(given: Pick<RoutesGiven, "syncWrite">): WriteOptions {
  return given.syncWrite === undefined ? {} : { onlyOver: given.syncWrite.digest };
}

/**
 * read() for refresh: the state as it is when the ConfigMap holds what was
 * written; otherwise, the routes that differ from what the facts rendered at
 * `renderedAt`. Undefined when the ConfigMap is gone.
 */
export async function readRoutes(state: RoutesOutputs): Promise<RoutesOutputs | undefined> {
  const kc = loadKubeConfig(state.kubeconfig);
  const current = await readConfigMap(kc, state.namespace, state.configMap);
  if (!current) return undefined;
  const found = dataDigest(current.data);
  const { drift: _, ...clean } = state;
  if (found === state.dataDigest) return clean;
  // The route controller's writes are the record of its routes: nothing to compare them with here.
  if (state.controller) return { ...clean, dataDigest: found };
  const expected = renderRoutes(state, new Date(state.renderedAt));
  const unreadable: Record<string, string> = {};
  const parse = (file: string): unknown => {
    try {
      return parseEnvoyYaml(current.data[file] ?? "");
    } catch (e) {
      unreadable[`(${file})`] =
        `cannot be read as Envoy reads it, so Envoy keeps what it loaded last: ${(e as Error).message.split("\n")[0]}`;
      return undefined;
    }
  };
  const drift = {
    ...xdsDrift(expected.table, expected.files.documents, { cds: parse("cds.yaml"), rds: parse("rds.yaml") }),
    ...unreadable,
  };
  return {
    ...clean,
    dataDigest: found,
    drift: Object.keys(drift).length
      ? drift
      : { "(files)": "the ConfigMap's files were rewritten with the same routes" },
  };
}

/** On delete: nothing when the route controller writes the ConfigMap; otherwise the gateway keeps its production routes (never an empty or missing ConfigMap under a running Envoy). */
export async function removeRoutes(state: RoutesOutputs): Promise<void> {
  // The route controller owns the ConfigMap's routes (and goes with the stack).
  if (state.controller) return;
  const kc = loadKubeConfig(state.kubeconfig);
  if (!(await readConfigMap(kc, state.namespace, state.configMap))) return;
  await writeRoutes({ ...factsOf(state), devNamespaces: {} }, new Date(), {});
}
