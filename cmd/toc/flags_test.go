package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

// A single-valued flag given twice is refused, naming it, without echoing
// the values; a list repeats; the environment's value is replaced by one
// argument without counting as a repeat.
func TestFlagRepeats(t *testing.T) {
	newFS := func() (*flagSet, *string, *bool, *time.Duration, *listFlag) {
		fs := newFlagSet("t", "t")
		fs.SetOutput(io.Discard)
		return fs, fs.string("mysql-dsn", "", ""), fs.bool("migrate", true, ""), fs.duration("lease", 0, ""), fs.list("zk", "")
	}
	for _, tc := range []struct {
		args []string
		want string // "" for no error
	}{
		{[]string{"--mysql-dsn", "a"}, ""},
		{[]string{"--mysql-dsn", "u:secret@tcp(a)/x", "--mysql-dsn", "u:secret@tcp(b)/x"}, "--mysql-dsn given 2 times"},
		{[]string{"--migrate", "--migrate=false"}, "--migrate given 2 times"},
		{[]string{"--lease", "1s", "--mysql-dsn", "a", "--lease=2s"}, "--lease given 2 times"},
		{[]string{"--zk", "a", "--zk", "b"}, ""},
		{[]string{"--migrate=false"}, ""},
	} {
		fs, _, _, _, _ := newFS()
		err := fs.parse(tc.args)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want an error saying %q", tc.args, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "secret"):
			t.Errorf("%q: the error echoes a value: %v", tc.args, err)
		}
	}

	t.Setenv("TOC_MYSQL_DSN", "from-env")
	fs, dsn, migrate, _, _ := newFS()
	if err := fs.parse([]string{"--mysql-dsn", "from-arg", "--migrate"}); err != nil || *dsn != "from-arg" || !*migrate {
		t.Errorf("env then one argument: %v, dsn %q", err, *dsn)
	}
	var usage strings.Builder
	fs.SetOutput(&usage)
	fs.Usage()
	if !strings.Contains(usage.String(), "--lease duration") || !strings.Contains(usage.String(), "--mysql-dsn string") {
		t.Errorf("usage lost the value types:\n%s", usage.String())
	}
}
