// Command image writes nodeagent's container image without a Docker
// daemon: one layer holding two static builds of nodeagent, on an empty
// base, run as uid 0 with no shell, entrypoint /nodeagent. /nodeagent is
// the agent-only build (run, csi, webhook, uninstall-check, version), which every node's agent runs
// and whose resident memory every node pays; /nodeagent-full is the full
// build (analyze and compare too), which the one replica of `analyze
// --serve` runs. See deploy/base/daemonset.yaml for why uid 0.
//
// Usage:
//
//	go run . --binary PATH --full PATH --output FILE --tag nodeagent:dev --version v1.2.3 --revision SHA
//	go run . --binary linux/amd64=PATH --full linux/amd64=PATH --binary linux/arm64=PATH --full linux/arm64=PATH --oci-layout DIR ...
//	go run . --binary linux/amd64=PATH --full linux/amd64=PATH ... --push registry.example/nodeagent:v1.2.3 ...
//	go run . --pull registry.example/nodeagent:v1.2.3 --oci-layout DIR --version v1.2.3
//
// Each --binary is one platform's agent-only build and each --full its
// full build (a bare PATH is linux/amd64's); every platform has both. One
// platform gives an image, and several a multi-architecture index of one
// image each; --index gives an index of one platform too (make release and
// make push: what a release publishes is an index, whatever it holds). --output writes a tarball that `docker load` and `kind load
// image-archive` accept (one platform only); --oci-layout writes an OCI
// image layout directory, the index tagged with the version; --push sends
// the image or index to a registry with the credentials of
// ~/.docker/config.json (or $DOCKER_CONFIG) where it has some (plain HTTP
// for localhost registries). --pull does the opposite of --push for a
// published index: it writes it, as the registry serves it, into an OCI
// layout tagged with --version, where make release-check-published tests
// it as make release-check tests the release's own.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// platformBinary is one platform's static nodeagent builds: path the
// agent-only one, full the full one.
type platformBinary struct {
	platform v1.Platform
	path     string
	full     string
}

func main() {
	var binaries, fulls []platformBinary
	flag.Func("binary", "a static agent-only nodeagent build, as OS/ARCH=PATH or PATH (linux/amd64); repeat for a multi-architecture index", func(v string) error {
		b, err := parseBinary(v)
		binaries = append(binaries, b)
		return err
	})
	flag.Func("full", "the same platform's full build, as OS/ARCH=PATH or PATH (linux/amd64); one for each --binary", func(v string) error {
		b, err := parseBinary(v)
		fulls = append(fulls, b)
		return err
	})
	asIndex := flag.Bool("index", false, "write or push an index even of one platform, as a release publishes")
	output := flag.String("output", "", "image tarball to write (one platform)")
	ociLayout := flag.String("oci-layout", "", "OCI image layout directory to write the image or index into")
	push := flag.String("push", "", "push the image or index to this reference (registry/repository:tag)")
	pull := flag.String("pull", "", "instead of building, pull the index at this reference into --oci-layout")
	tag := flag.String("tag", "nodeagent:dev", "image reference recorded in the tarball")
	version := flag.String("version", "dev", "version label")
	revision := flag.String("revision", "unknown", "git commit label")
	flag.Parse()
	if *pull != "" {
		if *ociLayout == "" || len(binaries) > 0 || *output != "" || *push != "" {
			fmt.Fprintln(os.Stderr, "image: --pull writes into --oci-layout, and takes no --binary, --output or --push")
			os.Exit(2)
		}
		if err := pullIndex(*pull, *ociLayout, *version); err != nil {
			fmt.Fprintln(os.Stderr, "image:", err)
			os.Exit(1)
		}
		return
	}
	outputs := 0
	for _, o := range []string{*output, *ociLayout, *push} {
		if o != "" {
			outputs++
		}
	}
	if len(binaries) == 0 || outputs != 1 {
		fmt.Fprintln(os.Stderr, "image: one or more --binary and one of --output, --oci-layout and --push are required")
		os.Exit(2)
	}
	binaries, err := pairFull(binaries, fulls)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(2)
	}
	if err := write(binaries, *asIndex, *version, *revision, *output, *ociLayout, *push, *tag); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// write builds the image of one binary, or the index of several (or of
// one, asIndex), and writes it to the one output given.
func write(binaries []platformBinary, asIndex bool, version, revision, output, ociLayout, push, tag string) error {
	if len(binaries) == 1 && !asIndex {
		img, err := build(binaries[0], version, revision, false)
		switch {
		case err != nil:
			return err
		case output != "":
			return writeTarball(img, output, tag)
		case ociLayout != "":
			return writeLayout(img, nil, ociLayout, version)
		default:
			return pushImage(img, nil, push)
		}
	}
	if output != "" {
		return errors.New("--output writes one platform's image; use --oci-layout or --push for several")
	}
	index, err := buildIndex(binaries, version, revision)
	switch {
	case err != nil:
		return err
	case ociLayout != "":
		return writeLayout(nil, index, ociLayout, version)
	default:
		return pushImage(nil, index, push)
	}
}

func parseBinary(v string) (platformBinary, error) {
	spec, path, found := strings.Cut(v, "=")
	if !found {
		return platformBinary{platform: v1.Platform{OS: "linux", Architecture: "amd64"}, path: v}, nil
	}
	osName, arch, ok := strings.Cut(spec, "/")
	if !ok || osName == "" || arch == "" || path == "" {
		return platformBinary{}, fmt.Errorf("%q: want OS/ARCH=PATH, e.g. linux/arm64=_output/bin/nodeagent-linux-arm64", v)
	}
	return platformBinary{platform: v1.Platform{OS: osName, Architecture: arch}, path: path}, nil
}

// pairFull gives each platform's agent-only build its full build, and
// refuses a platform with one and not the other.
func pairFull(binaries, fulls []platformBinary) ([]platformBinary, error) {
	if len(fulls) != len(binaries) {
		return nil, fmt.Errorf("%d --binary and %d --full: each platform needs its agent-only build and its full build", len(binaries), len(fulls))
	}
	for i, b := range binaries {
		found := false
		for _, f := range fulls {
			if f.platform.OS == b.platform.OS && f.platform.Architecture == b.platform.Architecture {
				binaries[i].full, found = f.path, true
			}
		}
		if !found {
			return nil, fmt.Errorf("no --full for %s/%s", b.platform.OS, b.platform.Architecture)
		}
	}
	return binaries, nil
}

// buildIndex is the multi-architecture index of one image per binary.
func buildIndex(binaries []platformBinary, version, revision string) (v1.ImageIndex, error) {
	var adds []mutate.IndexAddendum
	for _, b := range binaries {
		img, err := build(b, version, revision, true)
		if err != nil {
			return nil, err
		}
		platform := b.platform
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &platform}})
	}
	index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	return mutate.AppendManifests(index, adds...), nil
}

// writeTarball writes img as a tarball that records it as tag.
func writeTarball(img v1.Image, output, tag string) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(output, ref, img)
}

// writeLayout writes the image or index into a new OCI layout at dir, its
// top descriptor annotated with the version as its tag.
func writeLayout(img v1.Image, index v1.ImageIndex, dir, version string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	tagged := layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": version})
	if index != nil {
		return p.AppendIndex(index, tagged)
	}
	return p.AppendImage(img, tagged)
}

// pullIndex writes the index at reference, as the registry serves it, into
// an OCI layout at dir, tagged with version.
func pullIndex(reference, dir, version string) error {
	ref, err := name.NewTag(reference)
	if err != nil {
		return fmt.Errorf("--pull %q: %w (want registry/repository:tag)", reference, err)
	}
	index, err := remote.Index(ref, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		return fmt.Errorf("pulling %s: %w", ref, err)
	}
	return writeLayout(nil, index, dir, version)
}

// pushImage sends the image or index to the registry of reference, as that
// tag.
func pushImage(img v1.Image, index v1.ImageIndex, reference string) error {
	ref, err := name.NewTag(reference)
	if err != nil {
		return fmt.Errorf("--push %q: %w (want registry/repository:tag)", reference, err)
	}
	auth := remote.WithAuthFromKeychain(authn.DefaultKeychain)
	var digest v1.Hash
	if index != nil {
		err = remote.WriteIndex(ref, index, auth)
		if err == nil {
			digest, err = index.Digest()
		}
	} else {
		err = remote.Write(ref, img, auth)
		if err == nil {
			digest, err = img.Digest()
		}
	}
	if err != nil {
		return fmt.Errorf("pushing to %s: %w", ref, err)
	}
	fmt.Printf("Pushed %s@%s\n", ref, digest)
	return nil
}

// build is the image: the builds at /nodeagent and /nodeagent-full on an empty base, labelled
// with version and revision, for the binary's platform; in Docker's media
// types, which `docker load` wants, or in OCI's, for an OCI index.
func build(binary platformBinary, version, revision string, oci bool) (v1.Image, error) {
	layerData, err := layerTar(map[string]string{"nodeagent": binary.path, "nodeagent-full": binary.full})
	if err != nil {
		return nil, err
	}
	base, layerType := empty.Image, types.DockerLayer
	if oci {
		base = mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
		layerType = types.OCILayer
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerData)), nil
	}, tarball.WithMediaType(layerType))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = binary.platform.Architecture, binary.platform.OS
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

// layerTar is a tar stream of executable files, each at its name from the
// file at its path, in the order of their names (a reproducible layer).
func layerTar(files map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		data, err := os.ReadFile(files[name])
		if err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{
			Name: name, Mode: 0o755, Size: int64(len(data)),
			Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0), Uid: 0, Gid: 0,
		}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
