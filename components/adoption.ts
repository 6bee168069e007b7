// Adopting a running cluster: what the components put on objects that may exist already.

/**
 * On an object the program may find already there (adopting a running cluster): the
 * Kubernetes provider's server-side apply takes over every field the program declares,
 * whoever set it, instead of stopping at the first field conflict.
 */
export function adoptionAnnotations(adoptExisting: boolean | undefined): Record<string, string> {
  return adoptExisting ? { "pulumi.com/patchForce": "true" } : {};
}
