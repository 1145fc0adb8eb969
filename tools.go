//go:build tools

// Package tools pins the modules the project depends on before code imports them.
package tools

import (
	_ "github.com/BurntSushi/toml"
	_ "github.com/charmbracelet/lipgloss"
	_ "github.com/mattn/go-isatty"
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/cobra/doc"
	_ "golang.org/x/sys/unix"
	_ "gopkg.in/yaml.v3"
)
