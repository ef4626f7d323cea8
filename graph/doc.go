// Package graph holds no code: its test checks the package graph of the
// module, the one-way layering of docs/design.md.
package graph
