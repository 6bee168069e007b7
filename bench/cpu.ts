// CPU seconds by process, from /proc, for benchmarks that say what used the
// cores while they timed something (the machine has two, shared by the API
// server, the node, the Envoys and the engine runs).
import { pids, procStat } from "../test/harness/processes.js";

/** A process's CPU seconds: its own, and those of the children it has reaped (an engine run's, say). */
export interface CpuSeconds {
  name: string;
  own: number;
  children: number;
}

/** cpuSeconds of a process, undefined once it is gone. */
export function cpuSeconds(pid: number | "self"): CpuSeconds | undefined {
  const stat = procStat(pid);
  if (!stat) return undefined;
  // From the state on: ... utime (the 12th), stime, cutime, cstime, in clock ticks (100 a second).
  const [utime, stime, cutime, cstime] = stat.fields.slice(11, 15).map(Number);
  return { name: stat.name, own: (utime! + stime!) / 100, children: (cutime! + cstime!) / 100 };
}

/** cpuSeconds() of every process, by pid. */
export function cpuTimes(): Map<number, CpuSeconds> {
  const times = new Map<number, CpuSeconds>();
  for (const pid of pids()) {
    const t = cpuSeconds(pid);
    if (t) times.set(pid, t);
  }
  return times;
}
