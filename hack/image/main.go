// Command image writes nodeagent's container image as a tarball that
// `docker load` and `kind load image-archive` accept: one layer holding the
// static binary at /nodeagent, on an empty base, run as uid 0 with no
// shell, entrypoint /nodeagent. See deploy/base/daemonset.yaml for why uid 0.
//
// Usage:
//
//	go run . --binary PATH --output FILE --tag nodeagent:dev --version v1.2.3 --revision SHA
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	binary := flag.String("binary", "", "static linux/amd64 nodeagent binary")
	output := flag.String("output", "", "image tarball to write")
	tag := flag.String("tag", "nodeagent:dev", "image reference recorded in the tarball")
	version := flag.String("version", "dev", "version label")
	revision := flag.String("revision", "unknown", "git commit label")
	flag.Parse()
	if *binary == "" || *output == "" {
		fmt.Fprintln(os.Stderr, "image: --binary and --output are required")
		os.Exit(2)
	}
	if err := build(*binary, *output, *tag, *version, *revision); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func build(binaryPath, output, tag, version, revision string) error {
	data, err := os.ReadFile(binaryPath)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar(data))), nil
	})
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = "amd64", "linux"
	cfg.Config = v1.Config{
		Entrypoint: []string{"/nodeagent"},
		Cmd:        []string{"run"},
		User:       "0:0",
		WorkingDir: "/",
		Labels: map[string]string{
			"org.opencontainers.image.title":       "nodeagent",
			"org.opencontainers.image.description": "A kubelet-like node agent for ConfigMap volumes",
			"org.opencontainers.image.source":      "https://github.com/nodeagent-io/nodeagent",
			"org.opencontainers.image.version":     version,
			"org.opencontainers.image.revision":    revision,
			"org.opencontainers.image.licenses":    "Apache-2.0",
		},
	}
	// A fixed creation time keeps the image reproducible.
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return err
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(output, ref, img)
}

// layerTar is a tar stream with one executable file, /nodeagent.
func layerTar(binary []byte) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{
		Name: "nodeagent", Mode: 0o755, Size: int64(len(binary)),
		Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0), Uid: 0, Gid: 0,
	})
	_, _ = tw.Write(binary)
	_ = tw.Close()
	return buf.Bytes()
}
