// The validator's problems with the generated documents, for the user. The
// config checks refuse bad values first; what still reaches the validator
// is a safety net, so each problem says which config key set the field when
// that is known, and a problem that every cluster or route shares is said
// once, with the count, not once per resource.
import type { Problem } from "../config/errors.js";
import type { RoutingTable } from "../table.js";
import { ON_DEMAND_CLUSTER } from "../names.js";

/** Fields the translation sets from stack config, by the start of their path (as the validator names it) in a cluster or a route. */
const FIELD_KEYS: [RegExp, string][] = [
  [/^connect_timeout\b/, "upstream.connectTimeout"],
  [/^cluster_type\b.*\bdns_refresh_rate\b/, "upstream.dnsRefreshRate"],
  [/^cluster_type\b.*\bdns_lookup_family\b/, "upstream.dnsLookupFamily"],
  [/^circuit_breakers\b/, "upstream.maxConnections, maxPendingRequests, maxRequests"],
  [/^outlier_detection\b/, "upstream.consecutive5xx, baseEjectionTime, maxEjectionPercent"],
  [/^per_connection_buffer_limit_bytes\b/, "edge.bufferLimitBytes"],
  [/^typed_extension_protocol_options\b.*\bidle_timeout\b/, "upstream.idleTimeout"],
  [/^typed_extension_protocol_options\b/, "upstream.protocol"],
  [/\broute\.timeout\b/, "upstream.routeTimeout"],
  [/\broute\.idle_timeout\b/, "edge.websocketIdleTimeout"],
];

/** The config key behind a field of the documents, from the field's path as the validator found it. */
function configKeyOf(field: string | undefined): string | undefined {
  if (field === undefined) return undefined;
  const found = FIELD_KEYS.find(([pattern]) => pattern.test(field));
  return found ? `envoy-gateways:${found[1]}` : undefined;
}

/** What the validator said of a gateway's documents, each problem once and with the config key behind it. */
export function explainDocumentProblems(problems: readonly Problem[], table: RoutingTable): Problem[] {
  const owners = new Map<string, string>();
  for (const s of table.production)
    for (const v of s.versions) owners.set(v.cluster, `the service ${s.name} (envoy-gateways:services)`);
  for (const s of table.dev)
    for (const v of s.versions)
      owners.set(
        v.cluster,
        v.cluster === ON_DEMAND_CLUSTER
          ? "the on-demand dev/PR routes (envoy-gateways:devNamespaces.clusters)"
          : `the dev/PR service ${s.id}`,
      );
  // Problems of named resources group by gateway, file, kind of resource and message; others by where and message.
  const groups = new Map<string, { first: Problem; resources: string[] }>();
  for (const p of problems) {
    const place = p.place;
    const resource = place?.file !== undefined && place.resource?.name ? place.resource.name : undefined;
    const group =
      resource !== undefined
        ? `${place!.gateway}\0${place!.file}\0${place!.resource!.kind}\0${p.message}`
        : `\0${p.key}\0${p.message}`;
    // The same problem twice at a place that is not a resource is said once.
    const entry = groups.get(group) ?? { first: p, resources: [] };
    groups.set(group, entry);
    if (resource !== undefined) entry.resources.push(resource);
  }
  return [...groups.values()].map(({ first, resources }) => {
    const configKey = configKeyOf(first.place?.field);
    const owner = resources.length === 1 ? owners.get(resources[0]!) : undefined;
    const from = [configKey, owner].filter(Boolean).join(", ");
    const more =
      resources.length > 1
        ? ` (the same in ${resources.length - 1} more: ${resources.slice(1, 4).join(", ")}${resources.length > 4 ? ", ..." : ""})`
        : "";
    return {
      ...first,
      ...(first.place && configKey ? { place: { ...first.place, configKey } } : {}),
      message: `${first.message}${from ? ` [set by ${from}]` : ""}${more}`,
    };
  });
}
