package reports

import (
	"fmt"
	"io"
	"regexp"
	"strings"

	"golang.org/x/net/html"
)

// urlAttrs are the attributes through which a page can make the browser
// fetch something.
var urlAttrs = map[string]bool{"src": true, "href": true, "action": true, "formaction": true, "poster": true,
	"data": true, "srcset": true, "background": true, "ping": true, "manifest": true, "codebase": true, "cite": true, "longdesc": true}

// fetchingElements fetch or embed something by their nature.
var fetchingElements = map[string]bool{"link": true, "iframe": true, "frame": true, "object": true, "embed": true,
	"img": true, "image": true, "base": true, "audio": true, "video": true, "source": true, "track": true, "use": true, "feimage": true}

var cssFetch = regexp.MustCompile(`(?i)url\(\s*['"]?([^'")\s]*)|@import`)

// ExternalRefs parses an HTML page and lists everything in it that could
// make a browser fetch a resource: URL attributes other than in-page
// anchors (#id), elements that load or embed content (link, img, iframe,
// script with src, ...), and url(...) or @import in CSS. A report from
// Render has none.
func ExternalRefs(r io.Reader) ([]string, error) {
	doc, err := html.Parse(r)
	if err != nil {
		return nil, err
	}
	var refs []string
	checkCSS := func(where, css string) {
		for _, m := range cssFetch.FindAllStringSubmatch(css, -1) {
			if m[0] == "@import" || !strings.HasPrefix(m[1], "#") {
				refs = append(refs, fmt.Sprintf("%s: %s", where, m[0]))
			}
		}
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			name := strings.ToLower(n.Data)
			if fetchingElements[name] {
				refs = append(refs, "<"+name+"> element")
			}
			for _, a := range n.Attr {
				key := strings.ToLower(a.Key)
				if i := strings.LastIndexByte(key, ':'); i >= 0 {
					key = key[i+1:] // xlink:href
				}
				v := strings.TrimSpace(a.Val)
				switch {
				case urlAttrs[key] && v != "" && !strings.HasPrefix(v, "#"):
					refs = append(refs, fmt.Sprintf("<%s %s=%q>", name, a.Key, v))
				case key == "style":
					checkCSS("<"+name+" style>", v)
				case strings.HasPrefix(key, "on"):
					refs = append(refs, fmt.Sprintf("<%s %s> script handler", name, a.Key))
				}
			}
			switch name {
			case "script":
				refs = append(refs, "<script> element")
			case "style":
				var b strings.Builder
				for c := n.FirstChild; c != nil; c = c.NextSibling {
					b.WriteString(c.Data)
				}
				checkCSS("<style>", b.String())
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return refs, nil
}
