// Which stats a gateway keeps. Envoy creates about 150 stats per cluster; with
// thousands of dev/PR clusters they are most of the gateway's memory. Dev/PR
// clusters keep the ones dashboards use; production clusters, the bootstrap's
// static clusters and every other stat keep everything, with Envoy's default
// tag extraction untouched (cluster names have no dot, so they stay whole).
import type { StackConfig } from "../config/schema.js";
import type { Json } from "./types.js";

/**
 * The stats a dev/PR cluster keeps, by name under cluster.<name>.: request
 * rate, responses by class, latency, requests in flight and queued, timeouts
 * and retries, connections and failed connects, pods (membership) and ejected
 * pods; plus the hidden gauge Envoy uses to carry deferred traffic stats over
 * a cluster update.
 */
export const DEV_CLUSTER_STATS = [
  "upstream_rq_total",
  "upstream_rq_1xx",
  "upstream_rq_2xx",
  "upstream_rq_3xx",
  "upstream_rq_4xx",
  "upstream_rq_5xx",
  "upstream_rq_time",
  "upstream_rq_active",
  "upstream_rq_pending_active",
  "upstream_rq_timeout",
  "upstream_rq_retry",
  "upstream_cx_active",
  "upstream_cx_connect_fail",
  "membership_healthy",
  "membership_total",
  "outlier_detection.ejections_active",
  "ClusterTrafficStats.initialized",
] as const;

/**
 * A regex (RE2, matched against the whole name) for every name that does not
 * start with `prefix`: one alternative per character of it, and its proper
 * prefixes themselves. RE2 has no lookahead.
 */
export function notStartingWith(prefix: string): string {
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  // Alone in a negated class, only ] and \ need an escape (^ and - are literal there, in RE2 as in JS).
  const cls = (c: string) => `[^${c === "]" || c === "\\" ? `\\${c}` : c}]`;
  const longer = [...prefix].map((c, i) => `${esc(prefix.slice(0, i))}${cls(c)}`);
  const shorter = [...prefix].slice(1).map((_, i) => esc(prefix.slice(0, i + 1)));
  return `(${longer.join("|")}).*|${shorter.join("|")}`;
}

/**
 * Envoy also counts the responses and latency of external (and internal)
 * requests apart, as cluster.<name>.external.upstream_rq_2xx: these kept stats
 * are matched on the whole name, so only the totals stay. The others are
 * matched by suffix (cheaper, and no other stat of a cluster ends with them).
 */
const WHOLE_NAME_STATS = /^upstream_rq_([1-5]xx|time)$/;
const WHOLE_NAME_PATTERN = "cluster\\.[^.]+\\.upstream_rq_([1-5]xx|time)";

/**
 * On-demand dev/PR routes' sub-clusters are named after the host and port,
 * DFPCluster:<service>.<namespace>.svc.<domain>:443 (stats: `:` -> `_`). Envoy's
 * cluster name tag takes the name up to the first dot, DFPCluster_<service>;
 * this tag takes the rest (out of the stat's name, so it stays
 * cluster.upstream_rq_total in Prometheus) and keeps the namespace.
 */
const SUB_CLUSTER_NAMESPACE_TAG: Json = {
  tag_name: "dev_namespace",
  regex: "^cluster\\.DFPCluster_[^.]+\\.(([^.]+)\\.svc\\..+?_\\d+\\.)",
};

/**
 * The bootstrap's stats settings: the inclusion list that keeps, for dev/PR
 * clusters, only DEV_CLUSTER_STATS (everything else is kept: stats outside
 * cluster.*, production clusters <namespace>_*, static clusters, whose names
 * have no `_`; on-demand sub-clusters keep what dev/PR clusters keep), the
 * tag of the sub-clusters' namespace, and deferred creation of cluster
 * traffic stats. Matchers are small: Envoy refuses an RE2 program over 100
 * instructions.
 */
export function statsSettings(config: StackConfig): Json {
  const out: Json = {};
  if (config.stats.devClusters === "dashboards") {
    out.stats_config = {
      stats_matcher: {
        inclusion_list: {
          patterns: [
            { safe_regex: { regex: notStartingWith("cluster.") } },
            { prefix: `cluster.${config.namespace}_` },
            { safe_regex: { regex: "cluster\\.[^._]+\\..*" } },
            { safe_regex: { regex: WHOLE_NAME_PATTERN } },
            ...DEV_CLUSTER_STATS.filter((s) => !WHOLE_NAME_STATS.test(s)).map((s) => ({ suffix: `.${s}` })),
          ],
        },
      },
    };
  }
  if (config.devNamespaces.clusters === "on-demand")
    out.stats_config = { ...((out.stats_config as Json | undefined) ?? {}), stats_tags: [SUB_CLUSTER_NAMESPACE_TAG] };
  if (config.stats.deferredCreation) out.deferred_stat_options = { enable_deferred_creation_stats: true };
  return out;
}
