package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// helpOf runs toc help with args in process: what it printed and its
// error.
func helpOf(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = run(t.Context(), append([]string{"help"}, args...), &out, &errOut)
	return out.String(), errOut.String(), err
}

// splitLine splits an example command line as a shell would, for the
// quoting the examples use: words separated by spaces, 'single quotes'.
func splitLine(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	quoted, inWord := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, w.String())
				w.Reset()
			}
			inWord = false
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("example %q: an open quote", line)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// The top-level help lists every client command of the table, and toc
// help of each prints that command's own help: its usage, its flags and
// an example whose flags and arguments the command accepts.
func TestHelpWalksTheCommandTable(t *testing.T) {
	top, _, err := helpOf(t)
	if err != nil {
		t.Fatalf("toc help: %v", err)
	}
	for _, cc := range clientCommands {
		t.Run(cc.name, func(t *testing.T) {
			if !strings.Contains(top, "\n  "+strings.TrimSpace(cc.name+" "+cc.args)+"  ") {
				t.Errorf("toc help does not list %q:\n%s", cc.name, top)
			}
			out, _, err := helpOf(t, strings.Fields(cc.name)...)
			if !errors.Is(err, flag.ErrHelp) {
				t.Errorf("toc help %s: %v, want flag.ErrHelp (exit 0)", cc.name, err)
			}
			if !strings.HasPrefix(out, "usage: toc "+cc.name) || !strings.Contains(out, "--server") {
				t.Errorf("toc help %s printed no usage of its own:\n%s", cc.name, out)
			}
			if ex := examples(out); cc.example == "" || len(ex) != 1 || ex[0] != cc.example {
				t.Fatalf("toc help %s: no example line:\n%s", cc.name, out)
			}
			words := splitLine(t, cc.example)
			name := append([]string{"toc"}, strings.Fields(cc.name)...)
			if len(words) < len(name) || strings.Join(words[:len(name)], " ") != strings.Join(name, " ") {
				t.Fatalf("example %q does not start with %q", cc.example, strings.Join(name, " "))
			}
			if _, _, _, err := cc.parse(words[len(name):]); err != nil {
				t.Errorf("example %q: %v", cc.example, err)
			}
		})
	}
	for _, c := range append(serviceCommands, otherCommands...) {
		name := strings.Join(c.words(), " ")
		if !strings.Contains(top, "\n  "+c.name+"  ") {
			t.Errorf("toc help does not list %q", c.name)
		}
		if name == "help" {
			continue
		}
		out, _, err := helpOf(t, c.words()...)
		if !errors.Is(err, flag.ErrHelp) || !strings.HasPrefix(out, "usage: toc "+name) {
			t.Errorf("toc help %s: %v\n%s", name, err, out)
		}
		if ex := examples(out); len(ex) == 0 || !strings.HasPrefix(ex[0], "toc "+name+" ") && ex[0] != "toc "+name {
			t.Errorf("toc help %s does not end with an example of it:\n%s", name, out)
		}
	}
	// A group's help lists its commands and ends with an example of one.
	for _, group := range []string{"jobs", "topics", "dead", "schedules", "groups", "tokens"} {
		out, _, err := helpOf(t, group)
		if !errors.Is(err, flag.ErrHelp) || !strings.Contains(out, "toc "+group+" ") {
			t.Errorf("toc help %s: %v\n%s", group, err, out)
		}
		if ex := examples(out); len(ex) == 0 || !strings.HasPrefix(ex[0], "toc "+group+" ") {
			t.Errorf("toc help %s does not end with an example of one of its commands:\n%s", group, out)
		}
	}
	if out, _, err := helpOf(t, "dead"); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out, "toc dead purge-all") {
		t.Errorf("toc help dead: %v\n%s", err, out)
	}
	for _, words := range [][]string{{"frobnicate"}, {"jobs", "nope"}, {"jobs", "get", "extra"}, {"tokens", "nope"}, {"version", "hash"}} {
		name := strings.Join(words, " ")
		if _, stderr, err := helpOf(t, words...); !errors.Is(err, exitError{2}) || !strings.Contains(stderr, fmt.Sprintf("unknown command %q; 'toc help' lists", name)) {
			t.Errorf("toc help %s: %v, stderr %q; want exit 2 naming it and pointing at toc help", name, err, stderr)
		}
	}
}

// examples are the command lines of the example block a help ends with:
// none unless it ends with one.
func examples(help string) []string {
	i := strings.LastIndex(help, "\nexample:\n")
	if i < 0 {
		return nil
	}
	var lines []string
	for line := range strings.Lines(help[i+len("\nexample:\n"):]) {
		cmdLine, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "  ")
		if !ok || cmdLine == "" {
			return nil
		}
		lines = append(lines, cmdLine)
	}
	return lines
}

// toc help X exits 0, and an unknown X exits 2, from the binary.
func TestHelpExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
	}{
		{[]string{"help"}, 0, "Client (talks to a running toc"},
		{[]string{"help", "jobs", "get"}, 0, "usage: toc jobs get ID"},
		{[]string{"help", "topics", "set"}, 0, "--rate-limit"},
		{[]string{"help", "tokens", "secret"}, 0, "example:\n  toc tokens secret\n"},
		{[]string{"help", "serve"}, 0, "--mysql-dsn"},
		{[]string{"help", "jobs", "nope"}, 2, ""},
		{[]string{"help", "frobnicate"}, 2, ""},
	} {
		r := cli(t, nil, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stdout, tc.stdout) {
			t.Errorf("toc %s: exit %d, want %d; stdout:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), r.code, tc.code, r.stdout, r.stderr)
		}
		if tc.code == 2 && !strings.Contains(r.stderr, "unknown command") {
			t.Errorf("toc %s: stderr %q does not name the unknown command", strings.Join(tc.args, " "), r.stderr)
		}
	}
}

// A cell of a table is one line of at most maxCell runes: a dead
// letter's HTML error page does not fill the terminal.
func TestCellIsOneShortLine(t *testing.T) {
	page := "<!DOCTYPE html>\n<html>\n  <head><title>502 Bad Gateway</title></head>\n<body>\n<center><h1>502 Bad Gateway</h1></center>\n<hr><center>nginx/1.25.3 — ünïcode</center>\n</body>\n</html>\n"
	got := cell(page)
	if strings.ContainsAny(got, "\n\r\t") || strings.Contains(got, "  ") {
		t.Errorf("cell(page) = %q: not one line with single spaces", got)
	}
	if n := utf8.RuneCountInString(got); n != maxCell || !strings.HasSuffix(got, "…") {
		t.Errorf("cell(page) = %q: %d runes, want %d ending in …", got, n, maxCell)
	}
	if want := "<!DOCTYPE html> <html> <head><title>502 Bad Gateway</title>"; !strings.HasPrefix(got, want[:maxCell-1]) {
		t.Errorf("cell(page) = %q, want it to start %q", got, want[:maxCell-1])
	}
	for in, want := range map[any]string{"short  error\n": "short error", nil: "-", "": "-", "   ": "-", strings.Repeat("é", maxCell): strings.Repeat("é", maxCell)} {
		if got := cell(in); got != want {
			t.Errorf("cell(%q) = %q, want %q", in, got, want)
		}
	}
	var b bytes.Buffer
	printTable(&b, []string{"id", "last_error"}, map[string]any{"id": "7", "last_error": page})
	if lines := strings.Split(strings.TrimSpace(b.String()), "\n"); len(lines) != 2 {
		t.Errorf("a table of one row printed %d lines:\n%s", len(lines), b.String())
	}
}

// Every client command's example runs against toc dev as it is written,
// the server aside (TOC_SERVER): in the order of the table, each either
// succeeds or gets the API's 404 for the job, schedule or group id it
// names; none is a usage error.
func TestHelpExamplesRunAgainstDev(t *testing.T) {
	p, _ := startDev(t)
	for _, cc := range clientCommands {
		words := splitLine(t, cc.example)
		r := cli(t, []string{"TOC_SERVER=" + p.url}, words[1:]...)
		if r.code != 0 && (r.code != 1 || !strings.Contains(r.stderr, " 404 ")) {
			t.Errorf("example %q against toc dev: exit %d\n%s%s", cc.example, r.code, r.stdout, r.stderr)
		}
	}
}
