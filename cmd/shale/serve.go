package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/infra/config"
)

// errServe marks a node that failed to start or to stop cleanly: it has
// logged why, so the exit code is 1 with nothing more on stderr.
var errServe = errors.New("serve")

func newServeCmd() *cobra.Command {
	cmd, _, _ := newServeCmdParts()
	return cmd
}

// newServeCmdParts returns `shale serve` with the --config path and the
// settings its flags record.
func newServeCmdParts() (*cobra.Command, *string, *config.FlagSettings) {
	var configPath string
	var flags *config.FlagSettings
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "run a node",
		Long: `Run a node. Settings come from defaults, then the YAML file named by --config
(or SHALE_CONFIG), then SHALE_* environment variables, then flags; each later
source wins. docs/configuration.md lists every setting.`,
		Example: `  shale serve --data-dir ./data
  shale serve --node-id 1 --nats nats://127.0.0.1:4222 --listen 127.0.0.1:9093 --data-dir d1
  shale serve --s3-endpoint http://127.0.0.1:9000 --s3-bucket shale --s3-path-style`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(configPath, flags)
			if err != nil {
				return err
			}
			return serve(cmd.Context(), cfg, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().SortFlags = false
	cmd.Flags().StringVar(&configPath, "config", os.Getenv("SHALE_CONFIG"), "YAML config file (env SHALE_CONFIG)")
	flags = config.BindFlags(cmd.Flags())
	return cmd, &configPath, flags
}

// loadConfig builds the broker config: defaults, then the YAML file at path,
// then SHALE_* variables, then the flags that were given. An invalid
// config is a usage error.
func loadConfig(path string, flags *config.FlagSettings) (config.Broker, error) {
	cfg := config.Defaults()
	if path != "" {
		if err := cfg.LoadFile(path); err != nil {
			return cfg, usagef("%v", err)
		}
	}
	if err := cfg.ApplyEnv(os.LookupEnv); err != nil {
		return cfg, usagef("%v", err)
	}
	if err := flags.Apply(&cfg); err != nil {
		return cfg, usagef("%v", err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, usagef("%v", err)
	}
	return cfg, nil
}

func newLogger(cfg config.Broker, w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// serve runs a node until ctx ends (SIGINT or SIGTERM), then stops it
// within cfg.ShutdownTimeout.
func serve(ctx context.Context, cfg config.Broker, stderr io.Writer) error {
	logger := newLogger(cfg, stderr)
	slog.SetDefault(logger)
	node, err := broker.Start(ctx, cfg, logger)
	if err != nil {
		logger.Error("start failed", "err", err)
		return fmt.Errorf("%w: start failed: %v", errServe, err)
	}
	<-ctx.Done()
	logger.Info("stopping: finishing in-flight requests, flushing logs")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := node.Close(sctx); err != nil {
		logger.Error("stop", "err", err)
		return fmt.Errorf("%w: stop: %v", errServe, err)
	}
	logger.Info("stopped cleanly")
	return nil
}
