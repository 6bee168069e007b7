// The config templates of bench/configs (NGINX, HAProxy): {{NAME}} placeholders filled
// in by the benchmark and by the old world of the e2e tests (test/support/old-world.ts).
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";

const configsDir = resolve(__dirname, "../../bench/configs");

/** Fills the {{NAME}} placeholders of bench/configs/<templateFile>; every placeholder must have a value. */
export function fillTemplate(templateFile: string, vars: Record<string, string>): string {
  return readFileSync(join(configsDir, templateFile), "utf8").replace(/\{\{([A-Z_]+)\}\}/g, (_, k: string) => {
    if (!(k in vars)) throw new Error(`${templateFile}: no value for {{${k}}}`);
    return vars[k]!;
  });
}
