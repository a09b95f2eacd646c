// Package layering holds tests of the source's structure: the import rules
// of DESIGN.md's layout, checked on the source of every package in the
// module, so that an import that breaks the layering fails make test
// instead of waiting for a review; and that API handlers register by name.
package layering
