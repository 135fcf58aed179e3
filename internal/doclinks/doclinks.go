// Package doclinks finds the relative links of Markdown files that lead
// nowhere: a file that does not exist, or an anchor that no heading of the
// target makes. Anchors are GitHub's: a heading's text, lower-cased, with
// everything but letters, digits, spaces, hyphens and underscores removed
// and spaces turned into hyphens; a repeated heading gets -1, -2, ...
// Links inside fenced code blocks and inline code are not links; absolute
// URLs are not checked (no network here).
package doclinks

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// Broken is one link that leads nowhere.
type Broken struct {
	File   string // the Markdown file, as given
	Line   int
	Target string // the link as written
	Reason string
}

func (b Broken) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", b.File, b.Line, b.Target, b.Reason)
}

var (
	linkPattern       = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	inlineCodePattern = regexp.MustCompile("`[^`]*`")
	headingPattern    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// Slug is the anchor GitHub makes of a heading's text.
func Slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// document is what one Markdown file offers and asks: its anchors, and its
// links with their lines.
type document struct {
	anchors map[string]bool
	links   []link
}

type link struct {
	line   int
	target string
}

func parse(data []byte) document {
	doc := document{anchors: map[string]bool{}}
	seen := map[string]int{}
	fenced := false
	scanner := bufio.NewScanner(bytes.NewReader(data))
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; scanner.Scan(); n++ {
		line := scanner.Text()
		if trimmed := strings.TrimSpace(line); strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if m := headingPattern.FindStringSubmatch(line); m != nil {
			slug := Slug(m[1])
			if k := seen[slug]; k > 0 {
				doc.anchors[fmt.Sprintf("%s-%d", slug, k)] = true
			} else {
				doc.anchors[slug] = true
			}
			seen[slug]++
		}
		for _, m := range linkPattern.FindAllStringSubmatch(inlineCodePattern.ReplaceAllString(line, ""), -1) {
			doc.links = append(doc.links, link{line: n, target: m[1]})
		}
	}
	return doc
}

// Check reads the Markdown files and returns their relative links that
// lead nowhere.
func Check(files []string) ([]Broken, error) {
	docs := map[string]document{}
	read := func(path string) (document, error) {
		abs, err := filepath.Abs(path)
		if err != nil {
			return document{}, err
		}
		if d, ok := docs[abs]; ok {
			return d, nil
		}
		data, err := os.ReadFile(abs)
		if err != nil {
			return document{}, err
		}
		docs[abs] = parse(data)
		return docs[abs], nil
	}
	var broken []Broken
	for _, file := range files {
		doc, err := read(file)
		if err != nil {
			return nil, err
		}
		for _, l := range doc.links {
			if strings.Contains(l.target, "://") || strings.HasPrefix(l.target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(l.target, "#")
			target := file
			if path != "" {
				target = filepath.Join(filepath.Dir(file), path)
				if _, err := os.Stat(target); err != nil {
					broken = append(broken, Broken{file, l.line, l.target, "no such file"})
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			d, err := read(target)
			if err != nil {
				return nil, err
			}
			if !d.anchors[anchor] {
				broken = append(broken, Broken{file, l.line, l.target, "no heading makes this anchor"})
			}
		}
	}
	return broken, nil
}
