package testutil

import (
	"os"
	"os/exec"
	"testing"
)

// NeedTool returns the path of an external program a test drives (curl,
// openssl, haproxy, socat). When it is missing the test fails under
// CI=true, where .ci/run installs the Debian package pkg, and is skipped
// otherwise with what to install.
func NeedTool(t testing.TB, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not found: the CI must install the Debian package %s (.ci/run PKGS)", name, pkg)
	}
	t.Skipf("%s not found: apt-get install %s to run this test", name, pkg)
	return ""
}
