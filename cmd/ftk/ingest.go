package main

import (
	"context"
	"errors"

	"github.com/urfave/cli/v3"
)

func ingestCommand() *cli.Command {
	return &cli.Command{
		Name:  "ingest",
		Usage: "(ingest: not built yet)",
		Action: func(context.Context, *cli.Command) error {
			return errors.New("ingest is not built yet")
		},
	}
}
