// dist/shifts --stack <name> [--all] [--reverse <service | namespace/service>]
// (compiled by `npm run build`; from source: npm run shifts -- ...)
//
// Lists the traffic shifts of a stack (production shifts from its config,
// dev/PR shifts from the annotations on discovered Services) with current
// and next weights and the time each phase ends. --reverse reverses a shift
// in progress: in the stack config (production; then run `pulumi up`) or by
// annotating the new version's Service (dev/PR; sync-routes picks it up).
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import type { ShiftRow } from "../routing/shift-report.js";

const USAGE =
  "usage: dist/shifts --stack <name> [--all] [--reverse <service>|<namespace>/<service>] [--project-dir <dir>]";

async function main(): Promise<number> {
  let values;
  try {
    values = parseArgs({
      options: {
        stack: { type: "string" },
        all: { type: "boolean" },
        reverse: { type: "string" },
        "project-dir": { type: "string" },
        help: { type: "boolean" },
      },
    }).values;
  } catch (e) {
    console.error(`shifts: ${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  if (values.help || !values.stack) {
    (values.help ? console.log : console.error)(values.help ? USAGE : `shifts: --stack is required\n${USAGE}`);
    return values.help ? 0 : 2;
  }
  if (
    values.reverse !== undefined &&
    !/^([a-z0-9]([-a-z0-9]*[a-z0-9])?\/)?[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(values.reverse)
  ) {
    console.error(
      `shifts: --reverse ${JSON.stringify(values.reverse)}: must be a production service (batch) or a dev/PR service as <namespace>/<service> (pr-1234/web)\n${USAGE}`,
    );
    return 2;
  }
  // Loaded once the flags are good: a bad flag or --help answers without loading the Kubernetes client.
  const [k8s, { ProjectStack, stackConfigOf }, kube, discovery, labels, report, names, shifts] = await Promise.all([
    import("@kubernetes/client-node"),
    import("../route-sync/stack.js"),
    import("../kube/client.js"),
    import("../routing/discovery.js"),
    import("../routing/labels.js"),
    import("../routing/shift-report.js"),
    import("../routing/names.js"),
    import("../routing/shifts.js"),
  ]);
  const { describeKubeError, listRoutedObjects, loadKubeConfig } = kube;
  const { ROUTED_SERVICE_SELECTOR, discoverRoutes } = discovery;
  const { LABEL, SHIFT_ANNOTATION } = labels;
  const { shiftTable } = report;
  const { routeId } = names;
  const { reverseShift, shiftFromSpec } = shifts;
  const stack = new ProjectStack(values.stack, resolve(values["project-dir"] ?? resolve(__dirname, "..")));
  const { config, kubeconfig } = await stackConfigOf(stack);
  const now = new Date();
  const rows: ShiftRow[] = config.shifts.map((s) => ({
    id: routeId(config.namespace, s.service),
    shift: shiftFromSpec(s.service, s),
  }));
  const kc = loadKubeConfig(kubeconfig);
  const listed = await listRoutedObjects(kc, config.devNamespaces.selector, ROUTED_SERVICE_SELECTOR);
  const found = discoverRoutes(listed.namespaces, listed.services, config.namespace, config.devNamespaces.protected);
  for (const [ns, services] of Object.entries(found.devNamespaces)) {
    for (const s of services) {
      if (typeof s !== "string")
        for (const spec of s.shifts ?? []) rows.push({ id: routeId(ns, s.name), shift: shiftFromSpec(s.name, spec) });
    }
  }
  for (const p of found.problems) console.error(`warning: ${p.key} ${p.message}`);

  if (values.reverse) {
    const target = values.reverse.includes("/") ? values.reverse : routeId(config.namespace, values.reverse);
    const row = rows
      .filter((r) => r.id === target)
      .sort((a, b) => b.shift.start.getTime() - a.shift.start.getTime())[0];
    if (!row) {
      console.error(`no traffic shift of ${target} (shifts: ${rows.map((r) => r.id).join(", ") || "none"})`);
      return 1;
    }
    let reversed;
    try {
      reversed = reverseShift(row.shift, now);
    } catch (e) {
      console.error((e as Error).message);
      return 1;
    }
    const at = reversed.reversedAt!.toISOString();
    const [namespace, service] = target.split("/") as [string, string];
    if (namespace === config.namespace) {
      const index = config.shifts.findIndex(
        (s) => s.service === service && new Date(s.start).getTime() === row.shift.start.getTime(),
      );
      await (await stack.automation()).setConfig(`envoy-gateways:shifts[${index}].reversed`, { value: at }, true);
      console.log(
        `reversed the shift of ${target} at ${at} in the stack config (Pulumi.${values.stack}.yaml); run \`pulumi up\` (or sync-routes) to apply it`,
      );
    } else {
      const svc = listed.services.find(
        (s) =>
          s.metadata?.namespace === namespace &&
          s.metadata?.labels?.[LABEL.service] === service &&
          s.metadata?.labels?.[LABEL.version] === row.shift.to,
      );
      const core = kc.makeApiClient(k8s.CoreV1Api);
      try {
        await core.patchNamespacedService(
          {
            name: svc!.metadata!.name!,
            namespace,
            body: { metadata: { annotations: { [SHIFT_ANNOTATION.reversed]: at } } },
          },
          k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
        );
      } catch (e) {
        throw describeKubeError(kc, `annotating Service ${namespace}/${svc?.metadata?.name}`, e);
      }
      console.log(
        `reversed the shift of ${target} at ${at} (annotated Service ${namespace}/${svc!.metadata!.name}); sync-routes applies it`,
      );
    }
    return 0;
  }
  for (const line of shiftTable(rows, now, values.all ?? false)) console.log(line);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(`shifts: ${(e as Error).message}`);
    process.exit(1);
  },
);
