// CPU seconds by process, from /proc, for benchmarks that say what used the
// cores while they timed something (the machine has two, shared by the API
// server, the node, the Envoys and the engine runs).
import { readdirSync, readFileSync } from "node:fs";

/** A process's CPU seconds: its own, and those of the children it has reaped (an engine run's, say). */
export interface CpuSeconds {
  name: string;
  own: number;
  children: number;
}

/** cpuSeconds of a process, undefined once it is gone. */
export function cpuSeconds(pid: number | "self"): CpuSeconds | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined; // exited meanwhile
  }
  const close = stat.lastIndexOf(")");
  // After the name: state, ppid, ... utime (the 12th), stime, cutime, cstime, in clock ticks (100 a second).
  const f = stat
    .slice(close + 2)
    .split(" ")
    .map(Number);
  return {
    name: stat.slice(stat.indexOf("(") + 1, close),
    own: (f[11]! + f[12]!) / 100,
    children: (f[13]! + f[14]!) / 100,
  };
}

/** cpuSeconds() of every process, by pid. */
export function cpuTimes(): Map<number, CpuSeconds> {
  const times = new Map<number, CpuSeconds>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const t = cpuSeconds(Number(entry));
    if (t) times.set(Number(entry), t);
  }
  return times;
}
