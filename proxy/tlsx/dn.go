package tlsx

// Distinguished names as HAProxy prints them: `show ssl cert`'s Subject
// and Issuer and the ssl_c_s_dn / ssl_c_i_dn fetches use OpenSSL's one-line
// form, "/C=FR/O=Example/CN=www.example.com", in the certificate's order;
// the fetches' "rfc2253" format is "CN=www.example.com,O=Example,C=FR".

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"fmt"
	"strings"
)

var oidCommonName = asn1.ObjectIdentifier{2, 5, 4, 3}

// shortNames are OpenSSL's short names of the attribute types (OBJ_nid2sn).
var shortNames = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.4":                    "SN",
	"2.5.4.5":                    "serialNumber",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.9":                    "street",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.12":                   "title",
	"2.5.4.17":                   "postalCode",
	"2.5.4.42":                   "GN",
	"2.5.4.43":                   "initials",
	"2.5.4.46":                   "dnQualifier",
	"2.5.4.65":                   "pseudonym",
	"0.9.2342.19200300.100.1.1":  "UID",
	"0.9.2342.19200300.100.1.25": "DC",
	"1.2.840.113549.1.9.1":       "emailAddress",
}

// DNEntry is one attribute of a distinguished name.
type DNEntry struct {
	Type  string // OpenSSL's short name ("CN"), or the dotted OID
	Value string
}

// DN is a distinguished name in the certificate's order.
type DN []DNEntry

// ParseDN decodes raw, a DER-encoded Name (x509.Certificate.RawSubject or
// RawIssuer). An undecodable name gives an empty DN.
func ParseDN(raw []byte) DN {
	var seq pkix.RDNSequence
	if rest, err := asn1.Unmarshal(raw, &seq); err != nil || len(rest) > 0 {
		return nil
	}
	var dn DN
	for _, rdn := range seq {
		for _, atv := range rdn {
			t := atv.Type.String()
			if sn, ok := shortNames[t]; ok {
				t = sn
			}
			dn = append(dn, DNEntry{Type: t, Value: fmt.Sprint(atv.Value)})
		}
	}
	return dn
}

// OneLine returns dn as OpenSSL's one-line form: "/CN=a/O=b".
func (dn DN) OneLine() string {
	var b strings.Builder
	for _, e := range dn {
		b.WriteByte('/')
		b.WriteString(e.Type)
		b.WriteByte('=')
		b.WriteString(e.Value)
	}
	return b.String()
}

// RFC2253 returns dn as RFC 2253 writes it: last attribute first, comma
// separated, with ",+\"\\<>;" escaped and leading "#" or space and a
// trailing space escaped.
func (dn DN) RFC2253() string {
	var b strings.Builder
	for i := len(dn) - 1; i >= 0; i-- {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(dn[i].Type)
		b.WriteByte('=')
		v := dn[i].Value
		for j, r := range v {
			if strings.ContainsRune(",+\"\\<>;", r) || (j == 0 && (r == '#' || r == ' ')) || (j == len(v)-1 && r == ' ') {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Entry returns the value of the occ-th attribute of type typ (OpenSSL's
// short name or a dotted OID): counted from the start for occ > 0, from
// the end for occ < 0; occ 0 is the first (ssl_c_s_dn(CN,2)).
func (dn DN) Entry(typ string, occ int) (string, bool) {
	if occ == 0 {
		occ = 1
	}
	n := 0
	if occ > 0 {
		for _, e := range dn {
			if e.Type == typ {
				if n++; n == occ {
					return e.Value, true
				}
			}
		}
		return "", false
	}
	for i := len(dn) - 1; i >= 0; i-- {
		if dn[i].Type == typ {
			if n--; n == occ {
				return dn[i].Value, true
			}
		}
	}
	return "", false
}
