package stats

// The stats page's table of certificates that expire soon: every
// certificate the binds serve whose notAfter is within CertExpiryWarning
// of the snapshot, soonest first, expired ones included. HAProxy's page has
// no such table; its figures are those of `show ssl cert` (notAfter,
// serial), and the same expiry is exported as
// fulcrum_ssl_cert_not_after_seconds.

import (
	"fmt"
	"html/template"
	"slices"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// CertExpiryWarning is how close to its notAfter a certificate appears in
// the stats page's table of expiring certificates: 30 days.
const CertExpiryWarning = 30 * 24 * time.Hour

// expiringCerts returns the certificates of snap expiring within
// CertExpiryWarning of snap.Taken, soonest first (then by name).
func expiringCerts(snap *proxy.Snapshot) []proxy.CertSnapshot {
	var out []proxy.CertSnapshot
	for _, c := range snap.Certs {
		if c.NotAfter.Sub(snap.Taken) <= CertExpiryWarning {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b proxy.CertSnapshot) int {
		if c := a.NotAfter.Compare(b.NotAfter); c != 0 {
			return c
		}
		return compareStrings(a.Name, b.Name)
	})
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// certsHTML renders the table of expiring certificates, "" when there is
// none. Every text is escaped.
func certsHTML(snap *proxy.Snapshot) template.HTML {
	certs := expiringCerts(snap)
	if len(certs) == 0 {
		return ""
	}
	b := []byte(`<div class="scroll" id="certs-expiring"><table>` + "\n" +
		`<caption>Certificates expiring within 30 days</caption>` + "\n" +
		`<tr><th class="name">certificate</th><th>serial</th><th>notAfter</th><th>days left</th></tr>` + "\n")
	for _, c := range certs {
		left := c.NotAfter.Sub(snap.Taken)
		class, days := "going-down", fmt.Sprintf("%d", int(left/(24*time.Hour)))
		if left <= 0 {
			class, days = "down", "expired"
		}
		b = append(b, `<tr class="`...)
		b = append(b, class...)
		b = append(b, `"><td class="name">`...)
		b = appendEscaped(b, c.Name)
		b = append(b, "</td><td>"...)
		b = appendEscaped(b, c.Serial)
		b = append(b, "</td><td>"...)
		b = append(b, c.NotAfter.UTC().Format("Jan _2 15:04:05 2006 GMT")...)
		b = append(b, "</td><td>"...)
		b = append(b, days...)
		b = append(b, "</td></tr>\n"...)
	}
	b = append(b, "</table></div>\n"...)
	return template.HTML(b)
}
