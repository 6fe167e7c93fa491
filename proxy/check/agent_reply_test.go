package check

import "testing"

// TestParseAgentReply covers the reply grammar with the replies of
// agent-check-timeline.txt and agent-extra.txt.
func TestParseAgentReply(t *testing.T) {
	tests := []struct {
		reply string
		want  AgentReply
	}{
		{"up\n", AgentReply{State: "up"}},
		{"75%\n", AgentReply{Weight: "75%"}},
		{"drain\n", AgentReply{Admin: "drain"}},
		{"MAINT\n", AgentReply{Admin: "maint"}},
		{"Drain 25%\n", AgentReply{Admin: "drain", Weight: "25%"}},
		{"up\tdrain\n", AgentReply{State: "up", Admin: "drain"}},
		{"  ready  \n", AgentReply{Admin: "ready"}},
		{"#just a comment\n", AgentReply{Comment: "just a comment"}},
		{"up 100%,maxconn:0\n", AgentReply{State: "up", Weight: "100%", MaxConn: "0"}},
		{"UP 100%,maxconn:0\r\n", AgentReply{State: "UP", Weight: "100%", MaxConn: "0"}},
		{"50% maxconn:10 ready\n", AgentReply{Weight: "50%", MaxConn: "10", Admin: "ready"}},
		{"fail # bad disk\n", AgentReply{State: "fail", Comment: "bad disk"}},
		{"down #maintenance window\n", AgentReply{State: "down", Comment: "maintenance window"}},
		{"down#going away\n", AgentReply{Unknown: "down#going"}},
		{"hello world\n", AgentReply{Unknown: "hello"}},
		{"hello 50%\n", AgentReply{Unknown: "hello", Weight: "50%"}},
		{"50% hello\n", AgentReply{Weight: "50%", Unknown: "hello"}},
		{"50\n", AgentReply{Unknown: "50"}},
		{"\n", AgentReply{}},
		{"down", AgentReply{Incomplete: true}},
		{"ready up 100% maxconn:25\n", AgentReply{Admin: "ready", State: "up", Weight: "100%", MaxConn: "25"}},
		{"stopped\nup\n", AgentReply{State: "stopped"}},
	}
	for _, tt := range tests {
		t.Run(tt.reply, func(t *testing.T) {
			if got := ParseAgentReply([]byte(tt.reply)); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestAgentWeight: N% of the initial weight, at most 256.
func TestAgentWeight(t *testing.T) {
	tests := []struct {
		word     string
		iw, want int
		warn     bool
	}{
		{"75%", 100, 75, false}, {"400%", 80, 256, false}, {"200%", 100, 200, false},
		{"0%", 100, 0, false}, {"25%", 80, 20, false}, {"5x%", 100, 0, true},
		// Large enough for iw * N to overflow: still the cap (FuzzAgentReply).
		{"36028797018963968%", 256, 256, false}, {"9223372036854775807%", 100, 256, false},
		{"36028797018963968%", 0, 0, false},
	}
	for _, tt := range tests {
		got, warn := agentWeight(tt.word, tt.iw)
		if got != tt.want || (warn != "") != tt.warn {
			t.Errorf("%s of %d: got %d %q, want %d (warning %v)", tt.word, tt.iw, got, warn, tt.want, tt.warn)
		}
	}
}
