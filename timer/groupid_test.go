package timer

import (
	"errors"
	"strings"
	"testing"
)

// A group id is 1..100 bytes as a client gives it, counted in bytes, so
// that it fits the column that holds it; a longer one is a *FieldError
// naming the field the caller gave.
func TestCheckGroupIDBytes(t *testing.T) {
	euro := strings.Repeat("€", 34) // 102 bytes, 34 characters
	for _, tc := range []struct {
		name, id string
		ok       bool
	}{
		{"one byte", "g", true},
		{"100 bytes", strings.Repeat("g", 100), true},
		{"99 bytes of three-byte characters", strings.Repeat("€", 33), true},
		{"101 bytes", strings.Repeat("g", 101), false},
		{"113 bytes", strings.Repeat("g", 113), false},
		{"102 bytes of three-byte characters", euro, false},
		{"empty", "", false},
		{"a control character", "a\x1fb", false},
		{"not UTF-8", "a\xffb", false},
	} {
		for _, field := range []string{"id", "group_id", "group.id"} {
			err := CheckGroupID(tc.id, field)
			if tc.ok {
				if err != nil {
					t.Errorf("%s: CheckGroupID(%d bytes, %q) = %v, want nil", tc.name, len(tc.id), field, err)
				}
				continue
			}
			fe, ok := errors.AsType[*FieldError](err)
			if !ok || fe.Field != field || !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: CheckGroupID(%d bytes, %q) = %v, want a field error naming %q", tc.name, len(tc.id), field, err, field)
			}
		}
	}
	if len(GroupKey(strings.Repeat("g", MaxGroupIDBytes))) > MaxKeyBytes {
		t.Errorf("the completion key of a %d-byte group id is longer than %d bytes", MaxGroupIDBytes, MaxKeyBytes)
	}
}

// A group id of a namespace other than the default is stored qualified
// by it, in a form that no client's id of the default namespace takes;
// the default namespace's ids are stored as they are, and so are their
// completion keys.
func TestQualifiedGroupIDs(t *testing.T) {
	longest := strings.Repeat("n", MaxNamespaceBytes)
	for _, tc := range []struct {
		ns, id, stored string
	}{
		{"", "g", "g"},
		{"", "sandbox.g", "sandbox.g"},
		{"sandbox", "g", "sandbox\x1fg"},
		{"sandbox", "a.b", "sandbox\x1fa.b"},
		{longest, strings.Repeat("€", 33), longest + "\x1f" + strings.Repeat("€", 33)},
	} {
		stored := QualifiedGroupID(tc.ns, tc.id)
		if stored != tc.stored {
			t.Errorf("QualifiedGroupID(%q, %q) = %q, want %q", tc.ns, tc.id, stored, tc.stored)
		}
		if ns, id := SplitGroupID(stored); ns != tc.ns || id != tc.id || GroupName(stored) != tc.id {
			t.Errorf("SplitGroupID(%q) = %q, %q (name %q); want %q, %q", stored, ns, id, GroupName(stored), tc.ns, tc.id)
		}
		if err := CheckQualifiedGroupID(stored, "group_id"); err != nil {
			t.Errorf("CheckQualifiedGroupID(%q) = %v", stored, err)
		}
		if len(stored) > MaxStoredGroupIDBytes {
			t.Errorf("%q is %d bytes, more than MaxStoredGroupIDBytes", stored, len(stored))
		}
		if tc.ns != "" && CheckGroupID(stored, "id") == nil {
			t.Errorf("CheckGroupID(%q) = nil: a client could name another namespace's group", stored)
		}
		key := GroupKey(stored)
		if key != "group:"+tc.id+":complete" || !ValidKey(key) || len(key) > MaxKeyBytes {
			t.Errorf("GroupKey(%q) = %q, want group:%s:complete, a valid key", stored, key, tc.id)
		}
	}
	for _, bad := range []string{
		"\x1fg", "Sandbox\x1fg", "sand-box\x1fg", longest + "n\x1fg", "sandbox\x1f", "sandbox\x1f" + strings.Repeat("g", 101),
		"sandbox\x1fa\x1fb",
	} {
		if err := CheckQualifiedGroupID(bad, "group_id"); !errors.Is(err, ErrInvalid) {
			t.Errorf("CheckQualifiedGroupID(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}
