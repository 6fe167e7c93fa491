// Package tlsx is fulcrum's TLS at the edge, in HAProxy's terms: the
// certificates of the binds (`crt` files and directories, crt-lists),
// their selection by SNI, and the certificate store that the Runtime API
// changes live (set/commit/abort ssl cert, add/del ssl crt-list). TLS
// itself is crypto/tls.
//
// The main types:
//
//   - Cert is one loaded certificate with its chain and key, named as the
//     configuration writes its path (ParseCert, LoadCert).
//   - CrtList is a crt-list file or a `crt` directory: Entries of a
//     certificate name, options in brackets (Settings) and SNI filters.
//   - Settings are the TLS options of a bind or of a crt-list line
//     (versions, ciphers, ALPN, client certificate verification), with
//     the parsers of HAProxy's keywords; a server dialer can reuse them.
//   - Loader reads the files of a configuration once, for conf; BindConfig
//     is a bind's settings and certificate sources.
//   - Store holds a configuration's certificates and lists, and Bind is a
//     listener's TLS: a tls.Config whose GetConfigForClient looks the
//     client's server name up in a table (sni.go) that the Store rebuilds
//     whenever a certificate or list the bind uses changes.
//   - ConnInfo is an established connection's TLS as fetches read it.
//
// Invariants: a Cert, an Entry and a bind's SNI table never change once
// built; changes replace them under the Store's lock, and a handshake
// reads its bind's table with one atomic load, so a commit takes effect
// at the next handshake without disturbing established connections.
// Names of protocol versions and ciphers are OpenSSL's, as HAProxy's
// configuration and fetches use them (names.go).
package tlsx
