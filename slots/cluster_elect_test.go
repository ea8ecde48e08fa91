package slots

import (
	"slices"
	"testing"
)

func TestSortBySequence(t *testing.T) {
	names := []string{"n-ff-0000000010", "n-aa-0000000002", "n-00-0000000009", "junk"}
	sortBySequence(names)
	want := []string{"n-aa-0000000002", "n-00-0000000009", "n-ff-0000000010", "junk"}
	if !slices.Equal(names, want) {
		t.Fatalf("sorted %q, want %q", names, want)
	}
}
