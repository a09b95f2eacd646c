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
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprint(stderr, usage)
	return 2
}
