package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/fulcrum-proxy/fulcrum/proxy/peers"
	"github.com/rs/zerolog"
)

// peersRunner runs the [[peers]] sections of the configuration serving,
// one peers.Mesh each, and keeps them across reloads: a reload that keeps
// a section's local peer reconfigures its mesh in place (sessions and
// tables stay, no resync), one that changes it restarts the mesh, and
// sections that come or go start or stop.
type peersRunner struct {
	local string // --localpeer; "" = each section's localpeer, else the host name
	log   zerolog.Logger

	mu     sync.Mutex
	meshes []*peers.Mesh // in configuration order
}

// localPeerName returns the local peer's name in section ps: --localpeer,
// else the section's localpeer, else the host name (HAProxy's -L, then
// localpeer, then gethostname).
func localPeerName(ps *conf.Peers, flag string) string {
	switch {
	case flag != "":
		return flag
	case ps.LocalPeer != "":
		return ps.LocalPeer
	}
	return peers.LocalPeer()
}

// checkLocalPeers checks that every [[peers]] of cfg has a member named as
// the local peer, reporting each one that has not as FILE:LINE: message.
func checkLocalPeers(cfg *conf.Config, flag string) error {
	errs := &conf.Errors{}
	for _, ps := range cfg.Peers {
		if _, err := ps.Local(localPeerName(ps, flag)); err != nil {
			errs.List = append(errs.List, conf.Error{File: cfg.File, Line: ps.Line, Msg: err.Error()})
		}
	}
	if len(errs.List) > 0 {
		return errs
	}
	return nil
}

// meshConfig returns section ps of cfg as its mesh runs it on p's tables.
func meshConfig(cfg *conf.Config, p *proxy.Proxy, ps *conf.Peers, flag string) peers.Config {
	mc := peers.Config{Name: ps.Name, Local: localPeerName(ps, flag)}
	for _, m := range ps.Peers {
		mc.Peers = append(mc.Peers, peers.PeerConfig{Name: m.Name, Addr: m.Address})
	}
	for _, st := range cfg.AllTables() {
		if st.Peers != ps.Name {
			continue
		}
		if t := p.Table(st.Name); t != nil {
			tc := peers.TableConfig{Table: t, KeyLen: st.Len, Aggregate: st.PeersAggregate}
			if strings.HasPrefix(st.Name, ps.Name+"/") {
				// A table declared in an HAProxy peers section: named
				// "<peers>/<table>", known to the peers as "/<table>"
				// (HAProxy 2.6's nid: the name past the section's).
				tc.Name = st.Name[len(ps.Name):]
			}
			mc.Tables = append(mc.Tables, tc)
		}
	}
	return mc
}

// start starts a mesh for every section of cfg on p's tables. On error
// the meshes started are stopped.
func (r *peersRunner) start(cfg *conf.Config, p *proxy.Proxy) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ps := range cfg.Peers {
		m, err := r.newMesh(cfg, p, ps)
		if err == nil {
			err = m.Start()
		}
		if err != nil {
			for _, m := range r.meshes {
				m.Stop()
			}
			r.meshes = nil
			return err
		}
		r.meshes = append(r.meshes, m)
		r.log.Info().Str("peers", ps.Name).Str("localpeer", localPeerName(ps, r.local)).Str("addr", m.Addr()).Msg("peers: listening")
	}
	return nil
}

// newMesh returns the mesh of section ps, not started.
func (r *peersRunner) newMesh(cfg *conf.Config, p *proxy.Proxy, ps *conf.Peers) (*peers.Mesh, error) {
	m, err := peers.New(meshConfig(cfg, p, ps, r.local), r.log)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %w", cfg.File, ps.Line, err)
	}
	return m, nil
}

// reload makes the meshes follow cfg, served by p (the new proxy). A mesh
// that must restart starts its successor first: if the new address cannot
// be opened, the error is logged and the old mesh goes on.
func (r *peersRunner) reload(cfg *conf.Config, p *proxy.Proxy) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var next []*peers.Mesh
	for _, ps := range cfg.Peers {
		i := slices.IndexFunc(r.meshes, func(m *peers.Mesh) bool { return m.Name() == ps.Name })
		var old *peers.Mesh
		if i >= 0 {
			old = r.meshes[i]
			r.meshes = slices.Delete(r.meshes, i, i+1)
			err := old.Reconfigure(meshConfig(cfg, p, ps, r.local))
			if err == nil {
				next = append(next, old)
				continue
			}
			if !errors.Is(err, peers.ErrRestart) {
				r.log.Error().Err(err).Str("peers", ps.Name).Msg("peers: reload failed, the section goes on as it was")
				next = append(next, old)
				continue
			}
		}
		m, err := r.newMesh(cfg, p, ps)
		if err == nil {
			err = m.Start()
		}
		if err != nil {
			r.log.Error().Err(err).Str("peers", ps.Name).Msg("peers: the section could not start")
			if old != nil {
				next = append(next, old)
			}
			continue
		}
		if old != nil {
			old.Stop()
		}
		r.log.Info().Str("peers", ps.Name).Str("addr", m.Addr()).Msg("peers: listening")
		next = append(next, m)
	}
	for _, m := range r.meshes { // sections the reload removed
		m.Stop()
		r.log.Info().Str("peers", m.Name()).Msg("peers: section removed")
	}
	r.meshes = next
}

// stop stops every mesh.
func (r *peersRunner) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.meshes {
		m.Stop()
	}
	r.meshes = nil
}

// status returns the state of every mesh, in configuration order.
func (r *peersRunner) status() []peers.Status {
	r.mu.Lock()
	meshes := slices.Clone(r.meshes)
	r.mu.Unlock()
	out := make([]peers.Status, len(meshes))
	for i, m := range meshes {
		out[i] = m.Status()
	}
	return out
}
