// The local stack on the local cluster's node (scripts/quickstart.sh uses it):
//
//   npx tsx scripts/local-stack.ts config [--from dev] [--route-controller-image TAG --cluster DIR]
//       prints the config lines of Pulumi.<stack>.yaml: Pulumi.<from>.yaml made local
//       (the stand-in pod images, NodePort gateway Services; test/support/local-stack.ts);
//       with --route-controller-image, the route controller switched on (routeSync.inCluster,
//       2 pods of that image, imported into the node by scripts/route-controller-image.sh)
//   npx tsx scripts/local-stack.ts secrets --cluster DIR [--from dev]
//       creates (or replaces) the gateways' Secrets named in the stack config and the
//       production pods' <service>-tls Secrets, made with openssl and signed by the
//       cluster's services CA (DIR/pki/services-ca.crt)
//   npx tsx scripts/local-stack.ts demo-namespace --cluster DIR [--namespace pr-demo]
//       a dev/PR namespace as CI would make it: the routing label, a batch Service and pod
//   npx tsx scripts/local-stack.ts show --cluster DIR [--from dev] [--namespace pr-demo]
//       sends a request through the gateway pod to a production service's pod, and to the
//       dev/PR route (without and with the auth credential), printing the answers; waits
//       (up to 3 minutes) for the dev route to reach Envoy
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { LocalCluster } from "../test/support/cluster.js";
import { GatewayClient } from "../test/support/gateway-client.js";
import {
  applyLocalSecrets,
  AUTH_TOKEN,
  localStackConfigLines,
  parsedLocalStackConfig,
  type ConfigEdit,
  type StackFile,
} from "../test/support/local-stack.js";
import { inCluster } from "../test/support/route-controller.js";
import { Workloads } from "../test/support/workloads.js";

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    from: { type: "string", default: "dev" },
    cluster: { type: "string" },
    namespace: { type: "string", default: "pr-demo" },
    "route-controller-image": { type: "string" },
    help: { type: "boolean" },
  },
});
const command = positionals[0];
const usage =
  "usage: npx tsx scripts/local-stack.ts config|secrets|demo-namespace|show [--from dev|prod] [--cluster DIR] [--namespace NAME] [--route-controller-image TAG]";

function cluster(): LocalCluster {
  if (!values.cluster)
    throw new Error(`--cluster DIR (the local cluster's state directory) is required for ${command}`);
  return JSON.parse(readFileSync(join(values.cluster, "cluster.json"), "utf8")) as LocalCluster;
}

function from(): StackFile {
  if (values.from !== "dev" && values.from !== "prod")
    throw new Error(`--from must be dev or prod (got ${values.from})`);
  return values.from;
}

/** The route controller switched on when --route-controller-image names its image, else no change. */
function routeController(): ConfigEdit | undefined {
  const image = values["route-controller-image"];
  return image === undefined ? undefined : inCluster(cluster(), image);
}

async function show(): Promise<void> {
  const c = cluster();
  const config = parsedLocalStackConfig(from());
  const gateway = await GatewayClient.start(c, "gateway", config.namespace);
  try {
    const via = gateway.endpoints.map((e) => `${e.pod} (${e.address}:${e.port})`).join(", ");
    const host = `www.${config.domain}`;
    const prod = await gateway.request(host, "/hello");
    const a = prod.answer();
    console.log(`GET https://${host}/hello through gateway pod ${via}:`);
    console.log(
      `  ${prod.status} from pod ${a.pod} (namespace ${a.namespace}; certificate for ${a.service}; SNI ${a.serverName}; the gateway's client certificate: ${a.clientCertificate ?? "none"})`,
    );

    const devHost = config.gateways.gateway.devHost ?? `internal.${config.domain}`;
    const path = `/${values.namespace}/batch/hello`;
    const started = Date.now();
    let denied = await gateway.request(devHost, path);
    while (denied.status === 404 && Date.now() - started < 180_000) {
      await new Promise((r) => setTimeout(r, 1000));
      denied = await gateway.request(devHost, path);
    }
    const waited = ((Date.now() - started) / 1000).toFixed(0);
    console.log(
      `GET https://${devHost}${path} (the dev/PR route${Number(waited) > 1 ? `, in Envoy after ${waited} s` : ""}):`,
    );
    console.log(
      `  without credentials: ${denied.status}${denied.headers.location ? ` -> ${denied.headers.location}` : ""}`,
    );
    const allowed = await gateway.request(devHost, path, { headers: { authorization: `Bearer ${AUTH_TOKEN}` } });
    const d = allowed.status === 200 ? allowed.answer() : undefined;
    console.log(
      `  with "Authorization: Bearer ${AUTH_TOKEN}": ${allowed.status}${d ? ` from pod ${d.pod} (namespace ${d.namespace}, path ${d.path})` : ` ${allowed.body.slice(0, 200)}`}`,
    );
    if (prod.status !== 200 || allowed.status !== 200) process.exitCode = 1;
  } finally {
    await gateway.stop();
  }
}

async function main(): Promise<void> {
  if (values.help || !command) {
    console.log(usage);
    return;
  }
  switch (command) {
    case "config":
      console.log(localStackConfigLines(from(), routeController()).join("\n"));
      return;
    case "secrets":
      for (const s of await applyLocalSecrets(cluster(), parsedLocalStackConfig(from()))) console.log(`secret ${s}`);
      return;
    case "demo-namespace": {
      const w = new Workloads(cluster());
      const exists = await w.core.readNamespace({ name: values.namespace! }).then(
        () => true,
        () => false,
      );
      if (!exists) await w.createDevNamespace(values.namespace!, [{ name: "batch", replicas: 1 }]);
      await w.waitReady(values.namespace!, "batch", 1);
      console.log(`namespace ${values.namespace} (label envoy-gateways.io/routes=dev): Service batch, 1 pod ready`);
      return;
    }
    case "show":
      return show();
    default:
      throw new Error(`unknown command ${command}\n${usage}`);
  }
}

main().catch((e: Error) => {
  console.error(e.message);
  process.exit(1);
});
