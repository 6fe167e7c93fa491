package haproxycfg

// The keyword table: one row per HAProxy 2.6 keyword of the global,
// defaults, frontend, backend and listen sections, and one table per
// keyword that takes options (bind, server and default-server,
// stick-table, cookie, stats socket).
//
// A row either converts (conv) or says why not (kind, why). When fulcrum
// gains a feature, its rows change here and nowhere else: a "not supported
// yet" row gets a conv, an option row an apply.

import (
	"fmt"
	"strings"

	"github.com/fulcrum-proxy/fulcrum/internal/suggest"
)

// side is where a keyword belongs in fulcrum's tables.
type side int

const (
	sideAny   side = iota // the frontend when there is one, else the backend
	sideFront             // [[frontend]]
	sideBack              // [[backend]]
	sideStats             // [frontend.stats]: a frontend only
)

// keyword is one row of the proxy (and defaults) keyword table.
type keyword struct {
	name       string // its words: "balance", "option httpchk", "timeout client"
	side       side
	dflt       bool // fulcrum's [defaults] has it: in a defaults section it goes there
	noDefaults bool // HAProxy refuses it in a defaults section
	neg        bool // takes the "no" prefix ("no option redispatch")
	conv       func(x *ctx)
	kind       Kind   // when conv is nil: why not
	why        string // when conv is nil
}

// Reasons shared by several rows.
const (
	whyRemoved = "removed from HAProxy (2.1 or earlier): HAProxy 2.6 refuses it"
)

// proxyRows are the keywords of defaults, frontend, backend and listen
// sections. Longer names win: "http-check expect" before "http-check".
var proxyRows = []keyword{
	{name: "mode", side: sideAny, dflt: true, conv: convMode},
	{name: "maxconn", side: sideFront, dflt: true, conv: convInt("maxconn")},
	{name: "balance", side: sideBack, dflt: true, conv: convRest("balance")},
	{name: "hash-type", side: sideBack, dflt: true, conv: convRest("hash_type")},
	{name: "hash-balance-factor", side: sideBack, dflt: true, conv: convInt("hash_balance_factor")},
	{name: "fullconn", side: sideBack, dflt: true, conv: convInt("fullconn")},
	{name: "http-reuse", side: sideBack, dflt: true, conv: convWord("http_reuse")},
	{name: "retries", side: sideBack, dflt: true, conv: convInt("retries")},
	{name: "timeout connect", side: sideBack, dflt: true, conv: convTime("timeout_connect")},
	{name: "timeout server", side: sideBack, dflt: true, conv: convTime("timeout_server")},
	{name: "timeout queue", side: sideBack, dflt: true, conv: convTime("timeout_queue")},
	{name: "timeout check", side: sideBack, dflt: true, conv: convTime("timeout_check")},
	{name: "timeout client", side: sideFront, dflt: true, conv: convTime("timeout_client")},
	{name: "timeout http-request", side: sideFront, dflt: true, conv: convTime("timeout_http_request")},
	{name: "timeout http-keep-alive", side: sideFront, dflt: true, conv: convTime("timeout_http_keep_alive")},
	{name: "timeout tunnel", side: sideBack, dflt: true, conv: convTime("timeout_tunnel")},
	{name: "timeout client-fin", kind: Unsupported, why: "half-closed connection timeouts"},
	{name: "timeout server-fin", kind: Unsupported, why: "half-closed connection timeouts"},
	{name: "timeout tarpit", kind: Unsupported, why: "tarpit"},
	{name: "option redispatch", side: sideBack, dflt: true, neg: true, conv: convRedispatch},
	{name: "option forwardfor", side: sideAny, dflt: true, neg: true, conv: convForwardFor},
	{name: "option allbackups", side: sideBack, neg: true, conv: convFlag("allbackups")},
	{name: "option httpchk", side: sideBack, conv: convHTTPChk},
	{name: "http-check expect", side: sideBack, conv: convHTTPCheckExpect},
	{name: "http-check send", side: sideBack, conv: convHTTPCheckSend},
	{side: sideBack, name: "http-check", kind: Unsupported, why: "only http-check send (meth, uri, hdr Host) and expect status are converted"},
	{name: "option tcp-check", side: sideBack, conv: convTCPCheck},
	{name: "tcp-check connect", side: sideBack, conv: convTCPCheckConnect},
	{side: sideBack, name: "tcp-check", kind: Unsupported, why: "fulcrum's tcp checks only connect"},
	{side: sideBack, name: "option ssl-hello-chk", kind: Unsupported, why: "protocol checks: fulcrum checks by TCP connect or HTTP"},
	{side: sideBack, name: "option mysql-check", kind: Unsupported, why: "protocol checks: fulcrum checks by TCP connect or HTTP"},
	{side: sideBack, name: "option pgsql-check", kind: Unsupported, why: "protocol checks: fulcrum checks by TCP connect or HTTP"},
	{side: sideBack, name: "option redis-check", kind: Unsupported, why: "protocol checks: fulcrum checks by TCP connect or HTTP"},
	{side: sideBack, name: "option smtpchk", kind: Unsupported, why: "protocol checks: fulcrum checks by TCP connect or HTTP"},
	{side: sideBack, name: "option ldap-check", kind: Unsupported, why: "protocol checks: fulcrum checks by TCP connect or HTTP"},
	{side: sideBack, name: "option spop-check", kind: Unsupported, why: "protocol checks: fulcrum checks by TCP connect or HTTP"},
	{side: sideBack, name: "option external-check", kind: Unsupported, why: "external checks"},
	{side: sideBack, name: "external-check", kind: Unsupported, why: "external checks"},
	{name: "default-server", side: sideBack, conv: convDefaultServer},
	{name: "server", side: sideBack, noDefaults: true, conv: convServer},
	{name: "server-template", side: sideBack, noDefaults: true, conv: convServerTemplate},
	{name: "cookie", side: sideBack, conv: convCookie},
	{name: "stick-table", side: sideAny, noDefaults: true, conv: convStickTable},
	{name: "stick", side: sideBack, noDefaults: true, conv: convStick},
	{name: "acl", side: sideAny, noDefaults: true, conv: convACL},
	{name: "use_backend", side: sideFront, noDefaults: true, conv: convUseBackend},
	{name: "default_backend", side: sideFront, conv: convDefaultBackend},
	{name: "http-request", side: sideAny, conv: convHTTPRequest},
	{name: "redirect", side: sideAny, conv: convRedirect},
	{name: "tcp-request connection", side: sideFront, conv: convTCPRequest},
	{name: "tcp-request content", kind: NotYet, why: "tcp-request content rules"},
	{name: "tcp-request inspect-delay", kind: NotYet, why: "tcp-request content rules"},
	{name: "tcp-request session", kind: Unsupported, why: "tcp-request session rules"},
	{name: "tcp-response", kind: Unsupported, why: "tcp-response rules"},
	{name: "http-response", side: sideAny, conv: convHTTPResponse},
	{name: "http-after-response", kind: Unsupported, why: "http-after-response rules"},
	{name: "bind", side: sideFront, noDefaults: true, conv: convBind},
	{name: "stats enable", side: sideStats, conv: convStatsEnable},
	{name: "stats uri", side: sideStats, conv: convStatsURI},
	{name: "stats refresh", side: sideStats, conv: convStatsRefresh},
	{name: "stats auth", side: sideStats, conv: convStatsAuth},
	{name: "stats admin", side: sideStats, conv: convStatsAdmin},
	{name: "stats hide-version", side: sideStats, conv: convStatsHideVersion},
	{name: "stats realm", kind: Unsupported, why: "fulcrum's stats page realm is fixed"},
	{name: "stats show-legends", kind: Unsupported, why: "stats page options"},
	{name: "stats show-node", kind: Unsupported, why: "stats page options"},
	{name: "stats show-desc", kind: Unsupported, why: "stats page options"},
	{name: "stats show-modules", kind: Unsupported, why: "stats page options"},
	{name: "stats scope", kind: Unsupported, why: "stats page scopes"},
	{name: "stats http-request", kind: Unsupported, why: "stats page rules"},
	{name: "stats bind-process", kind: Ignored, why: "processes were removed from HAProxy 2.5"},
	{name: "option httplog", side: sideFront, dflt: true, conv: convHTTPLog},
	{name: "option httpslog", side: sideFront, dflt: true, conv: convHTTPLog},
	{name: "option tcplog", side: sideFront, dflt: true, conv: convHTTPLog},
	{name: "option log-health-checks", kind: Builtin, why: "fulcrum logs every change of a server's state"},
	{name: "option contstats", kind: Builtin, why: "fulcrum's counters are updated continuously"},
	{name: "option http-keep-alive", kind: Builtin, why: "fulcrum keeps client and server connections alive"},
	{name: "option splice-auto", kind: Builtin, why: "fulcrum splices large bodies and TCP bulk transfers by itself"},
	{name: "option splice-request", kind: Builtin, why: "fulcrum splices large bodies and TCP bulk transfers by itself"},
	{name: "option splice-response", kind: Builtin, why: "fulcrum splices large bodies and TCP bulk transfers by itself"},
	{name: "option dontlognull", side: sideFront, dflt: true, neg: true, conv: convFlag("dontlognull")},
	{name: "option dontlog-normal", side: sideFront, dflt: true, neg: true, conv: convFlag("dontlog_normal")},
	{name: "option log-separate-errors", side: sideFront, dflt: true, neg: true, conv: convFlag("log_separate_errors")},
	{name: "option logasap", kind: Unsupported, why: "fulcrum logs a request when it ends"},
	{name: "option http-server-close", kind: Unsupported, why: "fulcrum keeps server connections open for reuse (see http_reuse)"},
	{name: "option httpclose", kind: Unsupported, why: "fulcrum keeps client and server connections alive"},
	{name: "option forceclose", kind: Unsupported, why: whyRemoved},
	{name: "log", side: sideAny, neg: true, conv: convLog},
	{name: "log-format", side: sideFront, dflt: true, conv: convLogFormat},
	{name: "log-format-sd", kind: Unsupported, why: "structured data in rfc5424 log lines"},
	{name: "error-log-format", kind: Unsupported, why: "a log format of its own for connection errors"},
	{name: "log-tag", kind: Unsupported, why: "a log tag per section: fulcrum has one, [global] log_tag"},
	{name: "capture request header", side: sideFront, noDefaults: true, conv: convCapture},
	{name: "capture response header", side: sideFront, noDefaults: true, conv: convCapture},
	{name: "capture cookie", kind: Unsupported, why: "cookie captures"},
	{name: "capture", kind: Unsupported, why: "only capture request header and capture response header are converted"},
	{name: "declare capture", kind: Unsupported, why: "declare capture and http-request capture"},
	{name: "unique-id-format", kind: Unsupported, why: "unique request ids"},
	{name: "unique-id-header", kind: Unsupported, why: "unique request ids"},
	{name: "errorfile", conv: convErrorfile},
	{name: "errorfiles", kind: Unsupported, why: "custom error pages: fulcrum answers with HAProxy's built-in pages"},
	{name: "errorloc", kind: Unsupported, why: "custom error pages: fulcrum answers with HAProxy's built-in pages"},
	{name: "errorloc302", kind: Unsupported, why: "custom error pages: fulcrum answers with HAProxy's built-in pages"},
	{name: "errorloc303", kind: Unsupported, why: "custom error pages: fulcrum answers with HAProxy's built-in pages"},
	{name: "http-error", kind: Unsupported, why: "custom error pages: fulcrum answers with HAProxy's built-in pages"},
	{name: "compression", kind: Unsupported, why: "compression"},
	{name: "monitor-uri", kind: Unsupported, why: "monitor-uri (an http_request rule \"return status 200 if { path /URI }\" does the same)"},
	{name: "monitor", kind: Unsupported, why: "monitor fail"},
	{name: "description", kind: Ignored, why: "descriptions are not shown"},
	{name: "id", kind: Unsupported, why: "fixed proxy ids: fulcrum numbers sections in file order"},
	{name: "disabled", kind: Unsupported, why: "disabled sections"},
	{name: "enabled", kind: Ignored, why: "sections are enabled"},
	{name: "rate-limit", kind: Unsupported, why: "session rate limits"},
	{name: "backlog", kind: Unsupported, why: "listen backlogs (the system's somaxconn applies)"},
	{name: "filter", kind: Unsupported, why: "filters"},
	{side: sideBack, name: "http-send-name-header", kind: Unsupported, why: "http-send-name-header"},
	{side: sideBack, name: "source", kind: Unsupported, why: "source addresses for server connections"},
	{side: sideBack, name: "persist", kind: Unsupported, why: "rdp-cookie persistence"},
	{side: sideBack, name: "dynamic-cookie-key", kind: Unsupported, why: "dynamic cookies"},
	{name: "email-alert", kind: Unsupported, why: "email alerts"},
	{name: "load-server-state-from-file", side: sideBack, conv: convLoadState},
	{side: sideBack, name: "server-state-file-name", kind: Unsupported, why: "per-backend state files: fulcrum has one, global.state_file"},
	{side: sideBack, name: "retry-on", kind: Unsupported, why: "retry-on: fulcrum retries failed connects only"},
	{side: sideBack, name: "use-server", kind: Unsupported, why: "use-server rules"},
	{side: sideBack, name: "force-persist", kind: Unsupported, why: "force-persist rules"},
	{side: sideBack, name: "ignore-persist", kind: Unsupported, why: "ignore-persist rules"},
	{name: "max-keep-alive-queue", kind: Unsupported, why: "max-keep-alive-queue"},
	{side: sideBack, name: "http-check disable-on-404", kind: Unsupported, why: "disable-on-404"},
	{name: "option tcpka", kind: Unsupported, why: "TCP keep-alive probes"},
	{name: "option clitcpka", kind: Unsupported, why: "TCP keep-alive probes"},
	{side: sideBack, name: "option srvtcpka", kind: Unsupported, why: "TCP keep-alive probes"},
	{name: "option abortonclose", side: sideBack, dflt: true, neg: true, conv: convAbortOnClose},
	{name: "option http-buffer-request", kind: Unsupported, why: "request bodies are streamed, never buffered"},
	{side: sideBack, name: "option prefer-last-server", kind: Unsupported, why: "prefer-last-server"},
	{side: sideBack, name: "option persist", kind: Unsupported, why: "persistence to a DOWN server"},
	{side: sideBack, name: "option checkcache", kind: Unsupported, why: "checkcache"},
	{name: "option socket-stats", kind: Unsupported, why: "per-listener statistics"},
	{name: "option independent-streams", kind: Unsupported, why: "independent-streams"},
	{name: "option nolinger", kind: Unsupported, why: "nolinger"},
	{name: "option originalto", kind: Unsupported, why: "X-Original-To"},
	{name: "option http-ignore-probes", kind: Unsupported, why: "http-ignore-probes"},
	{name: "option http-no-delay", kind: Unsupported, why: "http-no-delay"},
	{name: "option http-pretend-keepalive", kind: Unsupported, why: "http-pretend-keepalive"},
	{name: "option accept-invalid-http-request", kind: Unsupported, why: "fulcrum refuses invalid requests (400)"},
	{side: sideBack, name: "option accept-invalid-http-response", kind: Unsupported, why: "fulcrum refuses invalid responses (502)"},
	{name: "option transparent", kind: Unsupported, why: "transparent proxying"},
	{name: "option http-use-proxy-header", kind: Unsupported, why: "Proxy-Connection handling"},
	{name: "option disable-h2-upgrade", side: sideFront, dflt: true, neg: true, conv: convFlag("disable_h2_upgrade")},
	{name: "option tcp-smart-accept", kind: Ignored, why: "no effect in fulcrum"},
	{name: "option tcp-smart-connect", kind: Ignored, why: "no effect in fulcrum"},
	{name: "option http-restrict-req-hdr-names", kind: Unsupported, why: "header name restrictions"},
	{name: "option idle-close-on-response", kind: Unsupported, why: "idle-close-on-response"},
	{name: "option", conv: convOtherOption},
	{name: "reqadd", kind: Unsupported, why: whyRemoved}, {name: "reqdel", kind: Unsupported, why: whyRemoved},
	{name: "reqrep", kind: Unsupported, why: whyRemoved}, {name: "reqirep", kind: Unsupported, why: whyRemoved},
	{name: "reqallow", kind: Unsupported, why: whyRemoved}, {name: "reqdeny", kind: Unsupported, why: whyRemoved},
	{name: "reqtarpit", kind: Unsupported, why: whyRemoved}, {name: "reqpass", kind: Unsupported, why: whyRemoved},
	{name: "reqsetbe", kind: Unsupported, why: whyRemoved}, {name: "reqisetbe", kind: Unsupported, why: whyRemoved},
	{name: "rspadd", kind: Unsupported, why: whyRemoved}, {name: "rspdel", kind: Unsupported, why: whyRemoved},
	{name: "rsprep", kind: Unsupported, why: whyRemoved}, {name: "rspirep", kind: Unsupported, why: whyRemoved},
	{name: "rspdeny", kind: Unsupported, why: whyRemoved}, {name: "block", kind: Unsupported, why: whyRemoved},
	{name: "contimeout", kind: Unsupported, why: whyRemoved}, {name: "clitimeout", kind: Unsupported, why: whyRemoved},
	{name: "srvtimeout", kind: Unsupported, why: whyRemoved}, {name: "redispatch", kind: Unsupported, why: whyRemoved},
}

// globalRows are the keywords of the global section.
var globalRows = []keyword{
	{name: "maxconn", conv: convGlobalInt("maxconn")},
	{name: "nbthread", conv: convGlobalInt("nbthread")},
	{name: "hard-stop-after", conv: convGlobalTime("hard_stop_after")},
	{name: "stats socket", conv: convStatsSocket},
	{name: "stats timeout", conv: convGlobalTime("stats_timeout")},
	{name: "stats maxconn", conv: convStatsMaxconn},
	{name: "server-state-file", conv: convStateFile},
	{name: "daemon", kind: Ignored, why: "fulcrum runs in the foreground: run it under a service manager (systemd)"},
	{name: "master-worker", kind: Ignored, why: "fulcrum reloads in place (SIGHUP, the reload command)"},
	{name: "user", kind: Ignored, why: "run fulcrum as that user (systemd User=)"},
	{name: "uid", kind: Ignored, why: "run fulcrum as that user (systemd User=)"},
	{name: "group", kind: Ignored, why: "run fulcrum as that group (systemd Group=)"},
	{name: "gid", kind: Ignored, why: "run fulcrum as that group (systemd Group=)"},
	{name: "chroot", kind: Ignored, why: "no chroot: confine fulcrum with its service manager (systemd RootDirectory= or ProtectSystem=)"},
	{name: "pidfile", kind: Ignored, why: "no pid file is written (a service manager tracks the process)"},
	{name: "nbproc", kind: Unsupported, why: "several processes (removed from HAProxy 2.5; see nbthread)"},
	{name: "cpu-map", kind: Unsupported, why: "CPU pinning"},
	{name: "log", conv: convGlobalLog},
	{name: "log-send-hostname", kind: Unsupported, why: "the host name in rfc3164 syslog headers (fulcrum sends none there, as HAProxy without log-send-hostname)"},
	{name: "log-tag", conv: convGlobalWord("log_tag")},
	{name: "ca-base", conv: convCABase},
	{name: "crt-base", conv: convCrtBase},
	{name: "ssl-default-bind-options", conv: convDefaultBindOptions},
	{name: "ssl-default-bind-ciphers", conv: convDefaultBindSetting("ciphers")},
	{name: "ssl-default-bind-ciphersuites", conv: convDefaultBindSetting("ciphersuites")},
	{name: "ssl-default-bind-curves", conv: convDefaultBindSetting("curves")},
	{name: "ssl-server-verify", conv: convServerVerify},
	{name: "ssl-default-server-options", kind: Unsupported, why: "TLS options for every server: fulcrum offers servers TLSv1.2 and TLSv1.3 with crypto/tls's defaults"},
	{name: "ssl-default-server-ciphers", kind: Unsupported, why: whyCiphersSrv},
	{name: "ssl-default-server-ciphersuites", kind: Unsupported, why: whyCiphersSrv},
	{name: "ssl-default-server-curves", kind: Unsupported, why: whyCiphersSrv},
	{name: "ssl-dh-param-file", kind: Ignored, why: "crypto/tls has no DHE key exchange"},
	{name: "ssl-load-extra-files", kind: Unsupported, why: "fulcrum reads the certificate, its chain and its key from one PEM file"},
	{name: "ssl-load-extra-del-ext", kind: Unsupported, why: "fulcrum reads the certificate, its chain and its key from one PEM file"},
	{name: "ssl-skip-self-issued-ca", kind: Unsupported, why: "fulcrum sends the chain as the PEM file holds it"},
	{name: "ssl-mode-async", kind: Ignored, why: "no effect in fulcrum (no OpenSSL engines)"},
	{name: "ssl-engine", kind: Unsupported, why: "OpenSSL engines: fulcrum's TLS is crypto/tls"},
	{name: "ssl-provider", kind: Unsupported, why: "OpenSSL providers: fulcrum's TLS is crypto/tls"},
	{name: "ssl-provider-path", kind: Unsupported, why: "OpenSSL providers: fulcrum's TLS is crypto/tls"},
	{name: "ssl-propquery", kind: Unsupported, why: "OpenSSL providers: fulcrum's TLS is crypto/tls"},
	{name: "ssl-*", kind: Unsupported, why: "this TLS setting is not converted (fulcrum's TLS is crypto/tls)"},
	{name: "maxsslconn", kind: Unsupported, why: "a TLS connection limit: maxconn applies"},
	{name: "maxsslrate", kind: Unsupported, why: "TLS handshake rate limits"},
	{name: "issuers-chain-path", kind: Unsupported, why: "chains completed from a directory: put the chain in the certificate's PEM file"},
	{name: "tune.http.maxhdr", conv: convGlobalInt("tune_http_maxhdr")},
	{name: "tune.ssl.default-dh-param", kind: Ignored, why: "crypto/tls has no DHE key exchange"},
	{name: "tune.ssl.*", kind: Unsupported, why: "TLS tuning: fulcrum's TLS is crypto/tls"},
	{name: "tune.sndbuf.client", conv: convGlobalInt("tune_sndbuf_client")},
	{name: "tune.rcvbuf.client", conv: convGlobalInt("tune_rcvbuf_client")},
	{name: "tune.sndbuf.server", conv: convGlobalInt("tune_sndbuf_server")},
	{name: "tune.rcvbuf.server", conv: convGlobalInt("tune_rcvbuf_server")},
	{name: "tune.h2.max-concurrent-streams", conv: convGlobalInt("tune_h2_max_concurrent_streams")},
	{name: "tune.h2.*", kind: Unsupported, why: "HTTP/2 tuning other than max-concurrent-streams: fulcrum's HTTP/2 windows, frame size and header table are its own (1 MiB initial window, 16 KiB frames, 4 KiB table)"},
	{name: "tune.*", kind: Unsupported, why: "tuning settings"},
	{name: "localpeer", conv: convLocalPeer},
	{name: "spread-checks", kind: Builtin, why: "fulcrum spreads checks over their interval by itself"},
	{name: "max-spread-checks", kind: Builtin, why: "fulcrum spreads checks over their interval by itself"},
	{name: "ulimit-n", kind: Unsupported, why: "fulcrum uses the file descriptor limit it is given (systemd LimitNOFILE=)"},
	{name: "node", kind: Ignored, why: "node names are not shown"},
	{name: "description", kind: Ignored, why: "descriptions are not shown"},
	{name: "lua-*", kind: Unsupported, why: "Lua"},
	{name: "setenv", kind: Unsupported, why: "environment variables"},
	{name: "presetenv", kind: Unsupported, why: "environment variables"},
	{name: "resetenv", kind: Unsupported, why: "environment variables"},
	{name: "unsetenv", kind: Unsupported, why: "environment variables"},
	{name: "h1-case-adjust", kind: Unsupported, why: "header case adjustment"},
	{name: "h1-case-adjust-file", kind: Unsupported, why: "header case adjustment"},
	{name: "expose-experimental-directives", kind: Ignored, why: "no effect in fulcrum"},
	{name: "insecure-fork-wanted", kind: Ignored, why: "no effect in fulcrum"},
	{name: "insecure-setuid-wanted", kind: Ignored, why: "no effect in fulcrum"},
	{name: "set-dumpable", kind: Ignored, why: "no effect in fulcrum"},
	{name: "strict-limits", kind: Ignored, why: "no effect in fulcrum"},
	{name: "numa-cpu-mapping", kind: Ignored, why: "no effect in fulcrum"},
	{name: "mworker-max-reloads", kind: Ignored, why: "no effect in fulcrum"},
	{name: "quiet", kind: Ignored, why: "no effect in fulcrum"},
	{name: "zero-warning", kind: Ignored, why: "no effect in fulcrum"},
	{name: "maxpipes", kind: Ignored, why: "no effect in fulcrum"},
	{name: "noepoll", kind: Ignored, why: "no effect in fulcrum"},
	{name: "nopoll", kind: Ignored, why: "no effect in fulcrum"},
	{name: "nosplice", kind: Unsupported, why: "fulcrum always splices large transfers"},
	{name: "busy-polling", kind: Unsupported, why: "busy polling"},
	{name: "maxconnrate", kind: Unsupported, why: "connection rate limits"},
	{name: "maxsessrate", kind: Unsupported, why: "session rate limits"},
	{name: "maxcomprate", kind: Unsupported, why: "compression"},
	{name: "server-state-base", kind: Unsupported, why: "a directory of state files (give global.state_file in full)"},
	{name: "grace", kind: Unsupported, why: "grace periods"},
	{name: "unix-bind", kind: Unsupported, why: "unix socket defaults"},
	{name: "default-path", kind: Unsupported, why: "default-path (relative paths are relative to the TOML file)"},
	{name: "thread-groups", kind: Unsupported, why: "thread groups"},
	{name: "httpclient.*", kind: Unsupported, why: "the HTTP client"},
	{name: "profiling.*", kind: Ignored, why: "no effect in fulcrum"},
	{name: "external-check", kind: Unsupported, why: "external checks"},
}

// sectionRows say why the sections fulcrum does not convert are not.
var sectionRows = map[string]keyword{
	"mailers":     {kind: Unsupported, why: "email alerts"},
	"http-errors": {kind: Unsupported, why: "custom error pages"},
	"ring":        {kind: Unsupported, why: "ring buffers"},
	"cache":       {kind: Unsupported, why: "caching"},
	"program":     {kind: Unsupported, why: "programs run by the master process"},
	"fcgi-app":    {kind: Unsupported, why: "FastCGI"},
}

// rowIndex is a row table by name, built once.
type rowIndex struct {
	rows  map[string]*keyword
	wild  []*keyword // "ssl-*"
	byLen int        // the most words in a name
}

func index(rows []keyword) *rowIndex {
	ix := &rowIndex{rows: map[string]*keyword{}}
	for i := range rows {
		r := &rows[i]
		if strings.HasSuffix(r.name, "*") {
			ix.wild = append(ix.wild, r)
			continue
		}
		if _, dup := ix.rows[r.name]; !dup {
			ix.rows[r.name] = r
		}
		ix.byLen = max(ix.byLen, len(strings.Fields(r.name)))
	}
	return ix
}

// The indexes of the tables, built at start (in init: the rows' conv
// funcs refer to the indexes through the notes they write).
var proxyIndex, globalIndex *rowIndex

func init() {
	proxyIndex = index(proxyRows)
	globalIndex = index(globalRows)
}

// lookup finds the row of a line: the longest name matching its first
// words, after a leading "no". argi is the index of the first argument.
func (ix *rowIndex) lookup(ln *line) (row *keyword, neg bool, argi int) {
	start := 0
	if ln.kw(0) == "no" && len(ln.words) > 1 {
		neg, start = true, 1
	}
	for n := min(ix.byLen, len(ln.words)-start); n >= 1; n-- {
		name := strings.Join(ln.args(start)[:n], " ")
		if r, ok := ix.rows[name]; ok {
			return r, neg, start + n
		}
	}
	for _, r := range ix.wild {
		if strings.HasPrefix(ln.kw(start), strings.TrimSuffix(r.name, "*")) {
			return r, neg, start + 1
		}
	}
	return nil, false, 0
}

// unknown is the note of a line whose keyword the index has no row for:
// "unknown keyword", with HAProxy's "did you mean" when a row's first
// word is close.
func (ix *rowIndex) unknown(ln *line) string {
	var firsts []string
	for name := range ix.rows {
		firsts = append(firsts, strings.Fields(name)[0])
	}
	if s := suggest.Nearest(ln.kw(0), firsts); s != "" && s != ln.kw(0) {
		return fmt.Sprintf("unknown keyword; did you mean '%s'?", s)
	}
	return "unknown keyword"
}

// lookupProxy finds the row of a proxy or defaults line.
func lookupProxy(ln *line) (*keyword, bool, int) { return proxyIndex.lookup(ln) }
