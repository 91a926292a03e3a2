package config

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// maxTokenFile bounds a token file: it holds one token.
const maxTokenFile = 64 << 10

// readTokenFile reads a bearer token from path (relative to the directory of
// the configuration file configFile, when that is named), trimmed of
// surrounding whitespace.
func readTokenFile(configFile, path string) (string, error) {
	if !filepath.IsAbs(path) && configFile != "" {
		path = filepath.Join(filepath.Dir(configFile), path)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read token: %v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("read token: %v", err)
	}
	if len(data) > maxTokenFile {
		return "", fmt.Errorf("%s is larger than %d bytes; it should hold only the token", path, maxTokenFile)
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return tok, nil
}
