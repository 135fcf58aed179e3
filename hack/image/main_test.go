package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// The pushed image is the built one: its labels, its entrypoint and the
// binary at /nodeagent, read back from an in-memory registry.
func TestPush(t *testing.T) {
	server := httptest.NewServer(registry.New())
	defer server.Close()
	binary := filepath.Join(t.TempDir(), "nodeagent")
	if err := os.WriteFile(binary, []byte("not really an ELF"), 0o755); err != nil {
		t.Fatal(err)
	}
	img, err := build(binary, "v1.2.3", "abc")
	if err != nil {
		t.Fatal(err)
	}
	reference := strings.TrimPrefix(server.URL, "http://") + "/team/nodeagent:v1.2.3"
	if err := pushImage(img, reference); err != nil {
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
	if err := pushImage(img, "not a reference!"); err == nil || !strings.Contains(err.Error(), "registry/repository:tag") {
		t.Errorf("a bad reference: %v", err)
	}
}
