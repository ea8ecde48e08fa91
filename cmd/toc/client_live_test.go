package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/http/client"
	"github.com/toc-project/toc/internal/contract"
)

// startDev starts toc dev on a data file of its own and returns it with
// the webhook secret it printed.
func startDev(t *testing.T) (*proc, string) {
	t.Helper()
	p := startToc(t, "", "dev", "--data", filepath.Join(t.TempDir(), "toc-dev.db"))
	sc := bufio.NewScanner(strings.NewReader(p.stdout.String()))
	for sc.Scan() {
		if s, ok := strings.CutPrefix(sc.Text(), "webhook secret: "); ok {
			return p, strings.TrimSpace(s)
		}
	}
	t.Fatalf("toc dev printed no webhook secret:\n%s", p.stdout.String())
	return nil, ""
}

// Every method of package client against toc dev, and what the client
// reads written back as the API wrote it.
func TestClientLive(t *testing.T) {
	p, secret := startDev(t)
	r := newReceiver(t, secret)
	hook := r.srv.URL + "/hook"
	// Every exchange is held to the OpenAPI document as well.
	c, err := client.New(p.url, client.WithToken("unused by toc dev"),
		client.WithHTTPClient(&http.Client{Transport: contract.Shared(t).Transport(t, nil)}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// asServed checks that v, written as JSON, is what GET path answers.
	asServed := func(v any, path string) {
		t.Helper()
		_, raw := p.call(t, "GET", path, nil)
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		json.Unmarshal(b, &got)
		if !reflect.DeepEqual(got, raw) {
			t.Errorf("GET %s as the client reads and writes it:\n%s\nas served:\n%v", path, b, raw)
		}
	}

	t.Run("ops", func(t *testing.T) {
		must(c.Health(ctx))
		ready, err := c.Ready(ctx)
		if err != nil || ready.Status != "ok" || ready.Checks["task_store"] != "ok" {
			t.Errorf("ready: %+v %v", ready, err)
		}
		doc, err := c.OpenAPI(ctx)
		if err != nil || !json.Valid(doc) || !strings.Contains(string(doc), `"/v1/jobs"`) {
			t.Errorf("openapi: %d bytes, %v", len(doc), err)
		}
		cl, err := c.Cluster(ctx)
		if err != nil || cl.Mode != "standalone" || cl.Status != nil {
			t.Errorf("cluster: %+v %v", cl, err)
		}
		asServed(cl, "/v1/cluster")
	})

	t.Run("topics", func(t *testing.T) {
		tp, created, err := c.PutTopic(ctx, "live", client.TopicSettings{RateLimit: 100, MaxInFlight: 5, Retry: client.Backoff{Base: 500 * time.Millisecond}})
		if err != nil || !created || tp.RateLimit != 100 || tp.Burst != 10 || tp.MaxInFlight != 5 || tp.Retry.Base != 500*time.Millisecond {
			t.Fatalf("put: %+v created %v, %v", tp, created, err)
		}
		if _, created, err = c.PutTopic(ctx, "live", client.TopicSettings{RateLimit: 100, MaxInFlight: 5}); err != nil || created {
			t.Errorf("put again: created %v, %v", created, err)
		}
		tp, err = c.PatchTopic(ctx, "live", client.TopicPatch{Weight: client.Set(3), MaxInFlight: client.Reset[int](), Lease: client.Set(40 * time.Second)})
		if err != nil || tp.Weight != 3 || tp.MaxInFlight != 0 || tp.RateLimit != 100 || tp.Lease != 40*time.Second {
			t.Errorf("patch: %+v %v", tp, err)
		}
		if _, err := c.PatchTopic(ctx, "no-such-topic", client.TopicPatch{Weight: client.Set(2)}); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("patch of an unknown topic: %v", err)
		}
		if _, err := c.PatchTopic(ctx, "live", client.TopicPatch{Weight: client.Set(0)}); !errors.Is(err, client.ErrInvalid) {
			t.Errorf("weight 0: %v", err)
		} else if e, _ := errors.AsType[*client.Error](err); e.Field != "weight" {
			t.Errorf("weight 0: field %q", e.Field)
		}
		if tp, err = c.PauseTopic(ctx, "live"); err != nil || !tp.Paused {
			t.Errorf("pause: %+v %v", tp, err)
		}
		if tp, err = c.ResumeTopic(ctx, "live"); err != nil || tp.Paused {
			t.Errorf("resume: %+v %v", tp, err)
		}
		if tp, err = c.Topic(ctx, "live"); err != nil || tp.Usage == nil || tp.Weight != 3 {
			t.Errorf("topic: %+v %v", tp, err)
		}
		topics, err := c.Topics(ctx)
		if err != nil || len(topics) == 0 {
			t.Fatalf("topics: %v %v", topics, err)
		}
		asServed(map[string]any{"topics": topics}, "/v1/topics")
		st, err := c.TopicStats(ctx, "live")
		if err != nil || st.Topic != "live" || st.Slots == 0 || st.CountedAt.IsZero() {
			t.Errorf("stats: %+v %v", st, err)
		}

		_, _, err = c.PutTopic(ctx, "live-empty", client.TopicSettings{Slots: 4})
		must(err)
		must(c.DeleteTopic(ctx, "live-empty"))
		if _, err := c.Topic(ctx, "live-empty"); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("a deleted topic: %v", err)
		}
	})

	t.Run("jobs", func(t *testing.T) {
		req := client.JobRequest{Topic: "live", Key: "order-1", BizID: 1<<64 - 1, BizType: 7, Delay: time.Hour,
			CallbackURL: hook + "?a=1&b=2", Payload: json.RawMessage(`{"order":1}`), Priority: client.PriorityHigh}
		j, created, err := c.Schedule(ctx, req)
		if err != nil || !created || j.BizID != 1<<64-1 || j.BizType != 7 || j.Status != client.StatusPending || j.Priority != client.PriorityHigh {
			t.Fatalf("schedule: %+v created %v, %v", j, created, err)
		}
		from := j.FireAt.Add(-time.Hour).Truncate(time.Second)
		fc, err := c.Forecast(ctx, client.ForecastQuery{Topic: "live", From: from, To: from.Add(2 * time.Hour), Step: time.Hour})
		if err != nil || !fc.Complete || len(fc.Buckets) != 2 || fc.Buckets[1].Count < 1 || !fc.Buckets[1].Start.Equal(from.Add(time.Hour)) {
			t.Errorf("forecast: %+v %v", fc, err)
		}
		asServed(fc, "/v1/topics/live/forecast?from="+from.UTC().Format(time.RFC3339)+"&to="+from.Add(2*time.Hour).UTC().Format(time.RFC3339)+"&step=1h")
		if _, err := c.Forecast(ctx, client.ForecastQuery{Topic: "live", Step: time.Millisecond}); !errors.Is(err, client.ErrInvalid) {
			t.Errorf("forecast by the ms: %v", err)
		} else if e, _ := errors.AsType[*client.Error](err); e.Field != "step" {
			t.Errorf("forecast by the ms: field %q", e.Field)
		}
		if _, err := c.Forecast(ctx, client.ForecastQuery{Topic: "no-such-topic"}); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("forecast of an unknown topic: %v", err)
		}
		again, created, err := c.Schedule(ctx, req)
		if err != nil || created || again.ID != j.ID {
			t.Errorf("schedule with the same key: %+v created %v, %v", again, created, err)
		}
		got, err := c.Get(ctx, j.ID)
		if err != nil || got.ID != j.ID || string(got.Payload) != `{"order":1}` || got.CallbackURL != req.CallbackURL {
			t.Errorf("get: %+v %v", got, err)
		}
		asServed(got, "/v1/jobs/"+strconv.FormatUint(j.ID, 10))

		at := time.Now().Add(2 * time.Hour).Truncate(time.Millisecond)
		if j, err = c.Reschedule(ctx, j.ID, client.At(at)); err != nil || !j.FireAt.Equal(at) {
			t.Errorf("reschedule at %v: %+v %v", at, j, err)
		}
		before := time.Now()
		if j, err = c.Reschedule(ctx, j.ID, client.After(3*time.Hour)); err != nil || j.FireAt.Before(before.Add(3*time.Hour).Truncate(time.Millisecond)) {
			t.Errorf("reschedule after 3h: %+v %v", j, err)
		}
		if j, err = c.Cancel(ctx, j.ID); err != nil || j.Status != client.StatusCancelled {
			t.Errorf("cancel: %+v %v", j, err)
		}
		if _, err := c.Cancel(ctx, j.ID); !errors.Is(err, client.ErrConflict) {
			t.Errorf("cancel again: %v", err)
		}
		if _, err := c.Get(ctx, 999999999); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("get a missing job: %v", err)
		}
		_, _, err = c.Schedule(ctx, client.JobRequest{Topic: "live"})
		if e, ok := errors.AsType[*client.Error](err); !ok || !errors.Is(err, client.ErrInvalid) || e.Field != "callback_url" {
			t.Errorf("schedule without a callback: %v", err)
		}

		// A business object's jobs: found, moved and cancelled by its id.
		var batch []client.JobRequest
		for i := range 4 {
			batch = append(batch, client.JobRequest{Topic: "live", BizID: uint64(42 + i%2), Delay: time.Hour, CallbackURL: hook})
		}
		res, err := c.ScheduleBatch(ctx, batch)
		if err != nil || len(res) != 4 || !res[0].Created || res[0].Status != client.StatusPending {
			t.Fatalf("batch: %+v %v", res, err)
		}
		_, err = c.ScheduleBatch(ctx, []client.JobRequest{{Topic: "live", Delay: time.Hour, CallbackURL: hook}, {Topic: "live", Delay: time.Hour}})
		if e, ok := errors.AsType[*client.Error](err); !ok || len(e.Items) != 1 || e.Items[0].Index != 1 || e.Items[0].Field != "callback_url" {
			t.Errorf("a refused batch: %#v", err)
		}
		page, err := c.Search(ctx, client.SearchQuery{Topic: "live", BizID: 42})
		if err != nil || len(page.Jobs) != 2 || page.NextCursor != "" {
			t.Errorf("search biz_id 42: %+v %v", page, err)
		}
		asServed(page, "/v1/jobs?topic=live&biz_id=42")
		var n int
		for j, err := range c.SearchAll(ctx, client.SearchQuery{Topic: "live", Statuses: []client.Status{client.StatusPending}, Limit: 1}) {
			if err != nil || j.Status != client.StatusPending {
				t.Fatalf("search all: %+v %v", j, err)
			}
			n++
		}
		if n != 4 {
			t.Errorf("search all a page of 1 at a time: %d pending jobs, want 4", n)
		}
		moved, err := c.RescheduleMatching(ctx, client.Match{Topic: "live", BizID: 43}, client.After(3*time.Hour))
		if err != nil || moved.Rescheduled != 2 || moved.TooLate != 0 {
			t.Errorf("reschedule biz_id 43: %+v %v", moved, err)
		}
		cancelled, err := c.CancelMatching(ctx, client.Match{Topic: "live", BizID: 42})
		if err != nil || cancelled.Cancelled != 2 {
			t.Errorf("cancel biz_id 42: %+v %v", cancelled, err)
		}
		if _, err := c.CancelMatching(ctx, client.Match{Topic: "live"}); !errors.Is(err, client.ErrInvalid) {
			t.Errorf("cancel matching nothing named: %v", err)
		}
	})

	t.Run("dead letters", func(t *testing.T) {
		// Four jobs die at their first attempt: the receiver answers 500.
		var ids []uint64
		for range 4 {
			j, _, err := c.Schedule(ctx, client.JobRequest{Topic: "live-dead", CallbackURL: hook + "?fail=1", MaxAttempts: 1})
			must(err)
			ids = append(ids, j.ID)
		}
		var dead []client.Job
		for deadline := time.Now().Add(30 * time.Second); len(dead) < 4; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d of 4 jobs dead", len(dead))
			}
			dead = dead[:0]
			for j, err := range c.DeadLettersAll(ctx, client.DeadQuery{Topic: "live-dead", Limit: 1}) {
				must(err)
				dead = append(dead, j)
			}
		}
		pg, err := c.DeadLetters(ctx, client.DeadQuery{Topic: "live-dead", Error: "500", From: time.Now().Add(-time.Hour)})
		if err != nil || len(pg.Jobs) != 4 || pg.Jobs[0].LastStatus != 500 || pg.Jobs[0].DiedAt.IsZero() || !pg.Jobs[0].DiedAt.Equal(pg.Jobs[0].UpdatedAt) {
			t.Fatalf("dead letters: %+v %v", pg, err)
		}
		if all, err := c.DeadLetters(ctx, client.DeadQuery{}); err != nil || len(all.Jobs) != 4 || all.Jobs[0].Topic != "live-dead" {
			t.Errorf("dead letters of every topic: %+v %v", all, err)
		}
		asServed(pg, "/v1/deadletters?topic=live-dead")
		at, err := c.Attempts(ctx, ids[0])
		if err != nil || len(at) != 1 || at[0].StatusCode != 500 || at[0].Attempt != 1 {
			t.Errorf("attempts: %+v %v", at, err)
		}
		asServed(map[string]any{"attempts": at}, "/v1/jobs/"+strconv.FormatUint(ids[0], 10)+"/attempts")
		sum, err := c.DeadSummary(ctx, client.DeadFilter{Topic: "live-dead"})
		if err != nil || len(sum.Groups) != 1 || sum.Groups[0].Signature != "HTTP 500" || sum.Groups[0].Count != 4 || sum.Groups[0].ExampleID == 0 {
			t.Errorf("summary: %+v %v", sum, err)
		}

		j, err := c.ReplayDead(ctx, ids[0], client.After(time.Hour))
		if err != nil || j.Status != client.StatusPending || j.Attempts != 0 {
			t.Errorf("replay: %+v %v", j, err)
		}
		must(c.PurgeDead(ctx, ids[1]))
		if err := c.PurgeDead(ctx, ids[1]); !errors.Is(err, client.ErrConflict) {
			t.Errorf("purge a purged job: %v", err)
		}
		rep, err := c.ReplayMatching(ctx, client.DeadBulk{Topic: "live-dead", Signature: "HTTP 500", Limit: 1, Delay: time.Hour})
		if err != nil || rep.Replayed != 1 || !rep.More {
			t.Errorf("replay matching, 1 of 2: %+v %v", rep, err)
		}
		pur, err := c.PurgeMatching(ctx, client.DeadBulk{Topic: "live-dead", Rate: 100})
		if err != nil || pur.Purged != 1 || pur.More {
			t.Errorf("purge matching the last: %+v %v", pur, err)
		}
		if left, err := c.DeadLetters(ctx, client.DeadQuery{Topic: "live-dead"}); err != nil || len(left.Jobs) != 0 {
			t.Errorf("dead letters left: %+v %v", left, err)
		}
		// The topic still holds pending jobs (the replayed ones).
		if err := c.DeleteTopic(ctx, "live-dead"); !errors.Is(err, client.ErrConflict) {
			t.Errorf("delete a topic with pending jobs: %v", err)
		}
	})

	t.Run("selection and search", func(t *testing.T) {
		var ids []uint64
		for i := range 3 {
			j, _, err := c.Schedule(ctx, client.JobRequest{Topic: "live-sel", Key: "sel-" + strconv.Itoa(i), Delay: time.Hour, CallbackURL: hook})
			must(err)
			ids = append(ids, j.ID)
		}
		found, err := c.Find(ctx, "sel-1")
		if err != nil || len(found.Jobs) != 1 || found.Jobs[0].ID != ids[1] || found.Truncated || found.TopicsSearched == 0 {
			t.Errorf("find by key: %+v %v", found, err)
		}
		if found, err := c.Find(ctx, strconv.FormatUint(ids[2], 10)); err != nil || len(found.Jobs) != 1 || found.Jobs[0].Key != "sel-2" {
			t.Errorf("find by id: %+v %v", found, err)
		}
		at := time.Now().Add(2 * time.Hour).Truncate(time.Millisecond)
		moved, err := c.RescheduleSelected(ctx, ids[:2], client.At(at))
		if err != nil || moved.Changed != 2 || len(moved.Failed) != 0 {
			t.Errorf("reschedule selected: %+v %v", moved, err)
		}
		if j, err := c.Get(ctx, ids[0]); err != nil || !j.FireAt.Equal(at) {
			t.Errorf("a rescheduled job: %+v %v", j, err)
		}
		fired, err := c.FireNowSelected(ctx, ids[2:])
		if err != nil || fired.Changed != 1 {
			t.Errorf("fire now selected: %+v %v", fired, err)
		}
		const missing = 4611686018427387904
		cancelled, err := c.CancelSelected(ctx, []uint64{ids[0], missing})
		if err != nil || cancelled.Changed != 1 || len(cancelled.Failed) != 1 || cancelled.Failed[0].ID != missing || cancelled.Failed[0].Code != client.CodeNotFound {
			t.Errorf("cancel selected with a missing job: %+v %v", cancelled, err)
		}
		if _, err := c.CancelSelected(ctx, nil); !errors.Is(err, client.ErrInvalid) {
			t.Errorf("cancel of no job: %v", err)
		}

		var dead []uint64
		for range 2 {
			j, _, err := c.Schedule(ctx, client.JobRequest{Topic: "live-sel-dead", CallbackURL: hook + "?fail=1", MaxAttempts: 1})
			must(err)
			dead = append(dead, j.ID)
		}
		for _, id := range dead {
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if j, err := c.Get(ctx, id); err == nil && j.Status == client.StatusDead {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("job %d never died", id)
				}
			}
		}
		replayed, err := c.ReplaySelected(ctx, dead[:1], client.After(time.Hour))
		if err != nil || replayed.Changed != 1 {
			t.Errorf("replay selected: %+v %v", replayed, err)
		}
		purged, err := c.PurgeSelected(ctx, dead)
		if err != nil || purged.Changed != 1 || len(purged.Failed) != 1 || purged.Failed[0].ID != dead[0] || purged.Failed[0].Code != client.CodeConflict {
			t.Errorf("purge selected, one replayed: %+v %v", purged, err)
		}
	})
	r.check(t)
}
