package taskdb

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/toc-project/toc/timer"
)

// fresh is what a store remembers of the pending jobs it inserted lately,
// due soon, as their rows were committed: FireNew hands them to the
// loader without reading their rows again. Reading a batch's rows after
// marking them firing cost MariaDB about 5 µs a fire of the 35-40 a fire
// costs it (BenchmarkFireCycle's get_many), and toc the parsing of every
// column.
//
// A job is remembered at version 1, a new row's. Every change of a row
// moves its version (timer.JobWriter), so a row still at version 1 is
// the row as inserted; FireNew marks the remembered jobs firing only on
// that condition, in the same UPDATE that Fire runs.
type fresh struct {
	mu    sync.Mutex
	jobs  map[timer.JobID]freshJob
	bytes int   // the jobs' sizes, bounded by freshMaxBytes
	swept int64 // when sweep last ran (ms)

	// The topic and callback URL of the job remembered last: the next
	// job of a batch shares them, so their bytes are held once.
	topic, callback string
}

// freshJob is a remembered job and the bytes it is counted for.
type freshJob struct {
	job  *timer.Job
	size int
}

// What fresh holds at most, and of which jobs. Its bound is one of
// memory: each job counts freshJobBytes and the bytes of its payload
// and strings, so that a store remembers about 120,000 jobs of small
// payloads (a drain of 100,000 due at once fires each without a read),
// and fewer of larger ones. A job due later than freshHorizon after its
// insert is not remembered: it would hold memory long, for one read
// saved. A job remembered and never fired here (its slot is another
// member's, or it was cancelled) is let go freshStale after its due
// time, when the store is full; the full store is looked through for
// those at most once per freshSweepEvery, since it takes a pass over
// every job kept.
const (
	freshMaxBytes   = 48 << 20
	freshJobBytes   = 400 // a timer.Job (352 with its allocation's rounding) and its entry in the map
	freshHorizon    = 10 * time.Minute
	freshStale      = time.Minute
	freshSweepEvery = time.Second
)

// remember keeps the pending jobs of a committed insert that are due
// within freshHorizon of now (ms, the insert's clock), each as GetMany
// would read its row.
func (f *fresh) remember(jobs []*timer.Job, now int64) {
	horizon := now + freshHorizon.Milliseconds()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.jobs == nil {
		f.jobs = make(map[timer.JobID]freshJob)
	}
	for _, j := range jobs {
		if j.Status != timer.StatusPending || timer.MillisOf(j.DueAt) > horizon {
			continue
		}
		c := storedJob(j, now)
		size := freshJobBytes + len(c.Payload) + len(c.Key) + len(c.TraceParent) + len(c.LastError) + len(c.ConcurrencyKey) + len(c.GroupID)
		if c.Topic == f.topic {
			c.Topic = f.topic
		} else {
			size += len(c.Topic)
		}
		if c.CallbackURL == f.callback {
			c.CallbackURL = f.callback
		} else {
			size += len(c.CallbackURL)
		}
		if f.bytes+size > freshMaxBytes {
			f.sweep(now)
			if f.bytes+size > freshMaxBytes {
				return
			}
		}
		f.topic, f.callback = c.Topic, c.CallbackURL
		f.jobs[j.ID] = freshJob{job: c, size: size}
		f.bytes += size
	}
}

// sweep lets go of the jobs due more than freshStale before now (ms),
// unless it ran less than freshSweepEvery ago. The caller holds f.mu.
func (f *fresh) sweep(now int64) {
	if now-f.swept < freshSweepEvery.Milliseconds() {
		return
	}
	f.swept = now
	stale := now - freshStale.Milliseconds()
	for id, e := range f.jobs {
		if timer.MillisOf(e.job.DueAt) < stale {
			f.bytes -= e.size
			delete(f.jobs, id)
		}
	}
}

// take returns the remembered jobs of ids, letting go of them, and the
// ids not remembered.
func (f *fresh) take(ids []timer.JobID) (jobs []*timer.Job, rest []timer.JobID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range ids {
		if e, ok := f.jobs[id]; ok {
			delete(f.jobs, id)
			f.bytes -= e.size
			jobs = append(jobs, e.job)
		} else {
			rest = append(rest, id)
		}
	}
	return jobs, rest
}

// storedJob is pending job j as GetMany reads the row Insert wrote of it
// at now (ms): its times in whole milliseconds, its error cut, its
// payload copied, at version 1. TestFireNew holds the two to each other.
func storedJob(j *timer.Job, now int64) *timer.Job {
	c := *j
	c.Status, c.Version, c.LastStatus = timer.StatusPending, 1, 0
	created, modified := rowTimes(j, now)
	c.CreatedAt, c.UpdatedAt = timer.TimeOf(created), timer.TimeOf(modified)
	c.DueAt = timer.TimeOf(timer.MillisOf(j.DueAt))
	c.LastError = timer.TruncateError(j.LastError)
	c.Payload = bytes.Clone(j.Payload)
	c.Window = j.Window.Truncate(time.Millisecond)
	if j.Expiry.Set {
		c.Expiry = timer.ExpireAfter(j.Expiry.After.Truncate(time.Millisecond))
		c.ExpireAt = timer.TimeOf(timer.MillisOf(j.ExpireAt))
	} else {
		c.Expiry, c.ExpireAt = timer.Expiry{}, time.Time{}
	}
	return &c
}

// FireNew is Fire of the jobs of ids that this store inserted lately and
// remembers (fresh): in one UPDATE, on the condition that each of their
// rows is still at version 1, as inserted. When it moves every one of
// them to firing, it returns them as GetMany would read them now, and
// the ids it did not remember in rest, for Fire and GetMany. When it
// moves fewer (a row was changed since: cancelled, rescheduled, fired
// elsewhere; or is not due, expired, or busy on its concurrency key),
// it returns no job and every id in rest: Fire leaves the rows it moved
// firing, and GetMany reads them. Either way it forgets the jobs of ids.
func (s *Store) FireNew(ctx context.Context, ids []timer.JobID, until, now time.Time) (fired []*timer.Job, rest []timer.JobID, err error) {
	jobs, rest := s.fresh.take(ids)
	if len(jobs) == 0 {
		return nil, ids, nil
	}
	list := make([]timer.JobID, len(jobs))
	for i, j := range jobs {
		list[i] = j.ID
	}
	var moved int64
	for chunk := range slices.Chunk(list, maxInList) {
		n, err := s.exec(ctx, fireJobs+"version = 1 AND job_id IN ("+idList(chunk)+")",
			int64(timer.StatusPending), timer.MillisOf(until), timer.MillisOf(now))
		switch {
		case err != nil && s.d.isConflict(err):
			return nil, ids, nil // a concurrency key held: Fire sorts it out
		case err != nil:
			return nil, ids, fmt.Errorf("fire %d new jobs: %w", len(list), err)
		}
		moved += n
	}
	if moved != int64(len(jobs)) {
		return nil, ids, nil
	}
	for _, j := range jobs {
		j.Status, j.Version = timer.StatusFiring, 2
	}
	return jobs, rest, nil
}
