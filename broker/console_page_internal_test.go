package broker

import (
	"slices"
	"testing"
)

// TestPageAfter: a console list's page starts after the cursor, holds at
// most limit items, and names its last item as the next cursor only when
// more follow.
func TestPageAfter(t *testing.T) {
	items := []string{"a", "b", "c", "d", "e"}
	id := func(s string) string { return s }
	for _, tc := range []struct {
		cursor string
		limit  int
		page   []string
		next   string
	}{
		{"", 2, []string{"a", "b"}, "b"},
		{"b", 2, []string{"c", "d"}, "d"},
		{"d", 2, []string{"e"}, ""},
		{"c", 2, []string{"d", "e"}, ""},
		{"bb", 1, []string{"c"}, "c"}, // a cursor no item has: the items after it
		{"e", 3, nil, ""},
		{"", 5, items, ""},
	} {
		page, next := pageAfter(items, id, tc.cursor, tc.limit)
		if !slices.Equal(page, tc.page) || next != tc.next {
			t.Errorf("after %q, limit %d: %q next %q; want %q next %q", tc.cursor, tc.limit, page, next, tc.page, tc.next)
		}
	}
}
