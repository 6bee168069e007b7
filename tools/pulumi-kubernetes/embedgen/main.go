// Command embedgen writes the two files that ../main.go embeds, from the
// provider module's cmd/pulumi-resource-kubernetes directory:
//
//	schema-embed.json            schema.json with "version" set to -version
//	terraform-mapping-embed.json terraform-mapping.json, compacted
//
// Usage: go run ./embedgen -version 4.25.0 -out DIR
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

const providerModule = "github.com/pulumi/pulumi-kubernetes/provider/v4"

func main() {
	version := flag.String("version", "", "provider version to write into the schema, e.g. 4.25.0")
	out := flag.String("out", ".", "directory to write the embed files into")
	flag.Parse()
	if *version == "" {
		fail("-version is required")
	}

	src := filepath.Join(moduleDir(), "cmd", "pulumi-resource-kubernetes")

	var schema map[string]json.RawMessage
	readJSON(filepath.Join(src, "schema.json"), &schema)
	v, _ := json.Marshal(*version)
	schema["version"] = v
	writeJSON(filepath.Join(*out, "schema-embed.json"), schema)

	var mapping json.RawMessage
	readJSON(filepath.Join(src, "terraform-mapping.json"), &mapping)
	var compact bytes.Buffer
	if err := json.Compact(&compact, mapping); err != nil {
		fail("compacting terraform-mapping.json: %v", err)
	}
	if err := os.WriteFile(filepath.Join(*out, "terraform-mapping-embed.json"), compact.Bytes(), 0o644); err != nil {
		fail("%v", err)
	}
}

// moduleDir downloads the provider module at the version go.mod selects (if it is not
// in the module cache yet) and returns the directory it is unpacked in.
func moduleDir() string {
	cmd := exec.Command("go", "mod", "download", "-json", providerModule)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		fail("go mod download %s: %v", providerModule, err)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		fail("go mod download %s: %v", providerModule, err)
	}
	if info.Error != "" || info.Dir == "" {
		fail("go mod download %s: %s", providerModule, info.Error)
	}
	return info.Dir
}

func readJSON(path string, into any) {
	data, err := os.ReadFile(path)
	if err != nil {
		fail("%v", err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		fail("parsing %s: %v", path, err)
	}
}

func writeJSON(path string, value any) {
	data, err := json.Marshal(value)
	if err != nil {
		fail("encoding %s: %v", path, err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "embedgen: "+format+"\n", args...)
	os.Exit(1)
}
