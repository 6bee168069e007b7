// Mutation testing of the routing core, the routes provider core, the pure
// parts of route-sync, the policies and the program's wiring: `npm run
// test:mutation` (see docs/testing.md). Not part of CI (.ci/run): the whole
// scope is about 6,700 mutants (with --ignoreStatic), hours on 2 cores; `--mutate <files>` scores
// the files a change touched (1,600 mutants took 15 minutes).
import { readFileSync } from "node:fs";

/**
 * `file:start-end` for each named top-level function of `file`: from its
 * `export function name(` line to the first line after it that closes it
 * (`}` at column 0), so the ranges follow the code as it moves.
 */
function functionsOf(file, names) {
  const lines = readFileSync(new URL(file, import.meta.url), "utf8").split("\n");
  return names.map((name) => {
    const start = lines.findIndex((l) => new RegExp(`^export (async )?function ${name}\\b`).test(l));
    if (start < 0) throw new Error(`stryker.config.mjs: ${file} has no top-level function ${name}`);
    const end = lines.findIndex((l, i) => i > start && l === "}");
    return `${file}:${start + 1}-${end + 1}`;
  });
}

/** @type {import("@stryker-mutator/api/core").PartialStrykerOptions} */
export default {
  testRunner: "vitest",
  // forks, not the runner's default threads: in a worker thread Pulumi's closure serializer
  // (which serializes the routes dynamic provider under mocks) cannot load node:trace_events.
  vitest: { configFile: "vitest.mutation.config.mts", related: false, pool: "forks" },
  coverageAnalysis: "perTest",
  mutate: [
    "routing/**/*.ts",
    "routes-provider/core.ts",
    ...functionsOf("route-sync/sync.ts", [
      "syncedRoutes",
      "shiftsMoving",
      "routeChanges",
      "plan",
      "recorded",
      "notRecorded",
      "report",
      "statusLines",
    ]),
    "route-sync/lock.ts",
    "route-sync/serial-runner.ts",
    "policy/policies.ts",
    "program/stack.ts",
    "components/*.ts",
  ],
  reporters: ["clear-text", "progress", "html", "json"],
  clearTextReporter: {
    allowColor: false,
    logTests: false,
    reportTests: false,
    reportMutants: true,
    reportScoreTable: true,
  },
  htmlReporter: { fileName: "reports/mutation/mutation.html" },
  jsonReporter: { fileName: "reports/mutation/mutation.json" },
  incrementalFile: "reports/mutation/stryker-incremental.json",
  tempDirName: ".stryker-tmp",
  concurrency: 2,
  // A busy machine (and tests of their own that start processes): a mutant counts
  // as an endless loop only well past the time its tests took in the initial run.
  timeoutFactor: 3,
  timeoutMS: 30000,
  dryRunTimeoutMinutes: 15,
  thresholds: { high: 90, low: 85, break: null },
};
