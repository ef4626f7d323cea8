// Package dataset is the Arrow profile dataset: one long-format Arrow IPC
// file per operator family and measurement type
// (<family>.<MEASUREMENT>.arrow) beside manifest.json, which ingest writes
// and fit, validate and "ingest --summary" read (Load). It defines the
// file's columns, schema metadata and manifest once. Layout:
// docs/formats.md.
package dataset
