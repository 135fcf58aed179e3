package atomicwriter

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
)

const (
	maxPathLength    = 4096
	maxElementLength = 255
)

// ErrInvalidPath is what every error of ValidatePath and
// ValidatePayloadPaths is, by errors.Is: a payload that cannot be written
// as asked, whatever the disk.
var ErrInvalidPath = errors.New("invalid payload path")

// pathError is an invalid path's error: its own message, and
// ErrInvalidPath to errors.Is.
type pathError struct{ error }

func (e pathError) Is(target error) bool { return target == ErrInvalidPath }
func (e pathError) Unwrap() error        { return e.error }

// invalid marks err, if not nil, as an invalid path's.
func invalid(err error) error {
	if err == nil {
		return nil
	}
	return pathError{err}
}

// ValidatePath checks one payload path against the rules of the kubelet's
// writer: not empty, relative, at most 4096 bytes, no ".." element, no
// element longer than 255 bytes, and a first element that does not start
// with ".." (names like ..data belong to the writer).
func ValidatePath(p string) error { return invalid(validatePath(p)) }

func validatePath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("invalid path: must not be empty")
	case len(p) > maxPathLength:
		return fmt.Errorf("invalid path %.40q...: longer than %d bytes", p, maxPathLength)
	case path.IsAbs(p):
		return fmt.Errorf("invalid path %q: must be relative", p)
	}
	elements := strings.Split(p, "/")
	for _, e := range elements {
		if e == ".." {
			return fmt.Errorf("invalid path %q: must not contain '..'", p)
		}
		if len(e) > maxElementLength {
			return fmt.Errorf("invalid path %q: element %.20q... is longer than %d bytes", p, e, maxElementLength)
		}
	}
	if strings.HasPrefix(elements[0], "..") {
		return fmt.Errorf("invalid path %q: must not start with '..'", p)
	}
	return nil
}

// ValidatePayloadPaths checks every path, and then what the API accepts but
// a directory tree cannot hold: a path that names the volume itself ("."),
// one that names a writer's entry once cleaned ("./..x"), two paths that
// name one file ("x" and "./x"), and a path that is both a file and a
// directory ("a" and "a/b"). It returns the cleaned paths.
func ValidatePayloadPaths(paths []string) (map[string]string, error) {
	cleaned, err := validatePayloadPaths(paths)
	return cleaned, invalid(err)
}

func validatePayloadPaths(paths []string) (map[string]string, error) {
	cleaned := make(map[string]string, len(paths)) // clean -> original
	sort.Strings(paths)                            // deterministic error messages
	for _, p := range paths {
		if err := ValidatePath(p); err != nil {
			return nil, err
		}
		c := path.Clean(p)
		if c == "." {
			return nil, fmt.Errorf("invalid path %q: names the volume directory itself, not a file", p)
		}
		// "./..x" passes the rules above and the API's, and names the
		// top-level entry ..x, beside the writer's own (..data, ..data_tmp,
		// each generation's ..<time>): the kubelet writes it, and with
		// "./..data" breaks its own link. Refused here, on purpose
		// (docs/kubelet-behaviour.md).
		if strings.HasPrefix(c, "..") {
			return nil, fmt.Errorf("invalid path %q: it names %q, and a name that starts with '..' belongs to the writer (..data and its generations); name the file without the leading dots",
				p, strings.SplitN(c, "/", 2)[0])
		}
		if other, dup := cleaned[c]; dup {
			return nil, fmt.Errorf("conflicting paths %q and %q: both name the file %q", other, p, c)
		}
		cleaned[c] = p
	}
	for c, p := range cleaned {
		for dir := path.Dir(c); dir != "."; dir = path.Dir(dir) {
			if other, clash := cleaned[dir]; clash {
				return nil, fmt.Errorf("conflicting paths %q and %q: %q cannot be both a file and a directory", other, p, dir)
			}
		}
	}
	return cleaned, nil
}
