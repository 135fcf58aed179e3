package doclinks

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestArchitectureNamesEveryPackage keeps docs/architecture.md's table of
// packages whole: every directory of pkg/ and internal/ with Go code in it
// (tests aside) has its row, as `dir/`.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	packages := map[string]bool{}
	for _, top := range []string{"pkg", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			dir, _ := filepath.Rel(root, filepath.Dir(path))
			packages[filepath.ToSlash(dir)] = true
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(packages) < 10 {
		t.Fatalf("found %d packages: the walk proves nothing", len(packages))
	}
	for dir := range packages {
		if !strings.Contains(string(doc), "`"+dir+"/`") {
			t.Errorf("docs/architecture.md has no row for %s/: say what it is for", dir)
		}
	}
}
