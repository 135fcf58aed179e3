//go:build release

// Package release tests what `make release` writes into _output/release, as
// a user receives it: the archives of its platforms, their checksums and
// SBOMs, the krew manifest (installed by the pinned krew), the packaged Helm
// chart and the multi-architecture image's OCI layout. `make release-check`
// runs it on the release of a tagged throwaway clone, with
// NODEAGENT_RELEASE_DIR, NODEAGENT_RELEASE_VERSION (the tag) and
// NODEAGENT_RELEASE_URL (where the archives are said to be downloaded
// from) set.
package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// platforms are the release's archives' platforms: linux's and darwin's
// on amd64 and arm64, or those of the systems NODEAGENT_RELEASE_GOOS and
// the architectures NODEAGENT_RELEASE_GOARCH name (make test's
// release-check builds linux's on this machine's architecture alone).
var platforms []struct{ os, arch string }

var releaseDir, version, releaseURL string

// imageRepository is the image the release's chart runs by default:
// ghcr.io/nodeagent-io/nodeagent, or NODEAGENT_RELEASE_IMAGE's where the
// release was published elsewhere (make release-check's local stand-in).
var imageRepository = "ghcr.io/nodeagent-io/nodeagent"

func TestMain(m *testing.M) {
	releaseDir, version, releaseURL = os.Getenv("NODEAGENT_RELEASE_DIR"), os.Getenv("NODEAGENT_RELEASE_VERSION"), os.Getenv("NODEAGENT_RELEASE_URL")
	if releaseDir == "" || version == "" || releaseURL == "" {
		os.Stderr.WriteString("release: NODEAGENT_RELEASE_DIR, NODEAGENT_RELEASE_VERSION and NODEAGENT_RELEASE_URL are not set; run make release-check\n")
		os.Exit(1)
	}
	if image := os.Getenv("NODEAGENT_RELEASE_IMAGE"); image != "" {
		imageRepository = image
	}
	var err error
	if platforms, err = releasePlatforms(os.Getenv("NODEAGENT_RELEASE_GOOS"), os.Getenv("NODEAGENT_RELEASE_GOARCH")); err != nil {
		os.Stderr.WriteString("release: " + err.Error() + "\n")
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// releasePlatforms is every pair of the systems in goos and the
// architectures in goarch (space-separated lists; empty: all the release's).
func releasePlatforms(goos, goarch string) ([]struct{ os, arch string }, error) {
	systems, archs := strings.Fields(goos), strings.Fields(goarch)
	if len(systems) == 0 {
		systems = []string{"linux", "darwin"}
	}
	if len(archs) == 0 {
		archs = []string{"amd64", "arm64"}
	}
	var all []struct{ os, arch string }
	for _, s := range systems {
		if s != "linux" && s != "darwin" {
			return nil, fmt.Errorf("NODEAGENT_RELEASE_GOOS names %s; a release is for linux and darwin", s)
		}
		for _, a := range archs {
			if a != "amd64" && a != "arm64" {
				return nil, fmt.Errorf("NODEAGENT_RELEASE_GOARCH names %s; a release is for amd64 and arm64", a)
			}
			all = append(all, struct{ os, arch string }{s, a})
		}
	}
	return all, nil
}

// archiveName is a platform's archive, as docs/install.md names it: the
// tag as it is, v included.
func archiveName(osName, arch string) string {
	return "nodeagent_" + version + "_" + osName + "_" + arch + ".tar.gz"
}

// TestAssets: the release directory holds what docs/install.md says a
// release publishes, by those names, and nothing else a maintainer would
// have to sort out: per platform the archive and its SBOM, checksums.txt,
// the krew manifest nodeagent.yaml, the chart, the image's layout; and the
// agent-only builds and GoReleaser's own files the image was made from.
func TestAssets(t *testing.T) {
	want := map[string]bool{"checksums.txt": true, "nodeagent.yaml": true, "image": true,
		"nodeagent-" + strings.TrimPrefix(version, "v") + ".tgz": true}
	for _, p := range platforms {
		want[archiveName(p.os, p.arch)] = true
		want[strings.TrimSuffix(archiveName(p.os, p.arch), ".tar.gz")+".cdx.json"] = true
	}
	entries, err := os.ReadDir(releaseDir)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		found[name] = true
		// What the release is built from, not published: the image's
		// agent-only builds, GoReleaser's build directories and records.
		if want[name] || strings.HasPrefix(name, "nodeagent-agent-linux-") || e.IsDir() && strings.HasPrefix(name, "nodeagent_") ||
			name == "artifacts.json" || name == "metadata.json" || name == "config.yaml" {
			continue
		}
		t.Errorf("%s: in the release directory, not among the assets docs/install.md names", name)
	}
	for name := range want {
		if !found[name] {
			t.Errorf("%s: missing from the release directory", name)
		}
	}
}

// TestArchives: each archive holds the binary of its platform, LICENSE and
// README.md; the binary is the full build (not the agent-only one), and
// the one this machine can run prints the release's version and commit.
func TestArchives(t *testing.T) {
	for _, p := range platforms {
		files := untar(t, filepath.Join(releaseDir, archiveName(p.os, p.arch)))
		for _, name := range []string{"nodeagent", "LICENSE", "README.md"} {
			if _, ok := files[name]; !ok {
				t.Errorf("%s/%s: the archive has no %s", p.os, p.arch, name)
			}
		}
		if !strings.Contains(string(files["LICENSE"]), "Apache License") {
			t.Errorf("%s/%s: LICENSE is not the Apache License", p.os, p.arch)
		}
		binary := files["nodeagent"]
		checkBinary(t, p.os+"/"+p.arch, binary, p.os, p.arch, false)
		if p.os == runtime.GOOS && p.arch == runtime.GOARCH {
			out := run(t, executable(t, binary), "version", "-o", "json")
			var v struct{ Version, GitCommit string }
			if err := json.Unmarshal(out, &v); err != nil || v.Version != version || len(v.GitCommit) != 40 {
				t.Errorf("nodeagent version -o json: %s (%v); want version %s and a commit", out, err, version)
			}
		}
	}
}

// checkBinary requires a static Go binary of the platform, built with the
// agentonly tag exactly when agentOnly.
func checkBinary(t *testing.T, what string, binary []byte, osName, arch string, agentOnly bool) {
	t.Helper()
	machine := map[string]interface{}{
		"linux/amd64": elf.EM_X86_64, "linux/arm64": elf.EM_AARCH64,
		"darwin/amd64": macho.CpuAmd64, "darwin/arm64": macho.CpuArm64,
	}[osName+"/"+arch]
	switch osName {
	case "linux":
		f, err := elf.NewFile(bytes.NewReader(binary))
		if err != nil || f.Machine != machine {
			t.Errorf("%s: not an ELF binary for %v: %v", what, machine, err)
		} else if f.Section(".interp") != nil {
			t.Errorf("%s: dynamically linked (has .interp)", what)
		}
	case "darwin":
		f, err := macho.NewFile(bytes.NewReader(binary))
		if err != nil || f.Cpu != machine {
			t.Errorf("%s: not a Mach-O binary for %v: %v", what, machine, err)
		}
	}
	info, err := buildinfo.Read(bytes.NewReader(binary))
	if err != nil {
		t.Errorf("%s: no Go build information: %v", what, err)
		return
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if settings["GOOS"] != osName || settings["GOARCH"] != arch || settings["CGO_ENABLED"] != "0" {
		t.Errorf("%s: built for %s/%s with CGO_ENABLED=%s", what, settings["GOOS"], settings["GOARCH"], settings["CGO_ENABLED"])
	}
	if tagged := strings.Contains(settings["-tags"], "agentonly"); tagged != agentOnly {
		t.Errorf("%s: -tags %q, want the agent-only build %v", what, settings["-tags"], agentOnly)
	}
}

// TestChecksums: checksums.txt lists every archive and SBOM with its
// sha256.
func TestChecksums(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(releaseDir, "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("checksums.txt: %q is not <sha256>  <file>", line)
		}
		listed[name] = sum
	}
	for _, pattern := range []string{"*.tar.gz", "*.cdx.json"} {
		matches, _ := filepath.Glob(filepath.Join(releaseDir, pattern))
		if len(matches) != len(platforms) {
			t.Errorf("%d files match %s, want one per platform", len(matches), pattern)
		}
		for _, path := range matches {
			if got, want := sha256File(t, path), listed[filepath.Base(path)]; got != want {
				t.Errorf("%s: sha256 %s, checksums.txt says %q", filepath.Base(path), got, want)
			}
		}
	}
}

// TestSBOMs: each released binary has a CycloneDX SBOM naming the modules
// it was built from.
func TestSBOMs(t *testing.T) {
	for _, p := range platforms {
		name := strings.TrimSuffix(archiveName(p.os, p.arch), ".tar.gz") + ".cdx.json"
		data, err := os.ReadFile(filepath.Join(releaseDir, name))
		if err != nil {
			t.Error(err)
			continue
		}
		var bom struct {
			BOMFormat  string `json:"bomFormat"`
			Components []struct {
				Name, Version string
			} `json:"components"`
		}
		if err := json.Unmarshal(data, &bom); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		found := false
		for _, c := range bom.Components {
			found = found || c.Name == "k8s.io/client-go"
		}
		if bom.BOMFormat != "CycloneDX" || !found {
			t.Errorf("%s: format %q, %d components, client-go among them: %v", name, bom.BOMFormat, len(bom.Components), found)
		}
	}
}

// krewManifest is what the tests read of krew's Plugin manifest.
type krewManifest struct {
	Metadata struct{ Name string }
	Spec     struct {
		Version   string
		Platforms []struct {
			Bin      string
			URI      string
			Sha256   string
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			}
		}
	}
}

// TestKrewManifest: the manifest names each archive, by URL, with its
// sha256, for the platform it holds.
func TestKrewManifest(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(releaseDir, "nodeagent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m krewManifest
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m.Metadata.Name != "nodeagent" || m.Spec.Version != version || len(m.Spec.Platforms) != len(platforms) {
		t.Fatalf("manifest: name %q, version %q, %d platforms; want nodeagent, %s, %d", m.Metadata.Name, m.Spec.Version, len(m.Spec.Platforms), version, len(platforms))
	}
	for _, p := range m.Spec.Platforms {
		labels := p.Selector.MatchLabels
		want := archiveName(labels["os"], labels["arch"])
		if p.URI != releaseURL+"/"+want || p.Bin != "nodeagent" {
			t.Errorf("%s/%s: uri %s, bin %s; want %s/%s and nodeagent", labels["os"], labels["arch"], p.URI, p.Bin, releaseURL, want)
			continue
		}
		if got := sha256File(t, filepath.Join(releaseDir, want)); got != p.Sha256 {
			t.Errorf("%s: sha256 %s, the manifest says %s", want, got, p.Sha256)
		}
	}
}

// TestKrewInstall: the pinned krew installs the plugin from the release's
// manifest and this machine's archive into an empty krew root, and the
// command kubectl runs for `kubectl nodeagent` prints the release's version
// and calls itself kubectl nodeagent.
func TestKrewInstall(t *testing.T) {
	krew := os.Getenv("KREW_BIN")
	if krew == "" {
		t.Fatal("KREW_BIN is not set; make release-check builds krew and sets it")
	}
	root := t.TempDir()
	cmd := exec.Command(krew, "install", "--manifest="+filepath.Join(releaseDir, "nodeagent.yaml"),
		"--archive="+filepath.Join(releaseDir, archiveName(runtime.GOOS, runtime.GOARCH)))
	cmd.Env = append(os.Environ(), "KREW_ROOT="+root)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("krew install: %v\n%s", err, out)
	}
	plugin := filepath.Join(root, "bin", "kubectl-nodeagent")
	out, err := exec.Command(plugin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "nodeagent "+version+" ") {
		t.Errorf("kubectl-nodeagent version: %s (%v); want nodeagent %s", out, err, version)
	}
	out, _ = exec.Command(plugin, "--help").CombinedOutput()
	if !strings.Contains(string(out), "kubectl nodeagent") {
		t.Errorf("kubectl-nodeagent --help does not call itself kubectl nodeagent:\n%s", out)
	}
}

// TestChart: the packaged chart carries the release's version and
// appVersion, runs the release's image by default, and its schema refuses
// a misspelled mode.
func TestChart(t *testing.T) {
	chartVersion := strings.TrimPrefix(version, "v")
	chart := filepath.Join(releaseDir, "nodeagent-"+chartVersion+".tgz")
	files := untar(t, chart)
	var meta struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(files["nodeagent/Chart.yaml"], &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Version != chartVersion || meta.AppVersion != version {
		t.Errorf("Chart.yaml: version %q, appVersion %q; want %s and %s", meta.Version, meta.AppVersion, chartVersion, version)
	}
	helm := os.Getenv("HELM_BIN")
	out, err := exec.Command(helm, "template", "nodeagent", chart).CombinedOutput()
	if want := "image: \"" + imageRepository + ":" + version + "\""; err != nil || !strings.Contains(string(out), want) {
		t.Errorf("helm template of the packaged chart: %v; want %s in\n%s", err, want, out)
	}
	out, err = exec.Command(helm, "template", "nodeagent", chart, "--set", "mode=aftr").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "before") {
		t.Errorf("mode=aftr: %v, %s; want the schema's refusal naming the modes", err, out)
	}
}

func untar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return untarReader(t, path, f)
}

// untarReader reads a gzipped tar stream into a map of file name to
// content.
func untarReader(t *testing.T, what string, r io.Reader) map[string][]byte {
	t.Helper()
	gz, err := gzip.NewReader(r)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		files[h.Name] = data
	}
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// executable writes binary to a temporary file and returns its path.
func executable(t *testing.T, binary []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nodeagent")
	if err := os.WriteFile(path, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// run runs the binary at path with args and returns what it printed.
func run(t *testing.T, path string, args ...string) []byte {
	t.Helper()
	out, err := exec.Command(path, args...).Output()
	if err != nil {
		t.Fatalf("nodeagent %s: %v", strings.Join(args, " "), err)
	}
	return out
}
