// Package containerbin finds the repository root and the inference container binary for the programs and
// tests that run the real container: the one $SPEECH_CONTAINER_BIN names, or one built from container/ (cgo).
package containerbin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// Env names a prebuilt inference container binary; when it is set Path uses it instead of building one
// (make test and make bench set it to bin/speech-container).
const Env = "SPEECH_CONTAINER_BIN"

// RepoRoot is the nearest directory at or above the working directory that holds the container module.
func RepoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the repository root: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "container", "go.mod")); err == nil {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("find the repository root: no container/go.mod above %s: run inside the speech-infra checkout", wd)
		}
	}
}

// Path returns $SPEECH_CONTAINER_BIN when set (it must be an executable file), else builds the container
// into <root>/.cache/<cacheDir>/speech-container and returns that.
func Path(ctx context.Context, cacheDir string) (string, error) {
	if bin := os.Getenv(Env); bin != "" {
		fi, err := os.Stat(bin)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w: run `make container-build` or unset %s to build it here", Env, bin, err, Env)
		}
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%s=%s: not an executable file: point it at bin/speech-container or unset it", Env, bin)
		}
		return bin, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", fmt.Errorf("%w (or set %s)", err, Env)
	}
	dir := filepath.Join(root, ".cache", cacheDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("build the container: %w", err)
	}
	// Several processes may build at once (test packages run in parallel): each builds to its own name and
	// renames it into place, which replaces the file atomically under any process running the previous copy.
	bin := filepath.Join(dir, "speech-container")
	tmp := bin + ".tmp" + strconv.Itoa(os.Getpid())
	build := exec.CommandContext(ctx, "go", "build", "-o", tmp, ".")
	build.Dir = filepath.Join(root, "container")
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("go build in %s: %w: install the container's libraries (make deps-container) or set %s\n%s", build.Dir, err, Env, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("build the container: %w", err)
	}
	return bin, nil
}
