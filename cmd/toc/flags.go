package main

import (
	"flag"
	"fmt"
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
	// example is a command line using the command, which its usage ends
	// with.
	example string
}

func newFlagSet(name, usage string) *flagSet {
	fs := &flagSet{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError)}
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "usage: toc %s\n\n", usage)
		fs.VisitAll(func(f *flag.Flag) {
			fmt.Fprintf(out, "  --%s", f.Name)
			g := *f
			if o, ok := g.Value.(*onceFlag); ok {
				g.Value = o.Value // UnquoteUsage names the type of the value
			}
			if name, _ := flag.UnquoteUsage(&g); name != "" {
				fmt.Fprintf(out, " %s", name)
			}
			fmt.Fprintf(out, "\n    \t%s (env %s", f.Usage, strings.Join(fs.envNames(f.Name), " or "))
			if f.DefValue != "" && f.DefValue != "[]" {
				fmt.Fprintf(out, "; default %s", f.DefValue)
			}
			fmt.Fprintln(out, ")")
		})
		if fs.example != "" {
			fmt.Fprintf(out, "\nexample:\n  %s\n", fs.example)
		}
	}
	return fs
}

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
	if err := fs.Parse(args); err != nil {
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
