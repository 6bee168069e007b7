// The program returns only once the engine has registered every resource it
// declared, components' children included (program/main.ts registered): a
// registration that failed after the program returned would be reported only
// after the engine's deletes. Here one child's registration is held back.
import * as pulumi from "@pulumi/pulumi";
import { beforeAll, expect, it, vi } from "vitest";
import { rawStack } from "./fixtures.js";

vi.mock("../../program/discover.js", () => ({ discoverDevNamespaces: async () => ({}) }));

const held = vi.hoisted(() => ({ release: () => {}, registered: new Set<string>() }));

beforeAll(async () => {
  await pulumi.runtime.setMocks(
    {
      async newResource(args) {
        // The gateway's Deployment, a child of the EnvoyGateway component: registered once released.
        if (args.type === "kubernetes:apps/v1:Deployment" && args.name === "gateway")
          await new Promise<void>((resolve) => (held.release = resolve));
        held.registered.add(`${args.type} ${args.name}`);
        return { id: `${args.name}-id`, state: args.inputs };
      },
      call: (args) => args.inputs,
    },
    "envoy-gateways",
    "test",
    false,
  );
});

it("returns only once every resource it declared is registered, a component's child too", async () => {
  const all: Record<string, string> = {};
  for (const [k, v] of Object.entries(rawStack("dev")))
    all[`envoy-gateways:${k}`] = typeof v === "string" ? v : JSON.stringify(v);
  pulumi.runtime.setAllConfig(all, []);
  const { runProgram } = await import("../../program/main.js");
  let returned = false;
  // As the engine runs it: inside the stack resource.
  const run = pulumi.runtime
    .runInPulumiStack(() => runProgram({ devNamespaces: {}, renderedAt: "2026-12-05T09:00:00.000Z", written: {} }))
    .then(() => (returned = true));
  await vi.waitFor(() =>
    expect(held.registered).toContain("pulumi-nodejs:dynamic/envoy-gateways:Routes gateway-routes"),
  );
  await new Promise((r) => setTimeout(r, 50));
  expect(held.registered).not.toContain("kubernetes:apps/v1:Deployment gateway");
  expect(returned).toBe(false);
  held.release();
  await run;
  expect(returned).toBe(true);
});
