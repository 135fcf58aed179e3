//go:build !linux

package atomicwriter

import "os"

// listDir lists the directory at path, each entry with its type.
func listDir(path string) ([]dirEntry, error) {
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	out := make([]dirEntry, len(entries))
	for i, e := range entries {
		out[i] = dirEntry{name: e.Name(), typ: e.Type()}
	}
	return out, nil
}
