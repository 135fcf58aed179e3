package stagestest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeMake stands in for make: `fakemake --no-print-directory STAGE`
// prints the stage and its nice value and appends the stage to ran.txt;
// a stage named slow* sleeps a second first, fail* exits 4, hang* sleeps
// two seconds, then writes hang.done, unless it was killed, and spin*
// counts for a few seconds of CPU.
const fakeMake = `#!/usr/bin/env bash
name=$2
case $name in
  slow*) sleep 1 ;;
  fail*) echo "$name fails"; exit 4 ;;
  hang*) sleep 2; touch hang.done ;;
  spin*) i=0; while ((i < 1500000)); do ((i++)); done ;;
esac
echo "$name ran at nice $(nice)"
echo "$name" >>ran.txt
`

type run struct {
	dir    string
	output string
	code   int
}

// runStages runs a copy of hack/stages.sh in a directory of its own with
// the fake make and the stages given.
func runStages(t *testing.T, stages ...string) run {
	t.Helper()
	dir := t.TempDir()
	script, err := os.ReadFile("../stages.sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "hack"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hack", "stages.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fakemake"), []byte(fakeMake), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(dir, "hack", "stages.sh"), append([]string{"./fakemake"}, stages...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return run{dir: dir, output: string(out), code: code}
}

func (r run) file(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.dir, name))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(data)
}

// seconds is the seconds a timings file gives stage.
func seconds(t *testing.T, table, stage string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(stage) + `\s+(\d+)s$`).FindStringSubmatch(table)
	if m == nil {
		t.Fatalf("no line for %s:\n%s", stage, table)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// names are the stage names of a timings file, in its order.
func names(table string) []string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(table), "\n") {
		out = append(out, strings.TrimSpace(regexp.MustCompile(`\s+\d+s$`).ReplaceAllString(line, "")))
	}
	return out
}

func TestChainsRunInOrderBesideTheForeground(t *testing.T) {
	t.Parallel()
	r := runStages(t, "a", "bg:slow-b,c", "d", "wait:slow-b", "e", "wait", "f")
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.output)
	}
	// The chain's first stage sleeps, so the foreground's d runs before
	// it ends; its second stage, c, runs after it.
	ran := strings.Fields(r.file(t, "ran.txt"))
	pos := map[string]int{}
	for i, name := range ran {
		pos[name] = i
	}
	if len(ran) != 6 || pos["d"] > pos["slow-b"] || pos["slow-b"] > pos["c"] || pos["e"] < pos["slow-b"] {
		t.Errorf("stages ran in the order %v", ran)
	}
	// The foreground runs at the test's own nice value (make test runs
	// the unit tests in a chain, at 19), the chains at 19.
	own, err := exec.Command("nice").Output()
	if err != nil {
		t.Fatal(err)
	}
	fg := strings.TrimSpace(string(own))
	for _, want := range []string{"a ran at nice " + fg, "slow-b ran at nice 19", "c ran at nice 19", "f ran at nice " + fg} {
		if !strings.Contains(r.output, want) {
			t.Errorf("the output has no %q:\n%s", want, r.output)
		}
	}
	timings := r.file(t, "_output/test-timings.txt")
	got := strings.Join(names(timings), ",")
	// c ends while the foreground waits for slow-b or right after: its
	// line is written at the next boundary, before wait or after it.
	if got != "a,d,slow-b (background),c (background),wait:slow-b,e,wait,f,total" &&
		got != "a,d,slow-b (background),wait:slow-b,e,c (background),wait,f,total" &&
		got != "a,d,slow-b (background),wait:slow-b,c (background),e,wait,f,total" {
		t.Errorf("the timings' stages are %s:\n%s", got, timings)
	}
	// slow-b sleeps a second: its line says at least that, and no more
	// than the whole run took (a loaded machine adds to both).
	if own, total := seconds(t, timings, "slow-b (background)"), seconds(t, timings, "total"); own < 1 || own > total {
		t.Errorf("the background stage's line says %ds, want its own second or more, within the run's %ds:\n%s", own, total, timings)
	}
	cpu := r.file(t, "_output/test-cpu.txt")
	if got := names(cpu); len(got) != 7 || got[6] != "total" {
		t.Errorf("CPU seconds for %v, want every stage but the waits, and the total:\n%s", got, cpu)
	}
	if !strings.Contains(r.output, "CPU") {
		t.Errorf("the table at the end has no CPU column:\n%s", r.output)
	}
}

func TestBackgroundFailureStopsTheRunAtTheNextBoundary(t *testing.T) {
	t.Parallel()
	r := runStages(t, "bg:fail-x,never", "slow-a", "b")
	if r.code != 4 {
		t.Fatalf("exit %d, want the failed stage's 4:\n%s", r.code, r.output)
	}
	if ran := r.file(t, "ran.txt"); ran != "slow-a\n" {
		t.Errorf("ran %q, want slow-a alone: the run stops at the boundary after it", ran)
	}
	for _, want := range []string{"the background stage fail-x (exit 4", "fail-x fails", "stopped at a failure, exit 4"} {
		if !strings.Contains(r.output, want) {
			t.Errorf("the output has no %q:\n%s", want, r.output)
		}
	}
}

func TestWaitForAStageThatNeverRan(t *testing.T) {
	t.Parallel()
	r := runStages(t, "bg:fail-x,needed", "wait:needed", "after")
	if r.code == 0 || !strings.Contains(r.output, "the background stage needed did not run") {
		t.Errorf("exit %d:\n%s", r.code, r.output)
	}
	r = runStages(t, "a", "wait:unknown")
	if r.code != 2 || !strings.Contains(r.output, "no background stage unknown was started before it") {
		t.Errorf("exit %d:\n%s", r.code, r.output)
	}
}

func TestForegroundFailureStopsTheChains(t *testing.T) {
	t.Parallel()
	r := runStages(t, "bg:hang", "fail-a", "b")
	if r.code != 4 || !strings.Contains(r.output, "stopped the background chain hang") {
		t.Fatalf("exit %d:\n%s", r.code, r.output)
	}
	time.Sleep(3 * time.Second) // past the hanging stage's sleep, had it not been killed
	if _, err := os.Stat(filepath.Join(r.dir, "hang.done")); err == nil {
		t.Error("the background stage went on after the run stopped")
	}
}

// A stage's CPU seconds are its processes', in the foreground and in a
// chain alike.
func TestCPUSecondsCounted(t *testing.T) {
	t.Parallel()
	r := runStages(t, "spin-a", "bg:spin-b", "wait")
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.output)
	}
	cpu := r.file(t, "_output/test-cpu.txt")
	for _, stage := range []string{"spin-a", "spin-b (background)"} {
		if seconds(t, cpu, stage) == 0 {
			t.Errorf("no CPU second for %s:\n%s", stage, cpu)
		}
	}
}
