// dist/adopt --stack <name> headless [--service <name>]... [--dns-grace 10s] [--dry-run] [--project-dir <dir>]
// (compiled by `npm run build`; from source: npx tsx cli/adopt.ts ...)
//
// Adopting a running cluster, the step that Pulumi cannot take: the stack's production
// Services that run as plain ClusterIP Services are turned headless in place, one at a
// time, never deleted (adoption/handover.ts). It prints its plan first and stops there
// with --dry-run or when any Service cannot be handed over (then nothing changes). Run
// again after an interruption, it resumes each Service where it stopped; on Services
// that are already headless it does nothing. See docs/adopting.md.
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { parseDuration } from "../routing/units.js";

const USAGE =
  "usage: dist/adopt --stack <name> headless [--service <name>]... [--dns-grace <s>] [--dry-run] [--project-dir <dir>]";

class UsageError extends Error {}

async function main(): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: {
        stack: { type: "string" },
        service: { type: "string", multiple: true },
        "dns-grace": { type: "string", default: "10s" },
        "dry-run": { type: "boolean" },
        "project-dir": { type: "string" },
        help: { type: "boolean" },
      },
    });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (!values.stack) throw new UsageError("--stack is required");
  if (positionals.length !== 1 || positionals[0] !== "headless")
    throw new UsageError(
      `${positionals.length ? `unknown step ${JSON.stringify(positionals.join(" "))}` : "no step given"}: the step is "headless"`,
    );
  const graceText = values["dns-grace"]!;
  const dnsGraceMs = parseDuration(graceText, ["s"]);
  if (dnsGraceMs === undefined || dnsGraceMs < 1000 || dnsGraceMs > 600_000)
    throw new UsageError(
      `--dns-grace ${JSON.stringify(graceText)}: must be whole seconds from 1s to 600s, such as 10s (at least the cluster DNS's TTL)`,
    );
  const projectDir = resolve(values["project-dir"] ?? resolve(__dirname, ".."));
  const log = (line: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);

  const { ProjectStack, stackConfigOf } = await import("../route-sync/stack.js");
  const { adoptHeadless } = await import("../adoption/adopt.js");
  const { config, kubeconfig } = await stackConfigOf(new ProjectStack(values.stack, projectDir));
  const known = config.services.map((s) => s.name);
  const unknown = (values.service ?? []).filter((s) => !known.includes(s));
  if (unknown.length)
    throw new UsageError(
      unknown
        .map(
          (s) =>
            `--service ${JSON.stringify(s)}: not a service of stack ${values.stack} (its services: ${known.join(", ")})`,
        )
        .join("\n"),
    );
  const outcome = await adoptHeadless(config, kubeconfig, {
    services: values.service?.length ? values.service : known,
    dnsGraceMs,
    dryRun: !!values["dry-run"],
    log,
  });
  return outcome === "refused" ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    if (e instanceof UsageError) {
      console.error(`adopt: ${e.message}\n${USAGE}`);
      process.exit(2);
    }
    console.error(`adopt: ${(e as Error).message}`);
    process.exit(1);
  },
);
