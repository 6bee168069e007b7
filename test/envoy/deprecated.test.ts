// Envoy 1.40 counts every deprecated field it loads in runtime.deprecated_feature_use
// (and logs "Using deprecated option ..."): a deprecated field is one Envoy will
// remove. What `npm run render` writes for both stacks, both gateways, with dev
// routes, must use none.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { XDS_FILES } from "../../routing/envoy/types.js";
import { LoadCheck } from "../harness/load-check.js";
import { repoRoot } from "../support/components.js";

const DEPRECATED = "runtime.deprecated_feature_use";
let check: LoadCheck;
let out: string;

beforeAll(async () => {
  check = await LoadCheck.create("cluster.local");
  out = mkdtempSync(join(tmpdir(), "eg-render-"));
});

afterAll(async () => {
  await check?.stop();
  if (out) rmSync(out, { recursive: true, force: true });
});

/** `npm run render` of a stack with a few dev namespaces; returns each gateway's files. */
function render(stack: string): Record<string, Record<string, string>> {
  const namespaces = join(out, `${stack}-namespaces.yaml`);
  // query shifts from a to b, half way through now: weighted clusters.
  const query = {
    name: "query",
    versions: [
      { version: "a", service: "query-a" },
      { version: "b", service: "query-b" },
    ],
    shifts: [
      { from: "a", to: "b", policy: "linear", start: new Date(Date.now() - 3_600_000).toISOString(), duration: "2h" },
    ],
  };
  writeFileSync(namespaces, stringify({ "pr-1": ["batch", "batch-driver"], "pr-2": ["web", query] }));
  const dir = join(out, stack);
  execFileSync("npm", ["run", "--silent", "render", "--", "--stack", stack, "--out", dir, "--namespaces", namespaces], {
    cwd: repoRoot,
    stdio: "pipe",
  });
  return Object.fromEntries(
    readdirSync(dir).map((g) => [
      g,
      Object.fromEntries(readdirSync(join(dir, g)).map((f) => [f, readFileSync(join(dir, g, f), "utf8")])),
    ]),
  );
}

describe("deprecated fields", () => {
  it.each(["prod", "dev"])(
    "the %s render loads on both gateways with runtime.deprecated_feature_use 0",
    async (stack) => {
      const gateways = render(stack);
      expect(Object.keys(gateways).sort()).toEqual(["gateway", "internal-gateway"]);
      for (const [gateway, files] of Object.entries(gateways)) {
        const envoy = await check.start(files);
        const stats = await envoy.stats();
        expect(
          stats.get("cluster_manager.cds.update_success"),
          `${stack}/${gateway}: CDS loaded`,
        ).toBeGreaterThanOrEqual(1);
        expect(stats.get("cluster_manager.active_clusters"), `${stack}/${gateway}: clusters`).toBeGreaterThan(10);
        expect(
          stats.get(DEPRECATED),
          `${stack}/${gateway}: ${envoy.envoy
            .log()
            .match(/Using deprecated option.*/g)
            ?.join("\n")}`,
        ).toBe(0);
        expect(envoy.envoy.log()).not.toMatch(/deprecated/i);
        await envoy.envoy.stop();
      }
    },
  );

  it("counts a deprecated field where there is one (so the check above can fail)", async () => {
    const files = render("prod").gateway!;
    // The field every DNS cluster used before the DNS cluster extension.
    const cds = files[XDS_FILES.cds]!.replace('"name":"default_www",', '"name":"default_www","respect_dns_ttl":true,');
    expect(cds).not.toBe(files[XDS_FILES.cds]);
    const envoy = await check.start({ ...files, [XDS_FILES.cds]: cds });
    expect(await envoy.envoy.stat(DEPRECATED)).toBeGreaterThan(0);
    expect(envoy.envoy.log()).toMatch(/Using deprecated option 'envoy\.config\.cluster\.v3\.Cluster\.respect_dns_ttl'/);
    await envoy.envoy.stop();
  });
});
