// The route controller's ConfigMap (routes-provider/controller-config.ts):
// the program's data read back into the same stack config and targets, and
// every bad file refused with its key and what is allowed.
import { describe, expect, it } from "vitest";
import {
  CONTROLLER_CONFIG_FILES,
  controllerConfigData,
  controllerConfigDigest,
  readControllerConfig,
  type RoutesTarget,
} from "../../routes-provider/controller-config.js";
import { InputError } from "../../routing/config/errors.js";
import { parseStackConfig } from "../../routing/config/load.js";
import { minimalRaw } from "./fixtures.js";

const TARGETS: RoutesTarget[] = [
  { name: "gateway-routes", gateway: "gateway", namespace: "edge", configMap: "gateway-xds" },
];
const WHERE = "edge/route-controller";

function problems(data: Record<string, string>): string[] {
  try {
    readControllerConfig(data, WHERE);
  } catch (e) {
    if (e instanceof InputError) return e.message.split("\n").slice(1);
    throw e;
  }
  return [];
}

describe("the route controller's ConfigMap", () => {
  it("leaves the kubeconfig out and reads back the stack config, the targets and the data's digest", () => {
    const data = controllerConfigData({ ...minimalRaw(), kubeconfig: "token: t0ken" }, TARGETS);
    expect(Object.keys(data).sort()).toEqual(["routes.json", "stack-config.json"]);
    expect(JSON.stringify(data)).not.toContain("t0ken");
    const read = readControllerConfig(data, WHERE);
    expect(read.config).toEqual(parseStackConfig(minimalRaw()));
    expect(read.targets).toEqual(TARGETS);
    expect(read.digest).toBe(controllerConfigDigest(data));
    expect(controllerConfigDigest(controllerConfigData(minimalRaw(), [{ ...TARGETS[0]!, configMap: "x" }]))).not.toBe(
      read.digest,
    );
  });

  const good = () => controllerConfigData(minimalRaw(), TARGETS);
  it.each([
    ["a missing file", { [CONTROLLER_CONFIG_FILES.routes]: undefined }, "routes.json: is missing: run `pulumi up`"],
    ["stack config that is not JSON", { [CONTROLLER_CONFIG_FILES.stackConfig]: "{" }, "stack-config.json: is not JSON"],
    ["stack config that is a list", { [CONTROLLER_CONFIG_FILES.stackConfig]: "[]" }, "must be a JSON object"],
    ["targets that are not a list", { [CONTROLLER_CONFIG_FILES.routes]: "{}" }, "routes.json: must be a JSON list"],
    [
      "a target without a ConfigMap",
      { [CONTROLLER_CONFIG_FILES.routes]: JSON.stringify([{ ...TARGETS[0], configMap: "" }]) },
      "routes.json[0].configMap: must be a name",
    ],
    [
      "an unknown gateway",
      { [CONTROLLER_CONFIG_FILES.routes]: JSON.stringify([{ ...TARGETS[0], gateway: "edge" }]) },
      'routes.json[0].gateway: must be gateway or internal-gateway (got "edge")',
    ],
    [
      "a gateway listed twice",
      { [CONTROLLER_CONFIG_FILES.routes]: JSON.stringify([TARGETS[0], TARGETS[0]]) },
      "routes.json[1].gateway: gateway is listed twice",
    ],
  ])("refuses %s, naming the file", (_, change, message) => {
    const data = Object.fromEntries(
      Object.entries({ ...good(), ...change }).filter(([, v]) => v !== undefined),
    ) as Record<string, string>;
    const lines = problems(data);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(message);
  });

  it("refuses a bad stack config value with its key, as the program would", () => {
    const data = controllerConfigData({ ...minimalRaw(), envoyImage: "envoyproxy/envoy:latest" }, TARGETS);
    expect(() => readControllerConfig(data, WHERE)).toThrow(
      /route controller config \(ConfigMap edge\/route-controller\): 1 problem\n {2}- envoy-gateways:envoyImage: must be pinned/,
    );
  });
});
