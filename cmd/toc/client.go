// The client commands: they call a running toc's REST API through package
// client (http/client) and print its answers as tables, or as JSON with
// --json. cli_*.go hold the commands.

package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/toc-project/toc/http/client"
)

// clientCommand is a command that makes one call of a running toc's API.
type clientCommand struct {
	// name is the command's words after toc: "jobs get".
	name  string
	about string
	// example is a command line using it, which its help ends with.
	example string
	// args are its positional arguments, for its usage line and their
	// count: "ID", "NAME".
	args string
	// flags declares the command's own flags and returns what prepares
	// its call from its positional arguments, once the flags are parsed;
	// an error of that is a usage error.
	flags func(fs *flagSet) prepareCall
	// table prints the answer's JSON object.
	table func(w io.Writer, answer map[string]any)
}

// prepareCall makes a command's call of its positional arguments and flags.
type prepareCall func(args []string) (call, error)

// call makes a command's calls of the API and returns the answer to print,
// a value whose JSON is the API's answer.
type call func(ctx context.Context, c *client.Client) (any, error)

// clientCommands are the client commands; a group ("jobs", "topics",
// "dead", "schedules", "groups") is the first word of several.
var clientCommands = []clientCommand{
	{name: "schedule", about: "schedule a job", example: "toc schedule --topic orders --callback https://example.com/hook --delay 30m --payload '{\"order\":42}' --key order-42", flags: scheduleFlags, table: one(jobFields...)},
	{name: "jobs get", about: "show a job", example: "toc jobs get 1234 --json", args: "ID", flags: onJob((*client.Client).Get), table: one(jobFields...)},
	{name: "jobs cancel", about: "cancel a pending job", example: "toc jobs cancel 1234 --if-match 2", args: "ID", flags: cancelFlags, table: one(jobFields...)},
	{name: "jobs reschedule", about: "move a pending job to --fire-at or --delay", example: "toc jobs reschedule 1234 --delay 1h", args: "ID", flags: rescheduleFlags, table: one(jobFields...)},
	{name: "jobs attempts", about: "list a job's deliveries: start, duration, status, error, response", example: "toc jobs attempts 1234", args: "ID",
		flags: onJob(attempts), table: attemptTable},
	{name: "jobs find", about: "find a job by id or idempotency key in every topic the token may see", example: "toc jobs find order-42", args: "ID|KEY", flags: onTopic((*client.Client).Find),
		table: foundJobs},
	{name: "jobs list", about: "find a topic's jobs by status, business id, key and due time", example: "toc jobs list --topic orders --status pending,dead --biz-id 42", flags: jobSearch, table: jobPage},
	{name: "jobs cancel-all", about: "cancel every pending job of a business id or key", example: "toc jobs cancel-all --topic orders --biz-id 42", flags: cancelAll, table: one("cancelled", "too_late")},
	{name: "jobs reschedule-all", about: "move every pending job of a business id or key to --fire-at or --delay", example: "toc jobs reschedule-all --topic orders --key order-42 --fire-at 2030-01-02T15:04:05Z", flags: rescheduleAll,
		table: one("rescheduled", "too_late")},
	{name: "topics list", about: "list the topics", example: "toc topics list", flags: noFlags(topicList), table: page("topics", topicFields...)},
	{name: "topics get", about: "show a topic and its live usage", example: "toc topics get orders", args: "NAME", flags: onTopic((*client.Client).Topic), table: printTopic},
	{name: "topics set", about: "change the settings given as flags", example: "toc topics set orders --rate-limit 50 --max-attempts 8", args: "NAME", flags: topicSettings, table: printTopic},
	{name: "topics retention", about: "show how long a topic's ended jobs are kept and how many it holds; flags change it", example: "toc topics retention orders --done 1h --dead 0 --cancelled default",
		args: "NAME", flags: topicRetention, table: printRetention},
	{name: "topics pause", about: "stop firing a topic's jobs", example: "toc topics pause orders", args: "NAME", flags: onTopic((*client.Client).PauseTopic), table: printTopic},
	{name: "topics resume", about: "fire a paused topic's jobs again", example: "toc topics resume orders", args: "NAME", flags: onTopic((*client.Client).ResumeTopic), table: printTopic},
	{name: "dead list", about: "list the dead letters of a topic, or of every topic, in order of death", example: "toc dead list --topic orders --error timeout --limit 20", flags: deadQuery, table: page("jobs", deadFields...)},
	{name: "dead replay", about: "make a dead letter pending again (now, unless told)", example: "toc dead replay 1234 --delay 5m", args: "ID", flags: replayFlags, table: one(jobFields...)},
	{name: "dead purge", about: "purge a dead letter", example: "toc dead purge 1234", args: "ID", flags: onJob(purge), table: one("id", "purged")},
	{name: "dead summary", about: "a topic's dead letters grouped by why they died", example: "toc dead summary --topic orders --from 2030-01-01T00:00:00Z", flags: deadRangeFlags, table: deadGroups},
	{name: "dead replay-all", about: "replay the dead letters of a --signature (or all) of a topic, at a capped rate", example: "toc dead replay-all --topic orders --signature 'HTTP 503' --delay 1m --rate 100",
		flags: deadBulk(true), table: one("replayed", "more")},
	{name: "dead purge-all", about: "purge the dead letters of a --signature (or all) of a topic, at a capped rate", example: "toc dead purge-all --topic orders --signature 'HTTP 410'",
		flags: deadBulk(false), table: one("purged", "more")},
	{name: "forecast", about: "how many of a topic's jobs fall due per --step from --from to --to, as a bar chart", example: "toc forecast orders --step 15m", args: "TOPIC",
		flags: forecastFlags, table: forecastChart},
	{name: "schedules create", about: "create a recurring schedule: --cron (and --time-zone) or --every, and its job", example: "toc schedules create --every 1h --topic reports --callback https://example.com/hook", flags: scheduleCreateFlags,
		table: printSchedule},
	{name: "schedules list", about: "list the schedules with their next fire times", example: "toc schedules list --limit 20", flags: scheduleListFlags, table: schedulePage},
	{name: "schedules get", about: "show a schedule and its next fire times", example: "toc schedules get 17", args: "ID", flags: onSchedule(scheduleGet), table: printSchedule},
	{name: "schedules pause", about: "stop a schedule making jobs", example: "toc schedules pause 17", args: "ID", flags: onSchedule(schedulePause), table: printSchedule},
	{name: "schedules resume", about: "start a paused schedule again from its next occurrence", example: "toc schedules resume 17", args: "ID", flags: onSchedule(scheduleResume),
		table: printSchedule},
	{name: "schedules delete", about: "delete a schedule (the jobs it made stay)", example: "toc schedules delete 17", args: "ID", flags: onSchedule(scheduleDelete),
		table: one("id", "deleted")},
	{name: "groups create", about: "create an open group: jobs join it with toc schedule --group until it is sealed", example: "toc groups create batch-7 --on-complete https://example.com/done", args: "ID",
		flags: groupCreateFlags, table: printGroup},
	{name: "groups get", about: "show a group and its members' counts by status", example: "toc groups get batch-7", args: "ID", flags: onGroup((*client.Client).GetGroup), table: printGroup},
	{name: "groups seal", about: "close a group to new members: it completes once every member has ended", example: "toc groups seal batch-7", args: "ID",
		flags: onGroup((*client.Client).SealGroup), table: printGroup},
	{name: "cluster", about: "show the cluster's members, leader and slots", example: "toc cluster", flags: noFlags(cluster), table: printCluster},
	{name: "audit", about: "list the audit log, newest first: who did which admin or bulk action, when, on how many jobs", example: "toc audit --action topic.pause --since 2030-01-01T00:00:00Z",
		flags: auditFlags, table: auditPage},
}

// clientAliases are the short forms of client commands.
var clientAliases = map[string]string{"get": "jobs get", "cancel": "jobs cancel"}

func findClientCommand(name string) (clientCommand, bool) {
	i := slices.IndexFunc(clientCommands, func(cc clientCommand) bool { return cc.name == name })
	if i < 0 {
		return clientCommand{}, false
	}
	return clientCommands[i], true
}

// runClient runs the client command name (or of the group name) with
// args, in which flags may come anywhere.
func runClient(ctx context.Context, name string, args []string, stdout, stderr io.Writer) error {
	name = cmp.Or(clientAliases[name], name)
	cc, ok := findClientCommand(name)
	if !ok {
		// A group: its command is the first argument that names one.
		i := slices.IndexFunc(args, func(a string) bool {
			_, ok := findClientCommand(name + " " + a)
			return ok
		})
		if i < 0 {
			return groupUsage(name, args, stdout, stderr)
		}
		cc, _ = findClientCommand(name + " " + args[i])
		args = slices.Delete(slices.Clone(args), i, i+1)
	}
	fs, o, do, err := cc.parse(args)
	fail := func(err error) error {
		fmt.Fprintf(stderr, "toc %s: %v\n", cc.name, err)
		fs.SetOutput(stderr)
		fs.Usage()
		return exitError{2}
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		return err
	case err != nil:
		return fail(err)
	}
	server, token, asJSON, timeout := o.server, o.token, o.asJSON, o.timeout
	c, err := client.New(*server, client.WithToken(*token), client.WithUserAgent("toc/"+version),
		client.WithHTTPClient(&http.Client{Timeout: *timeout}))
	if err != nil {
		return fail(fmt.Errorf("--server: %w", err))
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	answer, err := do(ctx, c)
	if e, ok := errors.AsType[*client.Error](err); ok {
		printError(stderr, e, *asJSON)
		return exitError{1}
	}
	if err != nil {
		return err
	}
	return show(stdout, answer, *asJSON, cc.table)
}

// clientFlags are the flags of every client command.
type clientFlags struct {
	server, token *string
	asJSON        *bool
	timeout       *time.Duration
}

// parse reads the arguments of cc, in which its flags may come anywhere,
// and returns its flag set, its common flags and the call to make; an
// error is a usage error, or flag.ErrHelp when help was asked for.
func (cc clientCommand) parse(args []string) (*flagSet, clientFlags, call, error) {
	fs := newFlagSet(cc.name, strings.Join(strings.Fields(cc.name+" "+cc.args+" [flags]"), " "))
	fs.example = cc.example
	o := clientFlags{
		server:  fs.string("server", "http://127.0.0.1:8080", "toc's address"),
		token:   fs.string("token", "", "bearer token"),
		asJSON:  fs.bool("json", false, "print the API's JSON instead of a table"),
		timeout: fs.duration("timeout", 30*time.Second, "how long the command may take, retries included"),
	}
	prep := cc.flags(fs)
	fs.SetOutput(io.Discard) // the caller prints errors and help
	pos, err := fs.parseAnywhere(args)
	if err != nil {
		return fs, o, nil, err
	}
	if len(pos) != len(strings.Fields(cc.args)) {
		return fs, o, nil, fmt.Errorf("want %s, got %d arguments", cmp.Or(cc.args, "no arguments"), len(pos))
	}
	do, err := prep(pos)
	return fs, o, do, err
}

// printError prints an API error: its message, or with --json its
// status and the API's error object.
func printError(w io.Writer, e *client.Error, asJSON bool) {
	if !asJSON {
		fmt.Fprintf(w, "toc: %v\n", e)
		return
	}
	fmt.Fprintf(w, "toc: %s %s: %d %s\n", e.Method, e.Path, e.Status, http.StatusText(e.Status))
	type detail struct {
		Code    string             `json:"code"`
		Message string             `json:"message"`
		Field   string             `json:"field,omitempty"`
		Items   []client.ItemError `json:"items,omitempty"`
	}
	writeJSON(w, map[string]detail{"error": {Code: e.Code, Message: e.Message, Field: e.Field, Items: e.Items}})
}

// show prints answer: its JSON with --json, else the table that table
// makes of its JSON object (numbers as they are).
func show(w io.Writer, answer any, asJSON bool, table func(io.Writer, map[string]any)) error {
	if asJSON {
		return writeJSON(w, answer)
	}
	b, err := json.Marshal(answer)
	if err != nil {
		return err
	}
	var object map[string]any
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	if err := dec.Decode(&object); err != nil {
		return fmt.Errorf("the answer is not a JSON object: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	table(tw, object)
	return tw.Flush()
}

// writeJSON writes v as indented JSON, as the API writes it (no HTML
// escapes).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// noFlags is a command with no flags of its own and no arguments.
func noFlags(do call) func(fs *flagSet) prepareCall {
	return func(*flagSet) prepareCall {
		return func([]string) (call, error) { return do, nil }
	}
}

// onJob is a command on the job its one argument names, with no flags
// of its own.
func onJob[T any](do func(c *client.Client, ctx context.Context, id uint64) (T, error)) func(fs *flagSet) prepareCall {
	return func(*flagSet) prepareCall {
		return func(args []string) (call, error) {
			id, err := parseID(args[0])
			if err != nil {
				return nil, err
			}
			return func(ctx context.Context, c *client.Client) (any, error) { return do(c, ctx, id) }, nil
		}
	}
}

// onTopic is a command on the topic its one argument names (or on that
// argument as text: jobs find), with no flags of its own.
func onTopic[T any](do func(c *client.Client, ctx context.Context, name string) (T, error)) func(fs *flagSet) prepareCall {
	return func(*flagSet) prepareCall {
		return func(args []string) (call, error) {
			return func(ctx context.Context, c *client.Client) (any, error) { return do(c, ctx, args[0]) }, nil
		}
	}
}

// parseID reads a job id argument.
func parseID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("%q is not a job id: a positive decimal integer", s)
	}
	return id, nil
}

// printTable prints objects, JSON objects of the API, as a table with a
// column for each of fields, headed by the field in upper case.
func printTable(w io.Writer, fields []string, objects ...map[string]any) {
	row := make([]string, len(fields))
	for i, f := range fields {
		row[i] = strings.ToUpper(f)
	}
	fmt.Fprintln(w, strings.Join(row, "\t"))
	for _, o := range objects {
		for i, f := range fields {
			row[i] = cell(o[f])
		}
		fmt.Fprintln(w, strings.Join(row, "\t"))
	}
}

// maxCell is the most runes of a cell of a table; --json prints values
// whole.
const maxCell = 60

// cell is a JSON value as one cell of a table: on one line, its white
// space collapsed, at most maxCell runes (cut with "…"), "-" for nothing.
func cell(v any) string {
	switch v := v.(type) {
	case nil:
		return "-"
	case string:
		return cmp.Or(truncate(strings.Join(strings.Fields(v), " "), maxCell), "-")
	}
	return truncate(fmt.Sprint(v), maxCell)
}

// truncate cuts s to at most n runes, the last of them "…" when cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// objects are the JSON objects of an array.
func objects(array any) []map[string]any {
	var out []map[string]any
	values, _ := array.([]any)
	for _, v := range values {
		if o, ok := v.(map[string]any); ok {
			out = append(out, o)
		}
	}
	return out
}

// one is a table of an object: its fields.
func one(fields ...string) func(io.Writer, map[string]any) {
	return func(w io.Writer, o map[string]any) { printTable(w, fields, o) }
}

// page is a table of a page of objects, {key: [...], "next_cursor":
// cursor}: their fields, and the cursor of the next page when there is
// one.
func page(key string, fields ...string) func(io.Writer, map[string]any) {
	return func(w io.Writer, p map[string]any) {
		printTable(w, fields, objects(p[key])...)
		if next, _ := p["next_cursor"].(string); next != "" {
			fmt.Fprintf(w, "\nmore: --cursor %s\n", next)
		}
	}
}

// groupUsage prints the commands of group: to stdout when asked with -h,
// else to stderr with exit code 2.
func groupUsage(group string, args []string, stdout, stderr io.Writer) error {
	out, err := stderr, error(exitError{2})
	if slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "--help" || a == "help" }) {
		out, err = stdout, flag.ErrHelp
	} else if len(args) > 0 {
		fmt.Fprintf(stderr, "toc %s: no command in %q\n", group, args)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "usage:")
	var example string
	for _, cc := range clientCommands {
		if strings.HasPrefix(cc.name, group+" ") {
			fmt.Fprintf(tw, "  toc %s %s\t%s\n", cc.name, cc.args, cc.about)
			example = cmp.Or(example, cc.example)
		}
	}
	tw.Flush()
	fmt.Fprintf(out, "\nRun 'toc help %s <command>' for its flags.\n\nexample:\n  %s\n", group, example)
	return err
}

// parseAnywhere is parse for a command whose flags may come before,
// between or after its positional arguments (toc jobs get 123 --json),
// which it returns. The flag package stops at the first positional
// argument, so the flags are moved ahead of them: a flag that is not
// boolean takes the next argument as its value unless written
// --name=value, and "--" ends the flags.
func (fs *flagSet) parseAnywhere(args []string) ([]string, error) {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name, _, inline := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if f := fs.Lookup(name); f != nil && !inline && !isBoolFlag(f.Value) && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	if err := fs.parse(flags); err != nil {
		return nil, err
	}
	return pos, nil
}

func isBoolFlag(v flag.Value) bool {
	b, ok := v.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// timeFlag is a flag of an RFC 3339 time; zero when not given.
type timeFlag struct{ t time.Time }

func (f *timeFlag) String() string {
	if f == nil || f.t.IsZero() {
		return ""
	}
	return f.t.Format(time.RFC3339Nano)
}

func (f *timeFlag) Set(v string) error {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return errors.New("not an RFC 3339 time, like 2026-01-02T15:04:05Z")
	}
	f.t = t
	return nil
}

// timeVar declares a flag of an RFC 3339 time.
func (fs *flagSet) timeVar(name, usage string) *time.Time {
	f := new(timeFlag)
	fs.Var(f, name, usage)
	return &f.t
}

// whenFlags declares --fire-at and --delay, when a job is to fire, and
// returns what reads them: the zero When (now) when neither is given, a
// usage error when both are, or when neither is and one is required.
func whenFlags(fs *flagSet, required bool) func() (client.When, error) {
	fireAt := fs.timeVar("fire-at", "fire at this RFC 3339 time")
	delay := fs.duration("delay", 0, "fire after this long (instead of --fire-at)")
	return func() (client.When, error) {
		delayed := explicit(fs, "delay")
		switch {
		case !fireAt.IsZero() && delayed:
			return client.When{}, errors.New("give --fire-at or --delay, not both")
		case !fireAt.IsZero():
			return client.At(*fireAt), nil
		case delayed:
			return client.After(*delay), nil
		case required:
			return client.When{}, errors.New("give --fire-at or --delay")
		}
		return client.When{}, nil
	}
}
