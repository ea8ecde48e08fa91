package slots

import (
	"fmt"
	"hash/crc32"
	"strconv"

	"github.com/toc-project/toc/timer"
)

// Max is the highest slot count a topic may have.
const Max = timer.MaxSlots

// Valid reports whether n is a usable slot count: a power of two from 1 to
// Max.
func Valid(n int) bool { return n >= 1 && n <= Max && n&(n-1) == 0 }

// Of returns the slot, in [0, n), of a job whose slot basis is basis:
// CRC32-IEEE of the decimal form of basis, modulo n. It panics if n is not
// Valid; callers validate slot counts where they enter the system.
func Of(basis uint64, n int) int {
	if !Valid(n) {
		panic("slots: invalid slot count " + strconv.Itoa(n))
	}
	var buf [20]byte
	return int(checksum(strconv.AppendUint(buf[:0], basis, 10)) % uint32(n))
}

// JobSlot returns the slot of a job of topic, which has n slots, whose
// slot basis is basis (timer.Job.SlotBasis, timer.Timer.Basis): the one
// place a job is given its slot. It panics as Of does.
func JobSlot(topic string, basis uint64, n int) timer.Slot {
	return timer.Slot{Topic: topic, Index: Of(basis, n)}
}

// checksum is crc32.ChecksumIEEE(b) without its indirect call, which
// makes b escape to the heap; job ids are too short for the vectorised
// path to pay off.
func checksum(b []byte) uint32 {
	crc := ^uint32(0)
	for _, c := range b {
		crc = crc32.IEEETable[byte(crc)^c] ^ crc>>8
	}
	return ^crc
}

// ValidTopic reports whether name is a valid topic name (see
// timer.ValidTopic). Keys rely on it: a topic holding '{' or '}' would
// break the slot's hash tag.
func ValidTopic(name string) bool { return timer.ValidTopic(name) }

// CheckPrefix returns nil when ValidPrefix(prefix), else a
// *timer.FieldError naming the field Prefix, as the adapters' Config
// Validate methods report it.
func CheckPrefix(prefix string) error {
	if !ValidPrefix(prefix) {
		return &timer.FieldError{Field: "Prefix", Message: fmt.Sprintf("%q holds '{' or '}'", prefix)}
	}
	return nil
}

// CheckPrefixes checks the key prefixes of namespaces (see PrefixOf) as
// CheckPrefix does, naming the field NamespacePrefixes[<namespace>].
func CheckPrefixes(byNamespace map[string]string) error {
	for ns, prefix := range byNamespace {
		if !timer.ValidNamespace(ns) {
			return &timer.FieldError{Field: "NamespacePrefixes", Message: fmt.Sprintf("%q is not a namespace name", ns)}
		}
		if prefix == "" || !ValidPrefix(prefix) {
			return &timer.FieldError{Field: "NamespacePrefixes[" + ns + "]", Message: fmt.Sprintf("%q is empty or holds '{' or '}'", prefix)}
		}
	}
	return nil
}

// ValidPrefix reports whether prefix can start every key: it must not hold
// '{' or '}', which would take the hash tag away from the slot's.
func ValidPrefix(prefix string) bool {
	for i := 0; i < len(prefix); i++ {
		if prefix[i] == '{' || prefix[i] == '}' {
			return false
		}
	}
	return true
}
