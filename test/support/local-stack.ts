// The local stack: one of the repository's stack files made to run on the local
// cluster's node (scripts/local-cluster.sh), and the Secrets its gateways and
// pods need, made with openssl and signed by the cluster's services CA.
//
// What changes from the stack file, and why (nothing else does):
//   services[].image                  the stand-in pod image (the auth service: the stand-in
//                                     auth image), so the program declares their Deployments
//                                     and every route reaches real pods
//   services[].resources              STANDIN_RESOURCES: the defaults would request 100m
//                                     CPU per pod, and the suite runs dozens on 2 cores
//   gateways.<g>.service.type         NodePort: there is no cloud load balancer, and Pulumi
//                                     waits for a LoadBalancer Service's external address (a
//                                     NodePort Service is an entry point too, so the policy
//                                     pack treats it alike; clients here reach the pod IPs)
//   gateways.<g>.service.loadBalancerIP  dropped with it
//   networkPolicy.clusterDns.cidrs    LOCAL_NODE_ADDRESSES: the local node's CoreDNS runs on the
//                                     node, not as pods labelled k8s-app=kube-dns, so the
//                                     gateways' NetworkPolicy allows DNS to the nodes' addresses
// The gateways' Deployments are exactly as the program declares them.
import { CoreV1Api, KubeConfig, type V1Secret } from "@kubernetes/client-node";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { readStackFile, parseStackConfig, PROJECT } from "../../routing/config/load.js";
import { GATEWAYS, type StackConfig } from "../../routing/config/schema.js";
import { serviceHost } from "../../routing/names.js";
import { podTlsSecretName } from "../../components/headless-service.js";
import { TestPki, type Authority } from "../harness/certificates.js";
import { pinnedVersions, repoRoot } from "./components.js";
import type { LocalCluster } from "./cluster.js";

/**
 * Where local nodes and their pods live: each node takes a /24 of it and serves DNS on that /24's
 * first address (scripts/local-node.sh).
 */
export const LOCAL_NODE_ADDRESSES = "10.200.0.0/16";

/** What a stand-in pod requests and may use (it answers echoes; the node has 2 cores for dozens of them). */
export const STANDIN_RESOURCES = {
  requests: { cpu: "10m", memory: "32Mi" },
  limits: { cpu: "2", memory: "256Mi" },
};

/** The credential the stand-in auth service accepts (Authorization: Bearer <token>, or cookie session=<token>). */
export const AUTH_TOKEN = "envoy-gateways-local";

/** Images of the local node (scripts/versions.env), imported at cluster start. */
export function localImages(): { echo: string; auth: string; pause: string; envoy: string; nginx: string } {
  const v = pinnedVersions();
  return {
    echo: v.POD_IMAGE_ECHO!,
    auth: v.POD_IMAGE_AUTH!,
    pause: v.POD_IMAGE_PAUSE!,
    nginx: v.POD_IMAGE_NGINX!,
    envoy: `envoyproxy/envoy:v${v.ENVOY_VERSION}`,
  };
}

export type StackFile = "dev" | "prod";

/** Raw config (keys without the `envoy-gateways:` prefix) of Pulumi.<from>.yaml, made local as above. */
export function localStackConfig(from: StackFile): Record<string, unknown> {
  const raw = structuredClone(readStackFile(join(repoRoot, `Pulumi.${from}.yaml`)));
  const images = localImages();
  const auth = (raw.auth ?? {}) as { service?: string; namespace?: string };
  const namespace = (raw.namespace as string | undefined) ?? "default";
  const isAuth = (name: string) => name === (auth.service ?? "auth") && namespace === (auth.namespace ?? "default");
  raw.services = ((raw.services ?? []) as { name: string }[]).map((s) => ({
    ...s,
    image: isAuth(s.name) ? images.auth : images.echo,
    resources: STANDIN_RESOURCES,
  }));
  const gateways = raw.gateways as Record<string, { service?: Record<string, unknown> }>;
  for (const g of Object.values(gateways)) {
    const { loadBalancerIP: _ip, ...service } = g.service ?? {};
    g.service = { ...service, type: "NodePort" };
  }
  const policy = (raw.networkPolicy ?? {}) as { clusterDns?: Record<string, unknown> };
  raw.networkPolicy = { ...policy, clusterDns: { ...policy.clusterDns, cidrs: [LOCAL_NODE_ADDRESSES] } };
  return raw;
}

/** A change to the local config (raw keys), made before it is written or validated. */
export type ConfigEdit = (raw: Record<string, unknown>) => Record<string, unknown>;

/** The stack file's `config:` lines for `localStackConfig(from)`, edited (prefixed keys, JSON values). */
export function localStackConfigLines(from: StackFile, edit: ConfigEdit = (r) => r): string[] {
  return Object.entries(edit(localStackConfig(from))).map(
    ([key, value]) => `  ${PROJECT}:${key}: ${JSON.stringify(value)}`,
  );
}

/** The validated local config, edited. */
export function parsedLocalStackConfig(from: StackFile, edit: ConfigEdit = (r) => r): StackConfig {
  return parseStackConfig(edit(localStackConfig(from)), `local stack config (Pulumi.${from}.yaml made local)`);
}

/** The cluster's services CA (pki/services-ca.*), which signs every workload certificate. */
export function servicesCa(cluster: Pick<LocalCluster, "stateDir">): Authority {
  const pki = join(cluster.stateDir, "pki");
  const certPath = join(pki, "services-ca.crt");
  const keyPath = join(pki, "services-ca.key");
  return {
    name: "envoy-gateways local services CA",
    certPath,
    keyPath,
    cert: readFileSync(certPath, "utf8"),
    key: readFileSync(keyPath, "utf8"),
  };
}

/** Makes workload certificates with openssl in <state>/pki/workloads, signed by the services CA. */
export class WorkloadPki {
  readonly ca: Authority;
  private readonly pki: TestPki;

  constructor(cluster: Pick<LocalCluster, "stateDir">) {
    this.ca = servicesCa(cluster);
    this.pki = new TestPki(join(cluster.stateDir, "pki", "workloads"));
  }

  /** A Secret (kubernetes.io/tls) with a certificate for `dnsNames`, and the CA as ca.crt. */
  secret(name: string, namespace: string, dnsNames: string[]): V1Secret {
    const pair = this.pki.leaf(this.ca, name, dnsNames);
    return {
      metadata: { name, namespace, labels: { "app.kubernetes.io/managed-by": "envoy-gateways-local" } },
      type: "kubernetes.io/tls",
      stringData: { "tls.crt": pair.cert, "tls.key": pair.key, "ca.crt": this.ca.cert },
    };
  }

  /** The Secret a routed pod mounts: its Service's name `<service>.<namespace>.svc.<clusterDomain>`. */
  podSecret(service: string, namespace: string, clusterDomain = "cluster.local"): V1Secret {
    return this.secret(podTlsSecretName(service), namespace, [serviceHost(service, namespace, clusterDomain)]);
  }
}

/** Every host a gateway serves: both domains and their subdomains, aliases and dev hosts. */
export function servedHosts(config: StackConfig): string[] {
  const names = new Set<string>();
  for (const domain of [config.domain, config.internalDomain]) {
    names.add(domain);
    names.add(`*.${domain}`);
  }
  for (const s of config.services) for (const a of s.aliases) names.add(a);
  for (const g of Object.values(config.gateways)) if (g.devHost) names.add(g.devHost);
  return [...names];
}

/**
 * The Secrets of the stack's gateways, as named in its config (the served certificate;
 * the upstream client certificate with the CA), and of every production service's pods
 * (`<service>-tls`), created or replaced in the stack's namespace.
 */
export async function applyLocalSecrets(cluster: LocalCluster, config: StackConfig): Promise<string[]> {
  const pki = new WorkloadPki(cluster);
  const ns = config.namespace;
  const secrets: V1Secret[] = [];
  for (const gateway of GATEWAYS) {
    const tls = config.gateways[gateway].tls;
    secrets.push(pki.secret(tls.serverSecret, ns, servedHosts(config)));
    secrets.push(pki.secret(tls.upstreamSecret, ns, [serviceHost(gateway, ns, config.clusterDomain)]));
  }
  for (const s of config.services) {
    for (const name of s.versions ? s.versions.map((v) => `${s.name}-${v}`) : [s.name])
      secrets.push(pki.podSecret(name, ns, config.clusterDomain));
  }
  const core = coreApi(cluster.kubeconfig);
  for (const secret of secrets) await applySecret(core, secret);
  return secrets.map((s) => `${ns}/${s.metadata!.name}`);
}

/** Creates the Secret, or replaces one of that name. */
export async function applySecret(core: CoreV1Api, secret: V1Secret): Promise<void> {
  const { name, namespace } = secret.metadata as { name: string; namespace: string };
  try {
    await core.createNamespacedSecret({ namespace, body: secret });
  } catch (e) {
    if ((e as { code?: number }).code !== 409) throw e;
    await core.replaceNamespacedSecret({ name, namespace, body: secret });
  }
}

export function coreApi(kubeconfig: string): CoreV1Api {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  return kc.makeApiClient(CoreV1Api);
}
