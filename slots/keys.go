package slots

import (
	"strconv"
	"strings"

	"github.com/toc-project/toc/timer"
)

// DefaultPrefix starts every key when no other prefix is configured.
const DefaultPrefix = "toc:"

// KeySet holds the Redis keys of one slot. All of them share the hash tag
// "{<topic>:<slot>}".
//
// The due sets keep the key names ":store", ":store:high" and ":store:low"
// that they had when they were called Store sets: renaming a key would
// orphan every timer already in Redis.
type KeySet struct {
	// DueHigh, Due and DueLow hold the slot's timers of high, normal and
	// low priority waiting for their due time, scored by due time.
	DueHigh string
	Due     string
	DueLow  string
	// Prepare holds the slot's leases, scored by lease deadline.
	Prepare string
	// Dead holds the slot's exhausted jobs, scored by time of death.
	Dead string
	// Window holds the slot's timers with a flexible window (of any
	// priority), scored by due time as the due sets are; WindowEnd holds
	// the same members scored by the end of their window, the order the
	// claim takes them in under pressure.
	Window    string
	WindowEnd string
	// Later indexes the slot's later buckets: timers without a window due
	// beyond the near future wait there instead of in a due set, in
	// sorted sets of a span of due time each (LaterBucket), small enough
	// for Redis to keep as listpacks. Later's members are the bucket
	// names, each scored by the lowest score it was given in its bucket,
	// so that its head is the slot's earliest later timer.
	Later string
}

// Keys returns the keys of slot of topic under prefix. The caller
// guarantees ValidPrefix(prefix) and ValidTopic(topic); otherwise the keys
// may not share one hash tag.
func Keys(prefix, topic string, slot int) KeySet {
	base := prefix + Tag(topic, slot)
	return KeySet{
		DueHigh: base + ":store:high",
		Due:     base + ":store",
		DueLow:  base + ":store:low",
		Prepare: base + ":prepare",
		Dead:    base + ":dead",

		Window:    base + ":store:window",
		WindowEnd: base + ":store:window:end",
		Later:     base + ":store:later",
	}
}

// LaterBucket returns the key of the slot's later bucket named name (a
// member of Later, "<width ms>:<number>"): Later + ":" + name. The
// scripts build the same names from Later.
func (k KeySet) LaterBucket(name string) string {
	return k.Later + ":" + name
}

// LaterBucketName returns the name of the later bucket of width ms that
// holds due time ms.
func LaterBucketName(width, ms int64) string {
	return strconv.FormatInt(width, 10) + ":" + strconv.FormatInt(ms/width, 10)
}

// PrefixOf returns the key prefix of topic's slots: that of its namespace
// in byNamespace (see timer.QualifiedTopic), or prefix, of the default
// namespace and of any namespace byNamespace does not hold.
func PrefixOf(prefix string, byNamespace map[string]string, topic string) string {
	if len(byNamespace) > 0 {
		if ns, _ := timer.SplitTopic(topic); ns != "" {
			if p, ok := byNamespace[ns]; ok {
				return p
			}
		}
	}
	return prefix
}

// Dues returns the three due keys, highest priority first.
func (k KeySet) Dues() [3]string { return [3]string{k.DueHigh, k.Due, k.DueLow} }

// Waiting returns every key whose members wait for their due time,
// scored by it: the three due sets, highest priority first, then Window.
func (k KeySet) Waiting() [4]string { return [4]string{k.DueHigh, k.Due, k.DueLow, k.Window} }

// Heads returns the keys whose first member is a candidate for the slot's
// next due time: Waiting's, then Later.
func (k KeySet) Heads() [5]string {
	return [5]string{k.DueHigh, k.Due, k.DueLow, k.Window, k.Later}
}

// Tag returns the hash tag of slot of topic, braces included.
func Tag(topic string, slot int) string {
	return "{" + topic + ":" + strconv.Itoa(slot) + "}"
}

// ClusterSlots is the number of Redis Cluster hash slots.
const ClusterSlots = 16384

// ClusterSlot returns the Redis Cluster hash slot of key: CRC16-XMODEM of
// its hash tag (the bytes between the first '{' and the first '}' after
// it, when that is not empty) or else of the whole key, modulo 16384.
func ClusterSlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) % ClusterSlots)
}

// crc16 is CRC16-XMODEM (polynomial 0x1021, initial value 0), the checksum
// Redis Cluster uses for key slots.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
