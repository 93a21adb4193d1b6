package installer

import (
	"strings"
	"testing"
)

// TestUnitsExplainEveryFlag: a student opening a unit file reads why each
// flag is there; the agent's unit hands its cgroups over and leaves its
// pods running when it stops; Kubernetes' timings unless asked.
func TestUnitsExplainEveryFlag(t *testing.T) {
	units := append(ControlPlaneUnits("172.30.0.11", false), AgentUnit("w1", "172.30.0.21", "/etc/kobune/bootstrap.conf"))
	for _, u := range units {
		text := u.Text()
		lines := strings.Split(text, "\n")
		for i, line := range lines {
			if strings.HasPrefix(strings.TrimSpace(line), "--") && !strings.HasPrefix(strings.TrimSpace(lines[i-1]), "# ") {
				t.Errorf("%s: flag %q has no comment above it", u.Name, strings.TrimSpace(line))
			}
		}
		for _, want := range []string{"Restart=always", "LimitNOFILE=", "WantedBy=multi-user.target", "ExecStart=/usr/local/bin/" + u.Name + " \\"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s has no %q:\n%s", u.Name, want, text)
			}
		}
	}
	agent := units[3].Text()
	for _, want := range []string{"Type=notify", "Delegate=yes", "KillMode=process", "--node-name=w1", "--bootstrap-kubeconfig=/etc/kobune/bootstrap.conf", "After=containerd.service"} {
		if !strings.Contains(agent, want) {
			t.Errorf("agent unit has no %q:\n%s", want, agent)
		}
	}
	for _, u := range units {
		if strings.Contains(u.Text(), "node-monitor-grace-period") || strings.Contains(u.Text(), "default-toleration-seconds") {
			t.Errorf("%s shortens Kubernetes' timings without --fast-timings", u.Name)
		}
	}
	if fast := ControlPlaneUnits("172.30.0.11", true); !strings.Contains(fast[2].Text(), "--node-monitor-grace-period=8s") || !strings.Contains(fast[0].Text(), "--default-toleration-seconds=5") {
		t.Errorf("--fast-timings does not give the lab's timings")
	}
}
