package optimizer

import (
	"strings"
	"unicode"
)

// maxFieldTokens bounds the number of tokens taken from one field of one tool
// (name, description or parameters), so that a backend publishing a huge
// description cannot make indexing or scoring expensive.
const maxFieldTokens = 2048

// stopwords are dropped from documents and queries. The list is the usual
// small English one plus conversational filler that shows up in
// natural-language tool requests ("please", "want", "need").
var stopwords = map[string]struct{}{}

func init() {
	for _, w := range strings.Fields(`a an the and or but nor of to in on at by for from with without into onto
		over under about as is are was were be been being am it its it's this that these those there here
		i me my mine we us our you your he she they them their his her which who whom whose what when where
		why how do does did doing done can could would should will shall may might must not no yes so than
		then too very just also only some any all each every either neither both such own same other
		please want wants need needs like let lets via per if else while up down out off again further
		once s t`) {
		stopwords[w] = struct{}{}
	}
}

// abbreviations maps common abbreviations in tool names and requests to the
// words used in descriptions. An entry may expand to several tokens.
var abbreviations = map[string][]string{
	"k8s":        {"kubernetes"},
	"kube":       {"kubernetes"},
	"repo":       {"repository"},
	"repos":      {"repository"},
	"pr":         {"pull", "request"},
	"prs":        {"pull", "request"},
	"db":         {"database"},
	"msg":        {"message"},
	"msgs":       {"message"},
	"dm":         {"direct", "message"},
	"dms":        {"direct", "message"},
	"env":        {"environment"},
	"config":     {"configuration"},
	"info":       {"information"},
	"auth":       {"authentication"},
	"dir":        {"directory"},
	"dirs":       {"directory"},
	"doc":        {"document"},
	"docs":       {"document"},
	"img":        {"image"},
	"ns":         {"namespace"},
	"pg":         {"postgres"},
	"postgresql": {"postgres"},
	"txn":        {"transaction"},
	"vm":         {"virtual", "machine"},
	"vms":        {"virtual", "machine"},
	"mail":       {"email"},
}

// tokenize splits text into index terms and calls emit for each, at most
// maxTokens times. Words are split at any character that is not a letter or
// digit (so snake_case and kebab-case split), and at camelCase boundaries
// ("listPullRequests" → list, pull, requests; "HTTPServer" → http, server).
// Tokens are lowercased, abbreviations are expanded, stopwords and
// one-letter tokens are dropped, and a light suffix stemmer is applied.
func tokenize(text string, maxTokens int, emit func(term string)) {
	n := 0
	word := func(w string) bool {
		if n >= maxTokens {
			return false
		}
		lw := strings.ToLower(w)
		if exp, ok := abbreviations[lw]; ok {
			for _, e := range exp {
				emit(stem(e))
				n++
			}
			return n < maxTokens
		}
		if len(lw) < 2 {
			return true
		}
		if _, stop := stopwords[lw]; stop {
			return true
		}
		emit(stem(lw))
		n++
		return n < maxTokens
	}
	// start is where the current word began (-1: between words); prev is
	// the previous rune, at prevAt, and prev2 the one before it.
	start, prevAt := -1, 0
	var prev, prev2 rune
	for i, r := range text {
		cut := -1 // where a camelCase boundary starts a new word
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			if start >= 0 && !word(text[start:i]) {
				return
			}
			start = -1
		case start < 0:
			start = i
		// camelCase boundaries: aB (and 2B), and the last capital of an
		// acronym followed by a lower-case letter (HTTPServer → HTTP|Server).
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			cut = i
		case unicode.IsLower(r) && unicode.IsUpper(prev) && prevAt > start && unicode.IsUpper(prev2):
			cut = prevAt
		}
		if cut >= 0 {
			if !word(text[start:cut]) {
				return
			}
			start = cut
		}
		prev2, prev, prevAt = prev, r, i
	}
	if start >= 0 {
		word(text[start:])
	}
}

// stem is a deliberately light English suffix stemmer: plural forms
// (issues → issue, policies → policy), then -ing and -ed, then a final
// silent e, so that create, creates, created and creating all become
// "creat". It only has to be consistent between documents and queries, not
// linguistically correct.
func stem(w string) string {
	if len(w) <= 3 || !isASCIILetters(w) {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "shes"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
		// class, status, analysis: not plurals
	case strings.HasSuffix(w, "s"):
		w = w[:len(w)-1]
	}
	switch {
	case strings.HasSuffix(w, "ing") && len(w) > 5:
		w = undouble(w[:len(w)-3])
	case strings.HasSuffix(w, "ed") && len(w) > 4:
		w = undouble(w[:len(w)-2])
	}
	if strings.HasSuffix(w, "e") && len(w) > 4 {
		w = w[:len(w)-1]
	}
	return w
}

// undouble turns a trailing doubled consonant into a single one
// (runn → run, stopp → stop) except for ll, ss and zz.
func undouble(w string) string {
	n := len(w)
	if n >= 3 && w[n-1] == w[n-2] {
		switch w[n-1] {
		case 'l', 's', 'z', 'a', 'e', 'i', 'o', 'u':
			return w
		}
		return w[:n-1]
	}
	return w
}

func isASCIILetters(w string) bool {
	return !strings.ContainsFunc(w, func(r rune) bool { return r < 'a' || r > 'z' })
}
