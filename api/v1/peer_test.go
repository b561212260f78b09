package v1_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ovn-udn/ovn-udn/api/v1/v1test"
	"github.com/ovn-udn/ovn-udn/internal/testing/kubetest"
)

// TestCasesAgainstOVNKubernetesCRDs checks the cases themselves: with
// OVN_UDN_OVNK_CRDS naming a directory of ovn-kubernetes' own
// UserDefinedNetwork and ClusterUserDefinedNetwork CRDs (its release's
// helm/ovn-kubernetes/crds), a real API server serving them must judge every
// OVNKubernetesCases case as ovn-udn's does, but those PeerDifferences lists.
// It is skipped without the variable (ovn-kubernetes' files are not part of
// this repository); docs/api.md says how it was last run.
func TestCasesAgainstOVNKubernetesCRDs(t *testing.T) {
	dir := os.Getenv("OVN_UDN_OVNK_CRDS")
	if dir == "" {
		t.Skip("OVN_UDN_OVNK_CRDS is not set")
	}
	if _, err := os.Stat(filepath.Join(dir, "k8s.ovn.org_userdefinednetworks.yaml")); err != nil {
		t.Fatal(err)
	}
	peer := kubetest.New(t, kubetest.Options{CRDDirs: []string{dir}})
	c := clientFor(t, peer)
	agreed := 0
	for _, tc := range v1test.OVNKubernetesCases {
		t.Run(tc.Name, func(t *testing.T) {
			obj, err := v1test.Object(tc.Doc)
			if err != nil {
				t.Fatal(err)
			}
			msgs := serverMessages(t, c, obj)
			err = tc.Check(msgs, false)
			why, differs := v1test.PeerDifferences[tc.Name]
			switch {
			case err != nil && !differs:
				t.Errorf("ovn-kubernetes' CRDs judge otherwise: %v", err)
			case err != nil:
				t.Logf("differs as expected (%s): %v", why, err)
			case differs:
				t.Errorf("listed in PeerDifferences (%s), but judged the same", why)
			default:
				agreed++
			}
		})
	}
	t.Logf("%d of %d cases judged the same by ovn-kubernetes' CRDs", agreed, len(v1test.OVNKubernetesCases))
}
