package atomicwriter

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Reading a volume's current generation: where ..data points, and whether
// what it holds is a payload's.

// dataLink is what a volume directory's ..data is: a symlink's target,
// or blocked where it is there but is not a symlink.
type dataLink struct {
	target  string
	blocked bool
}

// readDataLink reads dir's ..data. The target may be dangling: the
// generation it names is looked at by whoever uses it.
func readDataLink(dir string) (dataLink, error) {
	target, err := os.Readlink(filepath.Join(dir, dataDirName))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return dataLink{}, nil
	case errors.Is(err, syscall.EINVAL): // not a symlink
		return dataLink{blocked: true}, nil
	case err != nil:
		return dataLink{}, err
	}
	return dataLink{target: target}, nil
}

// currentGeneration returns the generation ..data points at, or "" if
// there is none usable (never written, a dangling link after a crash, or a
// ..data that is not a symlink).
func currentGeneration(dir string) (string, error) {
	link, err := readDataLink(dir)
	if err != nil || link.target == "" {
		return "", err
	}
	if info, err := os.Stat(filepath.Join(dir, link.target)); err != nil || !info.IsDir() {
		return "", nil
	}
	return link.target, nil
}

// generationEquals reports whether genDir holds exactly files, byte for
// byte: the same paths, each a regular file of the same content. A genDir
// that is gone or is not a directory (a dangling ..data) holds nothing.
func generationEquals(genDir string, files map[string]FileProjection) (bool, error) {
	seen, same, err := compareDir(genDir, "", files)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return false, nil
	}
	return same && seen == len(files), err
}

// compareDir compares the directory dir, at the payload path prefix, with
// files: whether every entry in it is a file of files with its content,
// and how many files it holds.
func compareDir(dir, prefix string, files map[string]FileProjection) (seen int, same bool, err error) {
	entries, err := listDir(dir)
	if err != nil {
		return 0, false, err
	}
	for _, e := range entries {
		rel, full := prefix+e.Name(), dir+"/"+e.Name()
		switch {
		case e.IsDir():
			n, same, err := compareDir(full, rel+"/", files)
			if err != nil || !same {
				return 0, false, err
			}
			seen += n
		case e.Type().IsRegular():
			want, ok := files[rel]
			if !ok {
				return 0, false, nil
			}
			if same, err := fileEquals(full, want.Data); err != nil || !same {
				return 0, false, err
			}
			seen++
		default:
			return 0, false, nil
		}
	}
	return seen, true, nil
}
