package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/vmcp-chaos/vmcp-chaos/experiment"
	"github.com/vmcp-chaos/vmcp-chaos/internal/atomicfile"
	"github.com/vmcp-chaos/vmcp-chaos/internal/boundedread"
	"github.com/vmcp-chaos/vmcp-chaos/kube/chaosmesh"
	"github.com/vmcp-chaos/vmcp-chaos/kube/discover"
	"github.com/vmcp-chaos/vmcp-chaos/kube/expkube"
	"github.com/vmcp-chaos/vmcp-chaos/kube/inject"
	"github.com/vmcp-chaos/vmcp-chaos/proxy"
)

// kubeFlags reach a cluster and name the Service acted on.
type kubeFlags struct {
	kubeconfig, context, namespace, service string
}

func (k *kubeFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG or ~/.kube/config; in a pod: its service account)")
	f.StringVar(&k.context, "context", "", "kubeconfig context (default: its current context)")
	f.StringVarP(&k.namespace, "namespace", "n", "", "namespace of the Service (required)")
	f.StringVar(&k.service, "service", "", "the backend's Service (required)")
}

// client checks the flags and connects.
func (k *kubeFlags) client() (*inject.Client, error) {
	if k.namespace == "" || k.service == "" {
		return nil, usageError(errors.New("kube: --namespace and --service are required"))
	}
	cfg, err := kubeConfig(k.kubeconfig, k.context)
	if err != nil {
		return nil, err
	}
	cs, err := inject.NewClient(cfg)
	if err != nil {
		return nil, usageError(err)
	}
	return cs, nil
}

// kubeConfig loads a kubeconfig as kubectl does (explicit file, else
// $KUBECONFIG, else ~/.kube/config; in a pod, its service account).
func kubeConfig(kubeconfig, kubeContext string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
	if err != nil {
		return nil, usageError(fmt.Errorf("kube: %w", err))
	}
	cfg.Timeout = 30 * time.Second
	return cfg, nil
}

// writeKubeSkeleton is chaos experiment init --kube NS/NAME: discover the
// VirtualMCPServer and write its experiment skeleton to out.
func writeKubeSkeleton(cmd *cobra.Command, target, kubeconfig, out string, force bool) error {
	ns, name, ok := strings.Cut(target, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return usageError(fmt.Errorf("experiment init: --kube %q: want NAMESPACE/NAME of a VirtualMCPServer", target))
	}
	if out != "-" && !force {
		if _, err := os.Stat(out); err == nil {
			return usageError(fmt.Errorf("%s exists (use --force to overwrite)", out))
		}
	}
	cfg, err := kubeConfig(kubeconfig, "")
	if err != nil {
		return err
	}
	c, err := discover.NewClient(cfg)
	if err != nil {
		return usageError(err)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), time.Minute)
	defer cancel()
	v, err := discover.Discover(ctx, c, ns, name)
	if err != nil {
		return err
	}
	text := discover.Skeleton(v, time.Now())
	if out == "-" {
		_, err = fmt.Fprint(cmd.OutOrStdout(), text)
		return err
	}
	if err := atomicfile.Write(out, func(w io.Writer) error { _, err := io.WriteString(w, text); return err }); err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s (%d backends of MCPGroup %s); check it with: chaos experiment run --dry-run %s\n", out, len(v.Backends), v.Group, out)
	return nil
}

func newKubeCmd() *cobra.Command {
	return groupCmd("kube", "MCP-aware faults in a Kubernetes cluster, in front of a backend's Service",
		`Put the MCP-aware fault proxy in front of a backend's Service in a cluster
(inject), and take it out (heal). See "Chaos in your cluster" in README.md.`,
		newKubeInjectCmd(), newKubeHealCmd(), newKubeProxyCmd())
}

// KubeInjectedLine is the JSON line `chaos kube inject` prints once the
// Service selects the proxy.
type KubeInjectedLine struct {
	Namespace string `json:"namespace"`
	Service   string `json:"service"`
	Injection string `json:"injection"`
	Shadow    string `json:"shadow"`
	Upstream  string `json:"upstream"`
	Lease     string `json:"lease"`
	PID       int    `json:"pid"`
}

// DefaultKubeImage is the proxy image chaos kube inject uses unless
// --image says otherwise.
const DefaultKubeImage = inject.DefaultImage

func newKubeInjectCmd() *cobra.Command {
	var (
		k              kubeFlags
		faultsFile     string
		experimentFile string
		step           int
		spec           inject.Spec
		holdFor        time.Duration
	)
	cmd := &cobra.Command{
		Use:   "inject -n NS --service SVC (--faults FILE | --experiment FILE --step N) [--image IMG]",
		Short: "Put the fault proxy in front of a Service until Ctrl-C, then take it out",
		Long: `Put the MCP-aware fault proxy (chaos proxy, in a Deployment of its own)
in front of a backend's Service, with the faults of a file (as the proxy's
control API takes them) or of an experiment's inject step, and keep it
there until Ctrl-C (or --for), then take it out as heal does.

The Service's selector is switched to the proxy's pods; a shadow Service
selects the original pods and is the proxy's upstream. Every object made
is owned by one ConfigMap (vmcp-chaos-SVC) that also holds the Service as
it was. A Lease (vmcp-chaos-SVC) is renewed every third of --lease: if
this command dies, the proxy sees the Lease expire, restores the Service
and deletes what was made (its ServiceAccount, Role and RoleBinding are
left to the garbage collector).

Prints one JSON line {namespace,service,injection,shadow,upstream,lease,pid}
once the Service selects the proxy. Exits 0 after --for, 130 on a signal
(after healing), 1 when the injection was taken out by someone else.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			faults, err := kubeFaults(faultsFile, experimentFile, step)
			if err != nil {
				return err
			}
			cs, err := k.client()
			if err != nil {
				return err
			}
			host, _ := os.Hostname()
			spec.Namespace, spec.Service, spec.Faults = k.namespace, k.service, faults
			spec.Holder = fmt.Sprintf("chaos-cli@%s/%d", host, os.Getpid())
			ctx := cmd.Context()
			injectCtx, cancel := context.WithTimeout(ctx, time.Minute)
			inj, err := inject.Inject(injectCtx, cs, spec)
			cancel()
			if err != nil {
				return err
			}
			line := KubeInjectedLine{Namespace: inj.Namespace, Service: inj.Service, Injection: inj.Injection,
				Shadow: inj.Shadow, Upstream: inj.Upstream, Lease: spec.LeaseDuration.String(), PID: os.Getpid()}
			if err := json.NewEncoder(cmd.OutOrStdout()).Encode(line); err != nil {
				return err
			}
			holdCtx := ctx
			if holdFor > 0 {
				var cancel context.CancelFunc
				holdCtx, cancel = context.WithTimeout(ctx, holdFor)
				defer cancel()
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "chaos kube inject: %s/%s now goes through the proxy; Ctrl-C takes it out\n", inj.Namespace, inj.Service)
			keepErr := inject.KeepAlive(holdCtx, cs, inj.Namespace, inj.Names, spec.LeaseDuration)
			healCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if err := inject.Restore(healCtx, cs, inj.Namespace, inj.Service, true); err != nil {
				return errors.Join(keepErr, err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "chaos kube inject: healed %s/%s\n", inj.Namespace, inj.Service)
			return keepErr
		},
	}
	k.register(cmd)
	f := cmd.Flags()
	f.StringVar(&faultsFile, "faults", "", "file of faults (YAML or JSON list, as chaos proxy's PUT /faults takes them)")
	f.StringVar(&experimentFile, "experiment", "", "take the faults of an inject action of this experiment file (with --step)")
	f.IntVar(&step, "step", 0, "the method step (1 = first) of --experiment whose inject action gives the faults")
	f.StringVar(&spec.Image, "image", DefaultKubeImage, "the proxy's image: the static chaos binary FROM scratch (see README.md)")
	f.DurationVar(&spec.LeaseDuration, "lease", 15*time.Second, "dead-man switch: the proxy takes itself out this long after the last renewal (whole seconds)")
	f.DurationVar(&holdFor, "for", 0, "take the injection out after this long (default: at Ctrl-C)")
	return cmd
}

// kubeFaults reads the faults of --faults, or of --experiment's step.
func kubeFaults(faultsFile, experimentFile string, step int) ([]byte, error) {
	if step < 0 {
		return nil, usageError(fmt.Errorf("kube inject: --step %d: want a method step, 1 or more", step))
	}
	switch {
	case (faultsFile == "") == (experimentFile == ""):
		return nil, usageError(errors.New("kube inject: give exactly one of --faults FILE and --experiment FILE --step N"))
	case faultsFile != "":
		b, err := boundedread.File(faultsFile, boundedread.Script) // a faults file is as large as a script's faults
		if err != nil {
			return nil, usageError(fmt.Errorf("kube inject: %w", err))
		}
		if err := proxy.NewEngine().Set(b, faultsFile); err != nil {
			return nil, usageError(fmt.Errorf("kube inject: %s: %w", faultsFile, err))
		}
		return b, nil
	}
	e, err := experiment.Load(experimentFile, nil)
	if err != nil {
		return nil, usageError(err)
	}
	if step < 1 || step > len(e.Method) {
		return nil, usageError(fmt.Errorf("kube inject: %s: --step %d: the method has %d steps (1 = first)", experimentFile, step, len(e.Method)))
	}
	a := e.Method[step-1].Action
	if a == nil || a.Type != experiment.ActionInject {
		return nil, usageError(fmt.Errorf("kube inject: %s: method step %d is not an inject action", experimentFile, step))
	}
	b, err := json.Marshal(a.Faults)
	if err != nil {
		return nil, usageError(fmt.Errorf("kube inject: %s: method step %d: %w", experimentFile, step, err))
	}
	return b, nil
}

func newKubeHealCmd() *cobra.Command {
	var k kubeFlags
	cmd := &cobra.Command{
		Use:   "heal -n NS --service SVC",
		Short: "Take the fault proxy out of a Service: restore it, delete what inject made",
		Long: `Restore the Service as it was before chaos kube inject (its selector and
annotations, saved in the ConfigMap vmcp-chaos-SVC) and delete the shadow
Service, the proxy's Deployment, ServiceAccount, Role and RoleBinding, the
Lease and the ConfigMap. Safe to repeat; a Service that was never injected
is left alone.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cs, err := k.client()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), time.Minute)
			defer cancel()
			if err := inject.Restore(ctx, cs, k.namespace, k.service, true); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "chaos kube heal: %s/%s is as it was\n", k.namespace, k.service)
			return nil
		},
	}
	k.register(cmd)
	return cmd
}

func newKubeProxyCmd() *cobra.Command {
	var (
		k       kubeFlags
		verbose bool
		listen  string
	)
	cmd := &cobra.Command{
		Use:   "proxy -n NS --service SVC",
		Short: "The fault proxy of an injection (run in the cluster by chaos kube inject)",
		Long: `The proxy chaos kube inject runs in the cluster: reads the injection of
the Service from its ConfigMap (upstream, listen address, faults), serves
with those faults, and watches the injection's Lease. When the Lease goes
unrenewed for its duration (the CLI died) or is deleted, it restores the
Service, deletes the injection's objects and exits 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cs, err := k.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			loadCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			cfg, err := inject.LoadProxyConfig(loadCtx, cs, k.namespace, k.service)
			cancel()
			if err != nil {
				return err
			}
			if listen != "" {
				cfg.Listen = listen
			}
			logger := newLogger(cmd.ErrOrStderr(), verbose, slog.LevelDebug)
			err = inject.Serve(ctx, cs, cfg, logger, func(p *proxy.Proxy) {
				_ = json.NewEncoder(cmd.OutOrStdout()).Encode(ProxyReadyLine{Upstream: p.Upstream(), URL: p.URL(),
					Admin: p.AdminURL(), LeaseTTL: cfg.LeaseDuration.String(), PID: os.Getpid()})
			})
			if err != nil && ctx.Err() == nil {
				return err
			}
			if ctx.Err() == nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "chaos kube proxy: the Lease expired: %s/%s restored\n", k.namespace, k.service)
			}
			return nil
		},
	}
	k.register(cmd)
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "log upstream errors to stderr")
	cmd.Flags().StringVar(&listen, "listen", "", "MCP listen address (default: the Service's target port on every interface, as the injection says)")
	return cmd
}

// experimentKube is the cluster side of an experiment: its chaos_mesh
// actions and the Services it names (nil, nil when it names no cluster).
func experimentKube(e *experiment.Experiment) (experiment.KubeObjects, experiment.KubeServices, error) {
	k := e.Deployment.Kube
	if k == nil {
		return nil, nil, nil
	}
	cfg, err := kubeConfig(k.Kubeconfig, k.Context)
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, usageError(fmt.Errorf("kube: %w", err))
	}
	svcs, err := expkube.New(cfg, k.Image)
	if err != nil {
		return nil, nil, usageError(err)
	}
	return chaosmesh.New(dyn), svcs, nil
}
