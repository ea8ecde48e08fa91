package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// flagSet wraps flag.FlagSet so that every flag also reads an environment
// variable, TOC_ and its name in upper case with - as _, which the usage
// text names.
type flagSet struct {
	*flag.FlagSet
	envErr error
	// aliases are further environment variables of a flag, by flag name.
	aliases map[string][]string
	// usage is the command's usage line after "toc", and what more its
	// help says before the flags.
	usage string
	// example is a command line using the command (or several, a line
	// each), which its help ends with.
	example string
}

func newFlagSet(name, usage string) *flagSet {
	fs := &flagSet{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), usage: usage}
	fs.Usage = func() { fs.help().write(fs.Output()) }
	return fs
}

// help is what a command's help says: its usage after "toc", its flags
// and a command line using it. The help text and the generated docs
// (docs/cli.md, docs/configuration.md) are both made of it.
type help struct {
	usage   string
	flags   []flagDoc
	example string
}

// flagDoc is one flag as its help names it.
type flagDoc struct {
	name string
	// arg names the type of its value ("duration"), empty for a bool.
	arg   string
	usage string
	// envs are the environment variables it reads, TOC_<NAME> first.
	envs []string
	// def is its default as the flag package prints it, empty for none.
	def string
}

func (h help) write(w io.Writer) {
	fmt.Fprintf(w, "usage: toc %s\n", h.usage)
	if len(h.flags) > 0 {
		fmt.Fprintln(w)
	}
	for _, f := range h.flags {
		fmt.Fprintf(w, "  --%s", f.name)
		if f.arg != "" {
			fmt.Fprintf(w, " %s", f.arg)
		}
		fmt.Fprintf(w, "\n    \t%s (env %s", f.usage, strings.Join(f.envs, " or "))
		if f.def != "" {
			fmt.Fprintf(w, "; default %s", f.def)
		}
		fmt.Fprintln(w, ")")
	}
	if h.example != "" {
		fmt.Fprintf(w, "\nexample:\n  %s\n", strings.ReplaceAll(h.example, "\n", "\n  "))
	}
}

// help is the help of the command fs parses the flags of.
func (fs *flagSet) help() help {
	h := help{usage: fs.usage, example: fs.example}
	fs.VisitAll(func(f *flag.Flag) {
		g := *f
		if o, ok := g.Value.(*onceFlag); ok {
			g.Value = o.Value // UnquoteUsage names the type of the value
		}
		arg, usage := flag.UnquoteUsage(&g)
		def := f.DefValue
		if def == "[]" {
			def = ""
		}
		h.flags = append(h.flags, flagDoc{name: f.Name, arg: arg, usage: usage, envs: fs.envNames(f.Name), def: def})
	})
	return h
}

// helpError is flag.ErrHelp with the help that was printed, so that the
// docs can be generated from what each command declares.
type helpError struct{ help help }

func (helpError) Error() string { return flag.ErrHelp.Error() }
func (helpError) Unwrap() error { return flag.ErrHelp }

func envName(flagName string) string {
	return "TOC_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// envNames are the environment variables of a flag: TOC_<NAME> and its
// aliases.
func (fs *flagSet) envNames(flagName string) []string {
	return append([]string{envName(flagName)}, fs.aliases[flagName]...)
}

// alias makes env a further environment variable of flag name.
func (fs *flagSet) alias(name, env string) {
	if fs.aliases == nil {
		fs.aliases = map[string][]string{}
	}
	fs.aliases[name] = append(fs.aliases[name], env)
}

// parse applies the environment, then the arguments, which win. A flag
// that takes one value may be given once among the arguments: a repeat is
// an error naming the flag, not a silent last-wins (two --mysql-dsn are
// two task stores, which toc cannot use yet). Lists (fs.list) repeat.
func (fs *flagSet) parse(args []string) error {
	fs.VisitAll(func(f *flag.Flag) {
		var (
			v, env string
			ok     bool
		)
		for _, env = range fs.envNames(f.Name) {
			if v, ok = os.LookupEnv(env); ok {
				break
			}
		}
		if !ok {
			return
		}
		if list, isList := f.Value.(*listFlag); isList {
			list.setAll(v)
			return
		}
		if err := f.Value.Set(v); err != nil && fs.envErr == nil {
			fs.envErr = fmt.Errorf("%s=%q: %w", env, v, err)
		}
	})
	if fs.envErr != nil {
		return fs.envErr
	}
	var once []*onceFlag
	fs.VisitAll(func(f *flag.Flag) {
		if _, isList := f.Value.(*listFlag); isList {
			return
		}
		if _, done := f.Value.(*onceFlag); done {
			return
		}
		o := &onceFlag{Value: f.Value}
		f.Value = o
		once = append(once, o)
	})
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return helpError{fs.help()}
	} else if err != nil {
		return err
	}
	var repeated []string
	fs.VisitAll(func(f *flag.Flag) {
		if o, ok := f.Value.(*onceFlag); ok && o.n > 1 {
			repeated = append(repeated, fmt.Sprintf("--%s given %d times", f.Name, o.n))
		}
	})
	if len(repeated) > 0 {
		return fmt.Errorf("%s: it takes one value (the flags marked repeatable take several)", strings.Join(repeated, ", "))
	}
	return nil
}

// onceFlag counts how often a single-valued flag is set from the
// arguments, so that parse can refuse a repeat. It does not say which
// values were given: a DSN or a password must not be echoed.
type onceFlag struct {
	flag.Value
	n int
}

func (o *onceFlag) Set(v string) error {
	o.n++
	return o.Value.Set(v)
}

// IsBoolFlag keeps --flag without a value working for bool flags.
func (o *onceFlag) IsBoolFlag() bool {
	b, ok := o.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func (fs *flagSet) string(name, def, usage string) *string { return fs.String(name, def, usage) }
func (fs *flagSet) bool(name string, def bool, usage string) *bool {
	return fs.Bool(name, def, usage)
}
func (fs *flagSet) int(name string, def int, usage string) *int { return fs.Int(name, def, usage) }
func (fs *flagSet) float(name string, def float64, usage string) *float64 {
	return fs.Float64(name, def, usage)
}
func (fs *flagSet) duration(name string, def time.Duration, usage string) *time.Duration {
	return fs.Duration(name, def, usage)
}

// list is a repeatable flag; its environment variable holds the values
// separated by commas or spaces. Values given as flags replace the
// environment's.
func (fs *flagSet) list(name, usage string) *listFlag {
	l := &listFlag{}
	fs.Var(l, name, usage+" (repeatable)")
	return l
}

// spaceList is list whose environment variable separates its values by
// white space only: for values that may hold commas, such as DSNs.
func (fs *flagSet) spaceList(name, usage string) *listFlag {
	l := &listFlag{spaceOnly: true}
	fs.Var(l, name, usage+" (repeatable)")
	return l
}

type listFlag struct {
	values    []string
	fromEnv   bool
	spaceOnly bool
}

func (l *listFlag) String() string { return strings.Join(l.values, ",") }

func (l *listFlag) Set(v string) error {
	if l.fromEnv {
		l.values, l.fromEnv = nil, false
	}
	l.values = append(l.values, v)
	return nil
}

func (l *listFlag) setAll(v string) {
	if l.spaceOnly {
		l.values = strings.Fields(v)
	} else {
		l.values = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })
	}
	l.fromEnv = true
}
