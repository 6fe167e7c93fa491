package conf

// [[peers]]: the members of a cluster that share stick tables over
// HAProxy's peers protocol, as HAProxy's `peers` section. A table joins a
// section with `peers = "NAME"` in its stick_table (or [[table]]); tables
// pair up across members by name.

import "fmt"

// peersSection is one [[peers]].
type peersSection struct {
	// Name of the section, which tables name in their `peers` key.
	// Required, unique.
	Name string `toml:"name"`

	// LocalPeer is this instance's name among the members: the one whose
	// address is where it listens for the others. `fulcrum run
	// --localpeer NAME` overrides it, as HAProxy's -L. When neither is
	// given, the host name is used, as HAProxy does.
	LocalPeer string `toml:"localpeer"`

	// Peer lists every member of the cluster, this instance included, as
	// { name = "NAME", address = "host:port" }: the same list on every
	// member (HAProxy's `peer` lines). An HAProxy 2.6 member lists the
	// fulcrum ones the same way. At least one.
	Peer []*peerEntry `toml:"peer"`
}

// peerEntry is one member of a [[peers]] section.
type peerEntry struct {
	// Name of the member: its own localpeer (or --localpeer, or host
	// name). Required, unique in the section.
	Name string `toml:"name"`

	// Address is host:port where the member listens for the others: the
	// local member's is where this instance listens. Required.
	Address string `toml:"address"`
}

// validate checks a [[peers]].
func (ps *peersSection) validate(s scope) {
	checkName(s.at("name"), ps.Name)
	if len(ps.Peer) == 0 {
		s.at("peer").errorf("required: list every member, this one included")
	}
	seen := map[string]int{}
	for i, p := range ps.Peer {
		item := s.at("peer").item(i)
		checkName(item.at("name"), p.Name)
		if required(item.at("address"), p.Address) {
			checkHostPort(item.at("address"), p.Address, false)
		}
		if first, dup := seen[p.Name]; dup && p.Name != "" {
			item.at("name").errorf("duplicate peer name, first defined at line %d", first)
		} else {
			seen[p.Name] = item.at("name").line()
		}
	}
	if ps.LocalPeer != "" {
		if _, ok := seen[ps.LocalPeer]; !ok {
			s.at("localpeer").errorf("no peer named %q in this section", ps.LocalPeer)
		}
	}
}

// model returns the section as the proxy runs it.
func (ps *peersSection) model(c *checker, i int) *Peers {
	at := path{"peers"}.index(i)
	out := &Peers{Name: ps.Name, Line: c.pos.line(at), LocalPeer: ps.LocalPeer}
	for j, p := range ps.Peer {
		out.Peers = append(out.Peers, Peer{Name: p.Name, Address: p.Address, Line: c.pos.line(at.child("peer").index(j))})
	}
	return out
}

// checkPeers checks that section names are unique and that every table's
// peers names a section.
func (f *fileSection) checkPeers(s scope) {
	sections := map[string]int{}
	for i, ps := range f.Peers {
		item := s.at("peers").item(i)
		if first, dup := sections[ps.Name]; dup && ps.Name != "" {
			item.at("name").errorf("duplicate peers section name, first defined at line %d", first)
		} else {
			sections[ps.Name] = item.at("name").line()
		}
	}
	check := func(at scope, st *stickTableSection) {
		if st == nil {
			return
		}
		if st.Peers != "" {
			if _, ok := sections[st.Peers]; !ok {
				at.at("peers").errorf("unknown peers section %q", st.Peers)
			}
		}
	}
	for i, fe := range f.Frontends {
		check(s.at("frontend").item(i).at("stick_table"), fe.StickTable)
	}
	for i, be := range f.Backends {
		check(s.at("backend").item(i).at("stick_table"), be.StickTable)
	}
	for i, t := range f.Tables {
		check(s.at("table").item(i), t.stick())
	}
}

// Peers is a [[peers]] section.
type Peers struct {
	Name      string
	Line      int    // line of the [[peers]] header
	LocalPeer string // "" = --localpeer or the host name
	Peers     []Peer // every member, in file order
}

// Peer is a member of a peers section.
type Peer struct {
	Name    string
	Address string
	Line    int
}

// Local returns the member named name, or an error naming the section
// when there is none.
func (p *Peers) Local(name string) (Peer, error) {
	for _, m := range p.Peers {
		if m.Name == name {
			return m, nil
		}
	}
	return Peer{}, fmt.Errorf("peers %q: no peer named %q, the local peer's name (localpeer, --localpeer or the host name)", p.Name, name)
}
