package atomicwriter

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The user-visible entries of a volume directory, and who owns them.

// syncTopLevel creates a symlink <name> -> ..data/<name> for each top-level
// name of files and removes the other symlinks into ..data among the
// user-visible entries of dir (entries, its listing). Other entries are not the writer's: they stay,
// and a name of the payload that one of them occupies gets no symlink (the
// file is still under ..data), as in the kubelet.
//
// A symlink it creates is owned as its file is (FileProjection.User); for
// a directory of several files, as the first of them by path, where the
// kubelet takes whichever its map gives first. An existing symlink keeps
// its owner, as the kubelet's do.
func syncTopLevel(dir string, entries []dirEntry, files map[string]FileProjection) error {
	want := map[string]bool{}
	for p := range files {
		want[strings.SplitN(p, "/", 2)[0]] = true
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "..") {
			continue // the writer's own entries
		}
		if e.Type()&fs.ModeSymlink == 0 {
			delete(want, name) // not ours: leave it, and the name, alone
			continue
		}
		target, err := os.Readlink(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if !strings.HasPrefix(target, dataDirName+"/") {
			delete(want, name) // a symlink, but not into ..data: not ours
			continue
		}
		if want[name] && target == filepath.Join(dataDirName, name) {
			delete(want, name) // already right
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	for name := range want {
		link := filepath.Join(dir, name)
		if err := os.Symlink(filepath.Join(dataDirName, name), link); err != nil {
			return err
		}
		if err := setOwner(link, firstUnder(files, name).User); err != nil {
			return err
		}
	}
	return nil
}

// firstUnder is the file at the top-level name, or the first by path in
// the directory it names.
func firstUnder(files map[string]FileProjection, name string) FileProjection {
	if f, ok := files[name]; ok {
		return f
	}
	first := ""
	for p := range files {
		if strings.HasPrefix(p, name+"/") && (first == "" || p < first) {
			first = p
		}
	}
	return files[first]
}

// setOwner makes user the owner of path (not of what it links to), keeping
// its group; nil leaves it as it is.
func setOwner(path string, user *int64) error {
	if user == nil {
		return nil
	}
	return os.Lchown(path, int(*user), -1)
}
