// What a rollback to an earlier release checks before it runs with this
// checkout's node_modules (test/support/pulumi.ts, atRelease): every package
// the release pins is here at the same version and integrity; more packages
// here are fine.
import { describe, expect, it } from "vitest";
import { packagesNotAsPinned, type PackageLock } from "../support/pulumi.js";

const lock = (packages: PackageLock["packages"]): PackageLock => ({ packages });
const release = lock({
  "": { version: "0.1.0" },
  "node_modules/yaml": { version: "2.9.1", integrity: "sha512-a" },
  "node_modules/zod": { version: "4.6.7", integrity: "sha512-b" },
});

describe("a release's packages", () => {
  it("are satisfied by a checkout that pins the same ones and more", () => {
    const current = lock({
      ...release.packages,
      "": { version: "0.2.0" },
      "node_modules/prom-client": { version: "15.1.3", integrity: "sha512-c" },
    });
    expect(packagesNotAsPinned(release, current)).toEqual([]);
  });

  it("name each package missing, at another version, or with another integrity", () => {
    const current = lock({
      "node_modules/yaml": { version: "2.9.2", integrity: "sha512-a" },
    });
    expect(packagesNotAsPinned(release, current)).toEqual(["yaml@2.9.1", "zod@4.6.7"]);
    const repacked = lock({ ...release.packages, "node_modules/zod": { version: "4.6.7", integrity: "sha512-x" } });
    expect(packagesNotAsPinned(release, repacked)).toEqual(["zod@4.6.7"]);
  });
});
