package deadletter

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/lua"
	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/timer"
)

// MaxLimit bounds the page size of List.
const MaxLimit = 1000

// countChunk bounds the slots read in one pipeline.
const countChunk = 1024

// Entry is one dead job.
type Entry struct {
	ID timer.JobID
	// Slot is the job's slot in its topic.
	Slot int
	// DiedAt is when its last attempt failed or its last lease expired.
	DiedAt time.Time
	// Attempts counts the dispatches it was given.
	Attempts int
	// Priority is the one its member in the Dead set names (see package
	// lua); a revived job goes back to the due set of that priority.
	Priority timer.Priority
}

// Config configures a Box.
type Config struct {
	// Prefix starts every key; slots.DefaultPrefix when empty. It must not
	// hold '{' or '}' (see slots.ValidPrefix), and should be the prefix
	// the timer index writes under (prepare.Config.Prefix).
	Prefix string
}

// Validate returns a *timer.FieldError naming the first invalid field.
func (c Config) Validate() error { return slots.CheckPrefix(c.Prefix) }

func (c Config) withDefaults() Config {
	c.Prefix = cmp.Or(c.Prefix, slots.DefaultPrefix)
	return c
}

// Box is the dead letters of a Redis deployment.
type Box struct {
	client redis.UniversalClient
	prefix string
}

// New returns the Box of the keys under cfg.Prefix, or an error wrapping
// cfg's *timer.FieldError.
func New(client redis.UniversalClient, cfg Config) (*Box, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("deadletter config: %w", err)
	}
	return &Box{client: client, prefix: cfg.withDefaults().Prefix}, nil
}

func (b *Box) key(topic string, slot int) string { return slots.Keys(b.prefix, topic, slot).Dead }

// List returns up to limit (1..MaxLimit) dead jobs of topic, which has n
// slots, ordered by slot, then time of death, attempts and id, starting
// after the cursor after ("" for the first page). next is the cursor of
// the following page, "" when there is none. A cursor names the last
// entry returned, not an offset, so jobs purged or added between pages
// shift nothing: each job still dead is listed once. A bad topic, limit
// or cursor is a *timer.FieldError naming "topic", "limit" or "after".
func (b *Box) List(ctx context.Context, topic string, n int, after string, limit int) (items []Entry, next string, err error) {
	if err := check(topic, n); err != nil {
		return nil, "", fmt.Errorf("list dead letters: %w", err)
	}
	if limit < 1 || limit > MaxLimit {
		return nil, "", fmt.Errorf("list dead letters of %s: %w", topic,
			&timer.FieldError{Field: "limit", Message: fmt.Sprintf("%d is not within 1..%d", limit, MaxLimit)})
	}
	var pos position
	if after != "" {
		if pos, err = decodeCursor(after); err != nil || pos.slot >= n {
			return nil, "", fmt.Errorf("list dead letters of %s: %w", topic,
				&timer.FieldError{Field: "after", Message: "not a cursor of this list"})
		}
	}
	want := limit + 1 // one more tells whether there is a next page
	var got []position
	from := 0
	if after != "" {
		if got, err = b.seek(ctx, topic, pos, want); err != nil {
			return nil, "", fmt.Errorf("list dead letters of %s: %w", topic, err)
		}
		from = pos.slot + 1
	}
	for from < n && len(got) < want {
		to := min(from+countChunk, n)
		more, err := b.scan(ctx, topic, from, to, want-len(got))
		if err != nil {
			return nil, "", fmt.Errorf("list dead letters of %s: %w", topic, err)
		}
		got = append(got, more...)
		from = to
	}
	if len(got) > limit {
		got = got[:limit]
		next = got[limit-1].cursor()
	}
	items = make([]Entry, len(got))
	for i, p := range got {
		if items[i], err = p.entry(); err != nil {
			return nil, "", fmt.Errorf("list dead letters of %s: %w", topic, err)
		}
	}
	return items, next, nil
}

// seek returns up to want entries of pos's slot that come after pos.
//
// Entries of one score (died the same millisecond after the same number
// of attempts) are read in batches from the first of them, skipping those
// not after pos; such groups are as large as one sweep at most.
func (b *Box) seek(ctx context.Context, topic string, pos position, want int) ([]position, error) {
	key := b.key(topic, pos.slot)
	score := pos.score
	var out []position
	for off := 0; ; {
		ps, err := b.rangeByScore(ctx, key, pos.slot, &redis.ZRangeBy{
			Min: score, Max: score, Offset: int64(off), Count: int64(want),
		})
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			if p.Member > pos.Member {
				out = append(out, p)
			}
		}
		if len(out) >= want {
			return out[:want], nil
		}
		if len(ps) < want {
			break
		}
		off += len(ps)
	}
	ps, err := b.rangeByScore(ctx, key, pos.slot, &redis.ZRangeBy{
		Min: "(" + score, Max: "+inf", Count: int64(want - len(out)),
	})
	if err != nil {
		return nil, err
	}
	return append(out, ps...), nil
}

// rangeByScore reads the entries of slot's Dead set key in by.
func (b *Box) rangeByScore(ctx context.Context, key string, slot int, by *redis.ZRangeBy) ([]position, error) {
	zs, err := b.client.ZRangeByScoreWithScores(ctx, key, by).Result()
	if err != nil {
		return nil, fmt.Errorf("slot %d: %w", slot, err)
	}
	return positionsOf(slot, zs)
}

// scan returns up to want entries of slots [from, to), in order: one
// pipeline counts the slots, a second reads the first non-empty ones.
func (b *Box) scan(ctx context.Context, topic string, from, to, want int) ([]position, error) {
	pipe := b.client.Pipeline()
	cards := make([]*redis.IntCmd, to-from)
	for i := range cards {
		cards[i] = pipe.ZCard(ctx, b.key(topic, from+i))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("count slots %d..%d: %w", from, to-1, err)
	}
	type read struct {
		slot int
		cmd  *redis.ZSliceCmd
	}
	var reads []read
	pipe = b.client.Pipeline()
	for i, need := 0, want; i < len(cards) && need > 0; i++ {
		if c := int(cards[i].Val()); c > 0 {
			take := min(c, need)
			reads = append(reads, read{from + i, pipe.ZRangeWithScores(ctx, b.key(topic, from+i), 0, int64(take-1))})
			need -= take
		}
	}
	if len(reads) == 0 {
		return nil, nil
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("read slots %d..%d: %w", from, to-1, err)
	}
	var out []position
	for _, r := range reads {
		ps, err := positionsOf(r.slot, r.cmd.Val())
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	return out, nil
}

// Count returns how many jobs of topic, which has n slots, are dead.
func (b *Box) Count(ctx context.Context, topic string, n int) (int64, error) {
	if err := check(topic, n); err != nil {
		return 0, fmt.Errorf("count dead letters: %w", err)
	}
	var total int64
	for from := 0; from < n; from += countChunk {
		pipe := b.client.Pipeline()
		cmds := make([]*redis.IntCmd, 0, countChunk)
		for i := from; i < min(from+countChunk, n); i++ {
			cmds = append(cmds, pipe.ZCard(ctx, b.key(topic, i)))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return 0, fmt.Errorf("count dead letters of %s: %w", topic, err)
		}
		for _, c := range cmds {
			total += c.Val()
		}
	}
	return total, nil
}

// Purge deletes dead job id, of any priority, from slot, reporting
// whether it was there.
func (b *Box) Purge(ctx context.Context, slot timer.Slot, id timer.JobID) (bool, error) {
	if !slots.ValidTopic(slot.Topic) || slot.Index < 0 || slot.Index >= slots.Max {
		return false, fmt.Errorf("purge dead letter %d: slot %q/%d: %w", id, slot.Topic, slot.Index, timer.ErrInvalid)
	}
	n, err := b.client.ZRem(ctx, b.key(slot.Topic, slot.Index),
		lua.Member(uint64(id), lua.PriorityHigh), lua.Member(uint64(id), lua.PriorityNormal), lua.Member(uint64(id), lua.PriorityLow)).Result()
	if err != nil {
		return false, fmt.Errorf("purge dead letter %d of slot %s: %w", id, slot, err)
	}
	return n > 0, nil
}

func check(topic string, n int) error {
	if !slots.ValidTopic(topic) {
		return &timer.FieldError{Field: "topic", Message: fmt.Sprintf("%q is not a topic name", topic)}
	}
	if !slots.Valid(n) {
		return fmt.Errorf("topic %s: slot count %d: %w", topic, n, timer.ErrInvalid)
	}
	return nil
}

// position is an entry of a Dead set as it sorts: slot, score (time of
// death, then attempts), member (with its priority suffix).
type position struct {
	slot int
	// score is the entry's score as lua.FormatScore writes it.
	score string
	lua.Entry
}

// positionsOf decodes the entries of slot's Dead set that a ZRANGE
// WITHSCORES returned.
func positionsOf(slot int, zs []redis.Z) ([]position, error) {
	out := make([]position, len(zs))
	for i, z := range zs {
		e, err := lua.DecodeEntry(z)
		if err != nil {
			return nil, fmt.Errorf("slot %d: %w", slot, err)
		}
		score, err := lua.FormatScore(e.Ms, e.Attempt)
		if err != nil {
			return nil, fmt.Errorf("slot %d: %w", slot, err)
		}
		out[i] = position{slot: slot, score: score, Entry: e}
	}
	return out, nil
}

func (p position) entry() (Entry, error) {
	id, priority, ok := lua.ParseMember(p.Member)
	if !ok {
		return Entry{}, fmt.Errorf("slot %d: member %q: not a job id: %w", p.slot, p.Member, timer.ErrInvalid)
	}
	return Entry{
		ID:       timer.JobID(id),
		Slot:     p.slot,
		DiedAt:   timer.TimeOf(p.Ms),
		Attempts: p.Attempt,
		Priority: timer.Priority(priority),
	}, nil
}

// cursorVersion starts every cursor, so the format can change.
const cursorVersion = "1"

// cursor encodes p as an opaque, URL-safe string.
func (p position) cursor() string {
	raw := cursorVersion + ":" + strconv.Itoa(p.slot) + ":" + p.score + ":" + p.Member
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

func decodeCursor(s string) (position, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return position{}, err
	}
	// The decoder skips newlines and unused trailing bits: accept only the
	// string cursor writes, so that no two strings name one position.
	if base64.RawURLEncoding.EncodeToString(raw) != s {
		return position{}, fmt.Errorf("cursor %q: not canonical", s)
	}
	parts := strings.SplitN(string(raw), ":", 4)
	if len(parts) != 4 || parts[0] != cursorVersion {
		return position{}, fmt.Errorf("cursor %q: bad format", s)
	}
	// Numbers only in the form cursor writes them, so that a cursor names
	// one position in one way.
	slot, err := strconv.Atoi(parts[1])
	if err != nil || slot < 0 || slot >= slots.Max || strconv.Itoa(slot) != parts[1] {
		return position{}, fmt.Errorf("cursor %q: bad slot", s)
	}
	ms, attempt, err := lua.ParseScore(parts[2])
	if err != nil {
		return position{}, fmt.Errorf("cursor %q: bad score", s)
	}
	id, p, ok := lua.ParseMember(parts[3])
	if !ok || lua.Member(id, p) != parts[3] {
		return position{}, fmt.Errorf("cursor %q: bad member", s)
	}
	return position{slot: slot, score: parts[2], Entry: lua.Entry{Member: parts[3], Ms: ms, Attempt: attempt}}, nil
}
