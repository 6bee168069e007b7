// The CLIs compiled ahead of time (`npm run build`; scripts/setup.sh runs it):
// each cli/<name>.ts bundled with esbuild into dist/<name>.bundle.js, loaded by
// dist/<name>.js (which turns on Node's compile cache first), beside an
// executable dist/<name> that `exec`s Node on that, so a run pays neither npm nor
// tsx compiling the TypeScript, and a signal sent to the command reaches the
// process that handles it. The Pulumi SDK stays external (loaded from
// node_modules: it locates its own files and its language host at run time).
// The data files the code reads next to itself are copied beside the bundles:
// routing/validation/descriptors.ts reads <its directory>/generated/envoy-api.binpb,
// and a bundle's directory is dist/.
//
//   node scripts/build-cli.mjs     (after changing the sources; npm run build)
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dist = join(root, "dist");
const names = readdirSync(join(root, "cli"))
  .filter((f) => f.endsWith(".ts"))
  .map((f) => basename(f, ".ts"))
  .sort();

const descriptors = join(root, "routing", "validation", "generated", "envoy-api.binpb");
if (!existsSync(descriptors)) {
  console.error(
    `build-cli: Envoy API descriptors not found at ${descriptors}: run \`bash scripts/build-components.sh --only envoy-api\` first (npm ci installs them too)`,
  );
  process.exit(1);
}

const start = Date.now();
rmSync(dist, { recursive: true, force: true });
const { metafile } = await build({
  entryPoints: Object.fromEntries(names.map((n) => [`${n}.bundle`, join(root, "cli", `${n}.ts`)])),
  outdir: dist,
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node22",
  // The Pulumi SDK reads its own package files and spawns helpers relative to itself.
  external: ["@pulumi/*"],
  sourcemap: "linked",
  // No comments or indentation (names kept, the source map says where): a few packages' comments are not
  // ASCII, which made V8 hold the whole bundle's source as a two-byte string (17 MB of the route controller's heap).
  minifyWhitespace: true,
  // Licence comments beside each bundle (<name>.bundle.js.LEGAL.txt), not in it: one is not ASCII either.
  legalComments: "external",
  logLevel: "warning",
  metafile: true,
});
mkdirSync(join(dist, "generated"));
copyFileSync(descriptors, join(dist, "generated", "envoy-api.binpb"));
copyFileSync(join(root, "scripts", "cli-fresh.cjs"), join(dist, "fresh.cjs"));
for (const n of names) {
  // The project's files in this bundle (the packages' change with package-lock.json), which the wrapper checks
  // are not newer than it (scripts/cli-fresh.cjs).
  const inputs = Object.keys(metafile.outputs[`dist/${n}.bundle.js`].inputs);
  const sources = [...inputs.filter((f) => !f.startsWith("node_modules/")), "package-lock.json"].sort();
  // Node's on-disk compile cache (in the temporary directory) turned on before the bundle loads: a later run
  // skips compiling its megabytes again. (cli/render.ts, also a module the tests import, knows this wrapper.)
  writeFileSync(
    join(dist, `${n}.js`),
    `"use strict";\nrequire("./fresh.cjs").exitIfStale(__dirname, ${JSON.stringify(n)}, ${JSON.stringify(sources)});\n` +
      `require("node:module").enableCompileCache?.();\nrequire("./${n}.bundle.js");\n`,
  );
  const launcher = join(dist, n);
  // exec: the launcher's shell becomes Node, so SIGTERM to the command is SIGTERM to the CLI. readlink -f: the
  // launcher may be called through a symlink (on PATH, say).
  writeFileSync(launcher, `#!/bin/sh\nexec node "$(dirname "$(readlink -f "$0")")/${n}.js" "$@"\n`);
  chmodSync(launcher, 0o755);
}
console.log(`build-cli: ${names.map((n) => `dist/${n}`).join(", ")} in ${Date.now() - start} ms`);
