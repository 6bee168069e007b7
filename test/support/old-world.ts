// The "old world" a platform team runs before it adopts envoy-gateways, made on the
// local node with the Kubernetes API (as kubectl or a Helm chart made it, not Pulumi):
// - the production services' pods behind plain ClusterIP Services;
// - an NGINX gateway: Debian's nginx in a locally built image (POD_IMAGE_NGINX), with the
//   old gateway's config (bench/configs/nginx-old-gateway.conf.template: server blocks
//   chosen by regex, `resolver` the cluster DNS, `proxy_pass` to a variable, so a new
//   TCP and TLS connection per request, through kube-proxy to one pod);
// - the gateway Service the outside world uses, a NodePort here (a LoadBalancer with a
//   fixed address on a real cluster), selecting the NGINX pods;
// - the Secrets the stack's config names (the served certificate, the upstream client
//   certificate, the pods' certificates), which the program will expect to find.
// Names follow the stack's config (its namespace, services, gateways' Secrets and
// Service), so that the program can adopt these objects; the NGINX Deployment is named
// `<gateway>-nginx`, out of the way of the program's `<gateway>` Deployment.
import { AppsV1Api, CoreV1Api, KubeConfig, type V1Service } from "@kubernetes/client-node";
import { gatewayObjectNames } from "../../components/envoy-gateway.js";
import { LABEL } from "../../routing/labels.js";
import { UPSTREAM_PORT } from "../../routing/names.js";
import type { GatewayName, StackConfig } from "../../routing/config/schema.js";
import { fillTemplate } from "../harness/template.js";
import type { LocalCluster } from "./cluster.js";
import { untilKubeProxyServes } from "./kube-proxy.js";
import { applyLocalSecrets, localImages } from "./local-stack.js";
import { hardenedDeployment, Workloads } from "./workloads.js";

/** The port the NGINX pods listen on (as the Envoy gateways' pods do). */
export const OLD_GATEWAY_PORT = 8443;
const TLS_DIR = "/etc/nginx/tls";

export interface OldWorldSpec {
  /** The stack config whose namespace, services and gateway Secrets the old world has. */
  config: StackConfig;
  /** The production services it runs (names from `config.services`), with their replicas and images there. */
  services: string[];
  /** The gateway NGINX plays (its Service is the one the program declares for it). */
  gateway: GatewayName;
  /** NGINX pods (default 2). */
  gatewayReplicas?: number;
}

/** What `deployOldWorld` made. */
export interface OldWorld {
  namespace: string;
  /** The gateway Service (NodePort) and its node port. */
  gatewayService: string;
  nodePort: number;
  /** The NGINX Deployment and its pods' app label. */
  nginxDeployment: string;
  /** Cluster IPs of the production services, by name. */
  clusterIps: Record<string, string>;
}

/** Makes the old world and waits until every pod of it is ready. */
export async function deployOldWorld(cluster: LocalCluster, spec: OldWorldSpec): Promise<OldWorld> {
  const kc = new KubeConfig();
  kc.loadFromFile(cluster.kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const w = new Workloads(cluster);
  const { config } = spec;
  const namespace = config.namespace;

  await core.createNamespace({ body: { metadata: { name: namespace } } }).catch((e: { code?: number }) => {
    if (e.code !== 409) throw e;
  });
  await applyLocalSecrets(cluster, config);

  const clusterIps: Record<string, string> = {};
  for (const name of spec.services) {
    const service = config.services.find((s) => s.name === name);
    if (!service) throw new Error(`old world: no service ${name} in the stack config`);
    await w.createWorkload(namespace, { name, replicas: service.replicas, image: service.image });
    const created = await core.createNamespacedService({ namespace, body: clusterIpService(name) });
    clusterIps[name] = created.spec?.clusterIP ?? "";
  }

  const nginxDeployment = `${spec.gateway}-nginx`;
  const tls = config.gateways[spec.gateway].tls;
  await core.createNamespacedConfigMap({
    namespace,
    body: {
      metadata: { name: nginxDeployment },
      data: { "nginx.conf": nginxConfig(cluster, config) },
    },
  });
  const selector = { app: nginxDeployment };
  await apps.createNamespacedDeployment({
    namespace,
    body: hardenedDeployment({
      name: nginxDeployment,
      selector,
      replicas: spec.gatewayReplicas ?? 2,
      container: {
        name: "nginx",
        image: localImages().nginx,
        ports: [{ name: "https", containerPort: OLD_GATEWAY_PORT }],
        readinessProbe: { tcpSocket: { port: "https" }, periodSeconds: 2 },
        volumeMounts: [
          { name: "config", mountPath: "/etc/nginx", readOnly: true },
          { name: "server-tls", mountPath: `${TLS_DIR}/server`, readOnly: true },
          { name: "upstream-tls", mountPath: `${TLS_DIR}/upstream`, readOnly: true },
          { name: "tmp", mountPath: "/tmp" },
        ],
      },
      volumes: [
        { name: "config", configMap: { name: nginxDeployment } },
        { name: "server-tls", secret: { secretName: tls.serverSecret } },
        { name: "upstream-tls", secret: { secretName: tls.upstreamSecret } },
        { name: "tmp", emptyDir: {} },
      ],
    }),
  });

  const gatewayService = gatewayObjectNames(spec.gateway).service;
  const created = await core.createNamespacedService({
    namespace,
    body: {
      metadata: { name: gatewayService },
      spec: {
        type: "NodePort",
        selector,
        ports: [{ name: "https", port: 443, targetPort: OLD_GATEWAY_PORT, protocol: "TCP" }],
      },
    },
  });
  const nodePort = created.spec?.ports?.[0]?.nodePort;
  if (!nodePort) throw new Error(`old world: Service ${namespace}/${gatewayService} got no node port`);

  for (const name of spec.services) {
    const service = config.services.find((s) => s.name === name)!;
    await w.waitReady(namespace, name, service.replicas);
  }
  await w.waitRollout(namespace, nginxDeployment);
  // Serving means kube-proxy has programmed the new Services too (its sync lags their creation).
  await untilKubeProxyServes(`the old world in ${namespace}`, [
    { nodePort },
    ...Object.values(clusterIps).map((clusterIp) => ({ clusterIp, port: UPSTREAM_PORT })),
  ]);
  return { namespace, gatewayService, nodePort, nginxDeployment, clusterIps };
}

/** A plain ClusterIP Service in front of a service's pods, as `kubectl create service clusterip` makes. */
function clusterIpService(name: string): V1Service {
  return {
    metadata: { name, labels: { app: name } },
    spec: {
      type: "ClusterIP",
      selector: { [LABEL.app]: name },
      ports: [{ name: "https", port: UPSTREAM_PORT, targetPort: UPSTREAM_PORT, protocol: "TCP" }],
    },
  };
}

/** The old gateway's nginx.conf for the pod: the benchmark's template with the pod's paths. */
function nginxConfig(cluster: LocalCluster, config: StackConfig): string {
  return fillTemplate("nginx-old-gateway.conf.template", {
    WORKERS: "1",
    DIR: "/tmp",
    DNS: cluster.node.dns,
    LISTEN: String(OLD_GATEWAY_PORT),
    DOMAIN: config.domain,
    DOMAIN_RE: config.domain.replaceAll(".", "\\."),
    NAMESPACE: config.namespace,
    CLUSTER_DOMAIN: config.clusterDomain,
    SERVER_CERT: `${TLS_DIR}/server/tls.crt`,
    SERVER_KEY: `${TLS_DIR}/server/tls.key`,
    CLIENT_CERT: `${TLS_DIR}/upstream/tls.crt`,
    CLIENT_KEY: `${TLS_DIR}/upstream/tls.key`,
    CA: `${TLS_DIR}/upstream/ca.crt`,
  });
}
