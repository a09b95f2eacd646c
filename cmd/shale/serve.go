package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/infra/config"
)

// loadConfig builds the broker config: defaults, then the YAML file named by
// --config (or SHALE_CONFIG), then SHALE_* variables, then flags.
func loadConfig(args []string, stderr io.Writer) (config.Broker, error) {
	cfg := config.Defaults()
	path := os.Getenv("SHALE_CONFIG")
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			path = v
		} else if (a == "--config" || a == "-config") && i+1 < len(args) {
			path = args[i+1]
		}
	}
	if path != "" {
		if err := cfg.LoadFile(path); err != nil {
			return cfg, err
		}
	}
	if err := cfg.ApplyEnv(os.LookupEnv); err != nil {
		return cfg, err
	}
	fs := flag.NewFlagSet("shale serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.String("config", path, "YAML config file (env SHALE_CONFIG)")
	cfg.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
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

func serve(args []string, stderr io.Writer) int {
	cfg, err := loadConfig(args, stderr)
	if err != nil {
		if err.Error() == "flag: help requested" {
			return 0
		}
		fmt.Fprintf(stderr, "shale serve: %v\n", err)
		return 2
	}
	logger := newLogger(cfg, stderr)
	slog.SetDefault(logger)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	node, err := broker.Start(ctx, cfg, logger)
	if err != nil {
		logger.Error("start failed", "err", err)
		return 1
	}
	<-ctx.Done()
	logger.Info("stopping: finishing in-flight requests, flushing logs")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := node.Close(sctx); err != nil {
		logger.Error("stop", "err", err)
		return 1
	}
	logger.Info("stopped cleanly")
	return 0
}
