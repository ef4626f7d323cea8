package main

import (
	"context"
	"errors"

	"github.com/urfave/cli/v3"
)

func validateCommand() *cli.Command {
	return &cli.Command{
		Name:  "validate",
		Usage: "(validate: not built yet)",
		Action: func(context.Context, *cli.Command) error {
			return errors.New("validate is not built yet")
		},
	}
}
