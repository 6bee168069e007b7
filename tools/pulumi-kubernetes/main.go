// Command pulumi-resource-kubernetes serves the Pulumi Kubernetes provider from
// github.com/pulumi/pulumi-kubernetes/provider/v4.
//
// The provider module's own command embeds schema-embed.json and
// terraform-mapping-embed.json, which its release build generates and the module
// does not carry. scripts/build-components.sh runs ./embedgen in a temporary copy
// of this directory to produce them from the module's schema.json and
// terraform-mapping.json, then builds this package there. The two generated files
// are never committed.
//
// It also keeps the provider from leaving copies of its kubeconfig behind
// (kubeconfig_copies.go).
package main

import (
	_ "embed"
	"fmt"
	"os"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var schema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	if err := usePrivateTempDir(); err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-resource-kubernetes: cannot set up a private temporary directory for the copies of the kubeconfig: %v\n", err)
		os.Exit(1)
	}
	provider.Serve("kubernetes", version.Version, schema, terraformMapping)
}
