package check

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"golang.org/x/net/http2"
)

// grpcProbe is the gRPC health check (check_proto = "grpc"): one call of
// the standard grpc.health.v1.Health/Check method over HTTP/2 with prior
// knowledge, or over TLS with ALPN h2 under check_ssl (a failed handshake
// is L6RSP or L6TOUT, as for the other checks), for the whole server (an
// empty service name), judged on its answer:
//
//   - connect fails: L4CON / L4TOUT (as tcp);
//   - no answer within the read timeout: L7TOUT;
//   - an HTTP status other than 200, or a reply that is not a gRPC
//     message: L7RSP;
//   - a grpc-status other than 0 (OK): L7STS with the status as code and
//     grpc-message as detail (a server without the health service answers
//     12, UNIMPLEMENTED);
//   - a HealthCheckResponse whose status is not SERVING: L7STS with the
//     status's name as detail;
//   - SERVING: L7OK.
//
// The messages are encoded by hand (two protobuf bytes each way), so the
// proxy carries no gRPC library.
type grpcProbe struct {
	prep ConnPrep // check_ssl, check_send_proxy; nil: none
}

// grpcHealthRequest is a gRPC frame (uncompressed, 0 bytes long) holding
// an empty HealthCheckRequest: service "".
var grpcHealthRequest = []byte{0, 0, 0, 0, 0}

// servingStatus names HealthCheckResponse.ServingStatus values.
var servingStatus = map[uint64]string{0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}

// Run makes the call to addr.
func (g grpcProbe) Run(ctx context.Context, addr string, connect, read time.Duration) Result {
	c, _, fail := dialPrep(ctx, addr, connect, g.prep)
	if fail != nil {
		return *fail
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, read)
	defer cancel()
	c.SetDeadline(time.Now().Add(read))
	cc, err := (&http2.Transport{AllowHTTP: true}).NewClientConn(c)
	if err != nil {
		return Result{Status: StatusSOCKERR, Info: errText(err)}
	}
	defer cc.Close()
	req := &http.Request{
		Method: "POST", URL: &url.URL{Scheme: "http", Host: addr, Path: "/grpc.health.v1.Health/Check"}, Host: addr,
		Header: http.Header{"Content-Type": {"application/grpc"}, "Te": {"trailers"}, "User-Agent": {"fulcrum-check"}},
		Body:   io.NopCloser(bytes.NewReader(grpcHealthRequest)), ContentLength: int64(len(grpcHealthRequest)),
	}
	resp, err := cc.RoundTrip(req.WithContext(ctx))
	if err != nil {
		if isTimeout(err) || ctx.Err() != nil {
			return Result{Status: StatusL7TOUT}
		}
		return Result{Status: StatusL7RSP, Info: errText(err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return Result{Status: StatusL7RSP, Code: resp.StatusCode, Info: "HTTP status " + strconv.Itoa(resp.StatusCode)}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if err != nil {
		if isTimeout(err) || ctx.Err() != nil {
			return Result{Status: StatusL7TOUT}
		}
		return Result{Status: StatusL7RSP, Info: errText(err)}
	}
	gs := resp.Trailer.Get("Grpc-Status")
	if gs == "" {
		gs = resp.Header.Get("Grpc-Status") // a trailers-only answer
	}
	if gs != "0" {
		code, err := strconv.Atoi(gs)
		if err != nil {
			return Result{Status: StatusL7RSP, Info: "no grpc-status"}
		}
		msg := resp.Trailer.Get("Grpc-Message")
		if msg == "" {
			msg = resp.Header.Get("Grpc-Message")
		}
		return Result{Status: StatusL7STS, Code: code, Info: "grpc-status " + gs + " " + msg}
	}
	st, ok := healthStatus(body)
	if !ok {
		return Result{Status: StatusL7RSP, Info: "Invalid gRPC health response"}
	}
	if st != 1 {
		name := servingStatus[st]
		if name == "" {
			name = strconv.FormatUint(st, 10)
		}
		return Result{Status: StatusL7STS, Code: 200, Info: name}
	}
	return Result{Status: StatusL7OK, Code: 200}
}

// healthStatus decodes a gRPC frame holding a HealthCheckResponse and
// returns its status (field 1, a varint; absent means 0, UNKNOWN).
func healthStatus(b []byte) (uint64, bool) {
	if len(b) < 5 || b[0] != 0 {
		return 0, false // short, or compressed
	}
	n := binary.BigEndian.Uint32(b[1:5])
	msg := b[5:]
	if uint32(len(msg)) != n {
		return 0, false
	}
	var st uint64
	for len(msg) > 0 {
		key, k := binary.Uvarint(msg)
		if k <= 0 {
			return 0, false
		}
		msg = msg[k:]
		switch key & 7 {
		case 0:
			v, k := binary.Uvarint(msg)
			if k <= 0 {
				return 0, false
			}
			msg = msg[k:]
			if key>>3 == 1 {
				st = v
			}
		case 2:
			l, k := binary.Uvarint(msg)
			if k <= 0 || uint64(len(msg)-k) < l {
				return 0, false
			}
			msg = msg[k+int(l):]
		case 1, 5: // fixed64, fixed32 (unknown fields)
			w := 8
			if key&7 == 5 {
				w = 4
			}
			if len(msg) < w {
				return 0, false
			}
			msg = msg[w:]
		default:
			return 0, false
		}
	}
	return st, true
}

var _ Probe = grpcProbe{}
