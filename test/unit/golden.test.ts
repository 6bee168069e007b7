// The files both gateways load, byte for byte, for a small table and a
// production-sized one. A change in generated config shows up here as a
// reviewable diff; regenerate with UPDATE_GOLDEN=1 after checking it is meant.
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseStackConfig } from "../../routing/config/load.js";
import { renderGateways } from "../../routing/render.js";
import { buildRoutingTable, type DevNamespaces } from "../../routing/table.js";
import { FIFTY_NAMESPACES_AT, fiftyNamespaces } from "../fixtures/namespaces.js";
import { minimalRaw, ROOT, stackConfig } from "./fixtures.js";

const GOLDEN = join(ROOT, "test", "golden");
const update = process.env.UPDATE_GOLDEN === "1";

const cases: [string, () => ReturnType<typeof stackConfig>, DevNamespaces][] = [
  ["small", () => parseStackConfig(minimalRaw()), { "pr-1": ["batch"], "pr-2": ["batch", "batch-driver"] }],
  ["production", () => stackConfig("prod"), fiftyNamespaces()],
];

describe("golden files", () => {
  it.each(cases)("%s table renders exactly the golden files", (name, config, namespaces) => {
    const c = config();
    const files = renderGateways(c, buildRoutingTable(c, namespaces, "dev namespaces", FIFTY_NAMESPACES_AT));
    for (const g of files) {
      const dir = join(GOLDEN, name, g.gateway);
      const rendered = { ...g.bootstrap, ...g.xds };
      if (update) {
        mkdirSync(dir, { recursive: true });
        for (const [file, text] of Object.entries(rendered)) writeFileSync(join(dir, file), text);
      }
      expect(existsSync(dir), `${dir} missing: run UPDATE_GOLDEN=1 npx vitest run test/unit/golden.test.ts`).toBe(true);
      expect(readdirSync(dir).sort()).toEqual(Object.keys(rendered).sort());
      for (const [file, text] of Object.entries(rendered)) {
        expect(text, `${name}/${g.gateway}/${file}`).toBe(readFileSync(join(dir, file), "utf8"));
      }
    }
  });

  it("the production-sized table has dozens of services and 50 dev namespaces", () => {
    const table = buildRoutingTable(stackConfig("prod"), fiftyNamespaces(), "dev namespaces", FIFTY_NAMESPACES_AT);
    expect(table.production.length).toBeGreaterThanOrEqual(20);
    expect(new Set(table.dev.map((s) => s.namespace)).size).toBe(50);
  });
});
