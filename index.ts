// envoy-gateways: Kubernetes gateways on Envoy. See README.md.
import { runProgram } from "./program/main.js";

async function main() {
  return runProgram();
}

// Exported as a function: the engine calls it and awaits it at once, so a
// failure is reported as this program's error (not as an unhandled rejection).
export = main;
