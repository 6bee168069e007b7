#!/usr/bin/env node
// Installs the descriptor set of Envoy's API that the validator decodes
// documents against (routing/validation/generated/envoy-api.binpb, gitignored)
// from the per-user cache, where scripts/build-components.sh builds it for the
// pinned Envoy version (entry envoy-api-<ENVOY_VERSION>, from the Go module
// github.com/envoyproxy/go-control-plane/envoy; see tools/envoy-api).
//
// Runs from `npm install` / `npm ci` (the `prepare` script). Without the cache
// entry it fails and says which command builds it: the validator, and with it
// rendering, the routes resource and the policy pack, cannot work without it.
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const target = join(root, "routing/validation/generated/envoy-api.binpb");

const versions = readFileSync(join(root, "scripts/versions.env"), "utf8");
const envoyVersion = /^ENVOY_VERSION=(.+)$/m.exec(versions)?.[1]?.trim();
if (!envoyVersion) {
  console.error("scripts/versions.env has no ENVOY_VERSION");
  process.exit(1);
}
// The same cache as scripts/lib.sh: $EG_CACHE, else $XDG_CACHE_HOME/envoy-gateways, else ~/.cache/envoy-gateways.
const cache = process.env.EG_CACHE || join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "envoy-gateways");
const source = join(cache, `envoy-api-${envoyVersion}`, "envoy-api.binpb");

if (!existsSync(source)) {
  console.error(
    [
      `Envoy ${envoyVersion}'s API descriptors are not built: ${source} is missing.`,
      `Build them with:  bash scripts/build-components.sh --only envoy-api   (needs Go; it also installs them`,
      `into ${relative(root, target)}), or run bash scripts/setup.sh, which does everything in order.`,
    ].join("\n"),
  );
  process.exit(1);
}
mkdirSync(dirname(target), { recursive: true });
copyFileSync(source, `${target}.partial`);
renameSync(`${target}.partial`, target);
console.log(
  `Envoy ${envoyVersion}'s API descriptors: ${relative(root, target)} (${statSync(target).size.toLocaleString("en-US")} bytes, from ${source})`,
);
