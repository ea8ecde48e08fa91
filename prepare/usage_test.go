package prepare

import (
	"reflect"
	"strconv"
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

// A publisher writes a topic's usage again only when it changed or its
// record nears the age at which readers drop it, and pushes the hash's
// expiry on only now and then.
func TestUsagePublisherWritesWhatReadersNeed(t *testing.T) {
	b := luatest.Mini(t)
	q := newIndex(t, b)
	ctx := t.Context()
	p := q.NewUsagePublisher("a")
	busy := map[string]timer.TopicUsage{"orders": {InFlight: 1, Rate: 10}, "mail": {InFlight: 2}}
	record := func(topic string) string {
		t.Helper()
		v, err := b.Client.HGet(ctx, q.usageKey(topic), "a").Result()
		if err != nil {
			t.Fatalf("usage of %s: %v", topic, err)
		}
		return v
	}
	ttl := func(topic string) time.Duration {
		t.Helper()
		return b.Client.TTL(ctx, q.usageKey(topic)).Val()
	}
	now := at(0)
	if err := p.Publish(ctx, busy, now); err != nil {
		t.Fatal(err)
	}
	first := record("orders")
	if ttl("orders") != usageKeep {
		t.Fatalf("ttl after the first write = %v, want %v", ttl("orders"), usageKeep)
	}

	b.Mini.FastForward(time.Second)
	busy["mail"] = timer.TopicUsage{InFlight: 3}
	if err := p.Publish(ctx, busy, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := record("orders"); got != first {
		t.Errorf("unchanged usage written again after 1 s: %q, was %q", got, first)
	}
	if got := record("mail"); got != "3 0.000 0 "+strconv.FormatInt(at(1000).UnixMilli(), 10) {
		t.Errorf("changed usage = %q", got)
	}
	if got := ttl("mail"); got != usageKeep-time.Second {
		t.Errorf("expiry pushed on at a write 1 s after the last: ttl %v", got)
	}

	if err := p.Publish(ctx, busy, now.Add(usageRefresh)); err != nil {
		t.Fatal(err)
	}
	if got := record("orders"); got == first {
		t.Errorf("usage not refreshed after %v", usageRefresh)
	}
	u, err := q.Usage(ctx, timer.Topic{Name: "orders", Slots: 1}, now.Add(usageRefresh+usageTTL-time.Millisecond))
	if err != nil || u.Members != 1 || u.InFlight != 1 {
		t.Errorf("Usage just before the refreshed record lapses = %+v, %v", u, err)
	}

	b.Mini.FastForward(usageKeep / 2)
	if err := p.Publish(ctx, busy, now.Add(usageKeep/2+time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := ttl("orders"); got != usageKeep {
		t.Errorf("expiry not pushed on after %v: ttl %v", usageKeep/2, got)
	}
}
