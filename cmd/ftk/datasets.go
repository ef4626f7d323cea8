package main

import (
	"context"
	"errors"

	"github.com/urfave/cli/v3"
)

func datasetsCommand() *cli.Command {
	return &cli.Command{
		Name:  "datasets",
		Usage: "(datasets: not built yet)",
		Action: func(context.Context, *cli.Command) error {
			return errors.New("datasets is not built yet")
		},
	}
}
