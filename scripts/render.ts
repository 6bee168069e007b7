// npm run render -- --stack <dev|prod> --out <dir> [--namespaces <file>]
//
// Writes <dir>/<gateway>/envoy.yaml (+ sds-*.yaml), cds.yaml and rds.yaml for
// both gateways, exactly as the ConfigMaps will hold them, after validating
// every document. A bad config or namespaces file exits non-zero with every
// problem listed and writes nothing.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve, basename } from "node:path";
import { parseArgs } from "node:util";
import { InputError } from "../routing/config/errors.js";
import { loadStackFile } from "../routing/config/load.js";
import { readNamespacesFile } from "../routing/namespaces.js";
import { renderGateways } from "../routing/render.js";
import { buildRoutingTable, tableCounts } from "../routing/table.js";

const USAGE = "usage: npm run render -- --stack <name> --out <dir> [--namespaces <file>] [--project-dir <dir with Pulumi.<name>.yaml>]";

function main(): number {
  let args;
  try {
    args = parseArgs({
      options: { stack: { type: "string" }, out: { type: "string" }, namespaces: { type: "string" }, "project-dir": { type: "string" }, help: { type: "boolean" } },
    }).values;
  } catch (e) {
    console.error(`${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  if (args.help) {
    console.log(USAGE);
    return 0;
  }
  if (!args.stack || !args.out) {
    console.error(`--stack and --out are required\n${USAGE}`);
    return 2;
  }
  const root = resolve(args["project-dir"] ?? join(__dirname, ".."));
  const stackFile = join(root, `Pulumi.${args.stack}.yaml`);
  if (!existsSync(stackFile)) {
    console.error(`no stack file ${stackFile} (stacks: Pulumi.<name>.yaml in ${root})`);
    return 2;
  }
  try {
    const config = loadStackFile(stackFile);
    const namespaces = args.namespaces ? readNamespacesFile(args.namespaces) : {};
    const table = buildRoutingTable(config, namespaces, args.namespaces ? `namespaces file ${args.namespaces}` : "dev namespaces");
    const gateways = renderGateways(config, table);
    writeAtomically(resolve(args.out), gateways.map((g) => ({ dir: g.gateway, files: { ...g.bootstrap, ...g.xds } })));
    const counts = tableCounts(table);
    console.log(`rendered ${gateways.map((g) => g.gateway).join(" and ")} for stack ${args.stack}: ${counts.production} production services, ${counts.dev} dev routes in ${counts.namespaces} namespaces -> ${args.out}`);
    return 0;
  } catch (e) {
    if (e instanceof InputError) {
      console.error(e.message);
      return 1;
    }
    throw e;
  }
}

/**
 * Writes everything into a fresh sibling directory, then moves it into place:
 * all or nothing. An existing `out` is replaced only if it is empty or holds
 * nothing but an earlier render's gateway directories.
 */
function writeAtomically(out: string, dirs: { dir: string; files: Record<string, string> }[]): void {
  if (existsSync(out)) {
    const entries = readdirSync(out);
    const ours = new Set(dirs.map((d) => d.dir));
    if (!entries.every((e) => ours.has(e))) {
      throw new InputError("render", [{ key: "--out", message: `${out} holds other files (${entries.filter((e) => !ours.has(e)).slice(0, 3).join(", ")}); give an empty or new directory`, value: out }]);
    }
  }
  mkdirSync(dirname(out), { recursive: true });
  const staging = mkdtempSync(join(dirname(out), `.${basename(out)}-`));
  try {
    for (const { dir, files } of dirs) {
      mkdirSync(join(staging, dir));
      for (const [name, text] of Object.entries(files)) writeFileSync(join(staging, dir, name), text);
    }
    rmSync(out, { recursive: true, force: true });
    renameSync(staging, out);
  } catch (e) {
    rmSync(staging, { recursive: true, force: true });
    throw e;
  }
}

process.exitCode = main();
