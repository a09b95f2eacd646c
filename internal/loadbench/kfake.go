package loadbench

import (
	"fmt"
	"io"
	"os"

	"github.com/twmb/franz-go/pkg/kfake"
)

// ServeKfake is the body of the kfake child process: it starts a one-broker
// in-memory kfake cluster on loopback with cfg's topic seeded, prints
// "addr <host:port>" on stdout, and returns after stdin reaches EOF (the
// parent closed it or exited), closing the cluster.
func ServeKfake(cfg Config) error {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(cfg.Partitions, cfg.Topic))
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Fprintf(os.Stdout, "addr %s\n", c.ListenAddrs()[0])
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}
