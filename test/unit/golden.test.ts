// Golden files: what the gateways load, as a reviewer reads it.
//
// - test/golden/features/<feature>/: one small input -> output pair per
//   feature, as Envoy Gateway's translator tests have. input.yaml holds the
//   stack config the feature needs (merged over features/base.yaml), the
//   dev/PR namespaces (as a namespaces file lists them), the instant the
//   routing table is built at, and which parts of what each gateway loads the
//   feature is about (`show`); output.yaml holds those parts
//   (test/fixtures/golden-features.ts).
// - test/golden/production/<gateway>/: every file of a production-sized
//   table (the prod stack, 50 dev/PR namespaces), byte for byte: its size and
//   format (the compact xDS files, their anchors and line per route).
//
// A change in generated config shows up here as a small, reviewable diff;
// regenerate with UPDATE_GOLDEN=1 (npm run test:unit) after checking it is meant.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { renderGateways } from "../../routing/render.js";
import { buildRoutingTable } from "../../routing/table.js";
import { featureOutput, FEATURES_DIR, goldenFeatures } from "../fixtures/golden-features.js";
import { FIFTY_NAMESPACES_AT, fiftyNamespaces } from "../fixtures/namespaces.js";
import { ROOT, stackConfig } from "./fixtures.js";

const PRODUCTION = join(ROOT, "test", "golden", "production");
const update = process.env.UPDATE_GOLDEN === "1";
const REGENERATE = "regenerate with UPDATE_GOLDEN=1 npx vitest run test/unit/golden.test.ts";
const features = goldenFeatures();

describe("golden files", () => {
  it.each(features)("feature %s renders exactly its output.yaml", (feature) => {
    const text = featureOutput(feature);
    const file = join(FEATURES_DIR, feature, "output.yaml");
    if (update) writeFileSync(file, text);
    expect(existsSync(file), `${file} missing: ${REGENERATE}`).toBe(true);
    expect(text, `${feature}/output.yaml (${REGENERATE} after a reviewed change)`).toBe(readFileSync(file, "utf8"));
  });

  it("has a feature for each part of the translation, each small enough to review", () => {
    expect(features.length).toBeGreaterThanOrEqual(20);
    for (const feature of features)
      expect(readFileSync(join(FEATURES_DIR, feature, "output.yaml"), "utf8").length, feature).toBeLessThan(10_000);
  });

  it("production-sized table renders exactly the golden files, byte for byte", () => {
    const config = stackConfig("prod");
    const table = buildRoutingTable(config, fiftyNamespaces(), "dev namespaces", FIFTY_NAMESPACES_AT);
    expect(table.production.length).toBeGreaterThanOrEqual(20);
    expect(new Set(table.dev.map((s) => s.namespace)).size).toBe(50);
    for (const g of renderGateways(config, table)) {
      const dir = join(PRODUCTION, g.gateway);
      const rendered = { ...g.bootstrap, ...g.xds };
      if (update) {
        mkdirSync(dir, { recursive: true });
        for (const [file, text] of Object.entries(rendered)) writeFileSync(join(dir, file), text);
      }
      expect(existsSync(dir), `${dir} missing: ${REGENERATE}`).toBe(true);
      expect(readdirSync(dir).sort()).toEqual(Object.keys(rendered).sort());
      for (const [file, text] of Object.entries(rendered))
        expect(text, `production/${g.gateway}/${file}`).toBe(readFileSync(join(dir, file), "utf8"));
    }
  });
});
