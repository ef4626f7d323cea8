// Package profilecsv is the profile CSV vocabulary: the files collect
// writes and ingest reads (Frontier's and Vidur's layouts plus collect's
// own columns at the end), their names, headers, statistics columns and
// the CPU-overhead column stems, defined once. Layout: docs/formats.md.
package profilecsv
