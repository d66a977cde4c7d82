//go:build tools

// Package pith pins the project's direct dependencies while the packages that
// use them are being written, so `go mod tidy` keeps one consistent module set.
package pith

import (
	_ "github.com/anthropics/anthropic-sdk-go/v2"
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/hashicorp/go-hclog"
	_ "github.com/hashicorp/go-plugin"
	_ "github.com/knadh/koanf/parsers/json"
	_ "github.com/knadh/koanf/parsers/toml/v2"
	_ "github.com/knadh/koanf/parsers/yaml"
	_ "github.com/knadh/koanf/providers/confmap"
	_ "github.com/knadh/koanf/providers/env/v2"
	_ "github.com/knadh/koanf/providers/file"
	_ "github.com/knadh/koanf/v2"
	_ "github.com/openai/openai-go/v3"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/spf13/cobra"
	_ "github.com/tidwall/gjson"
	_ "github.com/tidwall/sjson"
	_ "go.uber.org/goleak"
	_ "google.golang.org/grpc"
	_ "google.golang.org/protobuf/proto"
)
