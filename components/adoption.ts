// Adopting a running cluster: what the components put on objects that may exist already,
// and what they say about them in the preview (docs/adopting.md).
import * as pulumi from "@pulumi/pulumi";

/**
 * On an object the program may find already there (adopting a running cluster): the
 * Kubernetes provider's server-side apply takes over every field the program declares,
 * whoever set it, instead of stopping at the first field conflict.
 */
export function adoptionAnnotations(adoptExisting: boolean | undefined): Record<string, string> {
  return adoptExisting ? { "pulumi.com/patchForce": "true" } : {};
}

/**
 * What a reviewer reads at an adopted Service in `pulumi preview` (the engine only says
 * `create`): it is applied over the running one, not created a second time or replaced.
 */
export function adoptionNote(namespace: string, name: string): string {
  return (
    `Service ${namespace}/${name} is adopted if it runs already (adoptExisting): "create" applies ` +
    "the declared fields over it, in place; it is not created twice, replaced or deleted"
  );
}

/** What a reviewer reads at a gateway Service still served by the old gateway's pods. */
export function servedByNote(namespace: string, name: string, servedBy: Record<string, string>): string {
  const labels = Object.entries(servedBy)
    .map(([k, v]) => `${k}=${v}`)
    .join(",");
  return (
    `Service ${namespace}/${name} sends its traffic to the pods ${labels} (servedBy), not to this ` +
    "gateway's Envoy pods; removing servedBy is the cutover to Envoy"
  );
}

/** Logs `note` at `resource`: preview and update print it with the resource's diagnostics. */
export function noteAt(resource: pulumi.Resource, note: string): void {
  void pulumi.log.info(note, resource);
}
