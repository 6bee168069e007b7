// Command envoy-api writes Envoy's API, exactly as the pinned version of
// github.com/envoyproxy/go-control-plane/envoy registers it (imports.go imports
// every package of that module), as one binary google.protobuf.FileDescriptorSet:
// the descriptor set routing/validation decodes documents against.
//
// Written: every registered file of Envoy's v3 API (package version v3 or
// v3alphaN, or no version such as envoy.annotations; not marked frozen by its
// udpa.annotations.file_status), and every file those import, directly or not
// (validate/validate.proto, udpa/, xds/, google/api/, google/protobuf/, ...),
// each after the files it imports. The module also carries Envoy's v2 API
// (frozen, and a few v2 packages still marked active) that Envoy 1.40 no longer
// links: a v2 type in a typed_config is refused by Envoy ("could not find
// @type"), so it must not resolve here either. Options, including the
// protoc-gen-validate rules, are kept; source info is not (the generated Go
// code does not carry it).
//
// Usage: go run . -out envoy-api.binpb
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	udpa "github.com/cncf/xds/go/udpa/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// Files and extensions the validator relies on: if one is missing, the module
// or imports.go is not what this tool expects.
var required = []string{
	"envoy/config/bootstrap/v3/bootstrap.proto",
	"envoy/config/cluster/v3/cluster.proto",
	"envoy/config/route/v3/route.proto",
	"envoy/extensions/clusters/dns/v3/dns_cluster.proto",
	"envoy/extensions/transport_sockets/tls/v3/tls.proto",
	"envoy/service/discovery/v3/discovery.proto",
	"validate/validate.proto",
}

var requiredExtensions = []protoreflect.FullName{"validate.rules", "validate.required", "validate.disabled"}

// The version segment of a package name: envoy.config.cluster.v3, envoy.watchdog.v3alpha.
var packageVersion = regexp.MustCompile(`^v\d+((alpha|beta)\d*)?$`)
var v3 = regexp.MustCompile(`^v3((alpha|beta)\d*)?$`)

func main() {
	out := flag.String("out", "", "file to write the FileDescriptorSet to (required)")
	flag.Parse()
	if *out == "" {
		fail("-out is required")
	}

	var roots []protoreflect.FileDescriptor
	older := 0
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if !strings.HasPrefix(fd.Path(), "envoy/") {
			return true // included below when an Envoy file imports it
		}
		if !isV3(fd) {
			older++
			return true
		}
		roots = append(roots, fd)
		return true
	})
	sort.Slice(roots, func(i, j int) bool { return roots[i].Path() < roots[j].Path() })

	// Depth first over the imports: every file after the files it imports.
	set := &descriptorpb.FileDescriptorSet{}
	written := map[string]bool{}
	var write func(fd protoreflect.FileDescriptor)
	write = func(fd protoreflect.FileDescriptor) {
		if written[fd.Path()] {
			return
		}
		written[fd.Path()] = true
		imports := fd.Imports()
		for i := 0; i < imports.Len(); i++ {
			imp := imports.Get(i)
			if imp.IsPlaceholder() {
				fail(fmt.Sprintf("%s imports %s, which no package of the module registers", fd.Path(), imp.Path()))
			}
			write(imp.FileDescriptor)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(fd))
	}
	for _, fd := range roots {
		write(fd)
	}

	for _, path := range required {
		if !written[path] {
			fail(fmt.Sprintf("%s is not among the files written (is imports.go up to date? run bash tools/envoy-api/generate.sh)", path))
		}
	}
	for _, name := range requiredExtensions {
		if _, err := protoregistry.GlobalTypes.FindExtensionByName(name); err != nil {
			fail(fmt.Sprintf("extension %s is not registered: %v", name, err))
		}
	}
	// The set must stand on its own: building a registry from it resolves every import.
	if _, err := protodesc.NewFiles(set); err != nil {
		fail(fmt.Sprintf("the descriptor set does not resolve: %v", err))
	}

	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(set)
	if err != nil {
		fail(err.Error())
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		fail(err.Error())
	}
	partial := *out + ".partial"
	if err := os.WriteFile(partial, data, 0o644); err != nil {
		fail(err.Error())
	}
	if err := os.Rename(partial, *out); err != nil {
		fail(err.Error())
	}
	fmt.Printf("envoy-api: %d files (%d of Envoy's v3 API, %d they import; %d older Envoy files left out), %d bytes -> %s\n",
		len(set.File), len(roots), len(set.File)-len(roots), older, len(data), *out)
}

// isV3 reports whether the file belongs to Envoy's v3 API: the last version in
// its package name is v3 (envoy.api.v2.route is v2), or it has none; and it is
// not frozen.
func isV3(fd protoreflect.FileDescriptor) bool {
	version := ""
	for _, segment := range strings.Split(string(fd.Package()), ".") {
		if packageVersion.MatchString(segment) {
			version = segment
		}
	}
	if version != "" && !v3.MatchString(version) {
		return false
	}
	return !isFrozen(fd)
}

// isFrozen reports whether Envoy marks the file's package as frozen.
func isFrozen(fd protoreflect.FileDescriptor) bool {
	opts, ok := fd.Options().(*descriptorpb.FileOptions)
	if !ok || opts == nil || !proto.HasExtension(opts, udpa.E_FileStatus) {
		return false
	}
	status := proto.GetExtension(opts, udpa.E_FileStatus).(*udpa.StatusAnnotation)
	return status.GetPackageVersionStatus() == udpa.PackageVersionStatus_FROZEN
}

func fail(message string) {
	fmt.Fprintln(os.Stderr, "envoy-api:", message)
	os.Exit(1)
}
