// dist/render --stack <dev|prod> --out <dir> [--namespaces <file>]
// (compiled by `npm run build`; from source: npm run render -- ...)
//
// Writes <dir>/<gateway>/envoy.yaml (+ sds-*.yaml), cds.yaml and rds.yaml for
// both gateways, exactly as the ConfigMaps will hold them, after validating
// every document. A bad config or namespaces file exits non-zero with every
// problem listed (file, line, key, value as written) and writes nothing; so
// does an --out it cannot write, with one line saying why. An earlier render
// in --out is replaced whole, or left exactly as it was.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { InputError } from "../routing/config/errors.js";
import { loadStackFile } from "../routing/config/load.js";
import { locatedInFile, readNamespacesSource } from "../routing/namespaces.js";
import { renderGateways } from "../routing/render.js";
import { buildRoutingTable, tableCounts, type DevNamespaces } from "../routing/table.js";

const USAGE =
  "usage: dist/render --stack <name> --out <dir> [--namespaces <file>] [--project-dir <dir with Pulumi.<name>.yaml>]";

/** A problem with where the output goes: one line, nothing written. */
class OutputError extends Error {}

export interface Io {
  log(line: string): void;
  error(line: string): void;
}

/** The command: its exit code (0 rendered, 1 refused input or output, 2 bad usage). */
export function renderCommand(argv: string[], io: Io = console): number {
  let args;
  try {
    args = parseArgs({
      args: argv,
      options: {
        stack: { type: "string" },
        out: { type: "string" },
        namespaces: { type: "string" },
        "project-dir": { type: "string" },
        help: { type: "boolean" },
      },
    }).values;
  } catch (e) {
    io.error(`render: ${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  if (args.help) {
    io.log(USAGE);
    return 0;
  }
  if (!args.stack || !args.out) {
    io.error(`render: --stack and --out are required\n${USAGE}`);
    return 2;
  }
  const root = resolve(args["project-dir"] ?? join(__dirname, ".."));
  const stackFile = join(root, `Pulumi.${args.stack}.yaml`);
  if (!existsSync(stackFile)) {
    io.error(
      `render: --stack ${JSON.stringify(args.stack)}: no stack file ${stackFile} (stacks are Pulumi.<name>.yaml in ${root})`,
    );
    return 2;
  }
  try {
    const config = loadStackFile(stackFile);
    let namespaces: DevNamespaces = {};
    let table;
    if (args.namespaces) {
      const file = readNamespacesSource(args.namespaces);
      namespaces = file.devNamespaces;
      try {
        table = buildRoutingTable(config, namespaces, `namespaces file ${args.namespaces}`);
      } catch (e) {
        throw e instanceof InputError ? locatedInFile(e, file.source) : e;
      }
    } else table = buildRoutingTable(config, namespaces);
    const gateways = renderGateways(config, table);
    writeAtomically(
      resolve(args.out),
      gateways.map((g) => ({ dir: g.gateway, files: { ...g.bootstrap, ...g.xds } })),
    );
    const counts = tableCounts(table);
    io.log(
      `rendered ${gateways.map((g) => g.gateway).join(" and ")} for stack ${args.stack}: ${counts.production} production services, ${counts.dev} dev routes in ${counts.namespaces} namespaces -> ${args.out}`,
    );
    return 0;
  } catch (e) {
    if (e instanceof InputError) {
      io.error(e.message);
      return 1;
    }
    if (e instanceof OutputError) {
      io.error(`render: --out ${args.out}: ${e.message}; nothing was written`);
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
  const ours = new Set(dirs.map((d) => d.dir));
  if (existsSync(out)) {
    if (!statSync(out).isDirectory())
      throw new OutputError("is a file, not a directory; give a new or empty directory, or an earlier render's");
    const entries = readdirSync(out);
    if (!entries.every((e) => ours.has(e)))
      throw new OutputError(
        `holds other files (${entries
          .filter((e) => !ours.has(e))
          .slice(0, 3)
          .join(", ")}); give a new or empty directory, or an earlier render's`,
      );
  }
  let staging: string | undefined;
  try {
    mkdirSync(dirname(out), { recursive: true });
    staging = mkdtempSync(join(dirname(out), `.${basename(out)}-`));
    for (const { dir, files } of dirs) {
      mkdirSync(join(staging, dir));
      for (const [name, text] of Object.entries(files)) writeFileSync(join(staging, dir, name), text);
    }
    rmSync(out, { recursive: true, force: true });
    renameSync(staging, out);
  } catch (e) {
    if (staging) rmSync(staging, { recursive: true, force: true });
    throw new OutputError(whyNot(e as NodeJS.ErrnoException, out));
  }
}

/** Why a directory cannot be written, in words. */
function whyNot(e: NodeJS.ErrnoException, out: string): string {
  switch (e.code) {
    case "ENOTDIR":
    case "EEXIST":
      return `${firstFileAbove(out) ?? "a part of the path"} is a file, so there can be no directory under it`;
    case "EACCES":
    case "EPERM":
      return `cannot write in ${dirname(out)} (permission denied)`;
    case "EROFS":
      return `cannot write in ${dirname(out)} (a read-only file system)`;
    case "ENOSPC":
    case "EDQUOT":
      return `the disk is full (${e.code === "ENOSPC" ? "no space left on the device" : "disk quota exceeded"})`;
    default:
      return `cannot be written (${e.code ?? e.message})`;
  }
}

function firstFileAbove(path: string): string | undefined {
  for (let p = dirname(path); p !== dirname(p); p = dirname(p)) {
    if (existsSync(p)) return statSync(p).isDirectory() ? undefined : p;
  }
  return undefined;
}

// Run as a command: from source (tsx cli/render.ts), or compiled, as dist/render.js loading dist/render.bundle.js.
if (require.main === module || require.main?.filename === __filename.replace(/\.bundle\.js$/, ".js"))
  process.exitCode = renderCommand(process.argv.slice(2));
