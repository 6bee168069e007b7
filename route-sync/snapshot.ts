// What sync-routes hands the engine run that records its sync: the dev/PR
// namespaces it discovered and wrote, the instant it rendered them at, and
// the digest it wrote into each gateway's ConfigMap. sync-routes writes the
// ConfigMaps itself (through the routes provider's own writeRoutes, within a
// second of a change) and then runs the engine only to record that in state:
// the program takes its dev/PR namespaces from the snapshot instead of
// discovering them again, and the routes provider renders at the same
// instant and writes only if the ConfigMap still holds what the snapshot
// says (a newer sync may have written since: its own engine run records it).
//
// Set by sync-routes for the engine process it starts, as a file named by
// ENVOY_GATEWAYS_SYNC_SNAPSHOT; never set it by hand.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { GatewayName } from "../routing/config/schema.js";
import type { DevNamespaces } from "../routing/table.js";

export const SNAPSHOT_ENV = "ENVOY_GATEWAYS_SYNC_SNAPSHOT";

export interface SyncSnapshot {
  /** The dev/PR namespaces discovered, as the program would discover them. */
  devNamespaces: DevNamespaces;
  /** The instant the ConfigMaps were rendered at (it sets shift weights). */
  renderedAt: string;
  /** Gateway -> the digest of the data sync-routes left in its ConfigMap. */
  written: Partial<Record<GatewayName, string>>;
}

/** The snapshot of the sync this process records, if it was started by one. */
export function currentSnapshot(env: NodeJS.ProcessEnv = process.env): SyncSnapshot | undefined {
  const file = env[SNAPSHOT_ENV];
  if (!file) return undefined;
  return JSON.parse(readFileSync(file, "utf8")) as SyncSnapshot;
}

/** Writes a snapshot for one engine run; `remove` deletes it after. */
export function writeSnapshot(snapshot: SyncSnapshot): { env: Record<string, string>; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "envoy-gateways-sync-"));
  const file = join(dir, "snapshot.json");
  writeFileSync(file, JSON.stringify(snapshot), { mode: 0o600 });
  return { env: { [SNAPSHOT_ENV]: file }, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
