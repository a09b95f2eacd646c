// Package layering holds tests of the source's structure: a rank table of
// every package of the module (leaves, the middle layers, the coordinators
// and handlers, admin, broker, the binaries and the harness), under which
// imports point down and packages of one rank never import each other,
// plus the pairs the ranks allow but the design does not (the control
// plane knows no wire protocol, the SDK links no server package). They are
// checked on the source of every package, so that an import that breaks
// the layering fails make test instead of waiting for a review;
// TestViolations shows each kind of bad edge failing on a synthetic graph.
// Also: API handlers register by name.
package layering
