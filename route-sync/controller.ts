// The route controller (dist/route-controller, run by the Deployment the
// program declares when `routeSync.inCluster` is set): the watcher of
// `sync-routes --watch` in the cluster, without a stack to record in (the
// live ConfigMaps are the record between `pulumi up`s), on one replica at a
// time.
//  - config: it follows its ConfigMap (controller-config.ts), which the
//    program writes at each `pulumi up`; a config it refuses is said and the
//    last good one kept;
//  - leadership: every replica takes part in the election on the Lease
//    (kube/leader.ts); the leader runs a watcher (a fresh list, then
//    watches), the others wait. Each write is fenced by the leader's epoch
//    and its config's digest (routes-provider/core.ts), so a leader that lost
//    the Lease, or renders an older config, writes nothing;
//  - a new config, or leadership taken, starts a new watcher (a fresh list;
//    its first step writes every gateway whose ConfigMap was not written
//    from this config); leadership lost stops it;
//  - health and metrics for the kubelet's probes and Prometheus (metrics.ts).
import type { KubeConfig } from "@kubernetes/client-node";
import { electLeader, type ElectionTiming, type LeaderElection } from "../kube/leader.js";
import { watchConfigMap } from "../kube/watch.js";
import { InputError } from "../routing/config/errors.js";
import { routingConfig } from "../routing/config/schema.js";
import type { WriteFence } from "../routes-provider/core.js";
import { readControllerConfig, ROUTE_CONTROLLER, type ControllerConfig } from "../routes-provider/controller-config.js";
import type { RoutesResourceState } from "./stack.js";
import { controllerMetrics, type ControllerMetrics } from "./controller-metrics.js";
import { watchRoutes, type Watcher } from "./watch.js";

export interface ControllerOptions {
  /** The gateways' namespace: the controller's ConfigMap and Lease are there. */
  namespace: string;
  /** This replica's name in the election (its pod's name). */
  identity: string;
  timing: ElectionTiming;
  /** Re-render this often while a traffic shift moves its weights. */
  resyncMs: number;
  /** A live step running longer than this is stuck (liveness fails). */
  stuckAfterMs: number;
  log: (line: string) => void;
  /** The clock (milliseconds), for tests. */
  clock?: () => number;
}

/** What the probes are answered with. */
export interface Health {
  ok: boolean;
  /** Why not, one line each (empty when ok). */
  why: string[];
}

export interface RouteController {
  /** Liveness: the election loop runs (a round within the last minute) and the leader's live step is not stuck. */
  live(): Health;
  /** Readiness: a good config is loaded and, on the leader, the watcher's lists are read. */
  ready(): Health;
  metrics: ControllerMetrics;
  /** Stops the watcher (its step in progress finishes) and releases the Lease. */
  stop(): Promise<void>;
}

/**
 * The routes resources as the watcher plans them from the controller's
 * config: each gateway's wiring and routing config, nothing written yet (the
 * first step writes every ConfigMap not written from this config).
 */
export function plannedState(c: ControllerConfig): RoutesResourceState[] {
  const routing = routingConfig(c.config);
  return c.targets.map((t) => ({
    urn: "",
    name: t.name,
    outputs: {
      gateway: t.gateway,
      namespace: t.namespace,
      configMap: t.configMap,
      config: routing,
      devNamespaces: {},
      routes: {},
      dataDigest: "",
      renderedAt: "",
    },
  }));
}

/** How long the election loop may go without a round before liveness fails (a round waits at most an API timeout). */
const ELECTION_STALL_MS = 60_000;

export function runRouteController(kc: KubeConfig, options: ControllerOptions): RouteController {
  const clock = options.clock ?? Date.now;
  const where = `${options.namespace}/${ROUTE_CONTROLLER}`;
  const metrics = controllerMetrics();
  let config: ControllerConfig | undefined;
  let configProblem: string | undefined;
  let leadership: { epoch: number } | undefined;
  let watcher: Watcher | undefined;
  /** The watcher stopping, awaited before the next one starts: never two writing side by side. */
  let stopping: Promise<void> = Promise.resolve();
  let stopped = false;

  /** Stops the watcher running, if any; the next starts once its step in progress is done. */
  const stopWatcher = () => {
    const w = watcher;
    watcher = undefined;
    if (!w) return;
    w.stop();
    stopping = stopping.then(() => w.done);
  };

  /** (Re)starts the watcher while leading with a good config. */
  const startWatcher = () => {
    stopWatcher();
    if (stopped || !leadership || !config) return;
    const mine = { leadership, config };
    const fence = (): WriteFence => ({
      epoch: mine.leadership.epoch,
      leading: () => !stopped && leadership === mine.leadership && election.leading()?.epoch === mine.leadership.epoch,
      configDigest: mine.config.digest,
    });
    // Set whenever the program declares the controller (routeSync.inCluster, with its default).
    const debounceMs = mine.config.config.routeSync.inCluster?.debounceMs ?? 0;
    void stopping.then(() => {
      // Leadership or config changed while the last watcher stopped: the next start is already queued.
      if (stopped || leadership !== mine.leadership || config !== mine.config) return;
      options.log(
        `leading (epoch ${mine.leadership.epoch}): watching namespaces labelled ${mine.config.config.devNamespaces.selector}, config ${mine.config.digest.slice(0, 12)}`,
      );
      watcher = watchRoutes(
        undefined,
        { sync: { config: mine.config.config }, state: plannedState(mine.config) },
        { debounceMs, resyncMs: options.resyncMs, log: options.log, onEvent: metrics.observe, fence },
      );
    });
  };

  const election: LeaderElection = electLeader(
    kc,
    { namespace: options.namespace, name: ROUTE_CONTROLLER },
    options.identity,
    options.timing,
    {
      onStartedLeading(taken) {
        leadership = { epoch: taken.epoch };
        metrics.leading(taken.epoch);
        startWatcher();
      },
      onStoppedLeading(why) {
        leadership = undefined;
        metrics.leading(undefined);
        options.log(`no longer leading: ${why}; writes stop`);
        stopWatcher();
      },
      onNewHolder(holder) {
        if (holder !== options.identity) options.log(`Lease ${where} held by ${holder || "nobody"}`);
      },
      onError: (message) => options.log(message),
    },
    clock,
  );

  const configWatch = watchConfigMap(kc, options.namespace, ROUTE_CONTROLLER, {
    onData(data) {
      if (data === undefined) {
        configProblem = `ConfigMap ${where} does not exist: \`pulumi up\` with routeSync.inCluster set declares it`;
        metrics.configRefused(true);
        return options.log(`${configProblem}; ${config ? "keeping the last config read" : "waiting for it"}`);
      }
      let next: ControllerConfig;
      try {
        next = readControllerConfig(data, where);
      } catch (e) {
        if (!(e instanceof InputError)) throw e;
        configProblem = e.message;
        metrics.configRefused(true);
        return options.log(`${e.message}\n${config ? "keeping the last good config" : "waiting for a good one"}`);
      }
      configProblem = undefined;
      metrics.configRefused(false);
      if (config?.digest === next.digest) return;
      config = next;
      options.log(`config ${next.digest.slice(0, 12)} read from ConfigMap ${where}`);
      startWatcher();
    },
    onError: (message, retryMs) => options.log(`${message}; watching again in ${Math.round(retryMs / 1000)}s`),
  });

  return {
    live() {
      const why: string[] = [];
      const sinceRound = clock() - election.lastRoundMs();
      if (sinceRound > ELECTION_STALL_MS)
        why.push(`the election loop has not run for ${Math.round(sinceRound / 1000)} s`);
      const step = watcher?.lastStep();
      if (step?.startedMs !== undefined && (step.finishedMs ?? 0) < step.startedMs) {
        const running = clock() - step.startedMs;
        if (running > options.stuckAfterMs) why.push(`a live step has run for ${Math.round(running / 1000)} s`);
      }
      return { ok: why.length === 0, why };
    },
    ready() {
      const why: string[] = [];
      if (!config) why.push(configProblem ?? `ConfigMap ${where} not read yet`);
      if (watcher && !watcher.synced()) why.push("leading, but the namespaces and Services are not listed yet");
      return { ok: why.length === 0, why };
    },
    metrics,
    async stop() {
      stopped = true;
      stopWatcher();
      await Promise.all([configWatch.stop(), stopping]);
      // Released once no write is in flight: the next leader takes over at its next round.
      await election.stop();
    },
  };
}
