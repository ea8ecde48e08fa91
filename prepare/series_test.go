package prepare

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/toc-project/toc/lua/luatest"
	"github.com/toc-project/toc/timer"
)

// Two members' buckets add up, a bucket written again replaces the last,
// the reader leaves out the member it is told to (itself), and each hash
// is set to expire once, a period after its own ends.
func TestSeriesPublishAndRead(t *testing.T) {
	b := luatest.Redis(t)
	q := newIndex(t, b)
	ctx := t.Context()
	start := time.Now().Truncate(time.Hour).Add(-40 * time.Minute) // 20 min into an hour
	fine := func(label string, i int, bk timer.SeriesBucket) SeriesRecord {
		return SeriesRecord{Label: label, Res: timer.SeriesFine, Start: start.Add(time.Duration(i) * timer.SeriesFine), Bucket: bk}
	}
	one := timer.SeriesBucket{Fires: 3, Failures: [4]int64{0, 1, 0, 2}, Dead: 1, Throttled: 4, InFlight: 2}
	one.Lateness[0], one.Lateness[9] = 2, 1
	two := timer.SeriesBucket{Fires: 5, InFlight: 1}
	two.Lateness[15] = 5

	a, bb := q.NewSeriesPublisher("a"), q.NewSeriesPublisher("b")
	if err := a.Publish(ctx, []SeriesRecord{fine("orders", 0, two), fine("orders", 2, one)}, start); err != nil {
		t.Fatal(err)
	}
	if err := a.Publish(ctx, []SeriesRecord{fine("orders", 0, one)}, start); err != nil { // replaces
		t.Fatal(err)
	}
	if err := bb.Publish(ctx, []SeriesRecord{fine("orders", 0, two), fine("billing", 0, one),
		{Label: "orders", Res: timer.SeriesCoarse, Start: start, Bucket: two}}, start); err != nil {
		t.Fatal(err)
	}

	got, members, err := q.ReadSeries(ctx, "orders", timer.SeriesFine, start, start.Add(3*timer.SeriesFine), "")
	if err != nil {
		t.Fatal(err)
	}
	sum := one
	sum.Add(two)
	if want := []timer.SeriesBucket{sum, {}, one}; !reflect.DeepEqual(got, want) {
		t.Fatalf("ReadSeries:\n got %+v\nwant %+v", got, want)
	}
	slices.Sort(members)
	if !slices.Equal(members, []string{"a", "b"}) {
		t.Fatalf("members %v", members)
	}
	got, members, err = q.ReadSeries(ctx, "orders", timer.SeriesFine, start, start.Add(timer.SeriesFine), "a")
	if err != nil || !reflect.DeepEqual(got, []timer.SeriesBucket{two}) || !slices.Equal(members, []string{"b"}) {
		t.Fatalf("without a: %+v %v %v", got, members, err)
	}
	got, _, err = q.ReadSeries(ctx, "orders", timer.SeriesCoarse, start, start.Add(time.Minute), "")
	if err != nil || !reflect.DeepEqual(got, []timer.SeriesBucket{two}) {
		t.Fatalf("by the minute: %+v %v", got, err)
	}

	key, expireAt := q.seriesKey("orders", timer.SeriesFine, start)
	ttl := b.Client.TTL(ctx, key).Val()
	if want := time.Until(expireAt); ttl <= 0 || ttl > want+time.Second || !expireAt.After(start.Add(time.Hour)) {
		t.Fatalf("TTL of %s: %v, want about %v (expiring at %v, an hour after its hour)", key, ttl, want, expireAt)
	}
	if len(a.expiring) != 1 || len(bb.expiring) != 3 {
		t.Fatalf("hashes whose expiry was set: a %v, b %v", a.expiring, bb.expiring)
	}
	if _, ok := parseSeries("1 2 3"); ok {
		t.Fatal("a short record parsed")
	}
	if back, ok := parseSeries(seriesText(one)); !ok || back != one {
		t.Fatalf("round trip of %+v: %+v %v", one, back, ok)
	}
}
