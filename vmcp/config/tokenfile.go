package config

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/vmcp-chaos/vmcp-chaos/internal/boundedread"
)

// readTokenFile reads a bearer token from path (relative to the directory of
// the configuration file configFile, when that is named), trimmed of
// surrounding whitespace.
func readTokenFile(configFile, path string) (string, error) {
	if !filepath.IsAbs(path) && configFile != "" {
		path = filepath.Join(filepath.Dir(configFile), path)
	}
	data, err := boundedread.File(path, boundedread.Token)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return tok, nil
}
