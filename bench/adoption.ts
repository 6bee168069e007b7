// Benchmark (not a test): adopting a running cluster (docs/adopting.md) on a fresh local
// cluster, under load, and the requests sent and failed in each phase, side by side in
// one run: the Services turned headless (dist/adopt), the adopting `pulumi up` with Envoy
// beside NGINX, the cutover to Envoy, the way back to NGINX and forward again, this
// program rolled back to its previous release and forward; then Envoy's upstream pools
// (test/support/adoption.ts, which test/e2e/adoption.test.ts asserts on).
//
//   npx tsx bench/adoption.ts [--gateway-rate 60] [--client-rate 40] [--dns-grace 6s]
//
// Needs the real components, dist/ built (npm run build), and root (the local node).
import { parseArgs } from "node:util";
import { adoptionTable, runAdoption } from "../test/support/adoption.js";
import { startLocalCluster, stopLocalCluster } from "../test/support/cluster.js";

const USAGE = "usage: npx tsx bench/adoption.ts [--gateway-rate 60] [--client-rate 40] [--dns-grace 6s]";
const { values } = parseArgs({
  options: {
    "gateway-rate": { type: "string", default: "60" },
    "client-rate": { type: "string", default: "40" },
    "dns-grace": { type: "string", default: "6s" },
    help: { type: "boolean" },
  },
});
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
function rate(flag: string, text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 500)
    throw new Error(`--${flag} ${JSON.stringify(text)}: must be a whole number of requests per second from 1 to 500`);
  return n;
}
const gatewayRate = rate("gateway-rate", values["gateway-rate"]!);
const clientRate = rate("client-rate", values["client-rate"]!);

async function main(): Promise<void> {
  const cluster = await startLocalCluster();
  let run: Awaited<ReturnType<typeof runAdoption>> | undefined;
  try {
    console.error("old world, then the adoption under load (a few minutes) ...");
    run = await runAdoption(cluster, {
      namespace: "adoption",
      gatewayRate,
      clientRate,
      dnsGrace: values["dns-grace"],
    });
    console.log(
      `adopting a running cluster, ${new Date().toISOString().slice(0, 10)}: ${gatewayRate}/s through the gateway's node port, ${clientRate}/s from an in-cluster client to batch`,
    );
    for (const line of adoptionTable(run)) console.log(line);
  } finally {
    await run?.stack.ws.dispose();
    await stopLocalCluster(cluster, true);
  }
}

main().catch((e: Error) => {
  console.error(`bench/adoption: ${e.message}`);
  process.exit(1);
});
