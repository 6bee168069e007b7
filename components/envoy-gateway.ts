// EnvoyGateway: one Envoy gateway (gateway or internal-gateway) and
// everything it needs in the cluster.
import { adoptionAnnotations, adoptionNote, noteAt, servedByNote } from "./adoption.js";
import { networkPolicySpec, type GatewayNetworkFacts } from "./network-policy.js";
import { hardenedContainer, spreadAcrossNodes } from "./placement.js";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { gatewayPodsService, type GatewayName, type GatewaySettings } from "../routing/config/schema.js";
import { POD_PATHS, POD_PORTS } from "../routing/envoy/types.js";
import { gatewayPodLabels, LABEL, MANAGED_BY } from "../routing/labels.js";
import type { GatewayFiles } from "../routing/render.js";
import { dataDigest, parseQuantity } from "../routing/units.js";

export interface EnvoyGatewayArgs {
  /** Which gateway this is; also the name of its Kubernetes objects. */
  gateway: GatewayName;
  /** Namespace of the gateway's objects. */
  namespace: string;
  /** Envoy image, pinned to a version tag or digest. */
  image: string;
  /** Replicas, resources, Service and TLS secrets of this gateway (stack config). */
  settings: GatewaySettings;
  /** The validated files: bootstrap ConfigMap data, and the first xDS ConfigMap data (production routes). */
  files: GatewayFiles;
  /** Seconds Envoy drains connections before it stops (default 30). */
  drainSeconds?: number;
  /** Local clusters without a kubelet only: skip waiting for readiness (default false). */
  skipAwait?: boolean;
  /** Take over the gateway Service if it exists already, whoever set its fields (default false). */
  adoptExisting?: boolean;
  /** Who reaches the gateway and what it may reach, declared as its NetworkPolicy (none when unset). */
  networkPolicy?: GatewayNetworkFacts;
}

/**
 * Names of a gateway's Kubernetes objects. The bootstrap ConfigMap's name ends with
 * its content's checksum (`<gateway>-bootstrap-<10 hex>`, see bootstrapConfigMapName).
 */
export function gatewayObjectNames(gateway: string): {
  bootstrap: string;
  xds: string;
  serviceAccount: string;
  deployment: string;
  service: string;
  pods: string;
} {
  return {
    bootstrap: `${gateway}-bootstrap`,
    xds: `${gateway}-xds`,
    serviceAccount: gateway,
    deployment: gateway,
    service: gateway,
    pods: gatewayPodsService(gateway),
  };
}

/**
 * The bootstrap ConfigMap's name: `<gateway>-bootstrap-` and the first 10 hex digits of
 * its content's checksum. The Kubernetes provider replaces a ConfigMap whose data
 * changes; under a fixed name that replacement is delete-before-create, and it takes
 * the Deployment (which refers to the name) with it: every gateway pod is deleted
 * before a new one starts. A new name per content makes it create-before-delete: the
 * new ConfigMap first, then the Deployment's rolling update onto it, then the old
 * ConfigMap goes.
 */
export function bootstrapConfigMapName(gateway: string, files: GatewayFiles): string {
  return `${gatewayObjectNames(gateway).bootstrap}-${bootstrapChecksum(files).slice(0, 10)}`;
}

/**
 * An Envoy gateway: ServiceAccount, bootstrap and xDS ConfigMaps, a hardened
 * Deployment, PodDisruptionBudget, NetworkPolicy, HorizontalPodAutoscaler, its Service, and
 * the headless Service of its own pods (how each Envoy counts them).
 */
export class EnvoyGateway extends pulumi.ComponentResource {
  /** The xDS ConfigMap Envoy watches (cds.yaml, rds.yaml); its data is later owned by the routes resource. */
  readonly xdsConfigMap: k8s.core.v1.ConfigMap;
  readonly deployment: k8s.apps.v1.Deployment;
  readonly service: k8s.core.v1.Service;
  /** The external address (load-balancer IP or hostname), once the cloud assigns one. */
  readonly address: pulumi.Output<string | undefined>;

  constructor(name: string, args: EnvoyGatewayArgs, opts?: pulumi.ComponentResourceOptions) {
    super("envoy-gateways:gateway:EnvoyGateway", name, {}, opts);
    const child = { parent: this };
    const names = gatewayObjectNames(args.gateway);
    const labels = gatewayLabels(args.gateway);
    const annotations = args.skipAwait ? { "pulumi.com/skipAwait": "true" } : undefined;
    const meta = (objectName: string) => ({ name: objectName, namespace: args.namespace, labels, annotations });

    const serviceAccount = new k8s.core.v1.ServiceAccount(
      name,
      { metadata: meta(names.serviceAccount), automountServiceAccountToken: false },
      child,
    );
    const bootstrap = new k8s.core.v1.ConfigMap(
      `${name}-bootstrap`,
      { metadata: meta(bootstrapConfigMapName(args.gateway, args.files)), data: args.files.bootstrap },
      child,
    );
    this.xdsConfigMap = new k8s.core.v1.ConfigMap(
      `${name}-xds`,
      { metadata: meta(names.xds), data: args.files.xds },
      { ...child, ignoreChanges: ["data"] },
    );
    this.deployment = new k8s.apps.v1.Deployment(
      name,
      { metadata: meta(names.deployment), spec: deploymentSpec(args, serviceAccount, bootstrap, this.xdsConfigMap) },
      // The HPA owns the replica count once the Deployment exists.
      { ...child, ignoreChanges: ["spec.replicas"] },
    );
    new k8s.policy.v1.PodDisruptionBudget(
      name,
      {
        metadata: meta(names.deployment),
        spec: { maxUnavailable: 1, selector: { matchLabels: podLabels(args.gateway) } },
      },
      child,
    );
    if (args.networkPolicy) {
      new k8s.networking.v1.NetworkPolicy(
        name,
        { metadata: meta(names.deployment), spec: networkPolicySpec(args.networkPolicy) },
        child,
      );
    }
    new k8s.autoscaling.v2.HorizontalPodAutoscaler(
      name,
      { metadata: meta(names.deployment), spec: autoscalerSpec(args, names.deployment) },
      child,
    );
    this.service = new k8s.core.v1.Service(
      name,
      {
        metadata: {
          ...meta(names.service),
          annotations: {
            ...args.settings.service.annotations,
            ...annotations,
            ...adoptionAnnotations(args.adoptExisting),
          },
        },
        spec: serviceSpec(args),
      },
      { ...child, deleteBeforeReplace: true },
    );
    if (args.adoptExisting) noteAt(this.service, adoptionNote(args.namespace, names.service));
    const servedBy = args.settings.service.servedBy;
    if (servedBy) noteAt(this.service, servedByNote(args.namespace, names.service, servedBy));
    // Each Envoy resolves this one (its bootstrap's local cluster) to count the gateway's ready pods
    // and take its share of every service-wide rate limit, whatever the autoscaler does.
    new k8s.core.v1.Service(`${name}-pods`, { metadata: meta(names.pods), spec: podsServiceSpec(args) }, child);
    this.address = this.service.status.apply(
      (s) => s?.loadBalancer?.ingress?.[0]?.ip ?? s?.loadBalancer?.ingress?.[0]?.hostname,
    );
    this.registerOutputs({
      xdsConfigMap: this.xdsConfigMap.metadata.name,
      service: this.service.metadata.name,
      address: this.address,
    });
  }
}

export function gatewayLabels(gateway: string): Record<string, string> {
  return { [LABEL.app]: gateway, [LABEL.component]: "gateway", [LABEL.managedBy]: MANAGED_BY };
}

const podLabels = gatewayPodLabels;

/**
 * The user and group Envoy runs as: above 10000, so no user of the node shares it (the
 * Envoy image's own `envoy` user is 101, which kube-score and checkov flag). Envoy needs no
 * name for it; the projected files are readable through fsGroup.
 */
export const ENVOY_UID = 10101;

/**
 * Node disk an Envoy container may use: its log output only (its /tmp is in memory, its root
 * read-only), which the kubelet rotates (10 MiB x 5 files by default). Past the limit the
 * kubelet evicts the pod rather than let it fill the node's disk.
 */
export const ENVOY_LOG_STORAGE = { request: "64Mi", limit: "256Mi" } as const;

/** Checksum of the bootstrap: part of the pod template, so a bootstrap change rolls the pods; xDS changes do not. */
export function bootstrapChecksum(files: GatewayFiles): string {
  return dataDigest(files.bootstrap);
}

/**
 * POSTs to Envoy's admin interface (127.0.0.1 only) from the preStop hook:
 * fail health checks, drain listeners gracefully (HTTP/1 Connection: close,
 * HTTP/2 GOAWAY), then wait out the drain before Kubernetes sends SIGTERM.
 * The Envoy image has bash (whose /dev/tcp makes the request) but no curl.
 */
export function drainCommand(adminPort: number, seconds: number): string[] {
  const post = (path: string) =>
    `exec 3<>/dev/tcp/127.0.0.1/${adminPort} && printf 'POST ${path} HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nContent-Length: 0\\r\\nConnection: close\\r\\n\\r\\n' >&3 && cat <&3 >/dev/null; exec 3>&-`;
  return ["/bin/bash", "-c", `${post("/healthcheck/fail")}; ${post("/drain_listeners?graceful")}; sleep ${seconds}`];
}

function deploymentSpec(
  args: EnvoyGatewayArgs,
  serviceAccount: k8s.core.v1.ServiceAccount,
  bootstrap: k8s.core.v1.ConfigMap,
  xds: k8s.core.v1.ConfigMap,
): k8s.types.input.apps.v1.DeploymentSpec {
  const s = args.settings;
  const drain = args.drainSeconds ?? 30;
  const ports = POD_PORTS;
  const workers = Math.max(1, Math.ceil(cpuCores(s.resources.limits.cpu)));
  return {
    replicas: s.replicas,
    selector: { matchLabels: podLabels(args.gateway) },
    strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
    minReadySeconds: 5,
    template: {
      metadata: {
        labels: podLabels(args.gateway),
        annotations: {
          "envoy-gateways.io/bootstrap-checksum": bootstrapChecksum(args.files),
          "prometheus.io/scrape": "true",
          "prometheus.io/port": String(ports.metrics),
          "prometheus.io/path": "/stats/prometheus",
        },
      },
      spec: {
        serviceAccountName: serviceAccount.metadata.name,
        automountServiceAccountToken: false,
        terminationGracePeriodSeconds: drain + 15,
        securityContext: {
          runAsNonRoot: true,
          runAsUser: ENVOY_UID,
          runAsGroup: ENVOY_UID,
          fsGroup: ENVOY_UID,
          seccompProfile: { type: "RuntimeDefault" },
        },
        ...spreadAcrossNodes(podLabels(args.gateway)),
        containers: [
          {
            name: "envoy",
            image: args.image,
            command: ["/usr/local/bin/envoy"],
            args: [
              "--config-path",
              `${POD_PATHS.bootstrapDir}/envoy.yaml`,
              "--service-node",
              "$(POD_NAME)",
              "--concurrency",
              String(workers),
              "--reject-unknown-dynamic-fields",
              "--disable-hot-restart",
              "--drain-time-s",
              String(drain),
              "--drain-strategy",
              "immediate",
              "--log-level",
              "info",
            ],
            // apiVersion as the API server defaults it: fieldRef is applied whole (an atomic struct), so an
            // apply that left it out would differ from the stored object, a conflict for another field manager
            // of the same values (a `pulumi up` resumed over what a killed one created).
            env: [{ name: "POD_NAME", valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "metadata.name" } } }],
            ports: [
              { name: "http", containerPort: ports.http },
              { name: "https", containerPort: ports.https },
              { name: "health", containerPort: ports.health },
              { name: "metrics", containerPort: ports.metrics },
            ],
            resources: {
              requests: { ...s.resources.requests, "ephemeral-storage": ENVOY_LOG_STORAGE.request },
              limits: { ...s.resources.limits, "ephemeral-storage": ENVOY_LOG_STORAGE.limit },
            },
            readinessProbe: { httpGet: { path: "/ready", port: "health" }, periodSeconds: 5, failureThreshold: 2 },
            livenessProbe: {
              tcpSocket: { port: "health" },
              initialDelaySeconds: 10,
              periodSeconds: 10,
              failureThreshold: 3,
            },
            startupProbe: { httpGet: { path: "/ready", port: "health" }, periodSeconds: 2, failureThreshold: 60 },
            lifecycle: { preStop: { exec: { command: drainCommand(ports.admin, drain) } } },
            securityContext: hardenedContainer(ENVOY_UID),
            volumeMounts: [
              { name: "bootstrap", mountPath: POD_PATHS.bootstrapDir, readOnly: true },
              { name: "xds", mountPath: POD_PATHS.xdsDir, readOnly: true },
              { name: "server-tls", mountPath: POD_PATHS.serverTlsDir, readOnly: true },
              { name: "upstream-tls", mountPath: POD_PATHS.upstreamTlsDir, readOnly: true },
              { name: "tmp", mountPath: "/tmp" },
            ],
          },
        ],
        volumes: [
          { name: "bootstrap", configMap: { name: bootstrap.metadata.name } },
          { name: "xds", configMap: { name: xds.metadata.name } },
          { name: "server-tls", secret: { secretName: s.tls.serverSecret } },
          { name: "upstream-tls", secret: { secretName: s.tls.upstreamSecret } },
          { name: "tmp", emptyDir: { medium: "Memory", sizeLimit: "16Mi" } },
        ],
      },
    },
  };
}

function autoscalerSpec(
  args: EnvoyGatewayArgs,
  deployment: string,
): k8s.types.input.autoscaling.v2.HorizontalPodAutoscalerSpec {
  const s = args.settings;
  return {
    scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: deployment },
    minReplicas: s.replicas,
    maxReplicas: s.maxReplicas ?? s.replicas * 3,
    metrics: [
      {
        type: "Resource",
        resource: { name: "cpu", target: { type: "Utilization", averageUtilization: s.targetCpuUtilization } },
      },
    ],
    // Scale down slowly: drained pods take their connections with them.
    behavior: {
      scaleDown: { stabilizationWindowSeconds: 300, policies: [{ type: "Pods", value: 1, periodSeconds: 60 }] },
    },
  };
}

/** 80 and 443 to the unprivileged container ports; client addresses preserved for external load balancers. */
function serviceSpec(args: EnvoyGatewayArgs): k8s.types.input.core.v1.ServiceSpec {
  const svc = args.settings.service;
  const spec: k8s.types.input.core.v1.ServiceSpec = {
    type: svc.type,
    selector: svc.servedBy ?? podLabels(args.gateway),
    ports: [
      { name: "http", port: 80, targetPort: "http", protocol: "TCP" },
      { name: "https", port: 443, targetPort: "https", protocol: "TCP" },
    ],
  };
  if (svc.type !== "ClusterIP") spec.externalTrafficPolicy = "Local";
  if (svc.loadBalancerIP) spec.loadBalancerIP = svc.loadBalancerIP;
  return spec;
}

/** Headless, ready pods only: DNS answers with the address of every gateway pod that takes traffic. */
function podsServiceSpec(args: EnvoyGatewayArgs): k8s.types.input.core.v1.ServiceSpec {
  return {
    clusterIP: "None",
    selector: podLabels(args.gateway),
    publishNotReadyAddresses: false,
    ports: [{ name: "https", port: 443, targetPort: "https", protocol: "TCP" }],
  };
}

function cpuCores(q: string): number {
  return parseQuantity(q) ?? 1;
}
