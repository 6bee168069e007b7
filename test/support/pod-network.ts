// Connections made from inside a pod's network namespace, as that pod: the host (root on
// the node) enters the namespace of one of the pod's processes with nsenter and runs its
// own tools there. Packets leave with the pod's address through its veth, so the node's
// NetworkPolicy enforcer judges them as the pod's own.
import { execFile } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Whether the network namespace of process `pid` holds `ip` as one of its own (local) addresses. */
async function holdsAddress(pid: string, ip: string): Promise<boolean> {
  const trie = await readFile(`/proc/${pid}/net/fib_trie`, "utf8").catch(() => "");
  return new RegExp(`\\|-- ${ip.replaceAll(".", "\\.")}\\n\\s+/32 host LOCAL`).test(trie);
}

/** A process of the pod with address `podIp` whose command line contains `command`. */
export async function processInPod(podIp: string, command: string): Promise<string> {
  for (const pid of (await readdir("/proc")).filter((d) => /^\d+$/.test(d))) {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
    if (cmdline.replaceAll("\0", " ").includes(command) && (await holdsAddress(pid, podIp))) return pid;
  }
  throw new Error(`no process running ${command} in the pod with address ${podIp}`);
}

/** How a TCP connection attempt ended. */
export type Reach = "connected" | "refused" | "timed out";

/** The node's own network namespace, for `connectFrom`: the command runs there without nsenter. */
export const NODE = "node";

/** `args` run in the network namespace of `pid` (or the node's own). */
const inNamespaceOf = (pid: string, args: string[]): [string, string[]] =>
  pid === NODE ? [args[0]!, args.slice(1)] : ["nsenter", ["-t", pid, "-n", ...args]];

/**
 * A TCP connection from the network namespace of `pid` (or the node's) to ip:port, given
 * `seconds`: a closed port, or a firewall that rejects (kube-router does, for what no
 * NetworkPolicy rule allows), is refused; dropped packets time out. Anything else throws.
 */
export async function connectFrom(pid: string, ip: string, port: number, seconds = 3): Promise<Reach> {
  const [command, args] = inNamespaceOf(pid, [
    "timeout",
    String(seconds),
    "bash",
    "-c",
    `exec 3<>/dev/tcp/${ip}/${port}`,
  ]);
  try {
    await run(command, args);
    return "connected";
  } catch (e) {
    const failure = e as { code?: number; stderr?: string };
    if (failure.code === 124) return "timed out";
    if (failure.stderr?.includes("Connection refused")) return "refused";
    throw new Error(`connecting to ${ip}:${port} from ${pid} failed: ${failure.stderr ?? String(e)}`, { cause: e });
  }
}

/** The status of an HTTP GET of `url` from the network namespace of `pid`, or "timed out" (no connection within `seconds`). */
export async function httpGetFrom(pid: string, url: string, seconds = 3): Promise<number | "timed out"> {
  try {
    const { stdout } = await run(
      ...inNamespaceOf(pid, [
        "curl",
        "-s",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "--connect-timeout",
        String(seconds),
        "-m",
        String(seconds + 5),
        url,
      ]),
    );
    return Number(stdout);
  } catch (e) {
    const failure = e as { code?: number; stdout?: string };
    if (failure.code === 28) return "timed out";
    throw new Error(`curl ${url} from pid ${pid} failed (exit ${failure.code})`, { cause: e });
  }
}
