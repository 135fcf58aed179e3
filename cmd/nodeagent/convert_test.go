//go:build !agentonly

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// convert reads files, directories and standard input, writes every
// document to standard output in order, and the summary to standard error;
// --in-place rewrites only the files it changed.
func TestConvertCommand(t *testing.T) {
	web, err := os.ReadFile("../../pkg/convert/manifest/testdata/web.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	plain := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-nginx\ndata:\n  nginx.conf: |\n    events {}\n"
	writeFile(t, filepath.Join(dir, "a-web.yaml"), string(web))
	writeFile(t, filepath.Join(dir, "b-cm.yml"), plain)
	writeFile(t, filepath.Join(dir, "notes.txt"), "not a manifest")
	writeFile(t, filepath.Join(dir, "sub", "c.yaml"), string(web))

	var stdout, stderr bytes.Buffer
	convertStdin, convertStderr = strings.NewReader(plain), &stderr
	t.Cleanup(func() { convertStdin, convertStderr = os.Stdin, os.Stderr })
	if err := runConvert([]string{dir, "-"}, &stdout); err != nil {
		t.Fatal(err)
	}
	out := stdout.String()
	if got := strings.Count(out, "driver: configmaps.nodeagent.io"); got != 2 {
		t.Errorf("%d volumes converted on standard output, want 2 (the directory's web.yaml, not sub/):\n%s", got, out)
	}
	if !strings.HasSuffix(out, "---\n"+plain) || strings.Count(out, "kind: ConfigMap") != 2 {
		t.Errorf("standard output does not hold every document in order:\n%s", out)
	}
	if !strings.Contains(stderr.String(), "converted 2 volumes in 1 object; left 1") {
		t.Errorf("summary: %s", stderr.String())
	}

	stdout.Reset()
	if err := runConvert([]string{"--in-place", "--recursive", "--workload=Deployment/web", dir}, &stdout); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a-web.yaml", "sub/c.yaml"} {
		if data, _ := os.ReadFile(filepath.Join(dir, f)); !strings.Contains(string(data), "updates: inPlace") {
			t.Errorf("%s was not rewritten in place:\n%s", f, data)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "b-cm.yml")); string(data) != plain || stdout.Len() > 0 {
		t.Errorf("a file without a pod template changed (%q), or --in-place wrote to standard output (%q)", data, stdout.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 4 {
		t.Errorf("files left beside the manifests: %v", entries)
	}
}

func TestConvertCommandRefuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "name the manifests"},
		{[]string{"-i", "-"}, "cannot rewrite standard input"},
		{[]string{"/nonexistent.yaml"}, "no such file"},
	} {
		err := runConvert(tc.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("convert %v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
