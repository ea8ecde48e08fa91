// What toc serve and dev report of topics: the live usage each member
// publishes, and the counts joined from the task store and Redis.

package main

import (
	"context"
	"log/slog"
	"time"

	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/http/webhook"

	"github.com/toc-project/toc/prepare"
	"github.com/toc-project/toc/taskdb/shard"
	"github.com/toc-project/toc/timer"
)

// publishUsage writes this member's use of each busy topic to Redis every
// second (what changed, and what nears the age at which readers drop it;
// see prepare.UsagePublisher), for GET /v1/topics/{topic} on any member to
// sum. A topic this
// member is not firing or throttling, and has not fired for the
// lateness window (5 min), is left out, so idle topics cost nothing: its
// last record lapses after 5 s, and it sums to nothing.
func publishUsage(ctx context.Context, queue *prepare.Index, member string, w *timer.Worker, log *slog.Logger) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	failing := false
	pub := queue.NewUsagePublisher(member)
	throttled := map[string]int64{} // at the last publish
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		busy := map[string]timer.TopicUsage{}
		for topic, u := range w.Usage() {
			if u.InFlight > 0 || u.Held > 0 || u.Rate > 0 || u.Throttled != throttled[topic] || len(u.Lateness) > 0 {
				busy[topic] = u
				throttled[topic] = u.Throttled
			}
		}
		err := pub.Publish(ctx, busy, time.Now())
		if err != nil && !failing && ctx.Err() == nil {
			log.Warn("publish topic usage failed", "err", err)
		}
		failing = err != nil
	}
}

// TopicUsage sums the members' published usage of topic and counts its
// due jobs still in Redis.
func (t *topicStats) TopicUsage(ctx context.Context, topic timer.Topic) (timer.Usage, error) {
	return t.queue.Usage(ctx, topic, time.Now())
}

// dueWaiting counts the due jobs still in Redis of each topic (the first
// maxTopics by name), for the metrics at each scrape. The topics come
// from the catalog, in memory: listing them from the store at each scrape
// cost toc 0.2 s of CPU with 100,000 topics.
func (t *topicStats) dueWaiting() map[string]int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	topics := t.catalog.First(t.maxTopics)
	out := make(map[string]int64, len(topics))
	now := time.Now()
	for _, topic := range topics {
		if n, err := t.queue.DueWaiting(ctx, topic.Name, topic.Slots, now); err == nil {
			out[topic.Name] = n
		}
	}
	return out
}

// topicStats joins the task store's counts with Redis's.
type topicStats struct {
	store     *shard.Store
	catalog   *timer.Catalog
	counter   *jobCounter
	queue     *prepare.Index
	maxTopics int
	// webhook is this member's webhook client, whose circuit breakers
	// the stats show (each member keeps its own).
	webhook *webhook.Client
	// retention is the global retention (the --retain-* flags), under a
	// topic's own.
	retention timer.Retention
}

var _ tochttp.TopicBreakers = (*topicStats)(nil)

// TopicBreakers returns this member's breakers that jobs of topic met.
func (t *topicStats) TopicBreakers(topic string, now time.Time) []webhook.BreakerState {
	return t.webhook.Breakers(topic, now)
}

// PendingJobs is topic's pending jobs as the stats count them (exact
// while small, a recent recount or the estimate for a big topic), for a
// token's max_pending.
func (t *topicStats) PendingJobs(ctx context.Context, topic string) (int64, error) {
	counts, err := t.counter.counts(ctx, topic)
	return counts.pending, err
}

var _ tochttp.PendingCounter = (*topicStats)(nil)

func (t *topicStats) TopicStats(ctx context.Context, name string) (tochttp.TopicStats, error) {
	topic, err := t.store.Topic(ctx, name)
	if err != nil {
		return tochttp.TopicStats{}, err
	}
	counts, err := t.counter.counts(ctx, name)
	if err != nil {
		return tochttp.TopicStats{}, err
	}
	_, leased, _, next, err := t.queue.Stats(ctx, name, topic.Slots)
	if err != nil {
		return tochttp.TopicStats{}, err
	}
	retention := topic.Retention.Over(t.retention)
	storage, err := t.storage(ctx, name, retention, time.Now())
	if err != nil {
		return tochttp.TopicStats{}, err
	}
	return tochttp.TopicStats{
		Retention:       retention,
		Storage:         storage,
		Topic:           name,
		Slots:           topic.Slots,
		Pending:         counts.pending,
		InFlight:        leased,
		Dead:            counts.dead,
		CountedAt:       counts.at,
		CountsEstimated: counts.estimated,
		NextDue:         next,
	}, nil
}

// storage is the task store's picture of topic's ended jobs under
// retention at now: for each status, three bounded queries per shard
// (count up to liveCountMax, the database's estimate beyond; the oldest
// end, one index dive; the rows past retention, counted the same way), so
// a big topic costs what a small one does.
func (t *topicStats) storage(ctx context.Context, topic string, retention timer.Retention, now time.Time) (map[timer.Status]tochttp.StatusStorage, error) {
	limit := int64(liveCountMax)
	if t.counter != nil {
		limit = t.counter.liveMax
	}
	out := make(map[timer.Status]tochttp.StatusStorage, len(timer.RetiredStatuses()))
	for _, st := range timer.RetiredStatuses() {
		var (
			s     tochttp.StatusStorage
			exact bool
			err   error
		)
		if s.Rows, exact, err = t.store.CountJobs(ctx, topic, st, limit); err != nil {
			return nil, err
		}
		s.RowsEstimated = !exact
		if s.Rows > 0 {
			if s.OldestEnded, err = t.store.OldestEnded(ctx, topic, st); err != nil {
				return nil, err
			}
		}
		if keep := retention.Of(st); s.Rows > 0 && !timer.Keeps(keep) && !s.OldestEnded.IsZero() && now.Sub(s.OldestEnded) > keep {
			if s.PastRetention, exact, err = t.store.CountEnded(ctx, topic, st, now.Add(-keep), limit); err != nil {
				return nil, err
			}
			s.PastRetentionEstimated = !exact
		}
		out[st] = s
	}
	return out, nil
}
