package capacity

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// containerIgnore is container/.dockerignore as the repository has it.
const containerIgnore = `# Only the Go sources go into the build; test data and caches stay out.
*
!go.mod
!go.sum
!*.go
!internal/
internal/**/testdata/
internal/**/*_test.go
`

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// A go build output left inside container/ must not change the container digest. The digest covers the
// files git tracks plus the files the image build copies; an untracked file the build copies still changes
// it, and SourceFiles says which.
func TestSourceDigestCoversTrackedAndCopiedFiles(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := t.TempDir()
	dir := filepath.Join(repo, "container")
	writeTree(t, dir, map[string]string{
		"Dockerfile": "FROM scratch\n", ".dockerignore": containerIgnore, "go.mod": "module x\n", "go.sum": "",
		"main.go": "package main\n", "internal/server/server.go": "package server\n",
		"internal/server/server_test.go": "package server\n", "internal/server/testdata/a.txt": "a\n", "README.md": "# x\n",
	})
	git(t, repo, "init", "-q")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "x")
	digest := func() (string, SourceFiles) {
		t.Helper()
		d, f, err := SourceDigestFiles(dir)
		if err != nil {
			t.Fatal(err)
		}
		if sd, err := SourceDigest(dir); err != nil || sd != d {
			t.Fatalf("SourceDigest = %s, %v; SourceDigestFiles %s", sd, err, d)
		}
		return d, f
	}
	base, files := digest()
	if !files.Git || len(files.Files) != 9 || len(files.Untracked) != 0 || files.UntrackedNote() != "" {
		t.Fatalf("clean tree: %+v", files)
	}
	// Outside git the same tree has the same digest: a clean checkout digests as its source archive.
	plain := filepath.Join(t.TempDir(), "container")
	if err := os.CopyFS(plain, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	if d, f, err := SourceDigestFiles(plain); err != nil || d != base || f.Git {
		t.Fatalf("the same files outside git: %s (git %v), %v; want %s", d, f.Git, err, base)
	}

	// A go build output (untracked; the image build does not copy it) and untracked test data: no change.
	writeTree(t, dir, map[string]string{"speech-container": "\x7fELF binary", "internal/server/testdata/big.bin": "zz", "cover.out": "mode: set\n"})
	if d, f := digest(); d != base || strings.Join(f.Skipped, " ") != "cover.out internal/server/testdata/big.bin speech-container" {
		t.Fatalf("untracked files the build does not copy changed the digest (%s → %s) or were not skipped: %+v", base, d, f)
	}
	// An untracked source file the image build copies changes it, and is named.
	writeTree(t, dir, map[string]string{"internal/server/extra.go": "package server\n"})
	d, f := digest()
	if d == base || strings.Join(f.Untracked, " ") != "internal/server/extra.go" {
		t.Fatalf("an untracked copied file: digest %s (base %s), %+v", d, base, f)
	}
	if note := f.UntrackedNote(); !strings.Contains(note, "internal/server/extra.go") || !strings.Contains(note, "does not track") {
		t.Fatalf("note = %q", note)
	}
	os.Remove(filepath.Join(dir, "internal/server/extra.go"))
	// A tracked file's working-tree content counts, committed or not; a tracked file removed too.
	writeTree(t, dir, map[string]string{"README.md": "# edited\n"})
	if d, _ := digest(); d == base {
		t.Fatal("an edited tracked file did not change the digest")
	}
	os.Remove(filepath.Join(dir, "README.md"))
	if d, _ := digest(); d == base {
		t.Fatal("a removed tracked file did not change the digest")
	}
}

func TestDockerIgnoreRules(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{".dockerignore": containerIgnore + "!internal/keep/testdata/x\n/**/*.tmp\n"})
	in, err := dockerCopies(dir)
	if err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]bool{
		"go.mod": true, "main.go": true, "internal/a.go": true, "internal/server/server.go": true,
		"Dockerfile": false, "README.md": false, "speech-container": false, "testdata/x": false, "sub/main.go": false,
		"internal/server/server_test.go": false, "internal/server/testdata/a.txt": false, "internal/x/y/testdata/z/b": false,
		"internal/keep/testdata/x": true, "internal/a.tmp": false,
	} {
		if got := in(rel); got != want {
			t.Errorf("%s: in the build context %v, want %v", rel, got, want)
		}
	}
	// No .dockerignore: everything is in the context.
	if in, err := dockerCopies(t.TempDir()); err != nil || !in("anything/at/all") {
		t.Fatalf("without .dockerignore: %v", err)
	}
}
