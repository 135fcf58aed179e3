package main

import (
	"archive/tar"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The pushed image is the built one: its labels, its entrypoint and the
// binary at /nodeagent, read back from an in-memory registry.
func TestPush(t *testing.T) {
	server := httptest.NewServer(registry.New())
	defer server.Close()
	binary, full := filepath.Join(t.TempDir(), "nodeagent"), filepath.Join(t.TempDir(), "nodeagent-full")
	for path, content := range map[string]string{binary: "not really an ELF", full: "nor this"} {
		if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	img, err := build(platformBinary{platform: v1.Platform{OS: "linux", Architecture: "amd64"}, path: binary, full: full}, "v1.2.3", "abc", false)
	if err != nil {
		t.Fatal(err)
	}
	reference := strings.TrimPrefix(server.URL, "http://") + "/team/nodeagent:v1.2.3"
	if err := pushImage(img, nil, reference); err != nil {
		t.Fatal(err)
	}
	ref, _ := name.NewTag(reference)
	pulled, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pulled.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.Labels["org.opencontainers.image.version"] != "v1.2.3" || cfg.Config.Entrypoint[0] != "/nodeagent" || cfg.Config.User != "0:0" {
		t.Errorf("pushed config %+v", cfg.Config)
	}
	want, _ := img.Digest()
	if got, _ := pulled.Digest(); got != want {
		t.Errorf("pulled digest %s, pushed %s", got, want)
	}
	layers, _ := pulled.Layers()
	if agent, full := readFile(t, layers[0], "nodeagent"), readFile(t, layers[0], "nodeagent-full"); agent != "not really an ELF" || full != "nor this" {
		t.Errorf("the layer holds /nodeagent %q and /nodeagent-full %q", agent, full)
	}
	if err := pushImage(img, nil, "not a reference!"); err == nil || !strings.Contains(err.Error(), "registry/repository:tag") {
		t.Errorf("a bad reference: %v", err)
	}
}

// Two platforms' binaries make an index of two images, each of its
// platform and holding its own binary, pushed and written as an OCI layout
// alike.
func TestIndex(t *testing.T) {
	dir := t.TempDir()
	var binaries, fulls []platformBinary
	for _, spec := range []string{"linux/amd64", "linux/arm64"} {
		for _, build := range []string{"agent", "full"} {
			path := filepath.Join(dir, build+"-"+strings.ReplaceAll(spec, "/", "-"))
			if err := os.WriteFile(path, []byte(build+" for "+spec), 0o755); err != nil {
				t.Fatal(err)
			}
			b, err := parseBinary(spec + "=" + path)
			if err != nil {
				t.Fatal(err)
			}
			if build == "agent" {
				binaries = append(binaries, b)
			} else {
				fulls = append(fulls, b)
			}
		}
	}
	if _, err := pairFull(binaries, fulls[:1]); err == nil || !strings.Contains(err.Error(), "each platform needs") {
		t.Errorf("one --full for two platforms: %v", err)
	}
	if _, err := pairFull(binaries[:1], fulls[1:]); err == nil || !strings.Contains(err.Error(), "no --full for linux/amd64") {
		t.Errorf("the other platform's --full: %v", err)
	}
	binaries, err := pairFull(binaries, fulls)
	if err != nil {
		t.Fatal(err)
	}
	index, err := buildIndex(binaries, "v1.2.3", "abc")
	if err != nil {
		t.Fatal(err)
	}
	server := httptest.NewServer(registry.New())
	defer server.Close()
	reference := strings.TrimPrefix(server.URL, "http://") + "/team/nodeagent:v1.2.3"
	if err := pushImage(nil, index, reference); err != nil {
		t.Fatal(err)
	}
	ref, _ := name.NewTag(reference)
	pulled, err := remote.Index(ref)
	if err != nil {
		t.Fatal(err)
	}
	layoutDir := filepath.Join(dir, "layout")
	if err := writeLayout(nil, index, layoutDir, "v1.2.3"); err != nil {
		t.Fatal(err)
	}
	top, topManifest := readLayout(t, layoutDir)
	if len(topManifest.Manifests) != 1 || topManifest.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v1.2.3" {
		t.Fatalf("layout's index.json: %+v", topManifest.Manifests)
	}
	fromLayout, err := top.ImageIndex(topManifest.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	for source, idx := range map[string]v1.ImageIndex{"registry": pulled, "layout": fromLayout} {
		manifest, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(manifest.Manifests) != 2 {
			t.Fatalf("%s: %d manifests, want 2", source, len(manifest.Manifests))
		}
		for _, d := range manifest.Manifests {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			cfg, _ := img.ConfigFile()
			layers, _ := img.Layers()
			if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
				t.Errorf("%s: %s's manifest is %s, want OCI's", source, d.Platform, mt)
			}
			if mt, _ := layers[0].MediaType(); mt != types.OCILayer {
				t.Errorf("%s: %s's layer is %s, want OCI's", source, d.Platform, mt)
			}
			platform := d.Platform.OS + "/" + d.Platform.Architecture
			agent, full := readFile(t, layers[0], "nodeagent"), readFile(t, layers[0], "nodeagent-full")
			if cfg.OS != d.Platform.OS || cfg.Architecture != d.Platform.Architecture || agent != "agent for "+platform || full != "full for "+platform {
				t.Errorf("%s: %s's image is %s/%s with %q and %q, want its own builds", source, d.Platform, cfg.OS, cfg.Architecture, agent, full)
			}
		}
	}
	if _, err := parseBinary("linux=path"); err == nil {
		t.Error("linux=path: no error, want OS/ARCH=PATH")
	}
}

// readFile is one file's content in a layer.
func readFile(t *testing.T, layer v1.Layer, path string) string {
	t.Helper()
	rc, err := layer.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s not in the layer: %v", path, err)
		}
		if h.Name == path {
			data, _ := io.ReadAll(tr)
			return string(data)
		}
	}
}

// One platform makes an image, or with --index an index of that one image,
// as make release and make push write it whatever platforms they build.
func TestIndexOfOnePlatform(t *testing.T) {
	dir := t.TempDir()
	var pair []platformBinary
	for _, build := range []string{"agent", "full"} {
		path := filepath.Join(dir, build)
		if err := os.WriteFile(path, []byte(build+" for linux/amd64"), 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := parseBinary("linux/amd64=" + path)
		if err != nil {
			t.Fatal(err)
		}
		pair = append(pair, b)
	}
	binaries, err := pairFull(pair[:1], pair[1:])
	if err != nil {
		t.Fatal(err)
	}
	for _, asIndex := range []bool{false, true} {
		layoutDir := filepath.Join(dir, fmt.Sprintf("layout-%v", asIndex))
		if err := write(binaries, asIndex, "v1.2.3", "abc", "", layoutDir, "", ""); err != nil {
			t.Fatal(err)
		}
		top, topManifest := readLayout(t, layoutDir)
		if len(topManifest.Manifests) != 1 {
			t.Fatalf("--index=%v: layout's index.json: %+v", asIndex, topManifest.Manifests)
		}
		if got := topManifest.Manifests[0].MediaType; !asIndex && !got.IsImage() {
			t.Errorf("without --index: %s, want an image", got)
		}
		if !asIndex {
			continue
		}
		index, err := top.ImageIndex(topManifest.Manifests[0].Digest)
		if err != nil {
			t.Fatalf("with --index: %v", err)
		}
		manifest, _ := index.IndexManifest()
		if len(manifest.Manifests) != 1 || manifest.Manifests[0].Platform == nil || manifest.Manifests[0].Platform.Architecture != "amd64" {
			t.Errorf("with --index: %+v, want one linux/amd64 image", manifest.Manifests)
		}
	}
}

// readLayout opens the OCI layout at dir: its index.json, and what it lists.
func readLayout(t *testing.T, dir string) (v1.ImageIndex, *v1.IndexManifest) {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	return top, manifest
}
