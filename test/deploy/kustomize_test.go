//go:build e2e

package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pinnedTag is the image tag the chart and the overlays are rendered with
// when they are compared: any tag a user would set.
const pinnedTag = "v1.2.3"

// unsetImage is what deploy/'s kustomize files name until a kustomization
// sets the image: a tag that says what to do, which no registry holds, so
// that an overlay applied as it is fails at the pull, naming the fix, and
// never runs an image nobody chose (docs/deploy.md).
const unsetImage = "ghcr.io/nodeagent-io/nodeagent:set-the-tag-with-kustomize-images"

// pinImage is a kustomization, as a user writes one, of the part of
// deploy/ at dir with the image's tag set to pinnedTag; its directory.
func pinImage(t *testing.T, dir string) string {
	t.Helper()
	pinned := t.TempDir()
	resource, err := filepath.Rel(pinned, filepath.Join(repoRoot(), dir))
	if err != nil {
		t.Fatal(err)
	}
	kustomization := "resources:\n- " + resource + "\nimages:\n- name: ghcr.io/nodeagent-io/nodeagent\n  newTag: " + pinnedTag + "\n"
	if err := os.WriteFile(filepath.Join(pinned, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	return pinned
}

// deployableParts are the parts of deploy/ a user applies, each through a
// kustomization that sets the image.
var deployableParts = []string{"deploy/overlays/before", "deploy/overlays/after", "deploy/overlays/watch",
	"deploy/overlays/csi", "deploy/overlays/csi-webhook", "deploy/overlays/csi-secrets", "deploy/analyze-serve"}

// TestKustomizeNamesNoImageUntilSet renders each deployable part of
// deploy/ as it is (every container names unsetImage: no `:latest`, no
// image nobody pushed), then through the kustomizations make push writes
// (hack/release/install-commands.sh, for an example push): every
// container runs the image pushed, by tag and digest, and the commands it
// prints name those kustomizations.
func TestKustomizeNamesNoImageUntilSet(t *testing.T) {
	kustomize := tool(t, "KUSTOMIZE_BIN", "kustomize")
	for _, part := range deployableParts {
		for _, image := range containerImages(render(t, kustomize, "build", part)) {
			if image != unsetImage {
				t.Errorf("%s as it is runs %s, want %s", part, image, unsetImage)
			}
		}
	}

	output := t.TempDir()
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	cmd := exec.Command(filepath.Join(repoRoot(), "hack/release/install-commands.sh"),
		"registry.example/team", "v1.2.3", "1.2.3", "linux/amd64 linux/arm64", digest, output)
	cmd.Dir = repoRoot()
	printed, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("install-commands.sh: %v\n%s", err, printed)
	}
	want := "registry.example/team/nodeagent:v1.2.3@" + digest
	for _, part := range deployableParts {
		name := filepath.Base(part)
		dir := filepath.Join(output, "deploy", name)
		images := containerImages(render(t, kustomize, "build", dir))
		if len(images) == 0 {
			t.Errorf("%s renders no container", dir)
		}
		for _, image := range images {
			if image != want {
				t.Errorf("make push's kustomization of %s runs %s, want %s", part, image, want)
			}
		}
		if !strings.Contains(string(printed), "deploy (before, after, watch, csi, csi-webhook, csi-secrets, analyze-serve)") || !strings.Contains(string(printed), name) {
			t.Errorf("make push's commands do not name the kustomization of %s:\n%s", part, printed)
		}
	}
}

// containerImages are the images of every container of the rendered
// workloads.
func containerImages(objects []object) []string {
	var images []string
	for _, o := range objects {
		containers, _ := lookup(o, "spec", "template", "spec", "containers").([]interface{})
		for _, c := range containers {
			if image, ok := c.(map[string]interface{})["image"].(string); ok {
				images = append(images, image)
			}
		}
	}
	return images
}
