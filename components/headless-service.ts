// HeadlessService: a routed service's headless Service on 443 (DNS returns
// every ready pod IP, so Envoy balances across the pods itself), carrying the
// routing labels; with an image, also its Deployment and PodDisruptionBudget.
// Those pods mount their certificate from the Secret <service>-tls.
import { adoptionAnnotations, adoptionNote, noteAt } from "./adoption.js";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import type { ContainerResources } from "../routing/config/primitives.js";
import { SERVICE_RESOURCES } from "../routing/config/services.js";
import { LABEL, MANAGED_BY, routingLabels } from "../routing/labels.js";
import { UPSTREAM_PORT } from "../routing/names.js";
import { spreadAcrossNodes } from "./placement.js";

export interface HeadlessServiceArgs {
  /** Kubernetes Service name (also the logical service name unless `logicalName` is set). */
  serviceName: string;
  /** Namespace of the Service (and Deployment). */
  namespace: string;
  /** Pod replicas; recorded in a label, and the Deployment's count when `image` is set. */
  replicas: number;
  /** Logical service name for the routing labels (default: serviceName). */
  logicalName?: string;
  /** Version (stack) label, for one of several versions (default: none). */
  version?: string;
  /** Share of the logical service's traffic, whole percent (default 100). */
  weight?: number;
  /** Long-lived websocket traffic (default false). */
  websocket?: boolean;
  /**
   * Container image; when set, the Deployment and PodDisruptionBudget are declared too, and the
   * pods mount the Secret `<serviceName>-tls` at /etc/tls (default: none).
   */
  image?: string;
  /** CPU and memory requests and limits of each pod, with `image` (default SERVICE_RESOURCES). */
  resources?: ContainerResources;
  /** Local clusters without a kubelet only: skip waiting for readiness (default false). */
  skipAwait?: boolean;
  /** Take over the Service if it exists already, whoever set its fields (default false). */
  adoptExisting?: boolean;
}

export class HeadlessService extends pulumi.ComponentResource {
  readonly service: k8s.core.v1.Service;
  readonly deployment?: k8s.apps.v1.Deployment;

  constructor(name: string, args: HeadlessServiceArgs, opts?: pulumi.ComponentResourceOptions) {
    super("envoy-gateways:service:HeadlessService", name, {}, opts);
    const child = { parent: this };
    const selector = { [LABEL.app]: args.serviceName };
    const annotations = args.skipAwait ? { "pulumi.com/skipAwait": "true" } : undefined;
    const labels = {
      [LABEL.managedBy]: MANAGED_BY,
      [LABEL.component]: "routed-service",
      ...routingLabels({
        service: args.logicalName ?? args.serviceName,
        version: args.version,
        weight: args.weight ?? 100,
        replicas: args.replicas,
        websocket: args.websocket ?? false,
      }),
    };
    this.service = new k8s.core.v1.Service(
      name,
      {
        metadata: {
          name: args.serviceName,
          namespace: args.namespace,
          labels,
          annotations: args.adoptExisting ? { ...annotations, ...adoptionAnnotations(true) } : annotations,
        },
        spec: {
          clusterIP: "None",
          selector,
          // Only ready pods get DNS records, so Envoy only ever sees ready pods.
          publishNotReadyAddresses: false,
          ports: [{ name: "https", port: UPSTREAM_PORT, targetPort: UPSTREAM_PORT, protocol: "TCP" }],
        },
      },
      { ...child, deleteBeforeReplace: true },
    );
    if (args.adoptExisting) noteAt(this.service, adoptionNote(args.namespace, args.serviceName));
    if (args.image) {
      this.deployment = new k8s.apps.v1.Deployment(
        name,
        {
          metadata: { name: args.serviceName, namespace: args.namespace, labels, annotations },
          spec: serviceWorkloadSpec(
            { name: args.serviceName, image: args.image, replicas: args.replicas, resources: args.resources },
            selector,
          ),
        },
        child,
      );
      if (args.replicas > 1) {
        new k8s.policy.v1.PodDisruptionBudget(
          name,
          {
            metadata: { name: args.serviceName, namespace: args.namespace, labels },
            spec: { maxUnavailable: 1, selector: { matchLabels: selector } },
          },
          child,
        );
      }
    }
    this.registerOutputs({ service: this.service.metadata.name });
  }
}

/** Where the pods of a declared Deployment find their certificate. */
export const POD_TLS_DIR = "/etc/tls";

/**
 * The Secret the pods of a declared Deployment mount at POD_TLS_DIR: the certificate for
 * <service>.<namespace>.svc.<clusterDomain> (tls.crt, tls.key) and the CA that signed the
 * gateways' client certificates (ca.crt). Every routed pod serves TLS on 443 with it.
 */
export function podTlsSecretName(serviceName: string): string {
  return `${serviceName}-tls`;
}

/**
 * The Deployment spec of a routed service's pods: TLS on 443 with the Secret
 * <service>-tls, hardened (non-root, no capabilities, no ServiceAccount token, bounded
 * resources), spread across nodes, restarted when it stops accepting connections, rolling
 * without losing capacity. Plain data, so the e2e stand-in pods run exactly what the
 * program declares.
 */
export function serviceWorkloadSpec(
  service: { name: string; image: string; replicas: number; resources?: ContainerResources },
  selector: Record<string, string>,
): k8s.types.input.apps.v1.DeploymentSpec {
  const resources = service.resources ?? SERVICE_RESOURCES;
  return {
    replicas: service.replicas,
    selector: { matchLabels: selector },
    strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
    template: {
      metadata: { labels: selector },
      spec: {
        automountServiceAccountToken: false,
        securityContext: {
          runAsNonRoot: true,
          seccompProfile: { type: "RuntimeDefault" },
          // A non-root process binds 443 in its own network namespace (a safe sysctl, whatever the runtime's default).
          sysctls: [{ name: "net.ipv4.ip_unprivileged_port_start", value: String(UPSTREAM_PORT) }],
        },
        ...spreadAcrossNodes(selector),
        containers: [
          {
            name: service.name,
            image: service.image,
            ports: [{ name: "https", containerPort: UPSTREAM_PORT }],
            readinessProbe: { tcpSocket: { port: "https" }, periodSeconds: 5 },
            // Restarted when it no longer accepts connections for 30 s (a wedged process stays "running").
            livenessProbe: { tcpSocket: { port: "https" }, periodSeconds: 10, failureThreshold: 3 },
            resources: { requests: { ...resources.requests }, limits: { ...resources.limits } },
            // No capability: one added for a non-root process is not in its effective set (Kubernetes
            // sets no ambient capabilities); 443 is bound through the sysctl above instead.
            securityContext: {
              allowPrivilegeEscalation: false,
              readOnlyRootFilesystem: true,
              capabilities: { drop: ["ALL"] },
            },
            volumeMounts: [{ name: "tls", mountPath: POD_TLS_DIR, readOnly: true }],
          },
        ],
        volumes: [{ name: "tls", secret: { secretName: podTlsSecretName(service.name) } }],
      },
    },
  };
}
