package main

import (
	"context"
	"errors"

	"github.com/urfave/cli/v3"
)

func simulateCommand() *cli.Command {
	return &cli.Command{
		Name:  "simulate",
		Usage: "(simulate: not built yet)",
		Action: func(context.Context, *cli.Command) error {
			return errors.New("simulate is not built yet")
		},
	}
}
