package check

import (
	"bytes"
	"context"
	"time"
)

// agentProbe is the agent check (HAProxy's agent-check): connect to the
// agent, send agent.send if set, and read one line, which the server state
// then applies (Server.applyAgent). The probe only reads and parses:
//
//   - connect fails: L4CON / L4TOUT; the server is left as it is;
//   - no line end before the agent closes or the timeout: the reply is
//     ignored ("Ignoring incomplete line from agent");
//   - a line: parsed by ParseAgentReply; its status is decided when it is
//     applied (L7OK for up, L7STS for down/stopped/fail, else CHECKED).
type agentProbe struct {
	send []byte
}

// maxAgentReply is how much of a reply is read, as HAProxy's check buffer.
const maxAgentReply = 1024

// Run connects to the agent at addr and reads its line.
func (p agentProbe) Run(ctx context.Context, addr string, connect, read time.Duration) Result {
	c, fail := dial(ctx, addr, connect)
	if fail != nil {
		return *fail
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	c.SetDeadline(time.Now().Add(read))
	if len(p.send) > 0 {
		if _, err := c.Write(p.send); err != nil {
			if isTimeout(err) {
				return Result{Status: StatusL7TOUT}
			}
			return Result{Status: StatusSOCKERR, Info: errText(err)}
		}
	}
	buf := make([]byte, 0, 128)
	tmp := make([]byte, 512)
	for len(buf) < maxAgentReply {
		n, err := c.Read(tmp)
		buf = append(buf, tmp[:n]...)
		if bytes.ContainsAny(buf, "\r\n") {
			break
		}
		if err != nil {
			if isTimeout(err) && len(buf) == 0 {
				return Result{Status: StatusL7TOUT}
			}
			break // closed or timed out with a partial line: incomplete
		}
	}
	reply := ParseAgentReply(buf)
	return Result{Status: StatusCHECKED, Agent: &reply}
}

var _ Probe = agentProbe{}
