package runtime

import (
	"strconv"
	"strings"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/tlsx"
)

// Certificate commands (HAProxy 2.6's src/ssl_ckch.c and src/ssl_crtlist.c
// cli_kws): show the certificates and crt-lists of the binds, and change
// them live with a transaction: `set ssl cert NAME <<` then a PEM payload
// (certificate, chain, key) keeps the new certificate aside, `commit ssl
// cert NAME` serves it from the next handshake on, `abort ssl cert NAME`
// drops it. Replies are HAProxy's, byte for byte (testdata/runtime/ssl*.txt
// were captured from HAProxy 2.6 with the same certificates), with two
// departures, each noted where it is: `set ssl cert` naming another file
// than the ongoing transaction's is refused (2.6 updates the ongoing one
// with it, a bug fixed upstream), and crt-list options print without the
// NUL byte 2.6 leaves after an alpn value.
//
// Levels are HAProxy's: show ssl cert is operator, the rest admin.
var sslCommands = []Command{
	{Words: []string{"show", "ssl", "cert"}, Level: LevelOperator, Usage: "show ssl cert [<certfile>]", Help: "display the SSL certificates used in memory, or the details of a file", Run: showSSLCert},
	{Words: []string{"set", "ssl", "cert"}, Level: LevelAdmin, Usage: "set ssl cert <certfile> <payload>", Help: "replace a certificate file", Run: setSSLCert},
	{Words: []string{"commit", "ssl", "cert"}, Level: LevelAdmin, Usage: "commit ssl cert <certfile>", Help: "commit a certificate file", Run: commitSSLCert},
	{Words: []string{"abort", "ssl", "cert"}, Level: LevelAdmin, Usage: "abort ssl cert <certfile>", Help: "abort a transaction for a certificate file", Run: abortSSLCert},
	{Words: []string{"new", "ssl", "cert"}, Level: LevelAdmin, Usage: "new ssl cert <certfile>", Help: "create a new certificate file to be used in a crt-list or a directory", Run: newSSLCert},
	{Words: []string{"del", "ssl", "cert"}, Level: LevelAdmin, Usage: "del ssl cert <certfile>", Help: "delete an unused certificate file", Run: delSSLCert},
	{Words: []string{"show", "ssl", "crt-list"}, Level: LevelAdmin, Usage: "show ssl crt-list [-n] [<list>]", Help: "show the list of crt-lists or the content of a crt-list file <list>", Run: showCrtList},
	{Words: []string{"add", "ssl", "crt-list"}, Level: LevelAdmin, Usage: "add ssl crt-list <list> <cert> [opts]*", Help: "add to crt-list file <list> a line <cert> or a payload", Run: addCrtList},
	{Words: []string{"del", "ssl", "crt-list"}, Level: LevelAdmin, Usage: "del ssl crt-list <list> <cert[:line]>", Help: "delete a line <cert> from crt-list file <list>", Run: delCrtList},
}

// txnText returns the HAProxy text of a store error.
func txnText(err error) string {
	if te, ok := err.(*tlsx.TxnError); ok {
		return te.Msg
	}
	return err.Error()
}

// showSSLCert lists the certificates (the transaction's first, with a
// '*'), or shows one in detail: `show ssl cert *NAME` is the transaction's.
func showSSLCert(c *Context, args []string) error {
	store := c.Proxy.Certs()
	name := arg(args, 0)
	if name == "" {
		names, txn := store.CertNames()
		if txn != "" {
			c.Printf("# transaction\n*%s\n", txn)
		}
		c.Printf("# filename\n")
		for _, n := range names {
			c.Printf("%s\n", n)
		}
		return nil
	}
	ci, ok := store.CertInfo(name)
	if !ok {
		return reply("Can't display the certificate: Not found or the certificate is a bundle!")
	}
	star := ""
	if ci.Txn {
		star = "*"
	}
	c.Printf("Filename: %s%s\nStatus: %s\n", star, ci.Cert.Name, ci.Status)
	if !ci.Cert.Empty() {
		writeCertDetail(c, ci.Cert)
	}
	c.Printf("OCSP Response Key: \n") // no OCSP stapling: HAProxy prints the key empty then too
	return nil
}

// opensslTime formats t as OpenSSL's ASN1_TIME_print: "Dec  1 22:37:56 2026 GMT".
func opensslTime(t time.Time) string { return t.UTC().Format("Jan _2 15:04:05 2006 GMT") }

// writeCertDetail writes the lines of `show ssl cert NAME` from Serial to
// the chain, as HAProxy's show_cert_detail.
func writeCertDetail(c *Context, cert *tlsx.Cert) {
	l := cert.Leaf
	c.Printf("Serial: %s\n", cert.Serial())
	c.Printf("notBefore: %s\n", opensslTime(l.NotBefore))
	c.Printf("notAfter: %s\n", opensslTime(l.NotAfter))
	san := make([]string, len(l.DNSNames))
	for i, n := range l.DNSNames {
		san[i] = "DNS:" + n
	}
	c.Printf("Subject Alternative Name: %s\n", strings.Join(san, ", "))
	c.Printf("Algorithm: %s\n", cert.Algorithm())
	c.Printf("SHA1 FingerPrint: %s\n", tlsx.HexUpper(cert.SHA1[:]))
	c.Printf("Subject: %s\n", tlsx.ParseDN(l.RawSubject).OneLine())
	c.Printf("Issuer: %s\n", tlsx.ParseDN(l.RawIssuer).OneLine())
	for _, ch := range cert.Chain {
		c.Printf("Chain Subject: %s\n", tlsx.ParseDN(ch.RawSubject).OneLine())
		c.Printf("Chain Issuer: %s\n", tlsx.ParseDN(ch.RawIssuer).OneLine())
	}
}

// setSSLCert starts or updates the transaction with the payload.
func setSSLCert(c *Context, args []string) error {
	name := arg(args, 0)
	if name == "" || c.Payload == "" {
		return reply("'set ssl cert expects a filename and a certificate as a payload")
	}
	created, err := c.Proxy.Certs().SetCert(name, []byte(c.Payload))
	if err != nil {
		return replyNoLF(txnText(err) + "Can't update " + name + "!\n")
	}
	if created {
		c.Printf("Transaction created for certificate %s!\n", name)
	} else {
		c.Printf("Transaction updated for certificate %s!\n", name)
	}
	return nil
}

// commitSSLCert serves the transaction's certificate: one dot per
// crt-list line (HAProxy's instances) that now serves it.
func commitSSLCert(c *Context, args []string) error {
	name := arg(args, 0)
	if name == "" {
		return reply("'commit ssl cert expects a filename")
	}
	store := c.Proxy.Certs()
	prev, _ := store.CertInfo(name)
	n, err := store.Commit(name)
	if err != nil {
		return replyNoLF(txnText(err) + "Can't commit " + name + "!\n")
	}
	c.Printf("Committing %s%s\nSuccess!\n", name, strings.Repeat(".", n))
	ev := c.Changed().Str("certificate", name)
	if ci, ok := store.CertInfo(name); ok && !ci.Cert.Empty() {
		ev = ev.Str("serial", ci.Cert.Serial()).Time("not_after", ci.Cert.Leaf.NotAfter)
	}
	if prev.Cert != nil && !prev.Cert.Empty() {
		ev = ev.Str("previous_serial", prev.Cert.Serial())
	}
	ev.Msg("certificate committed")
	return nil
}

// abortSSLCert drops the transaction.
func abortSSLCert(c *Context, args []string) error {
	name := arg(args, 0)
	if name == "" {
		return reply("'abort ssl cert' expects a filename")
	}
	if err := c.Proxy.Certs().Abort(name); err != nil {
		return replyNoLF(txnText(err))
	}
	c.Printf("Transaction aborted for certificate '%s'!\n", name)
	return nil
}

// newSSLCert creates an empty certificate.
func newSSLCert(c *Context, args []string) error {
	name := arg(args, 0)
	if name == "" {
		return reply("'new ssl cert' expects a filename")
	}
	if err := c.Proxy.Certs().NewCert(name); err != nil {
		return replyNoLF(txnText(err))
	}
	c.Printf("New empty certificate store '%s'!\n", name)
	c.Changed().Str("certificate", name).Msg("certificate created")
	return nil
}

// delSSLCert deletes an unused certificate. HAProxy's error reply ends
// with an empty line of its own, kept.
func delSSLCert(c *Context, args []string) error {
	name := arg(args, 0)
	if name == "" {
		return reply("'del ssl cert' expects a certificate name")
	}
	if err := c.Proxy.Certs().DelCert(name); err != nil {
		return reply("Can't remove the certificate: " + txnText(err))
	}
	c.Printf("Certificate '%s' deleted!\n", name)
	c.Changed().Str("certificate", name).Msg("certificate deleted")
	return nil
}

// showCrtList lists the crt-lists (files and crt directories), or the
// lines of one; -n adds each line's number.
func showCrtList(c *Context, args []string) error {
	store := c.Proxy.Certs()
	withLine := arg(args, 0) == "-n"
	name := arg(args, 0)
	if withLine {
		name = arg(args, 1)
		if name == "" {
			return reply("'show ssl crt-list -n' expects a filename or a directory")
		}
	}
	if name == "" {
		for _, n := range store.ListNames() {
			c.Printf("%s\n", n)
		}
		return nil
	}
	l, ok := store.List(name)
	if !ok {
		return reply("didn't find the specified filename")
	}
	c.Printf("# %s\n", l.Name)
	for _, e := range l.Entries {
		c.Printf("%s\n", e.Text(withLine))
	}
	return nil
}

// addCrtList adds a line to a crt-list: from the payload (one line), or
// from the words after the list's name. (HAProxy 2.6 takes only the
// certificate from the words and drops options and filters; fulcrum reads
// them as the payload's line.)
func addCrtList(c *Context, args []string) error {
	list := arg(args, 0)
	if list == "" || (c.Payload == "" && arg(args, 1) == "") {
		return reply("'add ssl crtlist' expects a filename and a certificate name")
	}
	line := strings.Join(args[1:], " ")
	if c.Payload != "" {
		line = strings.TrimSuffix(c.Payload, "\n")
		if strings.Contains(line, "\n") {
			return reply("Can't edit the crt-list: only one line of payload is supported!")
		}
	}
	store := c.Proxy.Certs()
	e, err := store.ParseLine(line)
	if err != nil {
		return reply("Can't edit the crt-list: parsing [CLI:1]: " + err.Error())
	}
	if e == nil {
		return reply("Can't edit the crt-list: 'add ssl crtlist' should contain the certificate name in the payload")
	}
	n, err := store.AddEntry(list, e)
	if err != nil {
		return reply("Can't edit the crt-list: " + txnText(err))
	}
	c.Printf("Inserting certificate '%s' in crt-list '%s'%s\nSuccess!\n", e.Cert, strings.TrimRight(list, "/"), strings.Repeat(".", n))
	c.Changed().Str("crt_list", list).Str("line", line).Msg("crt-list line added")
	return nil
}

// delCrtList deletes a line of a crt-list, named by its certificate and,
// when several lines name it, ":LINE".
func delCrtList(c *Context, args []string) error {
	list, cert := arg(args, 0), arg(args, 1)
	if list == "" || cert == "" {
		return reply("'del ssl crtlist' expects a filename and a certificate name")
	}
	line := 0
	if name, num, ok := strings.Cut(cert, ":"); ok {
		n, err := strconv.Atoi(num)
		if err != nil || num == "" || num[0] == '+' {
			return reply("Can't delete the entry: wrong line number after colons in '" + cert + "'!")
		}
		cert, line = name, n
	}
	if err := c.Proxy.Certs().DelEntry(list, cert, line); err != nil {
		return reply("Can't delete the entry: " + txnText(err))
	}
	c.Printf("Entry '%s' deleted in crtlist '%s'!\n", cert, strings.TrimRight(list, "/"))
	c.Changed().Str("crt_list", list).Str("certificate", cert).Int("line", line).Msg("crt-list line deleted")
	return nil
}
