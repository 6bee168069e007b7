// Benchmark (not a test): what recording the routes resource costs in
// serialization, with its routes as one line each (now) against an object per
// route (the shape before), at 100, 1,000 and 5,000 dev/PR pairs on the prod
// stack (dev/PR routes on demand). A record sends the resource's inputs and
// outputs between the engine and the dynamic provider several times per
// gateway (check, diff, update); each crossing is Pulumi's own
// serializeProperties and a protobuf Struct, as the provider's gRPC server
// does it. Prints, side by side: bytes, the encode and decode time of one
// crossing (median of 7), and the ratio.
//
//   npx tsx bench/record-payload.ts [--sizes 100,1000,5000]
import { join } from "node:path";
import { parseArgs } from "node:util";
import * as rpc from "@pulumi/pulumi/runtime/rpc";
import { Struct } from "google-protobuf/google/protobuf/struct_pb";
import { loadStackFile } from "../routing/config/load.js";
import { checkRoutes, renderRoutes, routesInputs } from "../routes-provider/core.js";
import { syntheticNamespaces } from "../test/fixtures/namespaces.js";

const RUNS = 7;
const { values } = parseArgs({ options: { sizes: { type: "string", default: "100,1000,5000" } } });
const sizes = values.sizes.split(",").map((s) => {
  const n = Number(s);
  if (!Number.isInteger(n) || n < 1 || n > 20_000)
    throw new Error(`--sizes: "${s}" is not a whole number of pairs from 1 to 20000`);
  return n;
});

const config = loadStackFile(join(__dirname, "..", "Pulumi.prod.yaml"));

/** One crossing: encode as the provider's gRPC server does, then decode. Milliseconds each, and the bytes sent. */
async function crossing(value: Record<string, unknown>): Promise<{ encode: number; decode: number; bytes: number }> {
  let t = performance.now();
  const bytes = Struct.fromJavaScript(await rpc.serializeProperties("bench", value)).serializeBinary();
  const encode = performance.now() - t;
  t = performance.now();
  rpc.deserializeProperties(Struct.deserializeBinary(bytes));
  return { encode, decode: performance.now() - t, bytes: bytes.length };
}

async function median(value: Record<string, unknown>): Promise<{ encode: number; decode: number; bytes: number }> {
  const runs = [];
  for (let i = 0; i < RUNS; i++) runs.push(await crossing(value));
  const mid = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return { encode: mid(runs.map((r) => r.encode)), decode: mid(runs.map((r) => r.decode)), bytes: runs[0]!.bytes };
}

async function main(): Promise<void> {
  const pad = (s: string, n: number) => s.padEnd(n);
  console.log(
    `${pad("pairs", 7)}${pad("routes as", 12)}${pad("bytes", 12)}${pad("encode", 10)}${pad("decode", 10)}lines vs objects`,
  );
  for (const pairs of sizes) {
    const given = routesInputs(
      { gateway: "gateway", namespace: "default", configMap: "gateway-xds" },
      config,
      syntheticNamespaces(pairs, 10),
    );
    const inputs = checkRoutes(given).inputs!;
    const objects = { ...inputs, routes: renderRoutes(given, new Date()).routes };
    const lines = await median(inputs as unknown as Record<string, unknown>);
    const before = await median(objects as unknown as Record<string, unknown>);
    for (const [label, r] of [
      ["objects", before],
      ["lines", lines],
    ] as const)
      console.log(
        `${pad(String(pairs), 7)}${pad(label, 12)}${pad(r.bytes.toLocaleString("en-US"), 12)}${pad(`${r.encode.toFixed(0)} ms`, 10)}${pad(`${r.decode.toFixed(0)} ms`, 10)}` +
          (label === "lines"
            ? `${(before.encode / lines.encode).toFixed(1)}x faster to encode, ${(before.decode / lines.decode).toFixed(1)}x to decode, ${(before.bytes / lines.bytes).toFixed(1)}x fewer bytes`
            : ""),
      );
  }
}

void main();
