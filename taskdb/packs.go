// The attempts that succeeded, packed: Complete writes one row of
// toc_done_attempts for the successes it marks done together, in the
// same transaction, keyed by the time it writes into their rows'
// gmt_modified (done_at) and the smallest id of the pack. An attempt row
// of toc_attempts for each fire cost MariaDB about 10 µs of its 30-odd a
// fire; the packs, with the transaction they need, about 2 µs
// (BenchmarkFireCycle, batches of 200).
// A done row's gmt_modified never changes again, so a job's pack is the
// one of its done time that holds its id.

package taskdb

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/toc-project/toc/timer"
)

const (
	// packFormat is a pack's first byte: the layout of its entries.
	packFormat = 1
	// maxPackBytes bounds one pack; more successes make more packs.
	maxPackBytes = 1 << 20

	insertPack = " INTO toc_done_attempts (done_at, first_job, pack) VALUES (?, ?, ?)"
	// jobPacks is the packs of a done job's done time: one of them, or
	// none (its success was recorded in toc_attempts), holds its entry.
	jobPacks = `SELECT p.done_at, p.pack FROM toc_jobs j JOIN toc_done_attempts p ON p.done_at = j.gmt_modified
		WHERE j.job_id = ? AND j.status = 2`
)

// pack is one row of toc_done_attempts.
type pack struct {
	first timer.JobID
	b     []byte
}

// packAttempts packs attempts, done at doneAt (Unix ms), into packs of
// at most maxPackBytes. An entry is the job id, the attempt, done_at
// minus its start, its duration in ms and its status as varints, then
// its error and its excerpt, each after its length; as a store keeps
// them (timer.Attempt.Stored).
func packAttempts(doneAt int64, attempts []timer.Attempt) []pack {
	var (
		out []pack
		cur pack
	)
	for _, a := range attempts {
		a = a.Stored()
		if cur.b != nil && len(cur.b)+len(a.Error)+len(a.Excerpt)+64 > maxPackBytes {
			out, cur = append(out, cur), pack{}
		}
		if cur.b == nil {
			cur = pack{first: a.Job, b: []byte{packFormat}}
		}
		cur.first = min(cur.first, a.Job)
		b := binary.AppendUvarint(cur.b, uint64(a.Job))
		b = binary.AppendUvarint(b, uint64(max(a.Attempt, 0)))
		b = binary.AppendVarint(b, doneAt-a.StartedAt.UnixMilli())
		b = binary.AppendUvarint(b, uint64(min(max(a.Duration.Milliseconds(), 0), math.MaxInt32)))
		b = binary.AppendUvarint(b, uint64(max(a.StatusCode, 0)))
		b = binary.AppendUvarint(b, uint64(len(a.Error)))
		b = append(b, a.Error...)
		b = binary.AppendUvarint(b, uint64(len(a.Excerpt)))
		cur.b = append(b, a.Excerpt...)
	}
	if cur.b != nil {
		out = append(out, cur)
	}
	return out
}

var errBadPack = errors.New("malformed pack of attempts")

// eachPacked calls fn with each entry of pack b, done at doneAt. An
// entry's excerpt is a slice of b.
func eachPacked(b []byte, doneAt int64, fn func(timer.Attempt)) error {
	if len(b) == 0 || b[0] != packFormat {
		return errBadPack
	}
	b = b[1:]
	uvarint := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			b = nil
			return 0
		}
		b = b[n:]
		return v
	}
	bytesOf := func() []byte {
		n := uvarint()
		if b == nil || n > uint64(len(b)) {
			b = nil
			return nil
		}
		v := b[:n:n]
		b = b[n:]
		return v
	}
	for len(b) > 0 {
		var a timer.Attempt
		a.Job = timer.JobID(uvarint())
		a.Attempt = int(uvarint())
		ago, n := binary.Varint(b)
		if n <= 0 {
			return errBadPack
		}
		b = b[n:]
		a.StartedAt = timer.TimeOf(doneAt - ago)
		a.Duration = time.Duration(uvarint()) * time.Millisecond
		a.StatusCode = int(uvarint())
		a.Error = string(bytesOf())
		a.Excerpt = bytesOf()
		if b == nil {
			return errBadPack
		}
		fn(a)
	}
	return nil
}

// packedIDs returns the job ids of pack b.
func packedIDs(b []byte) ([]timer.JobID, error) {
	var ids []timer.JobID
	err := eachPacked(b, 0, func(a timer.Attempt) { ids = append(ids, a.Job) })
	return ids, err
}

// writePacks writes the packs of done's attempts, done at doneAt, with
// ex: Complete's transaction.
func (s *Store) writePacks(ctx context.Context, ex execer, done []timer.Completion, doneAt int64) error {
	var attempts []timer.Attempt
	for _, c := range done {
		if c.Attempt != nil {
			attempts = append(attempts, *c.Attempt)
		}
	}
	for _, p := range packAttempts(doneAt, attempts) {
		if _, err := ex.ExecContext(ctx, s.d.insertIgnore+insertPack, doneAt, int64(p.first), p.b); err != nil {
			return fmt.Errorf("record %d attempts: %w", len(attempts), err)
		}
	}
	return nil
}

// packedAttempts returns job id's entry in the packs of its done time,
// if any.
func (s *Store) packedAttempts(ctx context.Context, id timer.JobID) ([]timer.Attempt, error) {
	var out []timer.Attempt
	err := eachRow(ctx, s.rdb, func(rows *sql.Rows) error {
		var (
			doneAt int64
			b      []byte
		)
		if err := rows.Scan(&doneAt, &b); err != nil {
			return err
		}
		err := eachPacked(b, doneAt, func(a timer.Attempt) {
			if a.Job == id {
				out = append(out, a)
			}
		})
		if err != nil {
			return fmt.Errorf("pack done at %d: %w", doneAt, err)
		}
		return nil
	}, jobPacks, int64(id))
	return out, err
}

// The retirer's packs: those of the done times of the jobs it deletes.
// A pack goes once none of its jobs is left.
const (
	lockPacks    = "SELECT done_at, first_job, pack FROM toc_done_attempts WHERE done_at IN ("
	deletePack   = "DELETE FROM toc_done_attempts WHERE done_at = ? AND first_job = ?"
	existingJobs = "SELECT job_id FROM toc_jobs WHERE job_id IN ("
)

// retirePacks deletes, in tx, the packs of the done times doneAts whose
// jobs are all deleted, or about to be with the ids in going.
func (s *Store) retirePacks(ctx context.Context, tx *sql.Tx, doneAts []int64, going map[timer.JobID]bool) error {
	if len(doneAts) == 0 {
		return nil
	}
	slices.Sort(doneAts)
	doneAts = slices.Compact(doneAts)
	type key struct{ doneAt, first int64 }
	others := make(map[key][]timer.JobID)
	for chunk := range slices.Chunk(doneAts, maxInList) {
		err := eachRow(ctx, tx, func(rows *sql.Rows) error {
			var (
				k key
				b []byte
			)
			if err := rows.Scan(&k.doneAt, &k.first, &b); err != nil {
				return err
			}
			ids, err := packedIDs(b)
			if err != nil {
				return fmt.Errorf("pack done at %d: %w", k.doneAt, err)
			}
			others[k] = slices.DeleteFunc(ids, func(id timer.JobID) bool { return going[id] })
			return nil
		}, lockPacks+idList(chunk)+")"+s.d.lockRows)
		if err != nil {
			return err
		}
	}
	var ask []timer.JobID
	for _, ids := range others {
		ask = append(ask, ids...)
	}
	left := make(map[timer.JobID]bool)
	for chunk := range slices.Chunk(ask, maxInList) {
		err := eachRow(ctx, tx, func(rows *sql.Rows) error {
			var id int64
			err := rows.Scan(&id)
			left[timer.JobID(id)] = true
			return err
		}, existingJobs+idList(chunk)+")"+s.d.lockRows)
		if err != nil {
			return err
		}
	}
	for k, ids := range others {
		if slices.ContainsFunc(ids, func(id timer.JobID) bool { return left[id] }) {
			continue
		}
		if _, err := tx.ExecContext(ctx, deletePack, k.doneAt, k.first); err != nil {
			return err
		}
	}
	return nil
}
