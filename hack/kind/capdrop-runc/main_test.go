package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestSpecOf(t *testing.T) {
	for _, tc := range []struct {
		args        []string
		path        string
		bareProcess bool
		ok          bool
	}{
		{[]string{"--root", "/run/runc", "create", "--bundle", "/b", "id"}, "/b/config.json", false, true},
		{[]string{"--log", "create", "run", "-b", "/b", "id"}, "/b/config.json", false, true}, // "create" is --log's value
		{[]string{"run", "id"}, "config.json", false, true},
		{[]string{"--root", "/r", "exec", "--process", "/tmp/p.json", "id"}, "/tmp/p.json", true, true},
		{[]string{"exec", "-p", "/tmp/p.json", "id"}, "/tmp/p.json", true, true},
		{[]string{"exec", "id", "sh"}, "", true, false},
		{[]string{"--root", "/r", "start", "id"}, "", false, false},
		{[]string{"delete", "--force", "id"}, "", false, false},
	} {
		path, bare, ok := specOf(tc.args)
		if path != tc.path || bare != tc.bareProcess || ok != tc.ok {
			t.Errorf("specOf(%q) = %q, %v, %v; want %q, %v, %v", tc.args, path, bare, ok, tc.path, tc.bareProcess, tc.ok)
		}
	}
}

// A capability that this process's bounding set lacks is dropped from every
// set; the ones it holds, and names this program does not know, stay.
func TestDropMissingCapabilities(t *testing.T) {
	held, err := boundingSet()
	if err != nil {
		t.Fatal(err)
	}
	missing := ""
	for _, name := range capabilityNames {
		if !held[name] {
			missing = name
			break
		}
	}
	if missing == "" {
		t.Log("this machine's bounding set is full: checking that nothing is dropped")
	}
	caps := []string{"CAP_CHOWN", "CAP_FUTURE_THING"}
	if missing != "" {
		caps = append(caps, missing)
	}
	for _, bare := range []bool{false, true} {
		process := map[string]any{"capabilities": map[string]any{"bounding": caps, "effective": caps}}
		doc := map[string]any{"ociVersion": "1.0.2", "process": process}
		if bare {
			doc = process
		}
		path := filepath.Join(t.TempDir(), "spec.json")
		raw, _ := json.Marshal(doc)
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := dropMissingCapabilities(path, bare); err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		raw, _ = os.ReadFile(path)
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		if !bare {
			if got["ociVersion"] != "1.0.2" {
				t.Errorf("the rest of the spec was lost: %v", got)
			}
			got = got["process"].(map[string]any)
		}
		for set, list := range got["capabilities"].(map[string]any) {
			var names []string
			for _, n := range list.([]any) {
				names = append(names, n.(string))
			}
			want := []string{"CAP_CHOWN", "CAP_FUTURE_THING"}
			if !slices.Equal(names, want) {
				t.Errorf("bare=%v %s: %v, want %v", bare, set, names, want)
			}
		}
	}
}
