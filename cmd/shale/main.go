// Command shale is the Shale broker and its tools:
//
//	shale serve [flags]              run a node
//	shale segment dump [flags] FILE  print segment, index and time index files
package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `shale: a Kafka-protocol broker with tiered storage

usage:
  shale serve [flags]                     run a node (shale serve -h lists the flags)
  shale segment dump [--records] [--output json] FILE...
                                          print .log, .index and .timeindex files
  shale tier status [--admin HOST:PORT] [--topic T] [--output json]
                                          per partition: log start, local log start, high watermark, remote segments, upload lag
  shale cluster status [--bootstrap HOST:PORT] [--topic T] [--output json]
                                          nodes, controller, and each partition's leader, epoch and ISR
  shale replication status [--node ADMIN_ADDR ...] [--topic T] [--under-replicated [--max-lag N]] [--json]
                                          per node: each replica's offsets and ISR, followers' lag, replica fetchers
  shale topic create|list|describe|alter-config|delete ...
                                          manage topics (shale topic -h)
  shale produce TOPIC [FILE...]           produce lines from stdin or files (shale produce -h)
  shale consume TOPIC                     print records (shale consume -h)
  shale group list|describe|reset-offsets ...
                                          consumer groups, lag, offset resets (shale group -h)
  client verbs take --bootstrap HOST:PORT (env SHALE_BOOTSTRAP, default 127.0.0.1:9092) and --output text|json
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stderr)
	case "segment":
		if len(args) > 1 && args[1] == "dump" {
			return segmentDump(args[2:], stdout, stderr)
		}
	case "tier":
		if len(args) > 1 && args[1] == "status" {
			return tierStatus(args[2:], stdout, stderr)
		}
	case "cluster":
		return clusterCmd(args[1:], stdout, stderr)
	case "replication":
		return replicationCmd(args[1:], stdout, stderr)
	case "topic":
		return topicCmd(args[1:], stdout, stderr)
	case "produce":
		return produceCmd(args[1:], stdout, stderr)
	case "consume":
		return consumeCmd(args[1:], stdout, stderr)
	case "group":
		return groupCmd(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprint(stderr, usage)
	return 2
}
