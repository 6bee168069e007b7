// Container image references: what one is, when it is pinned, and the
// schemas of the services' images and the gateways' Envoy image.
import { z } from "zod";

/** The parts of an image reference ([registry[:port]/]path[:tag][@sha256:<64 hex>]), or undefined when it is not one reference. */
export function parseImageReference(image: string): { name: string; tag?: string; digest?: string } | undefined {
  const m = /^([^@]+?)(?::([A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?(?:@(sha256:[a-f0-9]{64}))?$/.exec(image);
  if (!m) return undefined;
  const [, name, tag, digest] = m as unknown as [string, string, string | undefined, string | undefined];
  const components = name.split("/");
  // A first component with a dot or a port, or localhost, is the registry.
  const registry = components.length > 1 && /[.:]|^localhost$/.test(components[0]!) ? components.shift()! : undefined;
  if (registry !== undefined && !/^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?$/.test(registry))
    return undefined;
  if (!components.every((c) => /^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*$/.test(c))) return undefined;
  if (image.length > 255 + 129 + 72) return undefined;
  return { name, ...(tag !== undefined ? { tag } : {}), ...(digest !== undefined ? { digest } : {}) };
}

const IMAGE_HINT =
  "one image reference such as envoyproxy/envoy:v1.40.0, registry.example.org:5000/team/app:1.2.3 or ...@sha256:<64 hex>";

/**
 * True when an image reference is pinned: a version tag (v1.40.0,
 * 1.40.0-rc1) or a sha256 digest; never latest or untagged.
 */
export function isPinnedImage(image: string): boolean {
  const ref = parseImageReference(image);
  return (
    ref !== undefined &&
    (ref.digest !== undefined || (ref.tag !== undefined && /^v?\d+\.\d+\.\d+([-.+][0-9A-Za-z.-]+)?$/.test(ref.tag)))
  );
}

export const imageReference = z
  .string({ error: `must be ${IMAGE_HINT}` })
  .refine((image) => parseImageReference(image) !== undefined, { error: `must be ${IMAGE_HINT}`, abort: true });

/** An image reference pinned to a version tag or a digest; the error gives `example` as the way to write one. */
const pinnedImage = (example: string) =>
  imageReference.refine(isPinnedImage, {
    error: `must be pinned to a version tag or a digest (${example} or ...@sha256:<64 hex>), never latest or untagged`,
  });

export const envoyImage = pinnedImage("envoyproxy/envoy:v1.40.0");

/** The route controller's image: built from this project (scripts/route-controller-image.sh), pushed where the cluster pulls from. */
export const routeControllerImage = pinnedImage("registry.example.org/envoy-gateways/route-controller:0.1.0");
