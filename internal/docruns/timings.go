package docruns

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Stage is one timed stage of a run of stages, as hack/stages.sh
// (`make test`) and hack/e2e-kind.sh write them: "NAME  SECONDSs" a line,
// a background stage's NAME ending in " (background)".
type Stage struct {
	Name    string `json:"name"`
	Seconds int    `json:"seconds"`
}

// ParseTimings reads a timings file.
func ParseTimings(r io.Reader) ([]Stage, error) {
	var stages []Stage
	scanner := bufio.NewScanner(r)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) < 2 {
			continue
		}
		last := fields[len(fields)-1]
		seconds, err := strconv.Atoi(strings.TrimSuffix(last, "s"))
		if err != nil || !strings.HasSuffix(last, "s") {
			return nil, fmt.Errorf("timings line %q: want NAME and SECONDSs", scanner.Text())
		}
		stages = append(stages, Stage{Name: strings.Join(fields[:len(fields)-1], " "), Seconds: seconds})
	}
	return stages, scanner.Err()
}

// FormatSeconds writes a duration as the docs do: "47 m 18 s", "33 s".
func FormatSeconds(seconds float64) string {
	d := time.Duration(seconds * float64(time.Second)).Round(time.Second)
	m, s := int(d/time.Minute), int((d%time.Minute)/time.Second)
	if m == 0 {
		return fmt.Sprintf("%d s", s)
	}
	return fmt.Sprintf("%d m %d s", m, s)
}

// stagesLine is a list of stages as a sentence: "controlplane 3 m 47 s,
// refkubelet 6 m 5 s, …", leaving out those named in skip.
func stagesLine(r *Record, path string, skip []string) (string, error) {
	v, err := r.Value(path)
	if err != nil {
		return "", err
	}
	list, ok := v.([]any)
	if !ok {
		return "", fmt.Errorf("run %s: %s is not a list of stages", r.Name, path)
	}
	var parts []string
	for _, e := range list {
		stage, ok := e.(map[string]any)
		name, _ := stage["name"].(string)
		seconds, isNumber := stage["seconds"].(float64)
		if !ok || !isNumber {
			return "", fmt.Errorf("run %s: %s holds %v, not a stage", r.Name, path, e)
		}
		if slices.Contains(skip, name) {
			continue
		}
		parts = append(parts, name+" "+FormatSeconds(seconds))
	}
	return strings.Join(parts, ", "), nil
}
