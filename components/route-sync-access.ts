// The least privilege for the identity that syncs routes (CI's `sync-routes`):
// list and watch namespaces and Services cluster-wide (discovery), get and
// patch only the gateways' xDS ConfigMaps (the routes resource), and list and
// patch pods in the gateways' namespace (the annotation that makes the
// kubelet project a changed ConfigMap at once).
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { LABEL, MANAGED_BY } from "../routing/labels.js";

export interface RouteSyncAccessArgs {
  /** Namespace of the gateways (and their xDS ConfigMaps). */
  namespace: string;
  /** Names of the xDS ConfigMaps the identity may write. */
  configMaps: pulumi.Input<string>[];
  /** Subjects bound to the roles (default: the route-sync ServiceAccount this component creates). */
  subjects?: k8s.types.input.rbac.v1.Subject[];
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
    const discover = new k8s.rbac.v1.ClusterRole(
      `${name}-discover`,
      {
        metadata: { name: "envoy-gateways-route-sync-discover", labels },
        rules: [{ apiGroups: [""], resources: ["namespaces", "services"], verbs: ["list", "watch"] }],
      },
      child,
    );
    new k8s.rbac.v1.ClusterRoleBinding(
      `${name}-discover`,
      {
        metadata: { name: "envoy-gateways-route-sync-discover", labels },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: discover.metadata.name },
        subjects,
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
      child,
    );
    this.registerOutputs({ serviceAccount: this.serviceAccount.metadata.name });
  }
}
