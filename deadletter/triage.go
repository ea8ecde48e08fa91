// Triage of many dead letters: group them by why they died, and replay or
// purge a group at a capped rate.

package deadletter

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/toc-project/toc/timer"
)

// Limits of triage.
const (
	// MaxScan bounds the dead letters one Summary reads: past it the
	// summary says it is truncated.
	MaxScan = 100_000
	// MaxBulk bounds the dead letters one Each acts on.
	MaxBulk = 10_000
	// MaxRate bounds how many a second Each acts on, so that a replay of
	// thousands does not hit the receivers (or the store) at once.
	MaxRate     = 5000
	maxSigBytes = 120
)

// Signature names why a dead job died, for grouping: "HTTP <code>" when
// its receiver answered, else its last error with every run of digits
// made "N" and white space folded, cut at 120 bytes, so that errors that
// differ only in an address, a port or a count fall together.
func Signature(j *timer.Job) string {
	if j.LastStatus != 0 {
		return "HTTP " + strconv.Itoa(j.LastStatus)
	}
	var b strings.Builder
	digits, space := false, false
	for _, r := range strings.TrimSpace(j.LastError) {
		switch {
		case unicode.IsDigit(r):
			if !digits {
				b.WriteByte('N')
			}
			digits, space = true, false
			continue
		case unicode.IsSpace(r):
			if !space {
				b.WriteByte(' ')
			}
			digits, space = false, true
			continue
		}
		digits, space = false, false
		if b.Len()+len(string(r)) > maxSigBytes {
			break
		}
		b.WriteRune(r)
	}
	if b.Len() == 0 {
		return "no error"
	}
	return b.String()
}

// Summary groups the dead letters f selects by signature, most first. It
// reads at most MaxScan of them, in the order they died, and reports
// whether there were more.
func (l *Letters) Summary(ctx context.Context, f timer.DeadFilter) ([]timer.DeadGroup, bool, error) {
	groups := map[string]*timer.DeadGroup{}
	scanned := 0
	truncated, err := l.each(ctx, f, func(j *timer.Job) (bool, error) {
		if scanned == MaxScan {
			return false, nil
		}
		scanned++
		sig := Signature(j)
		g := groups[sig]
		if g == nil {
			g = &timer.DeadGroup{Signature: sig, FirstSeen: j.UpdatedAt, Example: j.ID}
			groups[sig] = g
		}
		g.Count++
		g.LastSeen = j.UpdatedAt
		return true, nil
	})
	if err != nil {
		return nil, false, err
	}
	out := make([]timer.DeadGroup, 0, len(groups))
	for _, g := range groups {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b timer.DeadGroup) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Signature, b.Signature)
	})
	return out, truncated, nil
}

// Each calls act on up to limit (1..MaxBulk) of the dead letters f
// selects, in the order they died, at most rate (1..MaxRate) a second,
// and returns how many it acted on and whether more remain. It stops at
// the first error of act.
func (l *Letters) Each(ctx context.Context, f timer.DeadFilter, limit int, rate float64, act func(context.Context, *timer.Job) error) (int, bool, error) {
	switch {
	case limit < 1 || limit > MaxBulk:
		return 0, false, &timer.FieldError{Field: "limit", Message: fmt.Sprintf("must be within 1..%d", MaxBulk)}
	case rate <= 0 || rate > MaxRate:
		return 0, false, &timer.FieldError{Field: "rate", Message: fmt.Sprintf("must be within 1..%d a second", MaxRate)}
	}
	every := time.Duration(float64(time.Second) / rate)
	next := time.Now()
	done := 0
	more, err := l.each(ctx, f, func(j *timer.Job) (bool, error) {
		if done == limit {
			return false, nil
		}
		if wait := time.Until(next); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return false, ctx.Err()
			case <-t.C:
			}
		}
		next = next.Add(every)
		if err := act(ctx, j); err != nil {
			return false, fmt.Errorf("dead letter %s: %w", j.ID, err)
		}
		done++
		return true, nil
	})
	return done, more, err
}

// each calls fn on the dead letters f selects, page by page, until fn
// says stop; it reports whether it stopped before the last one.
func (l *Letters) each(ctx context.Context, f timer.DeadFilter, fn func(*timer.Job) (bool, error)) (bool, error) {
	q := timer.DeadQuery{Topic: f.Topic, From: f.From, To: f.To, Limit: MaxLimit}
	after := ""
	for {
		jobs, next, err := l.ListDead(ctx, q, after)
		if err != nil {
			return false, err
		}
		for _, j := range jobs {
			if f.Signature != "" && Signature(j) != f.Signature {
				continue
			}
			goOn, err := fn(j)
			if err != nil {
				return false, err
			}
			if !goOn {
				return true, nil
			}
		}
		if next == "" {
			return false, nil
		}
		after = next
	}
}
