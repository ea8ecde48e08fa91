// The rows of topics: creating them, replacing their defaults and
// limits, and reading them.

package taskdb

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/toc-project/toc/timer"
)

// EnsureTopic creates t unless a topic of that name exists, and returns
// the stored topic, whose slot count wins over t's. A zero t.Slots means
// timer.DefaultSlots; any other count must be a power of two up to
// timer.MaxSlots. A zero t.CreatedAt is stored as the store's clock.
func (s *Store) EnsureTopic(ctx context.Context, t timer.Topic) (timer.Topic, error) {
	got, err := s.EnsureTopics(ctx, []timer.Topic{t})
	if err != nil {
		return timer.Topic{}, err
	}
	return got[0], nil
}

// topicChunk is how many topics one statement of EnsureTopics writes or
// reads.
const topicChunk = 500

// EnsureTopics creates each topic of ts that does not exist, as
// EnsureTopic does, and returns the stored topics in the order of ts. It
// takes one transaction: a multi-row insert that skips existing names,
// one read, and one move of the topic version when it created any, so
// that a client creating thousands of topics costs the database a few
// statements and one commit per call, not three commits a topic.
func (s *Store) EnsureTopics(ctx context.Context, ts []timer.Topic) ([]timer.Topic, error) {
	if len(ts) == 0 {
		return nil, nil
	}
	now := s.now()
	rows := make([]timer.Topic, len(ts))
	for i, t := range ts {
		t.Slots = cmp.Or(t.Slots, timer.DefaultSlots)
		if err := timer.CheckTopic("ensure topic", t); err != nil {
			return nil, err
		}
		if t.CreatedAt.IsZero() {
			t.CreatedAt = now
		}
		t.CreatedAt = timer.TimeOf(t.CreatedAt.UnixMilli())
		rows[i] = t
	}
	stored, err := s.ensureTopics(ctx, rows)
	if err != nil {
		return nil, fmt.Errorf("ensure %d topics (%s first): %w", len(ts), ts[0].Name, err)
	}
	out := make([]timer.Topic, len(rows))
	for i, t := range rows {
		got, ok := stored[t.Name]
		if !ok { // inserted or kept in this transaction, so it must be there
			return nil, fmt.Errorf("ensure topic %q: not found after its insert", t.Name)
		}
		out[i] = got
	}
	return out, nil
}

// ensureTopics inserts rows, skipping the names that exist, and reads
// the stored topics back, in one transaction: a DeleteTopic between the
// insert and the read waits for its commit.
func (s *Store) ensureTopics(ctx context.Context, rows []timer.Topic) (map[string]timer.Topic, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	// In name order, so that two calls creating the same topics take
	// their row locks in the same order and cannot deadlock; stable, so
	// that of a name given twice the first is the one inserted.
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(a, b timer.Topic) int { return strings.Compare(a.Name, b.Name) })
	stored := make(map[string]timer.Topic, len(rows))
	created := false
	for chunk := range slices.Chunk(rows, topicChunk) {
		args := make([]any, 0, 4*len(chunk))
		names := make([]any, len(chunk))
		for i, t := range chunk {
			args = append(args, t.Name, int64(t.Slots), int64(t.MaxAttempts), t.CreatedAt.UnixMilli())
			names[i] = t.Name
		}
		insert := "INSERT INTO toc_topics (name, slots, max_attempts, gmt_create) VALUES " + rowsOf("(?, ?, ?, ?)", len(chunk)) + s.d.keepTopic
		if _, err := tx.ExecContext(ctx, insert, args...); err != nil {
			return nil, err
		}
		if err := readTopics(ctx, tx, stored, names); err != nil {
			return nil, err
		}
		// Created now, most likely, when the stored creation time is the
		// one written: the affected-row count cannot tell
		// (clientFoundRows), and a topic created elsewhere in the same
		// millisecond only costs readers one more read.
		for _, t := range chunk {
			if got, ok := stored[t.Name]; ok && got.CreatedAt.Equal(t.CreatedAt) {
				created = true
			}
		}
	}
	if created {
		if err := s.topicWritten(ctx, tx); err != nil {
			return nil, err
		}
	}
	return stored, tx.Commit()
}

// readTopics reads the topics named names into m, within tx.
func readTopics(ctx context.Context, tx *sql.Tx, m map[string]timer.Topic, names []any) error {
	rows, err := tx.QueryContext(ctx, selectTopic+"WHERE name IN ("+placeholders(len(names))+")", names...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		t, err := scanTopic(rows)
		if err != nil {
			return err
		}
		m[t.Name] = t
	}
	return rows.Err()
}

// PutTopic creates t or replaces the defaults and limits of the topic of
// that name, leaving Paused as it is (see PauseTopic); a different slot count for an existing topic is an error
// wrapping timer.ErrConflict, and nothing changes then. Of two calls
// racing to create one topic, both may report that they created it.
func (s *Store) PutTopic(ctx context.Context, t timer.Topic) (timer.Topic, bool, error) {
	if t.MaxAttempts < 0 || t.MaxAttempts > timer.MaxAttemptsLimit {
		return timer.Topic{}, false, fmt.Errorf("put topic %q: max attempts %d: %w", t.Name, t.MaxAttempts, timer.ErrInvalid)
	}
	if err := t.Limits.Validate(); err != nil {
		return timer.Topic{}, false, fmt.Errorf("put topic %q: %w", t.Name, err)
	}
	existing, err := s.Topic(ctx, t.Name)
	created := errors.Is(err, timer.ErrNotFound)
	switch {
	case created:
		if existing, err = s.EnsureTopic(ctx, t); err != nil {
			return timer.Topic{}, false, err
		}
	case err != nil:
		return timer.Topic{}, false, err
	}
	if t.Slots != 0 && t.Slots != existing.Slots {
		return existing, false, fmt.Errorf("topic %q has %d slots, fixed at its creation: %w", t.Name, existing.Slots, timer.ErrConflict)
	}
	if err := t.Expiry.Check("expire_after_ms"); err != nil {
		return timer.Topic{}, false, fmt.Errorf("put topic %q: %w", t.Name, err)
	}
	if err := t.Retention.Validate("retention"); err != nil {
		return timer.Topic{}, false, fmt.Errorf("put topic %q: %w", t.Name, err)
	}
	delivery, err := destinationArg(t.Destination)
	if err != nil {
		return timer.Topic{}, false, fmt.Errorf("put topic %q: %w", t.Name, err)
	}
	if existing.MaxAttempts == t.MaxAttempts && existing.Limits == t.Limits && existing.Expiry == t.Expiry && existing.Retention == t.Retention &&
		existing.Destination == t.Destination.Stored() {
		return existing, created, nil
	}
	l := t.Limits
	if _, err := s.db.ExecContext(ctx, `UPDATE toc_topics SET max_attempts = ?, rate_limit = ?, burst = ?,
		max_in_flight = ?, weight = ?, retry_base_ms = ?, retry_max_ms = ?, lease_ms = ?, callback_timeout_ms = ?,
		lateness_slo_ms = ?, expire_after_ms = ?, retention = ?, delivery = ? WHERE name = ?`, int64(t.MaxAttempts), l.RateLimit, int64(l.Burst), int64(l.MaxInFlight), int64(l.Weight),
		l.Retry.Base.Milliseconds(), l.Retry.Max.Milliseconds(), l.Lease.Milliseconds(), l.CallbackTimeout.Milliseconds(),
		l.LatenessSLO.Milliseconds(), expiryArg(t.Expiry), retentionArg(t.Retention), delivery, t.Name); err != nil {
		return timer.Topic{}, false, fmt.Errorf("put topic %q: %w", t.Name, err)
	}
	if err := s.topicWritten(ctx, s.db); err != nil {
		return timer.Topic{}, false, fmt.Errorf("put topic %q: %w", t.Name, err)
	}
	got, err := s.Topic(ctx, t.Name)
	return got, created, err
}

const selectTopic = `SELECT name, slots, max_attempts, gmt_create, rate_limit, burst, max_in_flight, weight,
	retry_base_ms, retry_max_ms, lease_ms, callback_timeout_ms, paused, lateness_slo_ms, expire_after_ms, retention, delivery FROM toc_topics `

func scanTopic(row interface{ Scan(...any) error }) (timer.Topic, error) {
	var (
		t                                  timer.Topic
		slots, maxAttempts, created        int64
		burst, inFlight, weight            int64
		retryBase, retryMax, lease, cbTime int64
		paused, slo                        int64
		expireAfter                        sql.NullInt64
		retention, delivery                string
	)
	if err := row.Scan(&t.Name, &slots, &maxAttempts, &created, &t.RateLimit, &burst, &inFlight, &weight,
		&retryBase, &retryMax, &lease, &cbTime, &paused, &slo, &expireAfter, &retention, &delivery); err != nil {
		return timer.Topic{}, err
	}
	dest, err := parseDestination(delivery)
	if err != nil {
		return timer.Topic{}, fmt.Errorf("topic %q: delivery column %q: %w", t.Name, delivery, err)
	}
	t.Destination = dest
	t.Paused = paused != 0
	t.Slots, t.MaxAttempts, t.CreatedAt = int(slots), int(maxAttempts), timer.TimeOf(created)
	t.Burst, t.MaxInFlight, t.Weight = int(burst), int(inFlight), int(weight)
	t.Retry = timer.RetryPolicy{Base: time.Duration(retryBase) * time.Millisecond, Max: time.Duration(retryMax) * time.Millisecond}
	t.Lease = time.Duration(lease) * time.Millisecond
	t.CallbackTimeout = time.Duration(cbTime) * time.Millisecond
	t.LatenessSLO = time.Duration(slo) * time.Millisecond
	t.Retention = parseRetention(retention)
	if expireAfter.Valid {
		t.Expiry = timer.ExpireAfter(time.Duration(expireAfter.Int64) * time.Millisecond)
	}
	return t, nil
}

// storedDestination is the delivery column's JSON form of a destination
// other than a webhook's, whose column is ”.
type storedDestination struct {
	Way        timer.Way `json:"way"`
	Broker     string    `json:"broker,omitempty"`
	Exchange   string    `json:"exchange,omitempty"`
	RoutingKey string    `json:"routing_key,omitempty"`
	Subject    string    `json:"subject,omitempty"`
	Transient  bool      `json:"transient,omitempty"`
}

// destinationArg is the delivery column of d.
func destinationArg(d timer.Destination) (string, error) {
	if d = d.Stored(); d == (timer.Destination{}) {
		return "", nil
	}
	b, err := json.Marshal(storedDestination(d))
	if len(b) > maxDeliveryColumn {
		return "", fmt.Errorf("delivery settings of %d bytes, at most %d: %w", len(b), maxDeliveryColumn, timer.ErrInvalid)
	}
	return string(b), err
}

// maxDeliveryColumn is the delivery column's size.
const maxDeliveryColumn = 1024

// parseDestination reads a delivery column. Unlike the retention, a
// column it cannot read is an error: a topic's jobs must not go to a
// webhook the topic never asked for.
func parseDestination(s string) (timer.Destination, error) {
	if s == "" {
		return timer.Destination{}, nil
	}
	var d storedDestination
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		return timer.Destination{}, err
	}
	return timer.Destination(d), nil
}

// expiryArg is the expire_after_ms column of e: NULL for none.
func expiryArg(e timer.Expiry) any {
	if !e.Set {
		return nil
	}
	return e.After.Milliseconds()
}

// Topic returns one topic, or an error wrapping timer.ErrNotFound.
func (s *Store) Topic(ctx context.Context, name string) (timer.Topic, error) {
	t, err := scanTopic(s.rdb.QueryRowContext(ctx, selectTopic+"WHERE name = ?", name))
	if err != nil {
		return timer.Topic{}, fmt.Errorf("get topic %q: %w", name, s.translate(err))
	}
	return t, nil
}

// Topics returns every topic, ordered by name (bytewise).
func (s *Store) Topics(ctx context.Context) ([]timer.Topic, error) {
	rows, err := s.rdb.QueryContext(ctx, selectTopic+"ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	defer rows.Close()
	var topics []timer.Topic
	for rows.Next() {
		t, err := scanTopic(rows)
		if err != nil {
			return nil, fmt.Errorf("list topics: %w", err)
		}
		topics = append(topics, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	return topics, nil
}

// topicWritten moves the topic version (TopicsVersion) after a write of a
// topic row. It comes after the write, so that a reader that sees the new
// version reads the list with the write in it. A crash between the two
// leaves the change unseen until the next write or a reader's periodic
// whole read (timer.Catalog).
func (s *Store) topicWritten(ctx context.Context, db execer) error {
	if _, err := db.ExecContext(ctx, "UPDATE toc_topic_version SET version = version + 1 WHERE id = 1"); err != nil {
		return fmt.Errorf("move the topic version: %w", err)
	}
	return nil
}

// TopicsVersion implements timer.TopicVersioner: a number that every
// write of a topic moves.
func (s *Store) TopicsVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.rdb.QueryRowContext(ctx, "SELECT version FROM toc_topic_version WHERE id = 1").Scan(&v); err != nil {
		return 0, fmt.Errorf("read the topic version: %w", s.translate(err))
	}
	return v, nil
}

// PauseTopic sets whether the topic named name is paused, and returns the
// stored topic, or an error wrapping timer.ErrNotFound.
func (s *Store) PauseTopic(ctx context.Context, name string, paused bool) (timer.Topic, error) {
	v := int64(0)
	if paused {
		v = 1
	}
	if _, err := s.db.ExecContext(ctx, "UPDATE toc_topics SET paused = ? WHERE name = ?", v, name); err != nil {
		return timer.Topic{}, fmt.Errorf("pause topic %q: %w", name, err)
	}
	if err := s.topicWritten(ctx, s.db); err != nil {
		return timer.Topic{}, fmt.Errorf("pause topic %q: %w", name, err)
	}
	t, err := s.Topic(ctx, name)
	if err != nil {
		return timer.Topic{}, fmt.Errorf("pause: %w", err)
	}
	return t, nil
}

// DeleteTopic removes the topic named name unless a job holds it (see
// timer.HoldsTopic): one that is pending, firing or dead. The check and
// the delete are one transaction. On MySQL both reads lock: the topic's
// row, and the (topic, status) ranges of toc_jobs_topic_due they scan,
// so an insert into the topic waits until the delete commits and one
// already under way is waited for and counted. The rows of done,
// cancelled and purged jobs, which may be many, are neither read nor
// locked. On SQLite the transaction holds the one write lock from its
// start (BEGIN IMMEDIATE).
func (s *Store) DeleteTopic(ctx context.Context, name string) error {
	lock := s.d.lockRows
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("delete topic %q: %w", name, err)
	}
	err = func() error {
		var one int64
		if err := tx.QueryRowContext(ctx, "SELECT 1 FROM toc_topics WHERE name = ?"+lock, name).Scan(&one); err != nil {
			return s.translate(err)
		}
		held, err := countHolding(ctx, tx, name, lock)
		if err != nil {
			return err
		}
		if len(held) > 0 {
			return &timer.TopicInUseError{Topic: name, Jobs: held}
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM toc_topics WHERE name = ?", name); err != nil {
			return err
		}
		return s.topicWritten(ctx, tx)
	}()
	if err != nil {
		return errors.Join(fmt.Errorf("delete topic %q: %w", name, err), ignoreDone(tx.Rollback()))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("delete topic %q: commit: %w", name, err)
	}
	return nil
}

// HoldingJobs counts the jobs of topic name that keep it from being
// deleted (timer.HoldsTopic), by status; a status without any is absent.
// A sharded store asks every shard before it deletes the topic.
func (s *Store) HoldingJobs(ctx context.Context, name string) (map[timer.Status]int64, error) {
	held, err := countHolding(ctx, s.db, name, "")
	if err != nil {
		return nil, fmt.Errorf("count jobs holding topic %q: %w", name, err)
	}
	return held, nil
}

// countHolding is HoldingJobs on q, locking the rows read with lock (""
// or " FOR UPDATE").
func countHolding(ctx context.Context, q querier, name, lock string) (map[timer.Status]int64, error) {
	// Firing is a flag on a pending row (see rowStatus): count by both.
	rows, err := q.QueryContext(ctx, `SELECT status, fired, COUNT(*) FROM toc_jobs
		WHERE topic = ? AND status IN (?, ?) GROUP BY status, fired`+lock,
		name, int64(timer.StatusPending), int64(timer.StatusDead))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	held := map[timer.Status]int64{}
	for rows.Next() {
		var st, fired, n int64
		if err := rows.Scan(&st, &fired, &n); err != nil {
			return nil, err
		}
		held[statusOf(st, fired)] += n
	}
	return held, rows.Err()
}
