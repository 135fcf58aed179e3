// Package stagestest tests hack/stages.sh, the runner of `make test`'s
// stages, with a fake make: the order of foreground stages and background
// chains, the waits, the tables of times and CPU seconds, and how a
// failure in the foreground or in a chain stops the run.
package stagestest
