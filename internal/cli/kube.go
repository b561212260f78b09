package cli

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
)

// kubeFlags are how a long-running component reaches the API server.
type kubeFlags struct {
	path  string
	qps   float32
	burst int
}

func (k *kubeFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&k.path, "kubeconfig", "", "kubeconfig file (default: in-cluster or $KUBECONFIG)")
	fs.Float32Var(&k.qps, "kube-api-qps", kubeobj.DefaultQPS, "queries per second to the API server (client-side rate limit)")
	fs.IntVar(&k.burst, "kube-api-burst", kubeobj.DefaultBurst, "burst of queries to the API server above --kube-api-qps")
}

// config loads the kubeconfig with the flags' rate limits.
func (k *kubeFlags) config() (*rest.Config, error) {
	if k.qps <= 0 || k.burst <= 0 {
		return nil, fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive")
	}
	cfg, err := restConfig(k.path)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = k.qps, k.burst
	return cfg, nil
}

// restConfig loads a kubeconfig file, or the default loading rules
// ($KUBECONFIG, ~/.kube/config, in-cluster) when path is empty.
func restConfig(path string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	return cfg, nil
}
