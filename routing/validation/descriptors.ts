// Envoy's API as a protobuf registry: the descriptor set that
// scripts/build-envoy-descriptors.mjs compiles from the .proto files in
// @grpc/grpc-js-xds (run by `npm install`). Loaded once per process.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createFileRegistry, fromBinary, type DescExtension, type FileRegistry } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";

export const DESCRIPTOR_FILE = join(__dirname, "generated", "envoy-api.binpb");

export interface EnvoyApi {
  registry: FileRegistry;
  /** (validate.rules) on fields. */
  fieldRules: DescExtension;
  /** (validate.required) on oneofs. */
  oneofRequired: DescExtension;
  /** (validate.disabled) on messages. */
  messageDisabled: DescExtension;
}

let api: EnvoyApi | undefined;

export function envoyApi(): EnvoyApi {
  if (api) return api;
  if (!existsSync(DESCRIPTOR_FILE)) {
    throw new Error(`Envoy API descriptors not found at ${DESCRIPTOR_FILE}: run \`npm install\` (or \`node scripts/build-envoy-descriptors.mjs\`) first`);
  }
  const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, readFileSync(DESCRIPTOR_FILE)));
  const ext = (name: string): DescExtension => {
    const e = registry.getExtension(name);
    if (!e) throw new Error(`Envoy API descriptors at ${DESCRIPTOR_FILE} lack ${name}; rebuild them`);
    return e;
  };
  api = {
    registry,
    fieldRules: ext("validate.rules"),
    oneofRequired: ext("validate.required"),
    messageDisabled: ext("validate.disabled"),
  };
  return api;
}
