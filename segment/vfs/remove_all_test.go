package vfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestRemoveAll(t *testing.T) {
	for name, fs := range map[string]FS{"mem": NewMem(), "os": Default} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir() // on the memory FS, just a path
			dir := filepath.Join(root, "events-0")
			if err := fs.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"a.log", "partition.metadata", "sub/b"} {
				if err := WriteFile(fs, filepath.Join(dir, f), []byte(f), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := WriteFile(fs, filepath.Join(root, "kept"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := RemoveAll(fs, dir); err != nil {
				t.Fatal(err)
			}
			if _, err := fs.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("Stat after RemoveAll: %v", err)
			}
			if _, err := fs.Stat(filepath.Join(root, "kept")); err != nil {
				t.Fatalf("a sibling went too: %v", err)
			}
			if err := RemoveAll(fs, dir); err != nil {
				t.Fatalf("RemoveAll of a missing path: %v", err)
			}
		})
	}
}
