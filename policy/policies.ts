// The policies of the envoy-gateways pack. index.ts only constructs the
// PolicyPack (which starts a server); tests import these directly.
import type {
  PolicyConfigSchema,
  PolicyResource,
  ResourceValidationPolicy,
  StackValidationPolicy,
} from "@pulumi/policy";
import { isPinnedImage, parseImageReference } from "../routing/config/schema.js";
import { validateXdsData } from "../routing/validation/index.js";
import { parseEnvoyYaml } from "../routing/envoy/xds.js";
import { liveService, type LiveService, type ServiceLookup } from "./live.js";
import {
  AUTOSCALER_TYPES,
  containersOf,
  declaredReplicas,
  isUnknownValue,
  kindOf,
  podSpecOf,
  refOf,
  selects,
  showRef,
  WORKLOAD_KINDS,
  type ObjectRef,
} from "./kubernetes-objects.js";

/** An exemption: one object a policy leaves alone, and why. */
export interface Exemption {
  /** Kubernetes kind (Service, Deployment, ...); any kind when omitted. */
  kind?: string;
  /** Namespace; "default" when omitted. */
  namespace?: string;
  name: string;
  /** Why the object is exempt (required: reviewers read it). */
  reason: string;
}

/** How an image must be pinned: by a version tag or a digest (tag), or by a digest only (digest). */
export type Pinning = "tag" | "digest";

export interface PolicySettings {
  exemptions?: Exemption[];
  /** The image policies only: what pins an image (default tag). */
  pinning?: Pinning;
}

/** The config every policy accepts: its enforcement level (engine-handled) and exemptions. */
const configSchema: PolicyConfigSchema = {
  properties: {
    exemptions: {
      type: "array",
      default: [],
      items: {
        type: "object",
        properties: {
          kind: { type: "string" },
          namespace: { type: "string" },
          name: { type: "string", minLength: 1 },
          reason: { type: "string", minLength: 1 },
        },
        required: ["name", "reason"],
        additionalProperties: false,
      },
    },
  },
};

/** The image policies' config: the common one, and how images must be pinned (a stack's policy config decides). */
const imageConfigSchema: PolicyConfigSchema = {
  properties: {
    ...configSchema.properties,
    pinning: { type: "string", enum: ["tag", "digest"], default: "tag" },
  },
};

/** Whether `image` is pinned as `pinning` asks: a digest, or (tag) a version tag or a digest. */
function pinnedAs(image: string, pinning: Pinning = "tag"): boolean {
  return pinning === "digest" ? parseImageReference(image)?.digest !== undefined : isPinnedImage(image);
}

/** What to pin an image to, with `example` (a tag-pinned reference), as `pinning` asks. */
function pinHint(example: string, pinning: Pinning = "tag"): string {
  return pinning === "digest"
    ? `a digest (${example}@sha256:...): this stack's policy config requires digests (pinning: digest)`
    : `a version tag (${example}) or a digest (@sha256:...)`;
}

function exemptionFor(settings: PolicySettings, ref: ObjectRef): Exemption | undefined {
  return (settings.exemptions ?? []).find(
    (e) =>
      e.name === ref.name &&
      (e.namespace ?? "default") === ref.namespace &&
      (e.kind === undefined || e.kind === ref.kind) &&
      typeof e.reason === "string" &&
      e.reason.trim() !== "",
  );
}

/**
 * Runs `check` on each item; an item with a value unknown during preview is
 * skipped and the others still checked. If any were skipped, the first
 * unknown-value error is rethrown at the end: the engine then prints it as
 * a "can't run during preview" note (violations already reported stay).
 */
function eachKnown<T>(items: Iterable<T>, check: (item: T) => void): void {
  let skipped: Error | undefined;
  for (const item of items) {
    try {
      check(item);
    } catch (e) {
      if (!isUnknownValue(e)) throw e;
      skipped ??= e;
    }
  }
  if (skipped) throw skipped;
}

interface Workload {
  resource: PolicyResource;
  ref: ObjectRef;
  replicas: number;
  podLabels: Record<string, string>;
  /** "3 replicas" or "an autoscaler allowing up to 10 replicas". */
  replicaText: string;
}

/** Workloads with their effective replica count (declared, or an autoscaler's maximum). */
function workloadsOf(resources: PolicyResource[]): Workload[] {
  const maxByTarget = new Map<string, number>();
  eachKnownSilently(
    resources.filter((r) => AUTOSCALER_TYPES.has(r.type)),
    (hpa) => {
      const ref = refOf(hpa);
      const target = hpa.props.spec.scaleTargetRef;
      maxByTarget.set(`${target.kind}/${ref.namespace}/${target.name}`, hpa.props.spec.maxReplicas);
    },
  );
  const out: Workload[] = [];
  eachKnownSilently(
    resources.filter((r) => WORKLOAD_KINDS.has(kindOf(r.type) ?? "")),
    (w) => {
      const ref = refOf(w);
      const declared = declaredReplicas(w.props);
      const max = maxByTarget.get(`${ref.kind}/${ref.namespace}/${ref.name}`);
      const replicas = Math.max(declared, max ?? 0);
      out.push({
        resource: w,
        ref,
        replicas,
        podLabels: w.props.spec?.template?.metadata?.labels ?? {},
        replicaText:
          max !== undefined && max > declared ? `an autoscaler allowing up to ${max} replicas` : `${declared} replicas`,
      });
    },
  );
  return out;
}

/** Like eachKnown, but the unknown-value note is left to the policy's own loop. */
function eachKnownSilently<T>(items: Iterable<T>, check: (item: T) => void): void {
  for (const item of items) {
    try {
      check(item);
    } catch (e) {
      if (!isUnknownValue(e)) throw e;
    }
  }
}

export const multiReplicaWorkloadsHeadless: StackValidationPolicy = {
  name: "multi-replica-workloads-headless",
  description:
    "A Service selecting the pods of a workload with more than one replica (or an autoscaler allowing more than one) must be headless (clusterIP: None), so DNS returns every pod and clients balance across them instead of kube-proxy hiding them behind one IP. LoadBalancer and NodePort Services (entry points whose clients are the load balancer in front) are out of scope.",
  enforcementLevel: "mandatory",
  configSchema,
  validateStack: (args, report) => {
    const settings = args.getConfig<PolicySettings>();
    const workloads = workloadsOf(args.resources).filter((w) => w.replicas > 1);
    eachKnown(
      args.resources.filter((r) => r.type === "kubernetes:core/v1:Service"),
      (svc) => {
        const ref = refOf(svc);
        const spec = svc.props.spec ?? {};
        // An entry point from outside: the external load balancer spreads connections over the nodes and pods.
        if (
          spec.type === "ExternalName" ||
          spec.type === "LoadBalancer" ||
          spec.type === "NodePort" ||
          exemptionFor(settings, ref)
        )
          return;
        const selected = workloads.filter(
          (w) =>
            w.ref.namespace === ref.namespace && selects(spec.selector, w.podLabels) && !exemptionFor(settings, w.ref),
        );
        if (selected.length === 0) return;
        // A clusterIP not set to None is allocated by the cluster (unknown during preview): not headless either way.
        let clusterIP: unknown;
        try {
          clusterIP = spec.clusterIP;
        } catch (e) {
          if (!isUnknownValue(e)) throw e;
          clusterIP = "(assigned by the cluster)";
        }
        if (clusterIP === "None") return;
        for (const w of selected) {
          report(
            `Service ${ref.namespace}/${ref.name} selects the pods of ${showRef(w.ref)} (${w.replicaText}) but is not headless (clusterIP: ${clusterIP === undefined ? "assigned by the cluster" : String(clusterIP)}); set spec.clusterIP: None so every pod is reachable and balanced.`,
            svc.urn,
          );
        }
      },
    );
  },
};

/** Upstream addresses (host, port) of the clusters in an xDS ConfigMap's cds.yaml. */
function upstreamsOf(configMap: PolicyResource): { cluster: string; host: string; port: number }[] {
  const text = configMap.props.data?.["cds.yaml"];
  if (typeof text !== "string") return [];
  const doc = parseEnvoyYaml(text) as {
    resources?: {
      name?: string;
      load_assignment?: {
        endpoints?: {
          lb_endpoints?: { endpoint?: { address?: { socket_address?: { address?: string; port_value?: number } } } }[];
        }[];
      };
    }[];
  };
  const out: { cluster: string; host: string; port: number }[] = [];
  for (const c of doc.resources ?? []) {
    for (const group of c.load_assignment?.endpoints ?? []) {
      for (const e of group.lb_endpoints ?? []) {
        const sa = e.endpoint?.address?.socket_address;
        if (sa?.address && sa.port_value !== undefined)
          out.push({ cluster: String(c.name), host: sa.address, port: sa.port_value });
      }
    }
  }
  return out;
}

function isXdsConfigMap(r: PolicyResource | { type: string; props: Record<string, any> }): boolean {
  if (r.type !== "kubernetes:core/v1:ConfigMap") return false;
  const data = r.props.data;
  return data !== undefined && data !== null && ("cds.yaml" in data || "rds.yaml" in data);
}

export const gatewayUpstreamsHeadlessOn443: StackValidationPolicy = {
  name: "gateway-upstreams-headless-443",
  description:
    "Every Service the gateways route to (the xDS ConfigMaps' cluster addresses) that this stack declares is headless and exposes port 443 targeting port 443 on the pods: Envoy connects with TLS straight to every pod IP.",
  enforcementLevel: "mandatory",
  configSchema,
  validateStack: (args, report) => {
    const settings = args.getConfig<PolicySettings>();
    const services = new Map<string, PolicyResource>();
    eachKnownSilently(
      args.resources.filter((r) => r.type === "kubernetes:core/v1:Service"),
      (s) => {
        const ref = refOf(s);
        services.set(`${ref.namespace}/${ref.name}`, s);
      },
    );
    eachKnown(args.resources.filter(isXdsConfigMap), (cm) => {
      const cmRef = refOf(cm);
      for (const up of upstreamsOf(cm)) {
        const m = /^([a-z0-9-]+)\.([a-z0-9-]+)\.svc\./.exec(up.host);
        if (!m) continue;
        const svc = services.get(`${m[2]}/${m[1]}`);
        if (!svc) continue;
        const ref = refOf(svc);
        if (exemptionFor(settings, ref)) continue;
        const spec = svc.props.spec ?? {};
        const problems: string[] = [];
        if (spec.clusterIP !== "None") problems.push("is not headless (set spec.clusterIP: None)");
        const port = (spec.ports ?? []).find((p: Record<string, unknown>) => p.port === 443);
        if (!port) problems.push("has no port 443");
        else if (port.targetPort !== undefined && port.targetPort !== 443)
          problems.push(`maps port 443 to ${JSON.stringify(port.targetPort)} on the pods, not 443`);
        if (up.port !== 443) problems.push(`is reached on port ${up.port}, not 443`);
        if (problems.length) {
          report(
            `Service ${ref.namespace}/${ref.name}, upstream of cluster ${up.cluster} in ConfigMap ${cmRef.namespace}/${cmRef.name}, ${problems.join(" and ")}.`,
            svc.urn,
          );
        }
      }
    });
  },
};

export const xdsConfigMapsValid: ResourceValidationPolicy = {
  name: "xds-configmaps-valid",
  description:
    "The gateways' xDS ConfigMaps (cds.yaml, rds.yaml) pass the routing core's validator: Envoy's API definitions, their rules, and Envoy's load-time checks.",
  enforcementLevel: "mandatory",
  configSchema,
  validateResource: (args, report) => {
    if (!isXdsConfigMap(args)) return;
    const ref = refOf(args);
    if (exemptionFor(args.getConfig<PolicySettings>(), ref)) return;
    const data: Record<string, string> = {};
    for (const [k, v] of Object.entries(args.props.data as Record<string, unknown>))
      if (typeof v === "string") data[k] = v;
    const problems = validateXdsData(data, `ConfigMap ${ref.namespace}/${ref.name}`);
    const shown = problems.slice(0, 20).map((p) => `${p.key}: ${p.message}`);
    if (problems.length)
      report(
        `${problems.length} problem${problems.length === 1 ? "" : "s"} Envoy would reject:\n${shown.join("\n")}${problems.length > 20 ? `\n... and ${problems.length - 20} more` : ""}`,
      );
  },
};

/** An Envoy container image (envoyproxy/envoy, its distroless variant, any registry's copy). */
function isEnvoyImage(image: string): boolean {
  const repo = image.split("@")[0]!.replace(/:[^/]*$/, "");
  return /(^|\/)envoy(-[a-z0-9-]+)?$/.test(repo);
}

export const envoyImagePinned: ResourceValidationPolicy = {
  name: "envoy-image-pinned",
  description:
    "Envoy containers run an image pinned to a version tag or digest (with pinning: digest, a digest only), never latest or untagged: a rollout must not change Envoy behind the config's back. Mandatory in production (policy/prod.json), advisory elsewhere.",
  enforcementLevel: "advisory",
  configSchema: imageConfigSchema,
  validateResource: (args, report) => {
    const pod = podSpecOf(args);
    if (!pod) return;
    const settings = args.getConfig<PolicySettings>();
    if (exemptionFor(settings, refOf(args))) return;
    for (const c of containersOf(pod)) {
      if (typeof c.image === "string" && isEnvoyImage(c.image) && !pinnedAs(c.image, settings.pinning)) {
        report(
          `${showRef(refOf(args))} container ${c.name} runs ${c.image}: pin Envoy to ${pinHint("envoyproxy/envoy:v1.40.0", settings.pinning)}.`,
        );
      }
    }
  },
};

export const serviceImagesPinned: ResourceValidationPolicy = {
  name: "service-images-pinned",
  description:
    "The stack's other containers (the routed services' Deployments) run images pinned to a version tag or digest too (with pinning: digest, a digest only): a restart must not run other code than the rollout did. Mandatory in production (policy/prod.json), advisory elsewhere.",
  enforcementLevel: "advisory",
  configSchema: imageConfigSchema,
  validateResource: (args, report) => {
    const pod = podSpecOf(args);
    if (!pod) return;
    const settings = args.getConfig<PolicySettings>();
    if (exemptionFor(settings, refOf(args))) return;
    for (const c of containersOf(pod)) {
      if (typeof c.image === "string" && !isEnvoyImage(c.image) && !pinnedAs(c.image, settings.pinning)) {
        report(
          `${showRef(refOf(args))} container ${c.name} runs ${c.image}: pin it to ${pinHint("team/app:1.2.3", settings.pinning)}.`,
        );
      }
    }
  },
};

/** Gateway pods: labelled as a gateway component, or running an Envoy image. */
function isGatewayWorkload(r: { type: string; props: Record<string, any> }): boolean {
  const pod = podSpecOf(r);
  if (!pod) return false;
  const labels = r.props.spec?.template?.metadata?.labels ?? r.props.metadata?.labels ?? {};
  return (
    labels["app.kubernetes.io/component"] === "gateway" ||
    containersOf(pod).some((c) => typeof c.image === "string" && isEnvoyImage(c.image))
  );
}

/** What is missing from one container's hardening (pod-level settings count where Kubernetes inherits them). */
export function hardeningGaps(pod: Record<string, any>, c: Record<string, any>): string[] {
  const podSc = pod.securityContext ?? {};
  const sc = c.securityContext ?? {};
  const gaps: string[] = [];
  if ((sc.runAsNonRoot ?? podSc.runAsNonRoot) !== true) gaps.push("runAsNonRoot: true");
  // A low UID may be a user of the node (kube-score and checkov flag it): above 10000, and explicit.
  const uid: unknown = sc.runAsUser ?? podSc.runAsUser;
  if (typeof uid !== "number" || uid <= 10000) gaps.push("runAsUser above 10000");
  if (sc.readOnlyRootFilesystem !== true) gaps.push("readOnlyRootFilesystem: true");
  if (sc.allowPrivilegeEscalation !== false) gaps.push("allowPrivilegeEscalation: false");
  if (sc.privileged === true) gaps.push("privileged: false");
  if (!(sc.capabilities?.drop ?? []).includes("ALL")) gaps.push("capabilities.drop: [ALL]");
  if ((sc.seccompProfile?.type ?? podSc.seccompProfile?.type) !== "RuntimeDefault")
    gaps.push("seccompProfile.type: RuntimeDefault");
  for (const kind of ["requests", "limits"] as const) {
    for (const res of ["cpu", "memory"])
      if (c.resources?.[kind]?.[res] === undefined) gaps.push(`resources.${kind}.${res}`);
  }
  return gaps;
}

export const gatewayPodsHardened: ResourceValidationPolicy = {
  name: "gateway-pods-hardened",
  description:
    "Gateway pods face the internet: non-root with a UID above 10000, read-only root filesystem, no privilege escalation, all capabilities dropped, seccomp RuntimeDefault, CPU and memory requests and limits.",
  enforcementLevel: "mandatory",
  configSchema,
  validateResource: (args, report) => {
    if (!isGatewayWorkload(args)) return;
    const ref = refOf(args);
    if (exemptionFor(args.getConfig<PolicySettings>(), ref)) return;
    const pod = podSpecOf(args)!;
    for (const c of containersOf(pod)) {
      const gaps = hardeningGaps(pod, c);
      if (gaps.length) report(`${showRef(ref)} container ${c.name} is missing ${gaps.join(", ")}.`);
    }
  },
};

export const gatewayDisruptionBudget: StackValidationPolicy = {
  name: "gateway-disruption-budget",
  description:
    "A gateway with more than one replica has a PodDisruptionBudget, so node drains and upgrades never take all its pods at once.",
  enforcementLevel: "mandatory",
  configSchema,
  validateStack: (args, report) => {
    const settings = args.getConfig<PolicySettings>();
    const budgets: { namespace: string; selector: Record<string, string> }[] = [];
    eachKnownSilently(
      args.resources.filter((r) => r.type === "kubernetes:policy/v1:PodDisruptionBudget"),
      (pdb) => {
        budgets.push({ namespace: refOf(pdb).namespace, selector: pdb.props.spec?.selector?.matchLabels ?? {} });
      },
    );
    eachKnown(
      workloadsOf(args.resources).filter((w) => w.replicas > 1 && isGatewayWorkload(w.resource)),
      (w) => {
        if (exemptionFor(settings, w.ref)) return;
        if (!budgets.some((b) => b.namespace === w.ref.namespace && selects(b.selector, w.podLabels))) {
          report(
            `Gateway ${showRef(w.ref)} (${w.replicaText}) has no PodDisruptionBudget selecting its pods.`,
            w.resource.urn,
          );
        }
      },
    );
  },
};

/**
 * Blocks the trap of adopting a running cluster: a Service the update declares headless
 * that runs with a cluster IP. Kubernetes refuses to change `clusterIP` in place, so the
 * Kubernetes provider would delete the Service and create it again, and its name would
 * resolve to nothing in between. Reads the live Service through `lookup`.
 */
export function headlessInPlace(lookup: ServiceLookup): ResourceValidationPolicy {
  return {
    name: "headless-in-place",
    description:
      "A Service declared headless that runs on the cluster with a cluster IP is turned headless in place first (dist/adopt --stack <stack> headless): an update would delete it and create it again, and its name would resolve to nothing in between.",
    enforcementLevel: "mandatory",
    configSchema,
    validateResource: async (args, report) => {
      if (args.type !== "kubernetes:core/v1:Service" || args.props.spec?.clusterIP !== "None") return;
      const ref = refOf(args);
      if (exemptionFor(args.getConfig<PolicySettings>(), ref)) return;
      const provider = args.provider?.props as Record<string, unknown> | undefined;
      if (provider?.renderYamlToDirectory) return; // rendering manifests: no cluster to compare with
      let live: LiveService | undefined;
      try {
        live = await lookup(provider, ref.namespace, ref.name);
      } catch (e) {
        report(
          `${showRef(ref)} could not be compared with the cluster, so this update may replace it: ${(e as Error).message}`,
        );
        return;
      }
      const adopt = "dist/adopt --stack <this stack> headless (docs/adopting.md)";
      if (live?.handingOver)
        report(
          `${showRef(ref)} is being turned headless in place (dist/adopt was stopped in the middle): finish it with ${adopt}, then run this update again.`,
        );
      else if (live?.clusterIP && live.clusterIP !== "None")
        report(
          `${showRef(ref)} runs on the cluster as a ${live.type} Service with cluster IP ${live.clusterIP}; this update declares it headless, which Kubernetes allows only by deleting it and creating it again, and its name would resolve to nothing in between. Turn it headless in place first: ${adopt}, then run this update again.`,
        );
    },
  };
}

/** Every policy of the pack, in the order the engine reports them. */
export const policies: (ResourceValidationPolicy | StackValidationPolicy)[] = [
  multiReplicaWorkloadsHeadless,
  gatewayUpstreamsHeadlessOn443,
  xdsConfigMapsValid,
  envoyImagePinned,
  serviceImagesPinned,
  gatewayPodsHardened,
  gatewayDisruptionBudget,
  headlessInPlace(liveService),
];
