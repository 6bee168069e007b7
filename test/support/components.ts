// Paths of the real components that scripts/build-components.sh puts into the
// per-user cache, read from scripts/versions.env so they always match the pins.
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";

/** Root of this repository. */
export const repoRoot = resolve(__dirname, "../..");

/** The pinned versions in scripts/versions.env, as KEY -> value. */
export function pinnedVersions(): Record<string, string> {
  const text = readFileSync(join(repoRoot, "scripts/versions.env"), "utf8");
  const versions: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const match = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (match) versions[match[1]!] = match[2]!.replace(/^["']|["']$/g, "");
  }
  return versions;
}

/** The per-user cache: $EG_CACHE, else $XDG_CACHE_HOME/envoy-gateways, else ~/.cache/envoy-gateways. */
export function cacheDir(): string {
  if (process.env.EG_CACHE) return process.env.EG_CACHE;
  return join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "envoy-gateways");
}

export interface Components {
  versions: Record<string, string>;
  envoy: string;
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  /** Directory with pulumi, pulumi-language-nodejs and pulumi-resource-pulumi-nodejs. */
  pulumiBinDir: string;
  pulumi: string;
  /** Directory with pulumi-resource-kubernetes. */
  kubernetesProviderBinDir: string;
  /** PULUMI_HOME in which the Kubernetes provider is registered. */
  pulumiHome: string;
  /** The local node: kubelet, kube-scheduler, CoreDNS, and the image archives it imports. */
  kubelet: string;
  kubeScheduler: string;
  coredns: string;
  podImages: string;
  /** The old world's NGINX gateway image (development set: adoption tests, benchmarks). */
  oldWorldImage: string;
  /** actionlint, which the unit tests run on the example GitHub Actions workflows. */
  actionlint: string;
  shfmt: string;
  /** The rendered manifests' checkers, and the schemas kubeconform validates against. */
  kubeconform: string;
  kubeScore: string;
  /** kubeconform's -schema-location template for the pinned Kubernetes version's schemas. */
  kubernetesSchemas: string;
}

function pick(versions: Record<string, string>, key: string): string {
  const value = versions[key];
  if (!value) throw new Error(`scripts/versions.env has no ${key}`);
  return value;
}

/** Where each component lives in the cache (whether or not it was built yet). */
export function componentPaths(): Components {
  const v = pinnedVersions();
  const cache = cacheDir();
  const bin = (entry: string) => join(cache, entry, "bin");
  const pulumiBinDir = bin(`pulumi-${pick(v, "PULUMI_VERSION")}`);
  const kubernetesBin = bin(`kubernetes-${pick(v, "KUBERNETES_VERSION")}`);
  const checkers = join(
    cache,
    `manifest-checkers-${pick(v, "KUBECONFORM_VERSION")}-${pick(v, "KUBE_SCORE_VERSION")}-k${pick(v, "KUBERNETES_VERSION")}`,
  );
  return {
    versions: v,
    envoy: join(bin(`envoy-${pick(v, "ENVOY_VERSION")}`), "envoy"),
    etcd: join(bin(`etcd-${pick(v, "ETCD_VERSION")}`), "etcd"),
    kubeApiserver: join(kubernetesBin, "kube-apiserver"),
    kubeControllerManager: join(kubernetesBin, "kube-controller-manager"),
    pulumiBinDir,
    pulumi: join(pulumiBinDir, "pulumi"),
    kubernetesProviderBinDir: bin(`pulumi-kubernetes-${pick(v, "PULUMI_KUBERNETES_VERSION")}`),
    pulumiHome: join(cache, "pulumi-home"),
    kubelet: join(bin(`kubernetes-node-${pick(v, "KUBERNETES_VERSION")}`), "kubelet"),
    kubeScheduler: join(bin(`kubernetes-node-${pick(v, "KUBERNETES_VERSION")}`), "kube-scheduler"),
    coredns: join(bin(`coredns-${pick(v, "COREDNS_VERSION")}`), "coredns"),
    podImages: join(cache, "pod-images"),
    oldWorldImage: join(cache, "old-world-image"),
    actionlint: join(bin(`actionlint-${pick(v, "ACTIONLINT_VERSION")}`), "actionlint"),
    shfmt: join(bin(`shfmt-${pick(v, "SHFMT_VERSION")}`), "shfmt"),
    kubeconform: join(checkers, "bin", "kubeconform"),
    kubeScore: join(checkers, "bin", "kube-score"),
    kubernetesSchemas: join(
      checkers,
      "schemas",
      "{{ .NormalizedKubernetesVersion }}-standalone{{ .StrictSuffix }}",
      "{{ .ResourceKind }}{{ .KindSuffix }}.json",
    ),
  };
}

/** componentPaths(), after checking that every component is there. */
export function requireComponents(): Components {
  const c = componentPaths();
  const required = [
    c.envoy,
    c.etcd,
    c.kubeApiserver,
    c.kubeControllerManager,
    c.pulumi,
    join(c.pulumiBinDir, "pulumi-resource-pulumi-nodejs"),
    join(c.pulumiBinDir, "pulumi-language-nodejs"),
    join(c.kubernetesProviderBinDir, "pulumi-resource-kubernetes"),
    join(c.pulumiHome, "plugins", `resource-kubernetes-v${c.versions.PULUMI_KUBERNETES_VERSION}`),
    c.kubelet,
    c.kubeScheduler,
    c.coredns,
    join(c.podImages, "images.txt"),
    join(c.oldWorldImage, "images.txt"),
    c.kubeconform,
    c.kubeScore,
  ];
  const missing = required.filter((path) => !existsSync(path));
  if (missing.length > 0) {
    throw new Error(
      `real components missing from the cache ${cacheDir()}:\n  ${missing.join("\n  ")}\n` +
        `run scripts/build-components.sh (from ${repoRoot}) to build them`,
    );
  }
  return c;
}

/** The cached actionlint binary, or an error naming the command that builds it. */
export function requireActionlint(): string {
  const { actionlint, versions } = componentPaths();
  return requireCachedTool("actionlint", versions.ACTIONLINT_VERSION!, actionlint);
}

/** The cached shfmt binary (its parser reads the scripts), or an error naming the command that builds it. */
export function requireShfmt(): string {
  const { shfmt, versions } = componentPaths();
  return requireCachedTool("shfmt", versions.SHFMT_VERSION!, shfmt);
}

function requireCachedTool(entry: string, version: string, path: string): string {
  if (!existsSync(path)) {
    throw new Error(
      `${entry} ${version} is missing from the cache ${cacheDir()}: ${path}\n` +
        `build it with: bash scripts/build-components.sh --only ${entry} (from ${repoRoot}; ` +
        `bash scripts/setup.sh builds it too)`,
    );
  }
  return path;
}
