package controlplane_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/kube/controlplane"
	"github.com/vmcp-chaos/vmcp-chaos/kube/kubetest"
)

// TestControlPlaneServesAndStops starts the real API server, writes and
// reads objects through it (also through the kubeconfig file a process
// would use), and checks Stop ends both processes and removes the plane's
// directory.
func TestControlPlaneServesAndStops(t *testing.T) {
	p := kubetest.Start(t, controlplane.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "smoke"}}
	if _, err := p.Clientset.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "backend", Namespace: "smoke"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "backend"},
			Ports: []corev1.ServicePort{{Port: 8080}}},
	}
	if _, err := p.Clientset.CoreV1().Services("smoke").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().Services("smoke").Get(ctx, "backend", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read through the kubeconfig: %v", err)
	}
	if got.Spec.ClusterIP == "" || got.Spec.Selector["app"] != "backend" {
		t.Fatalf("service as stored: clusterIP %q selector %v: the API server did not default/keep it", got.Spec.ClusterIP, got.Spec.Selector)
	}
	pids := planePIDs(t, p.Dir)
	if len(pids) != 2 {
		t.Fatalf("processes naming %s: %v, want etcd and kube-apiserver", p.Dir, pids)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if runtimes.ProcessAlive(pid) {
			t.Errorf("pid %d still alive after Stop", pid)
		}
	}
	if _, err := os.Stat(p.Dir); !os.IsNotExist(err) {
		t.Errorf("%s after Stop: %v, want it gone", p.Dir, err)
	}
}

// TestSweepKillsProcessesOfDeadOwners runs a process whose command line
// names a plane directory of a dead owner, and one of a live owner (this
// test): Sweep kills the first only.
func TestSweepKillsProcessesOfDeadOwners(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	orphanDir := filepath.Join(os.TempDir(), controlplane.OwnedDirPrefix+strconv.Itoa(dead.Process.Pid)+"-test")
	liveDir := filepath.Join(os.TempDir(), controlplane.OwnedDirPrefix+strconv.Itoa(os.Getpid())+"-test")
	orphan := exec.Command("sh", "-c", "sleep 60", orphanDir)
	live := exec.Command("sh", "-c", "sleep 60", liveDir)
	for _, c := range []*exec.Cmd{orphan, live} {
		c.SysProcAttr = runtimes.ChildProcAttr()
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	}
	killed := controlplane.Sweep()
	waited := make(chan error, 1)
	go func() { waited <- orphan.Wait() }()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatalf("the orphan (pid %d) still runs 10 s after Sweep (killed %v)", orphan.Process.Pid, killed)
	}
	if !runtimes.ProcessAlive(live.Process.Pid) {
		t.Fatal("Sweep killed a process of a live owner")
	}
}

// planePIDs are the processes whose command line names dir.
func planePIDs(t *testing.T, dir string) []int {
	t.Helper()
	var pids []int
	procs, _ := os.ReadDir("/proc")
	for _, e := range procs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(dir+"/")) {
			pids = append(pids, pid)
		}
	}
	return pids
}
