import { chmodSync } from "node:fs";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

// The unit project alone, as `npm run test:mutation` (stryker.config.mjs) runs
// it against each mutant, in Stryker's sandbox (a copy of the project).
//
// cli-flags.test.ts is left out: it only runs each CLI in a process of its
// own, where no mutant is ever active and no coverage is seen. layout.test.ts is
// left out too: it reads the source files as text (imports, environment reads),
// and Stryker's instrumented copies read the active mutant from process.env.
//
// MUTATION_TEST_FILES (comma-separated globs) narrows the run to those test
// files: the validator and the stack-config reader run in nearly every test, so
// each of their mutants would rerun hundreds; scored against their own tests
// only (README.md, Mutation testing), the score is a lower bound of the whole
// unit project's, since a mutant those tests kill the whole project kills too.
//
// Stryker creates the sandbox readable by its owner only; render-command.test.ts
// runs the render CLI as nobody from it (a directory it may not write in).
chmodSync(fileURLToPath(new URL(".", import.meta.url)), 0o755);

/**
 * Test files in the order most likely to kill a mutant soonest: the file that
 * failed last (it killed the previous mutant, most often of the same code),
 * then the quickest first. A mutant run stops at its first failing test.
 */
class KillingFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const results = (f: TestSpecification) =>
      this.ctx.cache.getFileTestResults(`${f.project.name}:${relative(this.ctx.config.root, f.moduleId)}`);
    return [...files].sort((a, b) => {
      const [ra, rb] = [results(a), results(b)];
      if (Boolean(ra?.failed) !== Boolean(rb?.failed)) return ra?.failed ? -1 : 1;
      return (ra?.duration ?? 0) - (rb?.duration ?? 0);
    });
  }
}

export default defineConfig({
  test: {
    name: "unit",
    include: process.env.MUTATION_TEST_FILES?.split(",")
      .map((f) => f.trim())
      .filter(Boolean) ?? ["test/unit/**/*.test.ts"],
    exclude: ["test/unit/cli-flags.test.ts", "test/unit/layout.test.ts"],
    environment: "node",
    sequence: { sequencer: KillingFilesFirst },
  },
});
