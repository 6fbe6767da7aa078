package capacity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// SourceDigest returns a deterministic "sha256:<hex>" over a directory tree: every regular file and symbolic
// link below dir that belongs to the source (SourceDigestFiles: the files git tracks, plus the files the
// image build copies), in sorted slash-separated relative path order, contributes its path, its executable
// bit and its contents (a link its target). .git entries are skipped; directories contribute nothing by
// themselves, so an empty directory does not change the digest. A file that is neither tracked nor copied
// by the image build (a go build output left in the tree) does not change it. The endpoint stack and the
// local deploy record the digest of container/ as the container digest a plan's fingerprint must match.
func SourceDigest(dir string) (string, error) {
	d, _, err := SourceDigestFiles(dir)
	return d, err
}

// SourceFiles says which files SourceDigest covers in a directory.
type SourceFiles struct {
	// Git is true when git listed the files it tracks below the directory; false when the directory is not
	// in a git work tree (a source archive) or git is missing: then every file is the source.
	Git bool
	// Files are the digested files, relative slash-separated paths in the digest's order.
	Files []string
	// Untracked are the digested files git does not track: the image build copies them (.dockerignore
	// lets them in), so they change the digest without a commit. Empty without Git.
	Untracked []string
	// Skipped are the files left out: neither tracked nor copied by the image build.
	Skipped []string
}

// UntrackedNote says which untracked files are part of the digest, for a message about a digest that
// differs ("" when there are none).
func (f SourceFiles) UntrackedNote() string {
	if len(f.Untracked) == 0 {
		return ""
	}
	shown := f.Untracked
	more := ""
	if len(shown) > 5 {
		shown, more = shown[:5], fmt.Sprintf(" and %d more", len(f.Untracked)-5)
	}
	return fmt.Sprintf("the container digest covers %d file(s) git does not track but the image build copies (%s%s): an untracked file changes the digest; commit or remove it",
		len(f.Untracked), strings.Join(shown, ", "), more)
}

// SourceDigestFiles is SourceDigest with the files it covers (SourceFiles). The source is the files git
// tracks below dir (their working-tree contents) plus the files the image build copies (everything the
// .dockerignore in dir lets into the build context; everything when there is none). Outside a git work tree
// every file is the source.
func SourceDigestFiles(dir string) (string, SourceFiles, error) {
	var sf SourceFiles
	info, err := os.Stat(dir)
	if err != nil {
		return "", sf, fmt.Errorf("digest source tree %s: %w", dir, err)
	}
	if !info.IsDir() {
		return "", sf, fmt.Errorf("digest source tree %s: not a directory", dir)
	}
	type entry struct {
		rel  string
		path string
		mode fs.FileMode
	}
	var entries []entry
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" && path != dir {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil // a submodule's .git file
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		entries = append(entries, entry{rel: filepath.ToSlash(rel), path: path, mode: info.Mode()})
		return nil
	})
	if err != nil {
		return "", sf, fmt.Errorf("digest source tree %s: %w", dir, err)
	}
	tracked, git := gitTracked(dir)
	copied, err := dockerCopies(dir)
	if err != nil {
		return "", sf, fmt.Errorf("digest source tree %s: %w", dir, err)
	}
	sf.Git = git
	kept := entries[:0]
	for _, e := range entries {
		switch {
		case !git || tracked[e.rel]:
			kept = append(kept, e)
		case copied(e.rel):
			kept = append(kept, e)
			sf.Untracked = append(sf.Untracked, e.rel)
		default:
			sf.Skipped = append(sf.Skipped, e.rel)
		}
	}
	entries = kept
	sort.Slice(entries, func(i, j int) bool { return entries[i].rel < entries[j].rel })
	sort.Strings(sf.Untracked)
	sort.Strings(sf.Skipped)
	h := sha256.New()
	for _, e := range entries {
		switch {
		case e.mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(e.path)
			if err != nil {
				return "", sf, fmt.Errorf("digest source tree %s: %w", dir, err)
			}
			fmt.Fprintf(h, "link\x00%s\x00%s\x00", e.rel, target)
		case e.mode.IsRegular():
			kind := "file"
			if e.mode&0o111 != 0 {
				kind = "exec"
			}
			fmt.Fprintf(h, "%s\x00%s\x00", kind, e.rel)
			if err := hashFile(h, e.path); err != nil {
				return "", sf, fmt.Errorf("digest source tree %s: %w", dir, err)
			}
		default:
			continue // sockets, devices and pipes have no contents to build from
		}
		sf.Files = append(sf.Files, e.rel)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), sf, nil
}

// gitTracked lists the files git tracks below dir (paths relative to dir), and whether git could say: false
// when dir is not in a git work tree or git is not installed.
func gitTracked(dir string) (map[string]bool, bool) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "ls-files", "-z", "--cached", "--", ".")
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	out, err := cmd.Output()
	if err != nil {
		return nil, false
	}
	tracked := map[string]bool{}
	for _, p := range strings.Split(string(out), "\x00") {
		if p != "" {
			tracked[p] = true
		}
	}
	return tracked, true
}

// dockerCopies reads dir's .dockerignore and returns whether the image build's context holds a file (a
// relative slash-separated path): Docker's rules, the last matching pattern decides, "!" lets a path back in,
// "**" spans directories, and a pattern that matches a parent directory applies to everything below it.
// Without a .dockerignore every file is in the context.
func dockerCopies(dir string) (func(string) bool, error) {
	data, err := os.ReadFile(filepath.Join(dir, ".dockerignore"))
	if errors.Is(err, fs.ErrNotExist) {
		return func(string) bool { return true }, nil
	}
	if err != nil {
		return nil, err
	}
	type rule struct {
		re     *regexp.Regexp
		negate bool
	}
	var rules []rule
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		neg := strings.HasPrefix(line, "!")
		pat := strings.TrimSpace(strings.TrimPrefix(line, "!"))
		pat = strings.TrimPrefix(path.Clean("/"+pat), "/")
		if pat == "" {
			continue
		}
		re, err := dockerPattern(pat)
		if err != nil {
			return nil, fmt.Errorf(".dockerignore pattern %q: %w", line, err)
		}
		rules = append(rules, rule{re, neg})
	}
	return func(rel string) bool {
		in := true
		for _, r := range rules {
			// The pattern matches the path or one of its parent directories.
			for p := rel; ; {
				if r.re.MatchString(p) {
					in = r.negate
					break
				}
				i := strings.LastIndex(p, "/")
				if i < 0 {
					break
				}
				p = p[:i]
			}
		}
		return in
	}, nil
}

// dockerPattern turns a .dockerignore pattern into an anchored regular expression.
func dockerPattern(pat string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		switch {
		case c == '*' && i+1 < len(pat) && pat[i+1] == '*':
			i++
			if i+1 < len(pat) && pat[i+1] == '/' {
				i++
				b.WriteString("(.*/)?")
			} else {
				b.WriteString(".*")
			}
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			j := strings.IndexByte(pat[i:], ']')
			if j < 0 {
				return nil, errors.New("unterminated [")
			}
			class := pat[i : i+j+1]
			if strings.HasPrefix(class, "[!") {
				class = "[^" + class[2:]
			}
			b.WriteString(class)
			i += j
		case c == '\\' && i+1 < len(pat):
			i++
			b.WriteString(regexp.QuoteMeta(string(pat[i])))
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// hashFile writes the file's length and contents to w; the length keeps "ab"+"c" apart from "a"+"bc".
func hashFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%d\x00", info.Size())
	n, err := io.Copy(w, f)
	if err != nil {
		return err
	}
	if n != info.Size() {
		return fmt.Errorf("%s changed while it was read", path)
	}
	return nil
}
