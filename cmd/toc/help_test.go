package main

import (
	"bytes"
	"errors"
	"flag"
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
			if cc.example == "" || !strings.Contains(out, "\nexample:\n  "+cc.example+"\n") {
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
		name := strings.Fields(c.name)[0]
		if !strings.Contains(top, "\n  "+c.name+"  ") {
			t.Errorf("toc help does not list %q", c.name)
		}
		if name == "help" {
			continue
		}
		out, _, err := helpOf(t, name)
		if !errors.Is(err, flag.ErrHelp) || !strings.Contains(out, "usage: toc "+name) || !strings.Contains(out, "\nexample:\n  toc "+name) {
			t.Errorf("toc help %s: %v\n%s", name, err, out)
		}
	}
	// A group's help lists its commands.
	if out, _, err := helpOf(t, "dead"); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out, "toc dead purge-all") {
		t.Errorf("toc help dead: %v\n%s", err, out)
	}
	if _, stderr, err := helpOf(t, "frobnicate"); !errors.Is(err, exitError{2}) || !strings.Contains(stderr, `unknown command "frobnicate"`) {
		t.Errorf("toc help frobnicate: %v, stderr %q; want exit 2 naming it", err, stderr)
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
