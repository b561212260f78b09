package topology

import (
	"fmt"

	"github.com/ovn-udn/ovn-udn/internal/config"
	"github.com/ovn-udn/ovn-udn/internal/nodeinfo"
)

// layer2 renders a Layer2 network.
func layer2(b *builder, local nodeinfo.Info, remotes []nodeinfo.Info, cfg config.Cluster) error {
	return fmt.Errorf("network %s: Layer2 topology is not rendered yet", b.n.Name)
}

// localnet renders a Localnet network.
func localnet(b *builder) {}
