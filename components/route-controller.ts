// The route controller in the gateways' namespace (routeSync.inCluster): its
// ConfigMap (what the program tells it: controller-config.ts), the Lease its
// replicas elect a leader on, a Role for those two objects alone, the
// Deployment (hardened as the gateways are), its PodDisruptionBudget and its
// NetworkPolicy. It runs as the route-sync identity (RouteSyncAccess): the
// same ServiceAccount, roles and admission policies as CI's sync-routes, and
// only this Role besides.
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import type { RouteControllerSettings } from "../routing/config/route-sync.js";
import { LABEL, MANAGED_BY } from "../routing/labels.js";
import { ROUTE_CONTROLLER } from "../routes-provider/controller-config.js";
import { hardenedContainer, spreadAcrossNodes } from "./placement.js";

/** The controller's user and group: not root, above the host's users. */
export const ROUTE_CONTROLLER_UID = 10001;
/** Its port for /healthz, /readyz and /metrics. */
export const ROUTE_CONTROLLER_PORT = 8080;

/** Who may reach the route controller and what it may reach (its NetworkPolicy). */
export interface RouteControllerNetworkFacts {
  /** Who scrapes its metrics: pods with `pods` labels in namespaces with `namespaces` labels. */
  metrics: { namespaces: Record<string, string>; pods: Record<string, string> };
  /** Cluster DNS: its pods, and address ranges outside the pod network. */
  dns: { namespace: string; pods: Record<string, string>; cidrs: string[] };
  /** The API server, as pods reach it: address ranges (empty: any) and ports. */
  apiServer: { cidrs: string[]; ports: number[] };
}

export interface RouteControllerArgs {
  /** The gateways' namespace: the controller runs there, beside their xDS ConfigMaps. */
  namespace: string;
  /** Replicas, image, resources (stack config routeSync.inCluster). */
  settings: RouteControllerSettings;
  /** The data of its ConfigMap (controllerConfigData: the stack config as written, the routes targets). */
  config: Record<string, string>;
  /** The route-sync identity's ServiceAccount it runs as. */
  serviceAccount: pulumi.Input<string>;
  /** Its NetworkPolicy (none when unset). */
  networkPolicy?: RouteControllerNetworkFacts;
  /** Local clusters without a kubelet only: skip the provider's readiness waits. */
  skipAwait?: boolean;
}

/** The labels of the route controller's pods. */
export function routeControllerPodLabels(): Record<string, string> {
  return { [LABEL.app]: ROUTE_CONTROLLER, [LABEL.component]: "route-sync" };
}

/** Only what election and config need: get/update the Lease, read and follow the ConfigMap, each by name. */
export function routeControllerRules(): k8s.types.input.rbac.v1.PolicyRule[] {
  return [
    {
      apiGroups: ["coordination.k8s.io"],
      resources: ["leases"],
      resourceNames: [ROUTE_CONTROLLER],
      verbs: ["get", "update"],
    },
    { apiGroups: [""], resources: ["configmaps"], resourceNames: [ROUTE_CONTROLLER], verbs: ["get", "list", "watch"] },
  ];
}

/** The controller's pod spec: non-root, read-only root, no privilege, probes on what it serves. */
export function routeControllerPodSpec(
  args: Pick<RouteControllerArgs, "settings" | "serviceAccount">,
): k8s.types.input.core.v1.PodSpec {
  const fieldRef = (fieldPath: string) => ({ valueFrom: { fieldRef: { apiVersion: "v1", fieldPath } } });
  return {
    serviceAccountName: args.serviceAccount,
    // Its token is how it writes: the route-sync identity's.
    automountServiceAccountToken: true,
    // SIGTERM: the write in progress finishes (a few seconds), then the Lease is released.
    terminationGracePeriodSeconds: 30,
    securityContext: {
      runAsNonRoot: true,
      runAsUser: ROUTE_CONTROLLER_UID,
      runAsGroup: ROUTE_CONTROLLER_UID,
      seccompProfile: { type: "RuntimeDefault" },
    },
    ...spreadAcrossNodes(routeControllerPodLabels()),
    containers: [
      {
        name: ROUTE_CONTROLLER,
        image: args.settings.image,
        args: ["--port", String(ROUTE_CONTROLLER_PORT)],
        env: [
          { name: "POD_NAME", ...fieldRef("metadata.name") },
          { name: "POD_NAMESPACE", ...fieldRef("metadata.namespace") },
          // Memory held back from the OS between renders: glibc's allocator at 2 arenas (not 8 per core),
          // V8's young generation at 2 MiB semi-spaces (16 by default). bench/route-controller.ts at 5,000
          // pairs: the leader's VmRSS 215 -> 185 MiB, idle CPU the same.
          { name: "MALLOC_ARENA_MAX", value: "2" },
          { name: "NODE_OPTIONS", value: "--max-semi-space-size=2" },
        ],
        ports: [{ name: "http", containerPort: ROUTE_CONTROLLER_PORT }],
        resources: args.settings.resources,
        // Answered on the event loop that renders: a render of thousands of pairs on a busy node holds it for
        // seconds, which the kubelet's 1 s default timeout took for a dead process (bench/route-controller.ts at
        // 5,000 pairs: the leader restarted again and again). Liveness fails only after 30 s without an answer.
        readinessProbe: {
          httpGet: { path: "/readyz", port: "http" },
          periodSeconds: 5,
          timeoutSeconds: 5,
          failureThreshold: 2,
        },
        livenessProbe: {
          httpGet: { path: "/healthz", port: "http" },
          periodSeconds: 10,
          timeoutSeconds: 10,
          failureThreshold: 3,
        },
        startupProbe: {
          httpGet: { path: "/healthz", port: "http" },
          periodSeconds: 2,
          timeoutSeconds: 2,
          failureThreshold: 30,
        },
        securityContext: hardenedContainer(ROUTE_CONTROLLER_UID),
        // Node's compile cache and any temporary file: the root file system is read-only.
        volumeMounts: [{ name: "tmp", mountPath: "/tmp" }],
      },
    ],
    volumes: [{ name: "tmp", emptyDir: { sizeLimit: "64Mi" } }],
  };
}

const tcp = (port: number) => ({ protocol: "TCP", port });

/** The NetworkPolicy spec: metrics in from the scrapers; DNS and the API server out, nothing else. */
export function routeControllerNetworkPolicySpec(
  facts: RouteControllerNetworkFacts,
): k8s.types.input.networking.v1.NetworkPolicySpec {
  const { dns, apiServer } = facts;
  return {
    podSelector: { matchLabels: routeControllerPodLabels() },
    policyTypes: ["Ingress", "Egress"],
    ingress: [
      {
        from: [
          {
            namespaceSelector: { matchLabels: facts.metrics.namespaces },
            podSelector: { matchLabels: facts.metrics.pods },
          },
        ],
        ports: [tcp(ROUTE_CONTROLLER_PORT)],
      },
    ],
    egress: [
      {
        to: [
          {
            namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": dns.namespace } },
            podSelector: { matchLabels: dns.pods },
          },
          ...dns.cidrs.map((cidr) => ({ ipBlock: { cidr } })),
        ],
        ports: [
          { protocol: "UDP", port: 53 },
          { protocol: "TCP", port: 53 },
        ],
      },
      {
        // No `to`: any address, on the API server's ports only.
        ...(apiServer.cidrs.length ? { to: apiServer.cidrs.map((cidr) => ({ ipBlock: { cidr } })) } : {}),
        ports: apiServer.ports.map(tcp),
      },
    ],
  };
}

export class RouteController extends pulumi.ComponentResource {
  readonly deployment: k8s.apps.v1.Deployment;
  /** namespace/name of the Deployment (what the routes resources name when it does not write). */
  readonly deploymentName: string;

  constructor(name: string, args: RouteControllerArgs, opts?: pulumi.ComponentResourceOptions) {
    super("envoy-gateways:route-sync:RouteController", name, {}, opts);
    const child = { parent: this };
    const labels = { [LABEL.managedBy]: MANAGED_BY, ...routeControllerPodLabels() };
    const metadata = { name: ROUTE_CONTROLLER, namespace: args.namespace, labels };
    const config = new k8s.core.v1.ConfigMap(name, { metadata, data: args.config }, child);
    // Its holder, renew time and transitions are the replicas' to write: the program declares it, never resets it.
    const lease = new k8s.coordination.v1.Lease(name, { metadata, spec: {} }, { ...child, ignoreChanges: ["spec"] });
    const role = new k8s.rbac.v1.Role(name, { metadata, rules: routeControllerRules() }, child);
    const binding = new k8s.rbac.v1.RoleBinding(
      name,
      {
        metadata,
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: role.metadata.name },
        subjects: [{ kind: "ServiceAccount", name: args.serviceAccount, namespace: args.namespace }],
      },
      child,
    );
    const selector = { matchLabels: routeControllerPodLabels() };
    this.deployment = new k8s.apps.v1.Deployment(
      name,
      {
        metadata: {
          ...metadata,
          annotations: args.skipAwait ? { "pulumi.com/skipAwait": "true" } : {},
        },
        spec: {
          replicas: args.settings.replicas,
          selector,
          // One replica at a time: a standby keeps the Lease's election going while the next one starts.
          strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
          template: {
            metadata: {
              labels,
              annotations: {
                "prometheus.io/scrape": "true",
                "prometheus.io/port": String(ROUTE_CONTROLLER_PORT),
                "prometheus.io/path": "/metrics",
              },
            },
            spec: routeControllerPodSpec(args),
          },
        },
      },
      // Started once it may read its config and take the Lease.
      { ...child, dependsOn: [config, lease, binding] },
    );
    new k8s.policy.v1.PodDisruptionBudget(name, { metadata, spec: { maxUnavailable: 1, selector } }, child);
    if (args.networkPolicy)
      new k8s.networking.v1.NetworkPolicy(
        name,
        { metadata, spec: routeControllerNetworkPolicySpec(args.networkPolicy) },
        child,
      );
    this.deploymentName = `${args.namespace}/${ROUTE_CONTROLLER}`;
    this.registerOutputs({ deployment: this.deployment.metadata.name });
  }
}
