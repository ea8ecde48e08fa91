package timer

import (
	"testing"
	"unsafe"
)

// A series is what the docs say it is: 100 bytes a bucket, 1,800 buckets,
// about 180 KB.
func TestSeriesSize(t *testing.T) {
	if got := unsafe.Sizeof(seriesCell{}); got != 100 {
		t.Errorf("a bucket takes %d bytes, the docs say 100", got)
	}
	if got := unsafe.Sizeof(seriesRings{}); got < 180_000 || got > 180_100 {
		t.Errorf("a series takes %d bytes, the docs say 180 KB", got)
	}
	if LatenessBuckets != len(LatenessBounds)+1 {
		t.Errorf("LatenessBuckets %d, want a bucket per bound and one beyond (%d)", LatenessBuckets, len(LatenessBounds)+1)
	}
}
