import { chmodSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// The unit project alone, as `npm run test:mutation` (stryker.config.mjs) runs
// it against each mutant, in Stryker's sandbox (a copy of the project).
//
// cli-flags.test.ts is left out: it only runs each CLI in a process of its
// own, where no mutant is ever active and no coverage is seen.
//
// Stryker creates the sandbox readable by its owner only; render-command.test.ts
// runs the render CLI as nobody from it (a directory it may not write in).
chmodSync(fileURLToPath(new URL(".", import.meta.url)), 0o755);

export default defineConfig({
  test: {
    name: "unit",
    include: ["test/unit/**/*.test.ts"],
    exclude: ["test/unit/cli-flags.test.ts"],
    environment: "node",
  },
});
