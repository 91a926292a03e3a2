package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// revisionsFlag is --refuse-revision, repeatable: the protocol revisions
// (YYYY-MM-DD) the gateway refuses, though its server/discover answer
// still lists them.
type revisionsFlag []string

// revisionRE is a protocol revision's shape.
var revisionRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

func (r *revisionsFlag) String() string {
	if r == nil {
		return ""
	}
	return strings.Join(*r, ",")
}

func (r *revisionsFlag) Set(s string) error {
	if !revisionRE.MatchString(s) {
		return fmt.Errorf("want a protocol revision such as 2026-07-28, got %q", s)
	}
	*r = append(*r, s)
	return nil
}

// unsupportedVersion is the JSON-RPC error code of a request on a
// protocol revision the server does not support (2026-07-28).
const unsupportedVersion = -32022

// refusedRevision is the revision of req that the front refuses ("" when
// none): the one its Mcp-Protocol-Version header, its _meta or (for
// initialize) its protocolVersion asks for, when it is in refuse. A
// server/discover is never refused: the gateway goes on advertising the
// revision there. A notification (no id) is never refused either: there is
// no answer to carry the error.
func refusedRevision(refuse []string, req request) string {
	if len(refuse) == 0 || req.Method == "server/discover" || len(req.ID) == 0 {
		return ""
	}
	for _, v := range []string{req.protocol, req.Params.ProtocolVersion, req.Params.Meta.ProtocolVersion} {
		if v != "" && slices.Contains(refuse, v) {
			return v
		}
	}
	return ""
}
