// A directory updated exactly the way the kubelet updates a ConfigMap volume
// (pkg/volume/util/atomic_writer.go): the files are written into a new
// timestamped directory `..2026_11_30_10_00_00.123456789`, a `..data_tmp`
// symlink to it is renamed over `..data` (the atomic swap: the only event in
// the directory Envoy's watched_directory reacts to is this move), the
// user-visible `cds.yaml -> ..data/cds.yaml` symlinks are created if missing,
// and the previous timestamped directory is removed.
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";

const DATA = "..data";
const DATA_TMP = "..data_tmp";

let sequence = 0;

/** `..YYYY_MM_DD_HH_MM_SS.NNNNNNNNN` in UTC, unique within this process. */
function timestampedName(now = new Date()): string {
  const p = (n: number, w = 2) => String(n).padStart(w, "0");
  const nanos = (now.getUTCMilliseconds() * 1_000_000 + (process.hrtime()[1] % 1_000_000) + sequence++) % 1_000_000_000;
  return `..${now.getUTCFullYear()}_${p(now.getUTCMonth() + 1)}_${p(now.getUTCDate())}_${p(now.getUTCHours())}_${p(now.getUTCMinutes())}_${p(now.getUTCSeconds())}.${p(nanos, 9)}`;
}

export class ConfigMapVolume {
  /** How many times the content was swapped in. */
  swaps = 0;

  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
  }

  /** The file names and contents currently visible. */
  read(): Record<string, string> {
    const files: Record<string, string> = {};
    const data = join(this.dir, DATA);
    if (!existsSync(data)) return files;
    for (const name of readdirSync(data)) files[name] = readFileSync(join(data, name), "utf8");
    return files;
  }

  /** Replaces the whole content with `files` (file name -> text), as one atomic swap. */
  write(files: Record<string, string>): void {
    const previous = this.currentTarget();
    let target = timestampedName();
    while (existsSync(join(this.dir, target))) target = timestampedName();
    const targetDir = join(this.dir, target);
    mkdirSync(targetDir, { mode: 0o755 });
    for (const [name, text] of Object.entries(files)) {
      if (name.includes("/") || name.startsWith(".")) throw new Error(`ConfigMap key ${name} is not a plain file name`);
      writeFileSync(join(targetDir, name), text, { mode: 0o644 });
    }
    const tmp = join(this.dir, DATA_TMP);
    rmSync(tmp, { force: true });
    symlinkSync(target, tmp);
    renameSync(tmp, join(this.dir, DATA));
    for (const name of Object.keys(files)) {
      const visible = join(this.dir, name);
      if (!isSymlink(visible)) symlinkSync(join(DATA, name), visible);
    }
    // Keys that are gone: the kubelet removes their user-visible symlinks.
    for (const entry of readdirSync(this.dir)) {
      if (entry.startsWith("..")) continue;
      if (!(entry in files) && isSymlink(join(this.dir, entry))) unlinkSync(join(this.dir, entry));
    }
    if (previous && previous !== target) rmSync(join(this.dir, previous), { recursive: true, force: true });
    this.swaps++;
  }

  private currentTarget(): string | undefined {
    const data = join(this.dir, DATA);
    return isSymlink(data) ? readlinkSync(data) : undefined;
  }
}

function isSymlink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}
