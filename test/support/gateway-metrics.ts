// Reads a gateway pod's Prometheus listener (pod IP, port 9102, GET
// /stats/prometheus: the only thing it serves) from the host.
import { get } from "node:http";
import { POD_PORTS } from "../../routing/envoy/types.js";

/** Every sample of the pod's Prometheus text, as "name{labels}" -> value. */
export function gatewayMetrics(podIp: string): Promise<Map<string, number>> {
  return new Promise((resolve, reject) => {
    const req = get({ host: podIp, port: POD_PORTS.metrics, path: "/stats/prometheus", timeout: 5000 }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => {
        if (res.statusCode !== 200)
          return reject(new Error(`GET ${podIp}:${POD_PORTS.metrics}/stats/prometheus: ${res.statusCode}`));
        const samples = new Map<string, number>();
        for (const line of text.split("\n")) {
          if (!line || line.startsWith("#")) continue;
          const space = line.lastIndexOf(" ");
          samples.set(line.slice(0, space), Number(line.slice(space + 1)));
        }
        resolve(samples);
      });
    });
    req.on("timeout", () => req.destroy(new Error(`GET ${podIp}:${POD_PORTS.metrics}/stats/prometheus timed out`)));
    req.on("error", reject);
  });
}

/** The sum of every sample of metric `name` (any labels). */
export function metricSum(samples: Map<string, number>, name: string): number {
  let sum = 0;
  for (const [key, value] of samples) if (key === name || key.startsWith(`${name}{`)) sum += value;
  return sum;
}
