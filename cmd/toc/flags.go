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
}

func newFlagSet(name, usage string) *flagSet {
	fs := &flagSet{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError)}
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "usage: toc %s\n\n", usage)
		fs.VisitAll(func(f *flag.Flag) {
			fmt.Fprintf(out, "  --%s", f.Name)
			if name, _ := flag.UnquoteUsage(f); name != "" {
				fmt.Fprintf(out, " %s", name)
			}
			fmt.Fprintf(out, "\n    \t%s (env %s", f.Usage, strings.Join(fs.envNames(f.Name), " or "))
			if f.DefValue != "" && f.DefValue != "[]" {
				fmt.Fprintf(out, "; default %s", f.DefValue)
			}
			fmt.Fprintln(out, ")")
		})
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

// parse applies the environment, then the arguments, which win.
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
	return fs.Parse(args)
}

func (fs *flagSet) string(name, def, usage string) *string { return fs.String(name, def, usage) }
func (fs *flagSet) bool(name string, def bool, usage string) *bool {
	return fs.Bool(name, def, usage)
}
func (fs *flagSet) int(name string, def int, usage string) *int { return fs.Int(name, def, usage) }
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

type listFlag struct {
	values  []string
	fromEnv bool
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
	l.values = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })
	l.fromEnv = true
}
