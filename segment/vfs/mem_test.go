package vfs

import (
	"errors"
	"os"
	"testing"
)

func mustWrite(t *testing.T, fs FS, name, data string, sync bool) {
	t.Helper()
	f, err := fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func content(fs FS, name string) string {
	b, err := fs.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return "<missing>"
	}
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// The crash rules of pebble's memfs_crashable, one by one.
func TestMemCrash(t *testing.T) {
	fs := NewMem()
	if err := fs.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	// A created, synced file disappears if its directory is not synced,
	// and so does the directory itself.
	mustWrite(t, fs, "/d/a", "a1", true)
	if got := content(fs.CrashClone(), "/d/a"); got != "<missing>" {
		t.Fatalf("unsynced directory: /d/a is %q", got)
	}
	if err := SyncDir(fs, "/"); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir(fs, "/d"); err != nil {
		t.Fatal(err)
	}
	if got := content(fs.CrashClone(), "/d/a"); got != "a1" {
		t.Fatalf("synced file and directory: /d/a is %q", got)
	}
	// Unsynced data is lost; the file keeps its synced bytes.
	f, err := fs.OpenFile("/d/a", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("-more"))
	if got, c := content(fs, "/d/a"), content(fs.CrashClone(), "/d/a"); got != "a1-more" || c != "a1" {
		t.Fatalf("live %q, after crash %q", got, c)
	}
	f.Sync()
	f.Close()
	// A rename is durable only once the directory is synced.
	if err := fs.Rename("/d/a", "/d/b"); err != nil {
		t.Fatal(err)
	}
	c := fs.CrashClone()
	if content(c, "/d/a") != "a1-more" || content(c, "/d/b") != "<missing>" {
		t.Fatalf("unsynced rename survived: a=%q b=%q", content(c, "/d/a"), content(c, "/d/b"))
	}
	SyncDir(fs, "/d")
	c = fs.CrashClone()
	if content(c, "/d/a") != "<missing>" || content(c, "/d/b") != "a1-more" {
		t.Fatalf("synced rename: a=%q b=%q", content(c, "/d/a"), content(c, "/d/b"))
	}
	// A removal too.
	if err := fs.Remove("/d/b"); err != nil {
		t.Fatal(err)
	}
	if content(fs.CrashClone(), "/d/b") != "a1-more" {
		t.Fatal("unsynced removal survived a crash")
	}
	// The clone is a filesystem of its own.
	mustWrite(t, c, "/d/b", "x", false)
	if content(fs, "/d/b") != "<missing>" {
		t.Fatal("a write to the clone reached the original")
	}
}

// Stores to a mapping are the file's bytes: read back, synced by Sync,
// and the size of a mapped file cannot change.
func TestMemMap(t *testing.T) {
	fs := NewMem()
	f, err := fs.OpenFile("/i", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(8); err != nil {
		t.Fatal(err)
	}
	m, err := fs.Map(f, 8)
	if err != nil {
		t.Fatal(err)
	}
	copy(m, "abcd")
	if err := f.Truncate(4); err == nil {
		t.Fatal("truncated a mapped file")
	}
	b := make([]byte, 4)
	if _, err := f.ReadAt(b, 0); err != nil || string(b) != "abcd" {
		t.Fatalf("read %q, %v", b, err)
	}
	f.Sync()
	SyncDir(fs, "/")
	if got := content(fs.CrashClone(), "/i"); got != "abcd\x00\x00\x00\x00" {
		t.Fatalf("after crash %q", got)
	}
	if err := fs.Unmap(f, m); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(2); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(4); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt(b, 0); err != nil || string(b) != "ab\x00\x00" {
		t.Fatalf("regrown file reads %q, %v", b, err)
	}
}

func TestWithErrors(t *testing.T) {
	boom := errors.New("boom")
	fs := WithErrors(NewMem(), func(op Op) error {
		if op.Kind == OpSync && op.Path == "/f" {
			return boom
		}
		return nil
	})
	f, err := fs.OpenFile("/f", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); !errors.Is(err, boom) {
		t.Fatalf("Sync: %v", err)
	}
	if err := f.Truncate(4); err != nil {
		t.Fatal(err)
	}
	m, err := fs.Map(f, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Unmap(f, m); err != nil {
		t.Fatal(err)
	}
}
