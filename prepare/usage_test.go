package prepare

import (
	"reflect"
	"testing"
	"time"

	"github.com/toc-project/toc/lua/luatest"
	"github.com/toc-project/toc/timer"
)

// Usage sums what the members published in the last 5 s, leaves out a
// member that stopped publishing, and counts the due jobs still waiting.
func TestUsageSumsLiveMembers(t *testing.T) {
	b := luatest.Mini(t)
	q := newIndex(t, b)
	ctx := t.Context()
	topic := timer.Topic{Name: "orders", Slots: 4}
	now := at(10_000)
	if err := q.PublishUsage(ctx, "a", map[string]timer.TopicUsage{"orders": {InFlight: 3, Rate: 100.5, Throttled: 7,
		Lateness: []int64{0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}}}, now); err != nil {
		t.Fatal(err)
	}
	if err := q.PublishUsage(ctx, "b", map[string]timer.TopicUsage{"orders": {InFlight: 2, Rate: 50, Throttled: 1,
		Lateness: []int64{0, 5}}}, now.Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := q.PublishUsage(ctx, "dead", map[string]timer.TopicUsage{"orders": {InFlight: 99, Rate: 99, Throttled: 99}}, now.Add(-6*time.Second)); err != nil {
		t.Fatal(err)
	}
	var timers []timer.Timer
	for i := range 5 {
		due := at(int64(i) * 4_000) // 0, 4, 8 s due by now; 12, 16 s not yet
		timers = append(timers, tm(timer.JobID(i+1), "orders", 4, due))
	}
	if _, err := q.Add(ctx, timers); err != nil {
		t.Fatal(err)
	}
	u, err := q.Usage(ctx, topic, now)
	if err != nil {
		t.Fatal(err)
	}
	want := timer.Usage{DueWaiting: 3, InFlight: 5, Rate: 150.5, Throttled: 8, Members: 2,
		Lateness: []int64{0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}}
	if !reflect.DeepEqual(u, want) {
		t.Fatalf("Usage = %+v, want %+v", u, want)
	}
}
