package main

import (
	"context"
	"errors"

	"github.com/urfave/cli/v3"
)

func collectCommand() *cli.Command {
	return &cli.Command{
		Name:  "collect",
		Usage: "(collect: not built yet)",
		Action: func(context.Context, *cli.Command) error {
			return errors.New("collect is not built yet")
		},
	}
}
