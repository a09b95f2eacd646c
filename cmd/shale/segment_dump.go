package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/shale-io/shale/segment/dumplog"
)

func segmentDump(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shale segment dump", flag.ContinueOnError)
	fs.SetOutput(stderr)
	records := fs.Bool("records", false, "print every record: offset, timestamp, key, value, headers")
	output := fs.String("output", "text", "text or json")
	maxDecomp := fs.Int("max-decompressed", 64<<20, "largest decompressed batch to decode")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 || (*output != "text" && *output != "json") {
		fmt.Fprintln(stderr, "usage: shale segment dump [--records] [--output text|json] FILE...")
		return 2
	}
	if err := dumplog.Dump(stdout, fs.Args(), dumplog.Options{Records: *records, JSON: *output == "json", MaxDecompressed: *maxDecomp}); err != nil {
		fmt.Fprintf(stderr, "shale segment dump: %v\n", err)
		return 1
	}
	return 0
}
