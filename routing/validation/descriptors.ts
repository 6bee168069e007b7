// Envoy's API as a protobuf registry: the descriptor set of the pinned Envoy
// version (scripts/versions.env ENVOY_VERSION), every API file with its
// validate rules as github.com/envoyproxy/go-control-plane/envoy registers
// them, written by tools/envoy-api. scripts/build-components.sh builds it into
// the per-user cache and copies it here; `npm ci` copies it too. Loaded once
// per process.
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

/** The pinned Envoy API, loaded from DESCRIPTOR_FILE on first use. */
export function envoyApi(): EnvoyApi {
  api ??= loadEnvoyApi(DESCRIPTOR_FILE);
  return api;
}

/** Envoy's API from a descriptor set file, refused with the command that builds it when it is missing or lacks the validate rules. */
export function loadEnvoyApi(file: string): EnvoyApi {
  if (!existsSync(file)) {
    throw new Error(
      `Envoy API descriptors not found at ${file}: run \`bash scripts/build-components.sh --only envoy-api\` (it builds them for the pinned Envoy version and installs them there)`,
    );
  }
  const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, readFileSync(file)));
  const ext = (name: string): DescExtension => {
    const e = registry.getExtension(name);
    if (!e)
      throw new Error(
        `Envoy API descriptors at ${file} lack ${name}; rebuild them with \`bash scripts/build-components.sh --rebuild envoy-api\``,
      );
    return e;
  };
  return {
    registry,
    fieldRules: ext("validate.rules"),
    oneofRequired: ext("validate.required"),
    messageDisabled: ext("validate.disabled"),
  };
}
