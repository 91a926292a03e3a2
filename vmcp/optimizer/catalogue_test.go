package optimizer

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// catalogue is a set of tools grouped by backend.
type catalogue map[string][]mcp.Tool

// keys returns the keys of every tool of c.
func (c catalogue) keys() ToolSet {
	s := ToolSet{}
	for b, tools := range c {
		s.Add(b, tools...)
	}
	return s
}

// all returns every tool of c, by backend then name.
func (c catalogue) all() []mcp.Tool {
	var out []mcp.Tool
	for _, b := range c.backends() {
		out = append(out, c[b]...)
	}
	return out
}

func (c catalogue) backends() []string {
	bs := make([]string, 0, len(c))
	for b := range c {
		bs = append(bs, b)
	}
	sort.Strings(bs)
	return bs
}

func (c catalogue) size() int {
	n := 0
	for _, ts := range c {
		n += len(ts)
	}
	return n
}

// index builds an index of c, one backend at a time.
func (c catalogue) index(tb testing.TB) *Index {
	tb.Helper()
	ix := NewIndex()
	for _, b := range c.backends() {
		if err := ix.ReplaceBackend(context.Background(), b, c[b]); err != nil {
			tb.Fatal(err)
		}
	}
	return ix
}

// realisticCatalogue loads testdata/catalogue.txt: 230-odd realistic tools
// across about twenty services (GitHub, Slack, Jira, PostgreSQL, Kubernetes,
// weather, calendar, Gmail, filesystem, AWS, Stripe, Notion, monitoring,
// CRM, Drive, web search, Zendesk, git, Linear, telephony). The backend of a
// tool is its name up to the first underscore.
func realisticCatalogue(tb testing.TB) catalogue {
	tb.Helper()
	f, err := os.Open("testdata/catalogue.txt")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	c := catalogue{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, " | ")
		if len(fields) < 2 {
			tb.Fatalf("bad catalogue line %q", line)
		}
		name, desc := fields[0], fields[1]
		opts := []mcp.ToolOption{mcp.WithDescription(desc)}
		for _, p := range fields[2:] {
			parts := strings.SplitN(p, ":", 3)
			if len(parts) != 3 {
				tb.Fatalf("bad parameter %q in %q", p, line)
			}
			opts = append(opts, paramOption(parts[0], parts[1], parts[2]))
		}
		backend, _, _ := strings.Cut(name, "_")
		c[backend] = append(c[backend], mcp.NewTool(name, opts...))
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return c
}

// paramOption turns "name", "type", "description[*]" into a tool option.
func paramOption(name, typ, desc string) mcp.ToolOption {
	var po []mcp.PropertyOption
	if d, ok := strings.CutSuffix(desc, "*"); ok {
		desc = d
		po = append(po, mcp.Required())
	}
	po = append(po, mcp.Description(desc))
	switch typ {
	case "string":
		return mcp.WithString(name, po...)
	case "integer", "number":
		return mcp.WithNumber(name, po...)
	case "boolean":
		return mcp.WithBoolean(name, po...)
	case "array":
		return mcp.WithArray(name, append(po, mcp.WithStringItems())...)
	case "object":
		return mcp.WithObject(name, po...)
	}
	panic("unknown parameter type " + typ)
}

// Vocabulary of the synthetic catalogue.
var (
	synthServices = []string{
		"github", "gitlab", "bitbucket", "jira", "linear", "asana", "trello", "slack", "teams", "discord",
		"postgres", "mysql", "mongo", "redis", "elastic", "k8s", "docker", "nomad", "aws", "gcp",
		"azure", "stripe", "paypal", "shopify", "salesforce", "hubspot", "zendesk", "intercom", "notion", "confluence",
		"gdrive", "dropbox", "box", "gmail", "outlook", "calendar", "zoom", "twilio", "sendgrid", "mailchimp",
		"datadog", "grafana", "sentry", "pagerduty", "opsgenie", "newrelic", "splunk", "okta", "vault", "terraform",
	}
	synthVerbs = []string{
		"create", "get", "list", "update", "delete", "search", "archive", "export", "import", "sync",
		"approve", "assign", "close", "reopen", "share", "move", "copy", "restore", "tag", "count",
	}
	synthObjects = []string{
		"issue", "ticket", "comment", "user", "team", "project", "repository", "branch", "commit", "release",
		"message", "channel", "thread", "file", "folder", "document", "page", "database", "table", "record",
		"query", "index", "cluster", "node", "pod", "deployment", "service", "instance", "bucket", "object",
		"invoice", "payment", "customer", "subscription", "order", "product", "refund", "report", "dashboard", "alert",
		"incident", "monitor", "metric", "log", "event", "meeting", "contact", "lead", "deal", "secret",
	}
	synthPhrases = []string{
		"Returns the result as JSON.",
		"Requires write access to the workspace.",
		"Results are paginated; pass the cursor from the previous call to continue.",
		"Only items the authenticated user can see are included.",
		"Use this after looking the item up by name.",
		"The operation is idempotent and safe to retry.",
		"Timestamps are in UTC, RFC 3339.",
		"Large responses are truncated to the first 100 entries.",
		"Archived items are skipped unless requested.",
		"Rate limited to 60 requests per minute.",
		"Supports filtering by owner, status and creation date.",
		"Fails if the item does not exist.",
		"Sends a notification to the people involved.",
		"Changes are recorded in the audit log.",
		"Useful for reporting and dashboards.",
		"Works across all projects of the organization.",
	}
	synthParams = [][2]string{
		{"id", "Identifier of the item"}, {"name", "Display name"}, {"owner", "Owner of the item"},
		{"status", "Filter by status"}, {"limit", "Maximum number of results"}, {"cursor", "Pagination cursor"},
		{"query", "Free-text search query"}, {"project", "Project key or ID"}, {"workspace", "Workspace ID"},
		{"description", "Longer description in Markdown"}, {"tags", "Tags to apply or filter by"},
		{"created_after", "Only items created after this time"}, {"assignee", "User to assign"},
		{"region", "Region or data center"}, {"format", "Output format: json or csv"},
		{"dry_run", "Validate without applying the change"}, {"priority", "Priority level"},
		{"parent_id", "Parent item"}, {"visibility", "public or private"}, {"reason", "Reason recorded with the change"},
	}
)

// syntheticCatalogue deterministically generates n tools (n a multiple of
// 100 up to 50*100*... combinations) spread over backends of 100 tools each:
// service-verb-object names, templated descriptions with one or two extra
// sentences, and two to five parameters.
func syntheticCatalogue(n int) catalogue {
	r := rand.New(rand.NewPCG(42, 2026))
	c := catalogue{}
	seen := map[string]bool{}
	for i := 0; len(seen) < n; i++ {
		backend := fmt.Sprintf("%s-%02d", synthServices[(i/100)%len(synthServices)], i/100/len(synthServices))
		svc := synthServices[(i/100)%len(synthServices)]
		verb := synthVerbs[r.IntN(len(synthVerbs))]
		obj := synthObjects[r.IntN(len(synthObjects))]
		name := fmt.Sprintf("%s_%s_%s", svc, verb, obj)
		if k := backend + "/" + name; seen[k] {
			name = fmt.Sprintf("%s_%s_%s_%d", svc, verb, obj, i)
		}
		seen[backend+"/"+name] = true
		desc := fmt.Sprintf("%s a %s %s in %s. %s", strings.ToUpper(verb[:1])+verb[1:], svc, obj,
			strings.ToUpper(svc[:1])+svc[1:], synthPhrases[r.IntN(len(synthPhrases))])
		if r.IntN(2) == 0 {
			desc += " " + synthPhrases[r.IntN(len(synthPhrases))]
		}
		opts := []mcp.ToolOption{mcp.WithDescription(desc)}
		perm := r.Perm(len(synthParams))[:2+r.IntN(4)]
		for _, p := range perm {
			opts = append(opts, mcp.WithString(synthParams[p][0], mcp.Description(synthParams[p][1]+" of the "+obj)))
		}
		c[backend] = append(c[backend], mcp.NewTool(name, opts...))
	}
	return c
}

// rankingCase is a natural-language request and the tool that should rank
// first for it.
type rankingCase struct {
	query    Query
	expected string
}

func q(desc string, keywords ...string) Query { return Query{Description: desc, Keywords: keywords} }

// rankingCases are requests phrased the way an agent would, not copied from
// the descriptions.
var rankingCases = []rankingCase{
	{q("open a new bug report in the repository"), "github_create_issue"},
	{q("open a new bug report in the repository", "github"), "github_create_issue"},
	{q("post a message to the team channel", "slack"), "slack_post_message"},
	{q("send a private message to a colleague on Slack"), "slack_send_direct_message"},
	{q("find Jira tickets with a JQL filter"), "jira_search"},
	{q("run a SQL select against the database", "postgres"), "postgres_query"},
	{q("list the pods in the payments namespace"), "k8s_get_pods"},
	{q("show me the logs of the crashing container in a pod"), "k8s_get_pod_logs"},
	{q("will it rain in Paris this weekend"), "weather_forecast"},
	{q("schedule a meeting with the design team on Tuesday at 3pm", "calendar", "create event"), "calendar_create_event"},
	{q("when is everyone free for a 30 minute meeting"), "calendar_find_free_time"},
	{q("send an email with the quarterly report to the finance team", "email"), "gmail_send_email"},
	{q("merge the approved pull request with squash"), "github_merge_pull_request"},
	{q("scale the web deployment to five replicas"), "k8s_scale_deployment"},
	{q("refund the customer's payment", "stripe"), "stripe_create_refund"},
	{q("who is on call right now"), "pagerduty_get_oncall"},
	{q("acknowledge the incident so it stops paging"), "pagerduty_acknowledge_incident"},
	{q("why is this query slow, show the plan"), "postgres_explain_query"},
	{q("columns and types of the orders table"), "postgres_describe_table"},
	{q("upload a file to the S3 bucket"), "aws_s3_put_object"},
	{q("list the virtual machines in us-east-1", "ec2"), "aws_ec2_list_instances"},
	{q("rename a file on disk"), "fs_move_file"},
	{q("read the contents of config.yaml"), "fs_read_file"},
	{q("text the on-site engineer's phone number"), "twilio_send_sms"},
	{q("get directions from the office to the airport"), "maps_directions"},
	{q("add rows to the spreadsheet"), "sheets_append_rows"},
	{q("how much did we spend on AWS last month"), "aws_cost_explorer_get_costs"},
	{q("restart all pods of the api deployment"), "k8s_rollout_restart"},
	{q("move the Jira ticket to Done"), "jira_transition_issue"},
	{q("create a support ticket for the customer complaint", "zendesk"), "zendesk_create_ticket"},
	{q("search the web for the latest Go release notes", "web search"), "web_search"},
	{q("who last changed this line of the file", "git"), "git_blame"},
	{q("start a video call link for tomorrow's standup", "zoom"), "zoom_create_meeting"},
	{q("is the air polluted in Delhi today"), "weather_air_quality"},
	{q("list unresolved errors in the backend project", "sentry"), "sentry_list_issues"},
	{q("create a new branch for the feature", "github"), "github_create_branch"},
	{q("stage the modified files and commit them", "git commit"), "git_commit"},
	{q("share the document with alice@example.com as editor", "drive"), "gdrive_share_file"},
	{q("add a new sales prospect", "salesforce", "lead"), "salesforce_create_lead"},
	{q("cancel the customer's monthly plan", "stripe", "subscription"), "stripe_cancel_subscription"},
}
