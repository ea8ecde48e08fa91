package auth

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultPoll is how often a File looks whether its file changed.
const DefaultPoll = time.Second

// File is the token set of a tokens file, reloaded by Reload (on SIGHUP)
// and by Run when the file's modification time or size changes. A file
// that cannot be read or parsed keeps the tokens loaded before, and the
// reason is logged.
type File struct {
	path       string
	namespaces []string // besides the default (ParseIn)
	extra      *Set     // --api-token, kept across reloads
	log        *slog.Logger
	set        atomic.Pointer[Set]

	mu   sync.Mutex // one reload at a time
	seen fileStamp
}

// fileStamp is what tells a changed file: modification time and size.
type fileStamp struct {
	mod  time.Time
	size int64
}

// OpenFile loads the tokens file at path, of a toc with the namespaces
// named besides the default (none: nil), joined with extra (the
// --api-token admins, nil for none): an error when it cannot.
func OpenFile(path string, namespaces []string, extra *Set, log *slog.Logger) (*File, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if extra != nil && len(namespaces) > 0 {
		extra = extra.Fenced()
	}
	f := &File{path: path, namespaces: namespaces, extra: extra, log: log}
	if err := f.load(); err != nil {
		return nil, err
	}
	return f, nil
}

// Set returns the tokens in force.
func (f *File) Set() *Set { return f.set.Load() }

// Reload reads the file again. On an error the tokens in force stay, and
// the error is logged and returned.
func (f *File) Reload() error {
	if err := f.load(); err != nil {
		f.log.Error("tokens file refused; the tokens loaded before stay in force", "path", f.path, "err", err)
		return err
	}
	f.log.Info("tokens file reloaded", "path", f.path, "tokens", f.Set().Len())
	return nil
}

func (f *File) load() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, err := os.Stat(f.path)
	if err != nil {
		return fmt.Errorf("tokens file: %w", err)
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		return fmt.Errorf("tokens file: %w", err)
	}
	// Seen even when refused: the file is not read again until it
	// changes once more (or SIGHUP).
	f.seen = fileStamp{st.ModTime(), st.Size()}
	s, err := ParseIn(data, f.namespaces)
	if err != nil {
		return fmt.Errorf("tokens file %s: %w", f.path, err)
	}
	if f.extra != nil {
		s = f.extra.Union(s)
	}
	f.set.Store(s)
	return nil
}

// changed reports whether the file's stamp moved since it was last read.
func (f *File) changed() bool {
	st, err := os.Stat(f.path)
	if err != nil {
		return false // a file being replaced; the next look finds it
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return st.ModTime() != f.seen.mod || st.Size() != f.seen.size
}

// Run reloads the file when hup delivers (SIGHUP) and when it changed,
// looking every poll (DefaultPoll when 0), until ctx is done.
func (f *File) Run(ctx context.Context, hup <-chan os.Signal, poll time.Duration) error {
	if poll <= 0 {
		poll = DefaultPoll
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-hup:
			_ = f.Reload() // logged
		case <-t.C:
			if f.changed() {
				_ = f.Reload()
			}
		}
	}
}
