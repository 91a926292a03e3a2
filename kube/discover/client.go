package discover

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// Client reads a cluster for discovery: client-go's dynamic client, and
// API discovery as a plain GET of /apis/GROUP/VERSION (client-go's
// discovery client would link its scheme of every API group into the
// chaos binary).
type Client struct {
	dyn  dynamic.Interface
	hc   *http.Client
	host string
}

// NewClient returns a Client for cfg.
func NewClient(cfg *rest.Config) (*Client, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	host, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	return &Client{dyn: dyn, hc: hc, host: strings.TrimRight(host.String(), "/")}, nil
}

// resources returns the resources the cluster serves in group/version; a
// group version it does not serve is a NotFound error.
func (c *Client) resources(ctx context.Context, gv string) (*metav1.APIResourceList, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.host+"/apis/"+gv, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, apierrors.NewNotFound(metav1.SchemeGroupVersion.WithResource("apiresources").GroupResource(), gv)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET /apis/%s: %s: %.300s", gv, resp.Status, body)
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("GET /apis/%s: %w", gv, err)
	}
	return &list, nil
}
