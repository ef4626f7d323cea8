// Command ftk predicts how fast a language model serves a workload on given
// hardware and parallel layout, from per-operator profiles: collect, ingest,
// fit, simulate, validate, datasets.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"unicode"

	"github.com/ftk-dev/ftk/outlock"

	"github.com/urfave/cli/v3"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	setSoftMemoryLimit()
	os.Exit(runHandlingSignals(os.Args, os.Stdout, os.Stderr))
}

// runHandlingSignals is run with SIGINT (Ctrl-C) and SIGTERM handled: the
// temporary files of every output being written are removed, a line on
// stderr says so, and the process exits 128 + the signal's number (130,
// 143), as a shell reports a process the signal killed. SIGKILL cannot be
// handled: the next run of the output removes what it left (see
// lockOutput).
func runHandlingSignals(args []string, stdout, stderr io.Writer) int {
	held := &outlock.Holdings{}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := (<-sig).(syscall.Signal)
		n, err := held.Interrupt()
		if err != nil {
			fmt.Fprintf(stderr, "ftk: stopped by %v; removed %d temporary files of the unfinished outputs, then failed: %v\n", s, n, err)
		} else {
			fmt.Fprintf(stderr, "ftk: stopped by %v; removed %d temporary files of the unfinished outputs\n", s, n)
		}
		os.Exit(128 + int(s))
	}()
	return run(outlock.NewContext(context.Background(), held), args, stdout, stderr)
}

// run executes the ftk command line and returns the process exit code. Every
// error is printed as one line on stderr; nothing panics on bad input, and
// a panic (a bug) exits 1 as a failed run, not Go's 2, which the exit-code
// table gives to usage errors.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return exitOnPanic(stderr, func() int { return runApp(ctx, args, stdout, stderr) })
}

// exitOnPanic returns f's exit code, or exitRuntime with the panic and its
// stack on stderr when f panics.
func exitOnPanic(stderr io.Writer, f func() int) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "ftk: internal error: %v\nThis is a bug in ftk: please report it with the command line and this stack:\n%s", r, debug.Stack())
			code = exitRuntime
		}
	}()
	return f()
}

func runApp(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	err := unknownCommand(app, args[1:])
	if err == nil {
		err = app.Run(ctx, helpArgs(app, args))
	}
	if err != nil {
		fmt.Fprintf(stderr, "ftk: %s\n", printable(err.Error()))
		var ec cli.ExitCoder
		if errors.As(err, &ec) && ec.ExitCode() != 0 {
			return ec.ExitCode()
		}
		return exitRuntime
	}
	return exitOK
}

// printable makes an error message safe for a terminal: it quotes what it
// read from files (a CSV header, a cell), and a control character there
// (an escape sequence that recolours or retitles the terminal) is written
// as a Go escape (\x1b) instead of acting; line breaks and tabs stay.
func printable(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return r != '\n' && r != '\t' && !unicode.IsPrint(r) }) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t' || (unicode.IsPrint(r) && r != unicode.ReplacementChar):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

func newApp(stdout, stderr io.Writer) *cli.Command {
	app := &cli.Command{
		Name:      "ftk",
		Usage:     "predict LLM serving latency and throughput from per-operator profiles",
		Version:   version,
		Writer:    stdout,
		ErrWriter: stderr,
		// Errors are printed once by run, not by the library.
		ExitErrHandler: func(context.Context, *cli.Command, error) {},
		Description: `ftk is a pipeline of stages:

  collect   profile operators on a GPU (or the built-in synthetic device model)
  ingest    read profiling CSV + YAML into an Arrow profile dataset
  fit       fit random-forest latency predictors into an Arrow model bundle
  simulate  discrete-event simulation of vLLM-style serving
  search    the best deployment for a model, a workload and a latency SLO
  validate  simulated vs. measured error tables
  datasets  workloads and request traces

Start with "make pipeline", or
  ftk simulate --model llama-3.1-8b --device h100 --workload fixed:1024x256 --rate 4 --num-requests 200`,
		Commands: []*cli.Command{
			collectCommand(),
			ingestCommand(),
			fitCommand(),
			simulateCommand(),
			searchCommand(),
			validateCommand(),
			datasetsCommand(),
			modelsCommand(),
			devicesCommand(),
			versionCommand(),
		},
	}
	setUsageErrors(app)
	return app
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the ftk version",
		Action: func(_ context.Context, cmd *cli.Command) error {
			_, err := fmt.Fprintf(cmd.Root().Writer, "ftk %s\n", version)
			return err
		},
	}
}
