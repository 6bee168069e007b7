// mkimage: writes a one-layer container image archive (the `docker save` format,
// which `ctr images import` reads) from a root file system directory, without a
// registry or a container engine.
//
//	mkimage -rootfs DIR -tag NAME:TAG -o OUT.tar [-entrypoint JSON] [-cmd JSON]
//	        [-user UID[:GID]] [-env K=V]... [-workdir DIR]
//
// Every file is owned by root in the layer, with its mode and a fixed time, so the
// same root file system always gives the same image digest.
package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// The image's time: fixed, so rebuilding an unchanged root file system gives the same digest.
var epoch = time.Unix(0, 0).UTC()

func main() {
	rootfs := flag.String("rootfs", "", "root file system directory")
	tag := flag.String("tag", "", "image reference, such as envoyproxy/envoy:v1.40.0")
	out := flag.String("o", "", "archive to write")
	entrypoint := flag.String("entrypoint", "", "entrypoint as a JSON array")
	cmd := flag.String("cmd", "", "command (arguments) as a JSON array")
	user := flag.String("user", "", "user to run as: UID or UID:GID")
	workdir := flag.String("workdir", "/", "working directory")
	var env listFlag
	flag.Var(&env, "env", "environment variable K=V (repeatable)")
	flag.Parse()
	if *rootfs == "" || *tag == "" || *out == "" {
		flag.Usage()
		os.Exit(2)
	}

	layer, err := layerTar(*rootfs)
	if err != nil {
		log.Fatalf("layer from %s: %v", *rootfs, err)
	}
	diffID := sha256.Sum256(layer)
	config := map[string]any{
		"Env":        append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, env...),
		"WorkingDir": *workdir,
	}
	for name, value := range map[string]string{"Entrypoint": *entrypoint, "Cmd": *cmd} {
		if value == "" {
			continue
		}
		var list []string
		if err := json.Unmarshal([]byte(value), &list); err != nil {
			log.Fatalf("-%s must be a JSON array of strings: %v", strings.ToLower(name), err)
		}
		config[name] = list
	}
	if *user != "" {
		config["User"] = *user
	}
	imageConfig, err := json.Marshal(map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"created":      epoch.Format(time.RFC3339),
		"config":       config,
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(diffID[:])}},
		"history":      []map[string]any{{"created": epoch.Format(time.RFC3339), "created_by": "envoy-gateways mkimage"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	configDigest := sha256.Sum256(imageConfig)
	configName := hex.EncodeToString(configDigest[:]) + ".json"
	layerName := hex.EncodeToString(diffID[:]) + "/layer.tar"
	manifest, _ := json.Marshal([]map[string]any{{"Config": configName, "RepoTags": []string{*tag}, "Layers": []string{layerName}}})

	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	w := tar.NewWriter(f)
	for _, entry := range []struct {
		name string
		data []byte
	}{{configName, imageConfig}, {layerName, layer}, {"manifest.json", manifest}} {
		if strings.Contains(entry.name, "/") {
			dir := filepath.Dir(entry.name) + "/"
			if err := w.WriteHeader(&tar.Header{Name: dir, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch}); err != nil {
				log.Fatal(err)
			}
		}
		if err := w.WriteHeader(&tar.Header{Name: entry.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(entry.data)), ModTime: epoch}); err != nil {
			log.Fatal(err)
		}
		if _, err := w.Write(entry.data); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %s, layer sha256:%s (%d bytes)\n", *out, *tag, hex.EncodeToString(diffID[:]), len(layer))
}

// layerTar is the root file system as one uncompressed tar, in name order.
func layerTar(root string) ([]byte, error) {
	var paths []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != root {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	for _, path := range paths {
		info, err := os.Lstat(path)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(root, path)
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(path); err != nil {
				return nil, err
			}
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return nil, err
		}
		h.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			h.Name += "/"
		}
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "root", "root"
		h.ModTime, h.AccessTime, h.ChangeTime = epoch, time.Time{}, time.Time{}
		h.Format = tar.FormatPAX
		if err := w.WriteHeader(h); err != nil {
			return nil, err
		}
		if info.Mode().IsRegular() {
			f, err := os.Open(path)
			if err != nil {
				return nil, err
			}
			_, err = io.Copy(w, f)
			f.Close()
			if err != nil {
				return nil, err
			}
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
