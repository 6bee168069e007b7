// The routing facts a Service carries as labels (as Lighthouse did on
// Kubernetes): one Service per version of a logical service. The
// components write them; discovery reads them back.

const PREFIX = "envoy-gateways.io";

export const LABEL = {
  /** Logical service name: the route path segment (dev) or host label (production). */
  service: `${PREFIX}/service`,
  /** The version this Service selects, when a service runs several. */
  version: `${PREFIX}/version`,
  /** Name of the Service port the gateways use. */
  portName: `${PREFIX}/port-name`,
  /** Number of that port (always 443: TLS straight to the pods). */
  port: `${PREFIX}/port`,
  /** Application protocol: http, or websocket (long-lived streams). */
  protocol: `${PREFIX}/protocol`,
  /** Whole percent of the logical service's traffic this version gets (informational: splits come from traffic shifts). */
  weight: `${PREFIX}/weight`,
  /** Pod replicas behind the Service (for reviewers and the policy pack). */
  replicas: `${PREFIX}/replicas`,
  /** Marks objects this program manages. */
  managedBy: "app.kubernetes.io/managed-by",
  /** The component an object belongs to. */
  component: "app.kubernetes.io/component",
  /** The app (pods) a Service selects. */
  app: "app.kubernetes.io/name",
} as const;

export const MANAGED_BY = "envoy-gateways";

/**
 * A traffic shift of a discovered service, as annotations on the Service of
 * the version traffic moves to (times do not fit in labels).
 */
export const SHIFT_ANNOTATION = {
  /** Version traffic moves away from. */
  from: `${PREFIX}/shift-from`,
  /** linear or atomic. */
  policy: `${PREFIX}/shift-policy`,
  /** RFC 3339 start time. */
  start: `${PREFIX}/shift-start`,
  /** 1 minute to 5 days: 90s, 30m, 2h, 5d. */
  duration: `${PREFIX}/shift-duration`,
  /** RFC 3339 time the shift was reversed (while in progress). */
  reversed: `${PREFIX}/shift-reversed`,
} as const;

/** Labels of a gateway's pods (its Deployment's selector). */
export function gatewayPodLabels(gateway: string): Record<string, string> {
  return { [LABEL.app]: gateway, [LABEL.component]: "gateway" };
}

/** The annotation the routes resource sets on a gateway's pods after it writes their xDS ConfigMap: the kubelet then projects it at once. */
export const XDS_DIGEST_ANNOTATION = `${PREFIX}/xds-digest`;

/**
 * The annotation sync-routes keeps on each labelled Service of a dev/PR
 * namespace: where it is served (a URL per gateway), or why it is not
 * (route-status.ts). The only field of a Service that identity may change.
 */
export const ROUTE_STATUS_ANNOTATION = `${PREFIX}/routes`;

/** Labels of a routed Service for one version of a logical service. */
export function routingLabels(args: {
  service: string;
  version?: string;
  weight: number;
  replicas: number;
  websocket: boolean;
}): Record<string, string> {
  const labels: Record<string, string> = {
    [LABEL.service]: args.service,
    [LABEL.portName]: "https",
    [LABEL.port]: "443",
    [LABEL.protocol]: args.websocket ? "websocket" : "http",
    [LABEL.weight]: String(args.weight),
    [LABEL.replicas]: String(args.replicas),
  };
  if (args.version) labels[LABEL.version] = args.version;
  return labels;
}
