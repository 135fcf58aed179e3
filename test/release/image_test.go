//go:build release

package release

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// ociDescriptor is an OCI content descriptor, as much of it as the test
// reads.
type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

// ociLayout reads blobs of an OCI image layout directory.
type ociLayout struct {
	t   *testing.T
	dir string
}

func (l ociLayout) blob(digest string) []byte {
	l.t.Helper()
	algorithm, hex, _ := strings.Cut(digest, ":")
	data, err := os.ReadFile(filepath.Join(l.dir, "blobs", algorithm, hex))
	if err != nil {
		l.t.Fatal(err)
	}
	return data
}

func (l ociLayout) decode(data []byte, v interface{}) {
	l.t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		l.t.Fatal(err)
	}
}

// TestImageIndex: the OCI layout holds one index, tagged with the release's
// version, of an image for each linux platform of the release (linux/amd64
// and linux/arm64, or NODEAGENT_RELEASE_GOARCH's); each is labelled with
// the version and the license and holds, at /nodeagent, the agent-only
// build of its platform and, at /nodeagent-full, its full build (which
// analyze --serve runs); the one this machine runs prints the version and
// says analyze is not in the first, and runs analyze from the second.
func TestImageIndex(t *testing.T) {
	l := ociLayout{t, filepath.Join(releaseDir, "image")}
	var top struct{ Manifests []ociDescriptor }
	data, err := os.ReadFile(filepath.Join(l.dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	l.decode(data, &top)
	if len(top.Manifests) != 1 || top.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != version {
		t.Fatalf("index.json: %+v; want one index tagged %s", top.Manifests, version)
	}
	var index struct{ Manifests []ociDescriptor }
	l.decode(l.blob(top.Manifests[0].Digest), &index)
	seen := map[string]bool{}
	for _, d := range index.Manifests {
		if d.Platform == nil {
			t.Errorf("%s has no platform", d.Digest)
			continue
		}
		platform := d.Platform.OS + "/" + d.Platform.Architecture
		seen[platform] = true
		if d.MediaType != "application/vnd.oci.image.manifest.v1+json" {
			t.Errorf("%s: manifest of media type %s, want OCI's", platform, d.MediaType)
		}
		var manifest struct {
			Config ociDescriptor
			Layers []ociDescriptor
		}
		l.decode(l.blob(d.Digest), &manifest)
		var config struct {
			OS           string `json:"os"`
			Architecture string `json:"architecture"`
			Config       struct {
				Entrypoint []string
				Labels     map[string]string
			} `json:"config"`
		}
		l.decode(l.blob(manifest.Config.Digest), &config)
		labels := config.Config.Labels
		if config.OS+"/"+config.Architecture != platform || labels["org.opencontainers.image.version"] != version ||
			labels["org.opencontainers.image.licenses"] != "Apache-2.0" || strings.Join(config.Config.Entrypoint, " ") != "/nodeagent" {
			t.Errorf("%s: config %+v", platform, config)
		}
		if len(manifest.Layers) != 1 {
			t.Errorf("%s: %d layers, want 1", platform, len(manifest.Layers))
			continue
		}
		files := untarReader(t, platform, bytes.NewReader(l.blob(manifest.Layers[0].Digest)))
		binary, full := files["nodeagent"], files["nodeagent-full"]
		checkBinary(t, platform+" image", binary, d.Platform.OS, d.Platform.Architecture, true)
		checkBinary(t, platform+" image's full build", full, d.Platform.OS, d.Platform.Architecture, false)
		if d.Platform.OS == runtime.GOOS && d.Platform.Architecture == runtime.GOARCH {
			path := executable(t, binary)
			if out := run(t, path, "version"); !strings.HasPrefix(string(out), "nodeagent "+version+" ") {
				t.Errorf("%s image: nodeagent version: %s", platform, out)
			}
			out, err := exec.Command(path, "analyze").CombinedOutput()
			if err == nil || !strings.Contains(string(out), "agent-only build") {
				t.Errorf("%s image: nodeagent analyze: %v, %s; want the agent-only build's refusal", platform, err, out)
			}
			if out := run(t, executable(t, full), "analyze", "--help"); !strings.Contains(string(out), "--serve") {
				t.Errorf("%s image: nodeagent-full analyze --help: %s; want analyze's flags", platform, out)
			}
		}
	}
	var want []string
	for _, p := range platforms {
		if p.os == "linux" {
			want = append(want, p.os+"/"+p.arch)
		}
	}
	for _, p := range want {
		if !seen[p] {
			t.Errorf("the index's platforms: %v; want %v", seen, want)
			break
		}
	}
	if len(seen) != len(want) {
		t.Errorf("the index's platforms: %v; want %v", seen, want)
	}
}
