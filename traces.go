// Package ftk holds the files the ftk binary carries inside it: the traces
// of the built-in workloads (splitwise-conv, splitwise-code,
// arxiv-summarization), so that they work from any folder. The traces
// live once in the repository, in testdata/traces, where the tests and
// the README read them too.
package ftk

import "embed"

// Traces holds testdata/traces/*.csv under those paths.
//
//go:embed testdata/traces/*.csv
var Traces embed.FS
