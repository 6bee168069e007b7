// The least privilege for the identity that syncs routes (CI's `sync-routes`):
// list and watch namespaces and Services cluster-wide (discovery), get and
// patch only the gateways' xDS ConfigMaps (the routes resource), and list and
// patch pods in the gateways' namespace (the annotation that makes the
// kubelet project a changed ConfigMap at once). RBAC cannot narrow a pod patch,
// and that namespace holds the production pods too: a ValidatingAdmissionPolicy
// lets the identity's pod patches through only when they change nothing but that
// annotation, on a gateway pod. The cluster-wide objects are named after the
// gateways' namespace: two stacks on one cluster (dev and prod, each in its own
// namespace) each own theirs.
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { LABEL, MANAGED_BY, XDS_DIGEST_ANNOTATION } from "../routing/labels.js";

export interface RouteSyncAccessArgs {
  /** Namespace of the gateways (and their xDS ConfigMaps). */
  namespace: string;
  /** Names of the xDS ConfigMaps the identity may write. */
  configMaps: pulumi.Input<string>[];
  /** The gateways whose pods the identity may annotate with the xDS digest (their Deployments' names). */
  gateways: string[];
  /** Subjects bound to the roles (default: the route-sync ServiceAccount this component creates). */
  subjects?: k8s.types.input.rbac.v1.Subject[];
}

/** The name of the route-sync identity's ClusterRole and ClusterRoleBinding for the gateways in `namespace`. */
export function routeSyncDiscoverName(namespace: string): string {
  return `envoy-gateways-route-sync-discover-${namespace}`;
}

/** The name of the admission policy (and its binding) on the route-sync identity's pod patches in `namespace`. */
export function routeSyncPodsPolicyName(namespace: string): string {
  return `envoy-gateways-route-sync-pods-${namespace}`;
}

/** A CEL string literal. */
const cel = (s: string) => JSON.stringify(s);

/** A CEL condition on the request that holds when it comes from one of `subjects` (as RBAC binds them). */
export function fromSubjects(subjects: k8s.types.input.rbac.v1.Subject[]): pulumi.Output<string> {
  return pulumi.output(subjects).apply((all) =>
    all
      .map((s) => {
        if (s.kind === "ServiceAccount") {
          return `request.userInfo.username == ${cel(`system:serviceaccount:${s.namespace}:${s.name}`)}`;
        }
        if (s.kind === "Group") return `${cel(s.name)} in request.userInfo.groups`;
        return `request.userInfo.username == ${cel(s.name)}`;
      })
      .join(" || "),
  );
}

/**
 * The admission policy on pod updates in the gateways' namespace by the route-sync
 * identity: the pod must be a gateway pod, and only the xDS digest annotation may change
 * (not the spec, the labels, another annotation, the owners or the finalizers).
 */
export function routeSyncPodsPolicy(
  namespace: string,
  gateways: string[],
  subjects: k8s.types.input.rbac.v1.Subject[],
): k8s.types.input.admissionregistration.v1.ValidatingAdmissionPolicySpec {
  const others = (map: string) => `${map}.filter(k, k != ${cel(XDS_DIGEST_ANNOTATION)})`;
  const only = `the route-sync identity may only set the ${XDS_DIGEST_ANNOTATION} annotation on the gateway pods`;
  return {
    failurePolicy: "Fail",
    matchConstraints: {
      namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": namespace } },
      resourceRules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["UPDATE"], resources: ["pods"] }],
    },
    matchConditions: [{ name: "route-sync-identity", expression: fromSubjects(subjects) }],
    variables: [
      { name: "labels", expression: "oldObject.metadata.?labels.orValue({})" },
      { name: "annotations", expression: "object.metadata.?annotations.orValue({})" },
      { name: "oldAnnotations", expression: "oldObject.metadata.?annotations.orValue({})" },
    ],
    validations: [
      {
        expression:
          `variables.labels[?${cel(LABEL.component)}].orValue("") == "gateway" && ` +
          `variables.labels[?${cel(LABEL.app)}].orValue("") in ${JSON.stringify(gateways)}`,
        messageExpression: `${cel(`${only}; `)} + oldObject.metadata.name + " is not one"`,
        reason: "Forbidden",
      },
      {
        expression:
          "object.spec == oldObject.spec && object.metadata.?labels.orValue({}) == variables.labels && " +
          "object.metadata.?ownerReferences.orValue([]) == oldObject.metadata.?ownerReferences.orValue([]) && " +
          "object.metadata.?finalizers.orValue([]) == oldObject.metadata.?finalizers.orValue([])",
        message: `${only}; its spec, labels, owners and finalizers stay as they are`,
        reason: "Forbidden",
      },
      {
        expression:
          `${others("variables.annotations")}.all(k, k in variables.oldAnnotations && variables.oldAnnotations[k] == variables.annotations[k]) && ` +
          `${others("variables.oldAnnotations")}.all(k, k in variables.annotations)`,
        message: `${only}; no other annotation changes`,
        reason: "Forbidden",
      },
    ],
  };
}

export class RouteSyncAccess extends pulumi.ComponentResource {
  readonly serviceAccount: k8s.core.v1.ServiceAccount;

  constructor(name: string, args: RouteSyncAccessArgs, opts?: pulumi.ComponentResourceOptions) {
    super("envoy-gateways:rbac:RouteSyncAccess", name, {}, opts);
    const child = { parent: this };
    const labels = { [LABEL.managedBy]: MANAGED_BY, [LABEL.component]: "route-sync" };
    this.serviceAccount = new k8s.core.v1.ServiceAccount(
      name,
      { metadata: { name: "envoy-gateways-route-sync", namespace: args.namespace, labels } },
      child,
    );
    const subjects = args.subjects ?? [
      { kind: "ServiceAccount", name: "envoy-gateways-route-sync", namespace: args.namespace },
    ];
    const clusterWide = routeSyncDiscoverName(args.namespace);
    const discover = new k8s.rbac.v1.ClusterRole(
      `${name}-discover`,
      {
        metadata: { name: clusterWide, labels },
        rules: [{ apiGroups: [""], resources: ["namespaces", "services"], verbs: ["list", "watch"] }],
      },
      child,
    );
    new k8s.rbac.v1.ClusterRoleBinding(
      `${name}-discover`,
      {
        metadata: { name: clusterWide, labels },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: discover.metadata.name },
        subjects,
      },
      child,
    );
    const podsPolicy = new k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
      `${name}-pods`,
      {
        metadata: { name: routeSyncPodsPolicyName(args.namespace), labels },
        spec: routeSyncPodsPolicy(args.namespace, args.gateways, subjects),
      },
      child,
    );
    const podsPolicyBinding = new k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
      `${name}-pods`,
      {
        metadata: { name: routeSyncPodsPolicyName(args.namespace), labels },
        spec: { policyName: podsPolicy.metadata.name, validationActions: ["Deny"] },
      },
      child,
    );
    const write = new k8s.rbac.v1.Role(
      `${name}-write`,
      {
        metadata: { name: "envoy-gateways-route-sync-write", namespace: args.namespace, labels },
        rules: [
          { apiGroups: [""], resources: ["configmaps"], resourceNames: args.configMaps, verbs: ["get", "patch"] },
          // After a write, the gateway pods get the new digest as an annotation, so their kubelets project the files at once.
          { apiGroups: [""], resources: ["pods"], verbs: ["list", "patch"] },
        ],
      },
      child,
    );
    new k8s.rbac.v1.RoleBinding(
      `${name}-write`,
      {
        metadata: { name: "envoy-gateways-route-sync-write", namespace: args.namespace, labels },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: write.metadata.name },
        subjects,
      },
      // Bound only once the admission policy is: the identity never holds the pod patch unchecked.
      { ...child, dependsOn: [podsPolicyBinding] },
    );
    this.registerOutputs({ serviceAccount: this.serviceAccount.metadata.name });
  }
}
