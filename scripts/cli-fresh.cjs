// Whether a compiled CLI (dist/<name>, `npm run build`) still matches its
// sources. The build copies this file to dist/fresh.cjs, and each dist/<name>.js
// calls exitIfStale before loading its bundle: after a `git pull` or an edit
// without a rebuild, the command says so instead of running the old code
// (sync-routes' record step runs the program from its bundle too).
"use strict";
const { statSync } = require("node:fs");
const { join } = require("node:path");

/**
 * The files of `sources` (relative to `root`) changed since `bundle` was
 * written, or gone: newer than it by modification time (git sets it when a
 * checkout changes a file).
 */
function staleSources(root, bundle, sources) {
  const built = statSync(bundle).mtimeMs;
  return sources.filter((file) => {
    try {
      return statSync(join(root, file)).mtimeMs > built;
    } catch {
      return true;
    }
  });
}

/** Ends the process (exit code 1) with one line naming the changed sources when dist/<name> is older than they are. */
function exitIfStale(dist, name, sources) {
  const stale = staleSources(join(dist, ".."), join(dist, `${name}.bundle.js`), sources);
  if (stale.length === 0) return;
  const named = stale.slice(0, 3).join(", ") + (stale.length > 3 ? ` and ${stale.length - 3} more` : "");
  process.stderr.write(
    `dist/${name} was built before its sources last changed (${named}): run \`npm run build\`, or run it from source with \`npm run ${name} -- ...\`\n`,
  );
  process.exit(1);
}

module.exports = { staleSources, exitIfStale };
