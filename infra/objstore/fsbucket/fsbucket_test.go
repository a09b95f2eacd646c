package fsbucket_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/infra/objstore/fsbucket"
	"github.com/shale-io/shale/infra/objstore/objstoretest"
)

func TestAcceptance(t *testing.T) {
	objstoretest.Run(t, func(t *testing.T) objstore.Bucket {
		b, err := fsbucket.New(filepath.Join(t.TempDir(), "bucket"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}

func TestFilesAndTempNames(t *testing.T) {
	ctx := context.Background()
	b, err := fsbucket.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "t/x/obj", strings.NewReader("hello"), 5); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(b.Dir(), "t", "x", "obj"))
	if err != nil || string(got) != "hello" {
		t.Fatalf("file: %q, %v", got, err)
	}
	// A leftover temporary file (a crash mid-Put) is invisible to List and
	// its name is not a valid key.
	if err := os.WriteFile(filepath.Join(b.Dir(), "t", "x", fsbucket.TempPrefix+"123"), []byte("torn"), 0o644); err != nil {
		t.Fatal(err)
	}
	var keys []string
	if err := b.List(ctx, "t/", func(a objstore.Attrs) error { keys = append(keys, a.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys, []string{"t/x/obj"}) {
		t.Errorf("List: %q", keys)
	}
	if _, err := b.Stat(ctx, "t/x/"+fsbucket.TempPrefix+"123"); !errors.Is(err, objstore.ErrInvalidKey) {
		t.Errorf("Stat of a temp name: %v, want ErrInvalidKey", err)
	}
}

func TestDeletePrunesEmptyDirs(t *testing.T) {
	ctx := context.Background()
	b, err := fsbucket.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"p/q/r/1", "p/keep"} {
		if err := b.Put(ctx, k, strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Delete(ctx, "p/q/r/1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(b.Dir(), "p", "q")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("p/q survived: %v", err)
	}
	if _, err := os.Stat(filepath.Join(b.Dir(), "p", "keep")); err != nil {
		t.Errorf("p/keep: %v", err)
	}
	if err := b.Delete(ctx, "p/keep"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(b.Dir()); err != nil {
		t.Errorf("root pruned: %v", err)
	}
	if ents, _ := os.ReadDir(b.Dir()); len(ents) != 0 {
		t.Errorf("root not empty: %v", ents)
	}
}

func TestObjectParentIsObject(t *testing.T) {
	ctx := context.Background()
	b, err := fsbucket.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "a", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "a/b", strings.NewReader("x"), 1); err == nil {
		t.Error("Put under an object's key succeeded")
	}
	if _, err := b.Stat(ctx, "a/b"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Stat under an object's key: %v", err)
	}
}
