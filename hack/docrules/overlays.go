package main

import (
	"fmt"
	"regexp"
	"strings"
)

var (
	// applyOverlay is a command that renders one of deploy/'s parts
	// that run the image as it is.
	applyOverlay = regexp.MustCompile(`(apply -k|kustomize build|kubectl kustomize)\s+\S*deploy/(overlays/\w+|analyze-serve)\b`)
	// kustomizationBlock is a kustomization written in a page.
	kustomizationBlock = regexp.MustCompile("(?s)resources:\n.*?(?:```|YAML\n|\n\n)")
	partResource       = regexp.MustCompile(`deploy/(overlays/\w+|analyze-serve)\b`)
)

// directOverlays are the places in text that apply an overlay without
// setting its image.
func directOverlays(file, text string) []string {
	var problems []string
	for i, line := range strings.Split(text, "\n") {
		if m := applyOverlay.FindString(line); m != "" {
			problems = append(problems, fmt.Sprintf("%s:%d: %q renders an overlay as it is, whose image has no tag: go through a kustomization that sets the image (make push writes them in _output/deploy; docs/deploy.md)", file, i+1, m))
		}
	}
	for _, block := range kustomizationBlock.FindAllStringIndex(text, -1) {
		body := text[block[0]:block[1]]
		if partResource.MatchString(body) && !strings.Contains(body, "newTag:") && !strings.Contains(body, "digest:") {
			line := strings.Count(text[:block[0]], "\n") + 1
			problems = append(problems, fmt.Sprintf("%s:%d: a kustomization naming one of deploy/'s overlays sets no image (images: newTag or digest)", file, line))
		}
	}
	return problems
}
