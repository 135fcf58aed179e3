//go:build e2e

package e2e

import (
	"archive/tar"
	"compress/gzip"
	"debug/elf"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// readTar returns the files of a tar stream by name.
func readTar(t *testing.T, r io.Reader) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = data
	}
}

// The tarball `make image` writes is a loadable image whose one layer holds
// two working, static builds of nodeagent: the agent-only one at
// /nodeagent, the entrypoint, and the full one at /nodeagent-full.
func TestImageTarball(t *testing.T) {
	path := os.Getenv("NODEAGENT_IMAGE_TAR")
	if path == "" {
		path = filepath.Join(repoRoot(t), "_output", "nodeagent-image.tar")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v; run `make image` (or `make e2e`)", err)
	}
	defer f.Close()
	archive := readTar(t, f)

	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(archive["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("manifest.json: %v (%d images)", err, len(manifest))
	}
	m := manifest[0]
	if len(m.RepoTags) != 1 || !strings.HasPrefix(m.RepoTags[0], "nodeagent:") {
		t.Errorf("repo tags %v, want nodeagent:<tag> (what the kind overlay runs)", m.RepoTags)
	}
	var config struct {
		Architecture, OS string
		Config           struct {
			Entrypoint, Cmd []string
			User            string
			Labels          map[string]string
		}
	}
	if err := json.Unmarshal(archive[m.Config], &config); err != nil {
		t.Fatal(err)
	}
	c := config.Config
	if config.OS != "linux" || config.Architecture != "amd64" || strings.Join(c.Entrypoint, " ") != "/nodeagent" ||
		strings.Join(c.Cmd, " ") != "run" || c.User != "0:0" {
		t.Errorf("config: %+v", config)
	}
	for _, label := range []string{"org.opencontainers.image.title", "org.opencontainers.image.version", "org.opencontainers.image.revision", "org.opencontainers.image.source"} {
		if c.Labels[label] == "" {
			t.Errorf("label %s missing", label)
		}
	}

	if len(m.Layers) != 1 {
		t.Fatalf("%d layers, want 1", len(m.Layers))
	}
	gz, err := gzip.NewReader(strings.NewReader(string(archive[m.Layers[0]])))
	if err != nil {
		t.Fatal(err)
	}
	layer := readTar(t, gz)
	if len(layer) != 2 || layer["nodeagent"] == nil || layer["nodeagent-full"] == nil {
		t.Fatalf("layer holds %d files, want nodeagent and nodeagent-full", len(layer))
	}
	bin := filepath.Join(t.TempDir(), "nodeagent")
	full := filepath.Join(t.TempDir(), "nodeagent-full")
	for path, name := range map[string]string{bin: "nodeagent", full: "nodeagent-full"} {
		if err := os.WriteFile(path, layer[name], 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(path, "version").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "nodeagent ") || !strings.Contains(string(out), c.Labels["org.opencontainers.image.revision"]) {
			t.Errorf("%s version from the image: %q, %v", name, out, err)
		}
		checkStatic(t, path)
	}
	// The agent-only build has no analyze; the full one, which the
	// analyzer's Deployment runs, has it.
	if out, err := exec.Command(bin, "analyze").CombinedOutput(); err == nil || !strings.Contains(string(out), "agent-only build") {
		t.Errorf("/nodeagent analyze: %v, %s; want the agent-only build's refusal", err, out)
	}
	if out, err := exec.Command(full, "analyze", "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "--serve") {
		t.Errorf("/nodeagent-full analyze --help: %v, %s", err, out)
	}
}

// checkStatic fails t if the binary at path needs a dynamic loader: it
// must run in a scratch image.
func checkStatic(t *testing.T, path string) {
	t.Helper()
	exe, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Close()
	for _, prog := range exe.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Errorf("%s needs a dynamic loader; build it with CGO_ENABLED=0", filepath.Base(path))
		}
	}
}
