// The envoy-gateways policy pack. Constructing the PolicyPack starts the
// policy server, so this file does nothing else; the policies live in
// policies.ts.
import { PolicyPack } from "@pulumi/policy";
import { policies } from "./policies.js";

new PolicyPack("envoy-gateways", { policies });
