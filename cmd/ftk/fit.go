package main

import (
	"context"
	"errors"

	"github.com/urfave/cli/v3"
)

func fitCommand() *cli.Command {
	return &cli.Command{
		Name:  "fit",
		Usage: "(fit: not built yet)",
		Action: func(context.Context, *cli.Command) error {
			return errors.New("fit is not built yet")
		},
	}
}
