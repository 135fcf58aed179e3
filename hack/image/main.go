// Command image writes nodeagent's container image as a tarball that
// `docker load` and `kind load image-archive` accept: one layer holding the
// static binary at /nodeagent, on an empty base, run as uid 0 with no
// shell, entrypoint /nodeagent. See deploy/base/daemonset.yaml for why uid 0.
//
// Usage:
//
//	go run . --binary PATH --output FILE --tag nodeagent:dev --version v1.2.3 --revision SHA
//	go run . --binary PATH --push registry.example/nodeagent:v1.2.3 --version v1.2.3 --revision SHA
//
// --push sends the image to a registry instead, with the credentials of
// ~/.docker/config.json (or $DOCKER_CONFIG) where it has some: no Docker
// engine is needed.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	binary := flag.String("binary", "", "static linux/amd64 nodeagent binary")
	output := flag.String("output", "", "image tarball to write")
	push := flag.String("push", "", "push the image to this reference (registry/repository:tag) instead of writing a tarball")
	tag := flag.String("tag", "nodeagent:dev", "image reference recorded in the tarball")
	version := flag.String("version", "dev", "version label")
	revision := flag.String("revision", "unknown", "git commit label")
	flag.Parse()
	if *binary == "" || (*output == "") == (*push == "") {
		fmt.Fprintln(os.Stderr, "image: --binary and one of --output and --push are required")
		os.Exit(2)
	}
	img, err := build(*binary, *version, *revision)
	if err == nil {
		if *push != "" {
			err = pushImage(img, *push)
		} else {
			err = writeTarball(img, *output, *tag)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// writeTarball writes img as a tarball that records it as tag.
func writeTarball(img v1.Image, output, tag string) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(output, ref, img)
}

// pushImage sends img to the registry of reference, as that tag.
func pushImage(img v1.Image, reference string) error {
	ref, err := name.NewTag(reference)
	if err != nil {
		return fmt.Errorf("--push %q: %w (want registry/repository:tag)", reference, err)
	}
	if err := remote.Write(ref, img, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("pushing to %s: %w", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("Pushed %s@%s\n", ref, digest)
	return nil
}

// build is the image: the binary at /nodeagent on an empty base, labelled
// with version and revision.
func build(binaryPath, version, revision string) (v1.Image, error) {
	data, err := os.ReadFile(binaryPath)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar(data))), nil
	})
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
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
	return mutate.ConfigFile(img, cfg)
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
