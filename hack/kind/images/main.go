// Command images writes one container image as a tarball that `docker load`,
// `ctr images import` and `kind load image-archive` accept. build-node-image.sh
// uses it to make, from binaries built here, the images kubeadm and
// containerd would otherwise pull from registry.k8s.io.
//
// The image has at most two layers: the files of --tree (a directory, for
// example the shared libraries kube-proxy's iptables needs), then each
// --file, one executable copied to the path given. PATH is the usual one, so
// that kubeadm's static pods, which name their command without a directory,
// find it.
//
// Usage:
//
//	go run ./images --tag registry.k8s.io/kube-proxy:v1.37.2 --output kube-proxy.tar \
//	    --tree iptables-root --file /usr/local/bin/kube-proxy=_output/kind/bin/kube-proxy
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// epoch is every file's time, so that the same binaries give the same image.
var epoch = time.Unix(0, 0)

type fileFlags []string

func (f *fileFlags) String() string     { return strings.Join(*f, ",") }
func (f *fileFlags) Set(v string) error { *f = append(*f, v); return nil }

func main() {
	var files fileFlags
	tag := flag.String("tag", "", "image reference, e.g. registry.k8s.io/pause:3.10.2")
	output := flag.String("output", "", "tarball to write")
	tree := flag.String("tree", "", "directory whose contents make the first layer (optional)")
	entrypoint := flag.String("entrypoint", "", "entrypoint, comma-separated (optional)")
	flag.Var(&files, "file", "DEST=SRC: copy the executable SRC to DEST in the image (repeatable)")
	flag.Parse()
	if *tag == "" || *output == "" || (len(files) == 0 && *tree == "") {
		fmt.Fprintln(os.Stderr, "images: --tag, --output and at least one --file or --tree are required")
		os.Exit(2)
	}
	if err := write(*tag, *output, *tree, *entrypoint, files); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func write(tag, output, tree, entrypoint string, files []string) error {
	ref, err := name.ParseReference(tag)
	if err != nil {
		return err
	}
	var layers []v1.Layer
	if tree != "" {
		data, err := treeLayer(tree)
		if err != nil {
			return err
		}
		if layers, err = appendLayer(layers, data); err != nil {
			return err
		}
	}
	if len(files) > 0 {
		data, err := filesLayer(files)
		if err != nil {
			return err
		}
		if layers, err = appendLayer(layers, data); err != nil {
			return err
		}
	}
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Created = v1.Time{Time: epoch}
	cfg.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	if entrypoint != "" {
		cfg.Config.Entrypoint = strings.Split(entrypoint, ",")
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	tmp := output + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		return err
	}
	return os.Rename(tmp, output)
}

func appendLayer(layers []v1.Layer, data []byte) ([]v1.Layer, error) {
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
	if err != nil {
		return nil, err
	}
	return append(layers, layer), nil
}

// filesLayer holds each DEST=SRC executable, with the directories above it.
func filesLayer(files []string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, f := range files {
		dest, src, ok := strings.Cut(f, "=")
		if !ok || !strings.HasPrefix(dest, "/") {
			return nil, fmt.Errorf("--file %q: want /DEST=SRC", f)
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return nil, err
		}
		dest = strings.TrimPrefix(dest, "/")
		if err := writeParents(tw, dirs, dest); err != nil {
			return nil, err
		}
		hdr := &tar.Header{Name: dest, Mode: 0o755, Size: int64(len(data)), ModTime: epoch, Typeflag: tar.TypeReg}
		if err := writeEntry(tw, hdr, data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeEntry writes one header and, for a file, its content.
func writeEntry(tw *tar.Writer, hdr *tar.Header, data []byte) error {
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

func writeParents(tw *tar.Writer, done map[string]bool, path string) error {
	parts := strings.Split(path, "/")
	for i := 1; i < len(parts); i++ {
		dir := strings.Join(parts[:i], "/") + "/"
		if done[dir] {
			continue
		}
		done[dir] = true
		if err := tw.WriteHeader(&tar.Header{Name: dir, Mode: 0o755, ModTime: epoch, Typeflag: tar.TypeDir}); err != nil {
			return err
		}
	}
	return nil
}

// treeLayer holds a directory's regular files, directories and symlinks,
// in a stable order, with their modes.
func treeLayer(root string) ([]byte, error) {
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		info, err := os.Lstat(p)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(root, p)
		hdr := &tar.Header{Name: filepath.ToSlash(rel), Mode: int64(info.Mode().Perm()), ModTime: epoch}
		var data []byte
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return nil, err
			}
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
		case info.IsDir():
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
		case info.Mode().IsRegular():
			if data, err = os.ReadFile(p); err != nil {
				return nil, err
			}
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(data))
		default:
			return nil, fmt.Errorf("%s: only files, directories and symlinks go into an image", p)
		}
		if err := writeEntry(tw, hdr, data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
