// The least privilege for the identity that syncs routes (CI's `sync-routes`):
// list and watch namespaces and Services cluster-wide (discovery), get and
// patch only the gateways' xDS ConfigMaps (the routes resource), and list and
// patch pods in the gateways' namespace (the annotation that makes the
// kubelet project a changed ConfigMap at once), and, for the route status
// developers read (routing/route-status.ts), patch Services and create Events
// cluster-wide. RBAC cannot narrow a patch to one field, and the pods' and
// Services' namespaces hold production too: ValidatingAdmissionPolicies let
// the identity's pod patches through only when they change nothing but the
// digest annotation, on a gateway pod; its Service patches only when they
// change nothing but the route status annotation, on a routed Service outside
// the gateways' and the protected namespaces; and its Events only when they
// are route status Events about a Service or a namespace. The cluster-wide objects are named after the
// gateways' namespace: two stacks on one cluster (dev and prod, each in its own
// namespace) each own theirs.
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { ROUTE_STATUS_COMPONENT } from "../kube/route-status.js";
import { LABEL, MANAGED_BY, ROUTE_STATUS_ANNOTATION, XDS_DIGEST_ANNOTATION } from "../routing/labels.js";

export interface RouteSyncAccessArgs {
  /** Namespace of the gateways (and their xDS ConfigMaps). */
  namespace: string;
  /** Namespaces never routed as dev/PR namespaces (devNamespaces.protected): their Services are never annotated. */
  protectedNamespaces: string[];
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

/** The name of the admission policy (and its binding) on the route-sync identity's route status writes, and of its ClusterRole for them. */
export function routeSyncStatusName(namespace: string): string {
  return `envoy-gateways-route-sync-status-${namespace}`;
}

/** A CEL string literal. */
const cel = (s: string) => JSON.stringify(s);

/**
 * Validations of an update by which only `annotation` may change: the spec,
 * the labels (in the `labels` variable: the old object's), the owners, the
 * finalizers and every other annotation stay as they are (`only` says what
 * the identity may do).
 */
function onlyAnnotationChanges(
  annotation: string,
  only: string,
): k8s.types.input.admissionregistration.v1.Validation[] {
  const others = (map: string) => `${map}.filter(k, k != ${cel(annotation)})`;
  return [
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
  ];
}

/** The variables `onlyAnnotationChanges` reads. */
const UPDATE_VARIABLES = [
  { name: "labels", expression: "oldObject.metadata.?labels.orValue({})" },
  { name: "annotations", expression: "object.metadata.?annotations.orValue({})" },
  { name: "oldAnnotations", expression: "oldObject.metadata.?annotations.orValue({})" },
];

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
  const only = `the route-sync identity may only set the ${XDS_DIGEST_ANNOTATION} annotation on the gateway pods`;
  return {
    failurePolicy: "Fail",
    matchConstraints: {
      namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": namespace } },
      resourceRules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["UPDATE"], resources: ["pods"] }],
    },
    matchConditions: [{ name: "route-sync-identity", expression: fromSubjects(subjects) }],
    variables: UPDATE_VARIABLES,
    validations: [
      {
        expression:
          `variables.labels[?${cel(LABEL.component)}].orValue("") == "gateway" && ` +
          `variables.labels[?${cel(LABEL.app)}].orValue("") in ${JSON.stringify(gateways)}`,
        messageExpression: `${cel(`${only}; `)} + oldObject.metadata.name + " is not one"`,
        reason: "Forbidden",
      },
      ...onlyAnnotationChanges(XDS_DIGEST_ANNOTATION, only),
    ],
  };
}

/**
 * The admission policy on the route-sync identity's route status writes,
 * cluster-wide: a Service update must be of a Service carrying the routing
 * label, outside the gateways' namespace and the protected ones, and change
 * nothing but the route status annotation; an Event must be a route status
 * Event (its source and reason) about a Service or a namespace.
 */
export function routeSyncStatusPolicy(
  namespace: string,
  protectedNamespaces: string[],
  subjects: k8s.types.input.rbac.v1.Subject[],
): k8s.types.input.admissionregistration.v1.ValidatingAdmissionPolicySpec {
  const only = `the route-sync identity may only set the ${ROUTE_STATUS_ANNOTATION} annotation on routed dev/PR Services`;
  const onServices = (v: k8s.types.input.admissionregistration.v1.Validation) => ({
    ...v,
    expression: `request.resource.resource != "services" || (${v.expression as string})`,
  });
  const reasons = ["Routed", "NotRouted", "RouteWarning"];
  return {
    failurePolicy: "Fail",
    matchConstraints: {
      resourceRules: [
        { apiGroups: [""], apiVersions: ["v1"], operations: ["UPDATE"], resources: ["services"] },
        { apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["events"] },
      ],
    },
    matchConditions: [{ name: "route-sync-identity", expression: fromSubjects(subjects) }],
    // Events have no oldObject: the variables are read only for Services.
    variables: UPDATE_VARIABLES.map((v) => ({
      ...v,
      expression: `request.resource.resource == "services" ? ${v.expression} : {}`,
    })),
    validations: [
      onServices({
        expression:
          `variables.labels[?${cel(LABEL.service)}].hasValue() && ` +
          `!(oldObject.metadata.namespace in ${JSON.stringify([namespace, ...protectedNamespaces])})`,
        messageExpression: `${cel(`${only}; `)} + oldObject.metadata.namespace + "/" + oldObject.metadata.name + " is not one"`,
        reason: "Forbidden",
      }),
      ...onlyAnnotationChanges(ROUTE_STATUS_ANNOTATION, only).map(onServices),
      {
        expression:
          `request.resource.resource != "events" || (` +
          `object.?source.component.orValue("") == ${cel(ROUTE_STATUS_COMPONENT)} && ` +
          `object.reason in ${JSON.stringify(reasons)} && object.involvedObject.kind in ["Service", "Namespace"])`,
        message: `the route-sync identity may only create route status Events (source ${ROUTE_STATUS_COMPONENT}, reason ${reasons.join(", ")}) about Services and namespaces`,
        reason: "Forbidden",
      },
    ],
  };
}

/** A ClusterRole with `rules` and its binding to `subjects`, both named `metadata.name`; the binding waits for `bindAfter`. */
function clusterRoleBound(
  name: string,
  metadata: { name: string; labels: Record<string, string> },
  rules: k8s.types.input.rbac.v1.PolicyRule[],
  subjects: k8s.types.input.rbac.v1.Subject[],
  opts: pulumi.CustomResourceOptions,
  bindAfter: pulumi.Resource[] = [],
): void {
  const role = new k8s.rbac.v1.ClusterRole(name, { metadata, rules }, opts);
  new k8s.rbac.v1.ClusterRoleBinding(
    name,
    {
      metadata,
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role.metadata.name },
      subjects,
    },
    bindAfter.length ? { ...opts, dependsOn: bindAfter } : opts,
  );
}

/** A ValidatingAdmissionPolicy and its binding that denies what the policy refuses; returns the binding (what grants wait for). */
function denyingPolicy(
  name: string,
  metadata: { name: string; labels: Record<string, string> },
  spec: k8s.types.input.admissionregistration.v1.ValidatingAdmissionPolicySpec,
  opts: pulumi.CustomResourceOptions,
): k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding {
  const policy = new k8s.admissionregistration.v1.ValidatingAdmissionPolicy(name, { metadata, spec }, opts);
  return new k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
    name,
    { metadata, spec: { policyName: policy.metadata.name, validationActions: ["Deny"] } },
    opts,
  );
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
    clusterRoleBound(
      `${name}-discover`,
      { name: clusterWide, labels },
      [{ apiGroups: [""], resources: ["namespaces", "services"], verbs: ["list", "watch"] }],
      subjects,
      child,
    );
    const podsPolicyBinding = denyingPolicy(
      `${name}-pods`,
      { name: routeSyncPodsPolicyName(args.namespace), labels },
      routeSyncPodsPolicy(args.namespace, args.gateways, subjects),
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
    const statusName = routeSyncStatusName(args.namespace);
    const statusPolicyBinding = denyingPolicy(
      `${name}-status`,
      { name: statusName, labels },
      routeSyncStatusPolicy(args.namespace, args.protectedNamespaces, subjects),
      child,
    );
    clusterRoleBound(
      `${name}-status`,
      { name: statusName, labels },
      [
        // The route status annotation on dev/PR Services, and Events saying what changed (the admission policy narrows both).
        { apiGroups: [""], resources: ["services"], verbs: ["patch"] },
        { apiGroups: [""], resources: ["events"], verbs: ["create"] },
      ],
      subjects,
      child,
      // Bound only once the admission policy is: the identity never holds the Service patch unchecked.
      [statusPolicyBinding],
    );
    this.registerOutputs({ serviceAccount: this.serviceAccount.metadata.name });
  }
}
