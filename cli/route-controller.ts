// dist/route-controller [--namespace <ns>] [--identity <name>] [--port 8080] [--stuck-after 5m]
// (compiled by `npm run build`; the route controller's image runs it)
//
// The route controller in the cluster (route-sync/controller.ts): elected on
// the Lease route-controller in the gateways' namespace, it follows the
// dev/PR namespaces and writes the gateways' xDS ConfigMaps, with the config
// the program writes into the ConfigMap route-controller. It serves, on
// --port: /healthz (liveness), /readyz (readiness) and /metrics
// (Prometheus). In a pod it reads its namespace and name from the downward
// API (POD_NAMESPACE, POD_NAME) and writes as the pod's ServiceAccount;
// outside one, with the ambient kubeconfig. Its identity in the election is
// the pod's name and a random suffix, new at each start. SIGTERM: the step in progress
// finishes, the Lease is released, then it exits.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { hostname } from "node:os";
import { parseArgs } from "node:util";
import { durationFlag, exitWith, logLine, parseFlags, UsageError } from "../route-sync/cli-flags.js";

const USAGE =
  "usage: dist/route-controller [--namespace <gateways' namespace>] [--identity <name>] [--port <1-65535>] [--stuck-after <s|m>]";

/** The namespace a pod runs in, as its ServiceAccount token's volume says. */
const SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

function defaultNamespace(): string | undefined {
  if (process.env.POD_NAMESPACE) return process.env.POD_NAMESPACE;
  try {
    return readFileSync(SERVICE_ACCOUNT_NAMESPACE, "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}

function portFlag(text: string): number {
  const port = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  if (!(port >= 1 && port <= 65535))
    throw new UsageError(`--port ${JSON.stringify(text)}: must be a port number from 1 to 65535`);
  return port;
}

async function main(): Promise<void> {
  const { values } = parseFlags(() =>
    parseArgs({
      options: {
        namespace: { type: "string" },
        identity: { type: "string" },
        port: { type: "string", default: "8080" },
        "stuck-after": { type: "string", default: "5m" },
        help: { type: "boolean" },
      },
    }),
  );
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const port = portFlag(values.port!);
  const stuckAfterMs = durationFlag("stuck-after", values["stuck-after"]!, ["s", "m"], "90s or 5m");
  const namespace = values.namespace ?? defaultNamespace();
  if (!namespace) throw new UsageError("--namespace is required outside a pod (POD_NAMESPACE is not set)");
  // A restarted container is a new candidate: it waits for the Lease like any other, never renewing its dead
  // predecessor's (that would reuse its epoch, the fencing token of another process's writes).
  const identity = values.identity ?? `${process.env.POD_NAME ?? hostname()}_${randomBytes(4).toString("hex")}`;
  const log = logLine;
  // Loaded once the flags are good: a bad flag or --help answers without loading the Kubernetes client.
  const [{ loadKubeConfig }, { DEFAULT_TIMING }, { runRouteController }] = await Promise.all([
    import("../kube/client.js"),
    import("../kube/leader.js"),
    import("../route-sync/controller.js"),
  ]);
  const controller = runRouteController(loadKubeConfig(), {
    namespace,
    identity,
    timing: DEFAULT_TIMING,
    // While a traffic shift moves, weights change with time alone: re-render every 10 s.
    resyncMs: 10_000,
    stuckAfterMs,
    log,
  });
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    const probe = path === "/healthz" ? controller.live() : path === "/readyz" ? controller.ready() : undefined;
    if (probe) {
      res.writeHead(probe.ok ? 200 : 503, { "content-type": "text/plain" });
      return res.end(probe.ok ? "ok\n" : `${probe.why.join("\n")}\n`);
    }
    if (path === "/metrics") {
      return void controller.metrics.registry.metrics().then((text) => {
        res.writeHead(200, { "content-type": controller.metrics.registry.contentType });
        res.end(text);
      });
    }
    res.writeHead(404, { "content-type": "text/plain" });
    res.end("not found: /healthz, /readyz and /metrics are served\n");
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, () => resolve());
  });
  log(`route controller ${identity} in namespace ${namespace}: /healthz, /readyz and /metrics on port ${port}`);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping after the write in progress, then releasing the Lease`);
    void controller.stop().then(() => {
      server.close();
      log("stopped");
      process.exit(0);
    });
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

main().catch(exitWith("route-controller", USAGE));
