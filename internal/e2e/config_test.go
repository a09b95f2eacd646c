package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shale-io/shale/internal/proctest"
)

// TestConfigSources checks the precedence of the config sources on the
// binary: a YAML file (--config or SHALE_CONFIG), then SHALE_LISTEN, then
// --listen, by which Kafka address the node actually listens on.
func TestConfigSources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fileAddr, envAddr, flagAddr, admin := proctest.FreeAddr(t), proctest.FreeAddr(t), proctest.FreeAddr(t), proctest.FreeAddr(t)
	cfgPath := filepath.Join(t.TempDir(), "shale.yaml")
	yaml := fmt.Sprintf("data_dir: %s\nlisten: %s\nadmin_listen: %s\nnats_listen: 127.0.0.1:-1\nshutdown_timeout: 5s\n",
		dir, fileAddr, admin)
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	all := []string{fileAddr, envAddr, flagAddr}
	cases := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"file via --config", []string{"serve", "--config", cfgPath}, nil, fileAddr},
		{"file via SHALE_CONFIG", []string{"serve"}, []string{"SHALE_CONFIG=" + cfgPath}, fileAddr},
		{"env over file", []string{"serve", "--config", cfgPath}, []string{"SHALE_LISTEN=" + envAddr}, envAddr},
		{"flag over env and file", []string{"serve", "--config=" + cfgPath, "--listen", flagAddr},
			[]string{"SHALE_LISTEN=" + envAddr}, flagAddr},
	}
	for _, tc := range cases {
		p := proctest.NewNode(t, shaleBin, tc.args, proctest.Env(tc.env...), proctest.AdminAddr(admin), proctest.Name("e2e"))
		p.Start()
		p.WaitReady()

		// The Kafka protocol answers on the winning address only.
		cl := newClient(t, tc.want)
		if err := cl.Ping(proctest.Context(t, 20*time.Second)); err != nil {
			t.Errorf("%s: ping %s: %v", tc.name, tc.want, err)
		}
		cl.Close()
		for _, other := range all {
			if other == tc.want {
				continue
			}
			if c, err := net.DialTimeout("tcp", other, 2*time.Second); err == nil {
				c.Close()
				t.Errorf("%s: something listens on %s too (want only %s)", tc.name, other, tc.want)
			}
		}
		if !strings.Contains(p.Output(), "kafka="+tc.want) {
			t.Errorf("%s: start log does not name kafka=%s", tc.name, tc.want)
		}
		if code, _ := p.Stop(20 * time.Second); code != 0 {
			t.Errorf("%s: exit code %d after SIGTERM", tc.name, code)
		}
		p.CheckNoPanic()
	}
}

// TestConfigRejected checks that a bad config source stops the binary with
// exit code 2 and a message naming the problem, before it binds anything.
func TestConfigRejected(t *testing.T) {
	t.Parallel()
	cfgPath := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(cfgPath, []byte("listen: 127.0.0.1:0\nno_such_key: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, want string
		args, env  []string
	}{
		{"unknown yaml key", "no_such_key", []string{"serve", "--config", cfgPath}, nil},
		{"bad env value", "SHALE_NUM_PARTITIONS", []string{"serve"}, []string{"SHALE_NUM_PARTITIONS=many"}},
		{"bad flag value", "listen", []string{"serve", "--listen", "nocolon"}, nil},
	}
	// Should a bad source be accepted, the node must not touch ./data or
	// the default ports.
	safe := []string{"SHALE_DATA_DIR=" + t.TempDir(), "SHALE_ADMIN_LISTEN=", "SHALE_NATS_LISTEN=127.0.0.1:-1"}
	for _, tc := range cases {
		p := proctest.NewNode(t, shaleBin, tc.args, proctest.Env(safe...), proctest.Env(tc.env...), proctest.Name("e2e"))
		p.Start()
		code := p.WaitExit(30 * time.Second)
		if code != 2 {
			t.Errorf("%s: exit code %d, want 2", tc.name, code)
		}
		if !strings.Contains(p.Output(), tc.want) {
			t.Errorf("%s: stderr does not mention %q:\n%s", tc.name, tc.want, p.Tail())
		}
	}
}
