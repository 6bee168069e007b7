// test/harness/ports.ts: ports chosen together never repeat, and are free once chosen.
import { describe, expect, it } from "vitest";
import { freeTcpPorts, tcpPortFree } from "../harness/ports.js";

describe("freeTcpPorts", () => {
  it("gives `count` different ports, each free to bind once it returns", async () => {
    for (let round = 0; round < 20; round++) {
      const ports = await freeTcpPorts("127.0.0.1", 4);
      expect(ports).toHaveLength(4);
      expect(new Set(ports).size).toBe(4);
      for (const port of ports) expect(await tcpPortFree("127.0.0.1", port)).toBe(true);
    }
  });
});
