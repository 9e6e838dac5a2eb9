package main

import (
	"os"

	"github.com/idmpctl/idmpctl/cmd"
)

func main() { os.Exit(cmd.Main()) }
