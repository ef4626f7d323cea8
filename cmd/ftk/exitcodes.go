package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/ftk-dev/ftk/batchjob"
	"github.com/urfave/cli/v3"
)

// Exit codes, the same for every command (README, "What every command does alike"):
//
//	0  success
//	1  input or runtime error: a bad file, a failed write, a failed run
//	2  usage error: unknown command or flag, missing or invalid flag value
//	3  coverage gap: fit --check-coverage found queries outside the sampled domain
//
// Nothing else returns 3.
const (
	exitOK       = 0
	exitRuntime  = 1
	exitUsage    = 2
	exitCoverage = 3
)

// usageError is a command-line mistake: exit code 2.
func usageError(format string, a ...any) error {
	return cli.Exit(fmt.Sprintf(format, a...), exitUsage)
}

// helpArgs drops the arguments of a command asked for its help ("ftk
// collect all --help" is "ftk collect --help"): the library would read the
// first argument as a help topic, answer "No help topic for 'all'" and
// exit 3, the coverage code.
func helpArgs(app *cli.Command, args []string) []string {
	help := false
	for _, a := range args[1:] {
		if a == "--" {
			break
		}
		help = help || a == "--help" || a == "-h"
	}
	if !help {
		return args
	}
	cur, out := app, []string{args[0]}
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "-") || len(cur.Commands) == 0 {
			break
		}
		sub := cur.Command(a)
		if sub == nil {
			break
		}
		cur, out = sub, append(out, a)
	}
	if len(cur.Commands) > 0 {
		return args // a command with subcommands: its help lists them
	}
	return append(out, "--help")
}

// jobUsage makes a job array too large for the scheduler a usage error (a
// --shards value out of range).
func jobUsage(err error) error {
	if errors.Is(err, batchjob.ErrTooManyShards) {
		return usageError("%v", err)
	}
	return err
}

// unknownCommand checks the command names at the start of args (before the
// first flag) against the command tree and returns a usage error for the
// first name that is not a command of a command that has subcommands. The
// library would otherwise answer "No help topic" with exit code 3, or parse
// the following flags as the parent's and complain about them.
func unknownCommand(app *cli.Command, args []string) error {
	cur, path := app, app.Name
	for _, a := range args {
		if strings.HasPrefix(a, "-") || len(cur.Commands) == 0 {
			return nil
		}
		if a == "help" {
			continue // "ftk help models show": the names after help are checked the same way
		}
		sub := cur.Command(a)
		if sub == nil {
			names := make([]string, 0, len(cur.Commands))
			for _, c := range cur.Commands {
				if !c.Hidden {
					names = append(names, c.Name)
				}
			}
			return usageError("unknown command %q for '%s': the commands are %s (see '%s --help')",
				a, path, strings.Join(names, ", "), path)
		}
		cur, path = sub, path+" "+sub.Name
	}
	return nil
}

// setUsageErrors makes a command-line mistake in any command one line
// without library jargon and exit code 2, instead of the full help text; a
// command that only groups subcommands shows its help when run bare.
func setUsageErrors(cmd *cli.Command) {
	applyFlagRules(cmd)
	cmd.OnUsageError = func(_ context.Context, c *cli.Command, err error, _ bool) error {
		return usageError("%s (see '%s --help')", flagErrorText(c, err), c.FullName())
	}
	if len(cmd.Commands) > 0 && cmd.Action == nil {
		cmd.Action = func(_ context.Context, c *cli.Command) error {
			if c.Args().Len() > 0 {
				return usageError("unknown command %q for '%s' (see '%s --help')", c.Args().First(), c.FullName(), c.FullName())
			}
			if c.Root() == c {
				return cli.ShowRootCommandHelp(c)
			}
			return cli.ShowSubcommandHelp(c)
		}
	}
	for _, sub := range cmd.Commands {
		setUsageErrors(sub)
	}
}

var (
	reNotDefined   = regexp.MustCompile(`flag provided but not defined: -+(\S+)`)
	reInvalidValue = regexp.MustCompile(`invalid value "(.*)" for flag -+(\S+): (.*)`)
	reNeedsArg     = regexp.MustCompile(`flag needs an argument: -+(\S+)`)
)

// flagErrorText rewrites the flag library's messages in ftk's words: flags
// as they are typed (--name, -o), what a value should be instead of the Go
// parser's error.
func flagErrorText(c *cli.Command, err error) string {
	msg := err.Error()
	prefix := ""
	if c.Root() != c {
		prefix = strings.TrimPrefix(c.FullName(), c.Root().Name+" ") + ": "
	}
	if m := reNotDefined.FindStringSubmatch(msg); m != nil {
		return prefix + "unknown flag " + flagName(m[1])
	}
	if m := reInvalidValue.FindStringSubmatch(msg); m != nil {
		want := strings.TrimPrefix(m[3], "want ")
		switch {
		case strings.Contains(m[3], "out of range"):
			want = "a value in range"
		case strings.Contains(m[3], "ParseUint"):
			want = "a whole number >= 0"
		case strings.Contains(m[3], "ParseInt"):
			want = "a whole number"
		case strings.Contains(m[3], "ParseFloat"):
			want = "a number"
		case strings.Contains(m[3], "ParseBool"):
			want = "true or false"
		case strings.Contains(m[3], "duration"):
			want = "a duration such as 90s or 5m"
		}
		return fmt.Sprintf("%sinvalid value %q for %s: want %s", prefix, m[1], flagName(m[2]), want)
	}
	if m := reNeedsArg.FindStringSubmatch(msg); m != nil {
		return prefix + flagName(m[1]) + " needs a value"
	}
	return prefix + msg
}

// flagName writes a flag as it is typed: -o, --output.
func flagName(n string) string {
	if len(n) == 1 {
		return "-" + n
	}
	return "--" + n
}
