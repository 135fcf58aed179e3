//go:build !agentonly

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nodeagent-io/nodeagent/internal/wholefile"
	"github.com/nodeagent-io/nodeagent/pkg/convert/manifest"
)

// convertStdin and convertStderr are convert's standard input and error;
// tests replace them.
var (
	convertStdin  io.Reader = os.Stdin
	convertStderr io.Writer = os.Stderr
)

func runConvert(args []string, stdout io.Writer) error {
	fs := newFlagSet("convert [FILE | DIRECTORY | -]...", "Rewrite manifests so that the configMap volumes of their pod templates are served by the CSI driver configmaps.nodeagent.io: updates reach every container, subPath mounts included (docs/csi.md). Everything else, comments and key order included, stays as it was; a summary of what changed and what did not, and why, goes to standard error.", stdout)
	volumes := fs.StringSlice("volume", nil, "Convert only the volumes of these names (repeatable); default: every configMap volume.")
	workloads := fs.StringSlice("workload", nil, "Convert only the pod templates of these objects, as NAME or KIND/NAME (repeatable); default: every object with a pod template.")
	inPlace := fs.BoolP("in-place", "i", false, "Rewrite each file in place instead of writing every document to standard output (not with -).")
	recursive := fs.BoolP("recursive", "R", false, "Read the directories named, and theirs, recursively.")
	secrets := fs.Bool("secrets", false, "Move secret volumes, and projected volumes of configMap and secret sources, too: for a driver in its Secrets mode (docs/csi.md, \"Secrets\"); a service account's token volume and other sources stay with the kubelet.")
	grants := fs.Bool("grants", true, "After each workload with converted volumes, write the Role and RoleBinding that let its pods' service account get, list and watch exactly the objects its driver volumes read: "+
		"what the driver, reading as the pods (its default), needs. Run again, the same names are replaced. --grants=false where grants are managed elsewhere or the driver reads as itself.")
	namespace := fs.StringP("namespace", "n", "", "The namespace of objects that name none (where kubectl apply -n or helm install --namespace puts them): the grants' service account's. Default: default.")
	revert := fs.Bool("revert", false, "Move the volumes of the driver back to configMap volumes, served by the kubelet (before uninstalling the driver: docs/deploy.md, \"Uninstalling\"); --volume and --workload choose as they do for a conversion.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("name the manifests to convert: files, directories, or - for standard input (helm template ... | nodeagent convert -)")
	}
	files, err := manifestFiles(fs.Args(), *recursive)
	if err != nil {
		return err
	}
	if *inPlace && slices.Contains(files, "-") {
		return errors.New("--in-place cannot rewrite standard input")
	}
	opts := manifest.Options{Volumes: *volumes, Workloads: *workloads, Revert: *revert, Secrets: *secrets, Grants: *grants, Namespace: *namespace}
	var results []manifest.ObjectResult
	for i, file := range files {
		var out bytes.Buffer
		res, err := convertFile(file, &out, opts)
		if err != nil {
			return err
		}
		results = append(results, res...)
		if err := writeConverted(stdout, file, out.Bytes(), *inPlace, i > 0); err != nil {
			return err
		}
	}
	manifest.Summary(convertStderr, results)
	return nil
}

// convertFile converts one file, or standard input for "-".
func convertFile(file string, out io.Writer, opts manifest.Options) ([]manifest.ObjectResult, error) {
	in := convertStdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		in = f
	}
	res, err := manifest.Convert(in, out, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return res, nil
}

// writeConverted writes a file's converted documents to stdout, after a
// document separator if others came before, or back to the file.
func writeConverted(stdout io.Writer, file string, data []byte, inPlace, separate bool) error {
	if !inPlace {
		if separate {
			if _, err := io.WriteString(stdout, "---\n"); err != nil {
				return err
			}
		}
		_, err := stdout.Write(data)
		return err
	}
	old, err := os.ReadFile(file)
	if err != nil || bytes.Equal(old, data) {
		return err
	}
	info, err := os.Stat(file)
	if err != nil {
		return err
	}
	return wholefile.Write(file, data, info.Mode().Perm())
}

// manifestFiles expands directories into their YAML and JSON files, in
// lexical order; "-" and files stay as they are.
func manifestFiles(args []string, recursive bool) ([]string, error) {
	var files []string
	for _, arg := range args {
		if arg == "-" {
			files = append(files, arg)
			continue
		}
		info, err := os.Stat(arg)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			files = append(files, arg)
			continue
		}
		err = filepath.WalkDir(arg, func(p string, d os.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && p != arg && !recursive:
				return filepath.SkipDir
			case !d.IsDir() && isManifest(p):
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return files, nil
}

func isManifest(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	return ext == ".yaml" || ext == ".yml" || ext == ".json"
}
