package timer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestIDGenUniqueAndIncreasing(t *testing.T) {
	now := time.UnixMilli(idEpoch + 1000)
	g := NewIDGen(7, func() time.Time { return now })
	prev := JobID(0)
	// More than 512 ids in one millisecond borrow from the next ones.
	for i := range 10000 {
		id := g.NextIn(i % MaxShards)
		if id <= prev {
			t.Fatalf("id %d: %d not above %d", i, id, prev)
		}
		if id >= 1<<63 {
			t.Fatalf("id %d above 2^63", id)
		}
		if node := uint64(id) & MaxNode; node != 7 {
			t.Fatalf("node bits %d", node)
		}
		if id.Shard() != i%MaxShards {
			t.Fatalf("id %d of shard %d says shard %d", id, i%MaxShards, id.Shard())
		}
		prev = id
	}
	// A clock that steps back does not make ids go back.
	now = now.Add(-time.Hour)
	if id := g.Next(); id <= prev {
		t.Fatalf("after the clock stepped back: %d not above %d", id, prev)
	}
}

// An id made before shards (time in bits 22..62, 10 bits of node) lives
// in shard 0, and every id made now is above it.
func TestIDsBeforeShards(t *testing.T) {
	ms := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC).UnixMilli() - idEpoch
	old := JobID(uint64(ms)<<22 | 1023<<12 | 4095)
	if old.Shard() != 0 {
		t.Errorf("an id of the old layout says shard %d", old.Shard())
	}
	g := NewIDGen(0, func() time.Time { return time.UnixMilli(idEpoch) })
	if id := g.NextIn(3); id <= old || id.Shard() != 3 {
		t.Errorf("new id %d (shard %d) not above the old %d", id, id.Shard(), old)
	}
}

func TestParseJobID(t *testing.T) {
	for _, s := range []string{"", "0", "-1", "abc", "9223372036854775808", "1e3", " 12"} {
		if _, err := ParseJobID(s); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseJobID(%q) = %v, want ErrInvalid", s, err)
		}
	}
	id, err := ParseJobID("9223372036854775807")
	if err != nil || id.String() != "9223372036854775807" {
		t.Errorf("max id: %v %v", id, err)
	}
}

func TestRetryPolicyDelay(t *testing.T) {
	p := RetryPolicy{Base: time.Second, Max: 10 * time.Minute}
	for n := 1; n <= 70; n++ {
		want := p.Max
		if n < 20 && time.Second<<(n-1) < p.Max {
			want = time.Second << (n - 1)
		}
		for range 50 {
			d := p.Delay(n)
			if d < want/2 || d > want {
				t.Fatalf("Delay(%d) = %v, want within [%v, %v]", n, d, want/2, want)
			}
		}
	}
	ra := &RetryAfterError{After: time.Hour, Err: errors.New("429")}
	if d := p.delayAfter(1, ra); d != time.Hour {
		t.Errorf("Retry-After ignored: %v", d)
	}
}

func TestRequestValidate(t *testing.T) {
	ok := Request{Topic: "orders", Delay: time.Second}
	tests := []struct {
		field  string
		mutate func(r *Request)
	}{
		{"topic", func(r *Request) { r.Topic = "" }},
		{"topic", func(r *Request) { r.Topic = "Orders" }},
		{"topic", func(r *Request) { r.Topic = "-x" }},
		{"topic", func(r *Request) { r.Topic = strings.Repeat("a", 65) }},
		{"key", func(r *Request) { r.Key = strings.Repeat("k", MaxKeyBytes+1) }},
		{"delay_ms", func(r *Request) { r.Delay = -time.Millisecond }},
		{"fire_at", func(r *Request) { r.FireAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"fire_at", func(r *Request) { r.FireAt = time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"max_attempts", func(r *Request) { r.MaxAttempts = MaxAttemptsLimit + 1 }},
		{"max_attempts", func(r *Request) { r.MaxAttempts = -1 }},
		{"payload", func(r *Request) { r.Payload = make([]byte, MaxPayloadBytes+1) }},
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid request: %v", err)
	}
	for _, tt := range tests {
		r := ok
		tt.mutate(&r)
		err := r.Validate()
		fe, isField := errors.AsType[*FieldError](err)
		if !isField || fe.Field != tt.field || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v", tt.field, err)
		}
	}
}

func TestSlotQueueOrder(t *testing.T) {
	h := queue[*slotState]{less: func(a, b *slotState) bool { return a.at().Before(b.at()) }}
	base := time.Unix(1000, 0)
	states := make([]*slotState, 50)
	for i := range states {
		states[i] = &slotState{slot: Slot{Topic: "t", Index: i}, due: base.Add(time.Duration((i*37)%50) * time.Millisecond), index: -1}
		h.fix(states[i])
	}
	// A slot taken out leaves the queue; a lease expiry earlier than due wins.
	h.remove(states[3])
	states[4].expiry = base.Add(-time.Second)
	h.fix(states[4])
	if top, _ := h.peek(); top != states[4] {
		t.Fatalf("peek = slot %d, want 4", top.slot.Index)
	}
	prev := time.Time{}
	n := 0
	for h.len() > 0 {
		s := h.pop()
		if s.at().Before(prev) {
			t.Fatalf("out of order: %v after %v", s.at(), prev)
		}
		if s.index != -1 {
			t.Fatalf("popped slot %d still has index %d", s.slot.Index, s.index)
		}
		prev = s.at()
		n++
	}
	if n != 49 {
		t.Fatalf("%d slots popped, want 49", n)
	}
}

// The group commits concurrent calls together and answers each with its
// own result, in its own order.
func TestGroupCommit(t *testing.T) {
	var (
		mu     sync.Mutex
		sizes  []int
		gate   = make(chan struct{})
		called = make(chan struct{}, 1)
	)
	g := &group{commit: func(_ context.Context, reqs []Request) ([]Result, func(), error) {
		select {
		case called <- struct{}{}:
		default:
		}
		<-gate
		mu.Lock()
		sizes = append(sizes, len(reqs))
		mu.Unlock()
		res := make([]Result, len(reqs))
		for i, r := range reqs {
			if r.Key == "bad" {
				res[i].Err = ErrConflict
				continue
			}
			res[i] = Result{Job: &Job{Key: r.Key}, Created: true}
		}
		return res, nil, nil
	}}
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	first := make(chan struct{})
	wg.Go(func() {
		close(first)
		if res, err := g.do(t.Context(), Request{Key: "k-first"}); err != nil || res.Job.Key != "k-first" {
			errs <- fmt.Errorf("first: %v %v", res, err)
		}
	})
	<-first
	<-called // the first commit is running: the others queue behind it
	for i := range n - 1 {
		key := fmt.Sprintf("k%d", i)
		if i == 7 {
			key = "bad"
		}
		wg.Go(func() {
			res, err := g.do(t.Context(), Request{Key: key})
			switch {
			case key == "bad" && !errors.Is(err, ErrConflict):
				errs <- fmt.Errorf("bad key: %v", err)
			case key != "bad" && (err != nil || res.Job.Key != key):
				errs <- fmt.Errorf("%s: %v %v", key, res, err)
			}
		})
	}
	// Let everyone queue, then release the commits.
	for {
		g.mu.Lock()
		queued := len(g.pending)
		g.mu.Unlock()
		if queued == n-1 {
			break
		}
		runtime.Gosched()
	}
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(sizes) != 2 || sizes[0] != 1 || sizes[1] != n-1 {
		t.Errorf("commit sizes %v, want [1 %d]", sizes, n-1)
	}
	if g.busy || len(g.pending) != 0 {
		t.Errorf("group left busy=%v pending=%d", g.busy, len(g.pending))
	}
}

// Under a storm of callers, one commit runs at a time, every request is
// committed exactly once and answered only after its group's second step,
// which overlaps the next commit, and the group ends idle.
func TestGroupCommitConcurrent(t *testing.T) {
	var (
		running, most atomic.Int32
		overlapped    atomic.Bool
		inThen        atomic.Int32
		mu            sync.Mutex
		committed     = map[string]int{}
		finished      = map[string]bool{}
	)
	g := &group{commit: func(_ context.Context, reqs []Request) ([]Result, func(), error) {
		now := running.Add(1)
		for {
			m := most.Load()
			if now <= m || most.CompareAndSwap(m, now) {
				break
			}
		}
		defer running.Add(-1)
		if inThen.Load() > 0 {
			overlapped.Store(true)
		}
		time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
		mu.Lock()
		defer mu.Unlock()
		res := make([]Result, len(reqs))
		for i, r := range reqs {
			committed[r.Key]++
			res[i] = Result{Job: &Job{Key: r.Key}, Created: true}
		}
		then := func() {
			inThen.Add(1)
			defer inThen.Add(-1)
			time.Sleep(time.Duration(rand.IntN(400)) * time.Microsecond)
			mu.Lock()
			defer mu.Unlock()
			for _, r := range reqs {
				finished[r.Key] = true
			}
		}
		return res, then, nil
	}}
	const callers, each = 64, 50
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range each {
				key := fmt.Sprintf("%d-%d", c, i)
				if res, err := g.do(t.Context(), Request{Key: key}); err != nil || res.Job.Key != key {
					t.Errorf("%s: %v %v", key, res, err)
				}
				mu.Lock()
				if !finished[key] {
					t.Errorf("%s answered before its group's second step", key)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(committed) != callers*each {
		t.Errorf("%d requests committed, want %d", len(committed), callers*each)
	}
	for key, n := range committed {
		if n != 1 {
			t.Errorf("%s committed %d times", key, n)
		}
	}
	if m := most.Load(); m != 1 {
		t.Errorf("%d commits ran at once, want 1", m)
	}
	if !overlapped.Load() {
		t.Error("no commit ran while a group's second step did")
	}
	if g.busy || len(g.pending) != 0 {
		t.Errorf("group left busy=%v pending=%d", g.busy, len(g.pending))
	}
}

// A due time asked for between two milliseconds is kept as the later one:
// the job may fire up to a millisecond late, never early.
func TestDueTimeRoundsUp(t *testing.T) {
	base := time.UnixMilli(1_800_000_000_000)
	for _, tt := range []struct {
		at   time.Time
		want int64
	}{
		{base, 1_800_000_000_000},
		{base.Add(time.Nanosecond), 1_800_000_000_001},
		{base.Add(999_999 * time.Nanosecond), 1_800_000_000_001},
		{base.Add(time.Millisecond), 1_800_000_000_001},
	} {
		if got := CeilMillis(tt.at); got != tt.want {
			t.Errorf("CeilMillis(%v) = %d, want %d", tt.at, got, tt.want)
		}
		r := Request{Topic: "orders", FireAt: tt.at}
		j := r.job(1, base)
		if j.DueAt.Before(tt.at) || j.DueAt.UnixMilli() != tt.want {
			t.Errorf("job due %v for fire_at %v, want %d ms", j.DueAt, tt.at, tt.want)
		}
		if !r.sameAs(j, base) {
			t.Errorf("a repeat of fire_at %v does not match its own job", tt.at)
		}
	}
}

// Every part's config names the field it refuses, behind the part's name.
func TestConfigValidateNamesTheField(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{Horizon: -1}, "Horizon"},
		{Config{Scheduler: SchedulerConfig{Node: -1}}, "scheduler config: Node"},
		{Config{Worker: WorkerConfig{Concurrency: -1}}, "worker config: Concurrency"},
		{Config{Worker: WorkerConfig{AttemptTimeout: time.Minute, Lease: time.Minute}}, "worker config: Lease"},
		{Config{Backstop: BackstopConfig{Page: -1}}, "backstop config: Page"},
	} {
		err := tt.cfg.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("Validate(%+v) = %v, want an ErrInvalid starting %q", tt.cfg, err, tt.want)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("the zero Config: %v", err)
	}
}
