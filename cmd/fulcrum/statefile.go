package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/fulcrum-proxy/fulcrum/proxy/check"
	"github.com/fulcrum-proxy/fulcrum/runtime"
	"github.com/rs/zerolog"
)

// loadState restores the server state saved in cfg's state_file, if any,
// into p before it starts: admin state, weight, operational state and the
// check counters (proxy.LoadServerState, check.RestoreState). A missing
// file is normal (first start); a file that cannot be read or parsed is
// logged and ignored: the configuration alone applies, as HAProxy does.
// It returns the saved addresses of DNS-resolved servers, for their
// init_addr "last" (startResolvers).
func loadState(cfg *conf.Config, p *proxy.Proxy, log zerolog.Logger) []proxy.SavedDNS {
	path := cfg.Global.StateFile
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		log.Warn().Err(err).Str("state_file", path).Msg("server state not restored")
		return nil
	}
	defer f.Close()
	res, err := p.LoadServerState(f)
	if err != nil {
		log.Warn().Err(err).Str("state_file", path).Msg("server state not restored")
		return nil
	}
	check.RestoreState(res.Checks)
	log.Info().Str("state_file", path).Int("servers", res.Applied).Int("unknown", res.Skipped).
		Int("added_servers", res.Added).Int("added_servers_not_restored", res.NotAdded).Msg("server state restored")
	return res.DNS
}

// saveState writes p's server state to cfg's state_file, if any, at stop,
// with the servers added at runtime (runtime.WriteStateFile): to a
// temporary file in the same directory, then renamed over the old one, so
// that a crash mid-write leaves the previous state.
func saveState(cfg *conf.Config, p *proxy.Proxy, started time.Time, log zerolog.Logger) {
	path := cfg.Global.StateFile
	if path == "" {
		return
	}
	err := func() error {
		f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
		if err != nil {
			return err
		}
		defer os.Remove(f.Name()) // no-op after the rename
		if err := runtime.WriteStateFile(f, p, started); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		return os.Rename(f.Name(), path)
	}()
	if err != nil {
		log.Error().Err(err).Str("state_file", path).Msg("server state not saved")
		return
	}
	log.Info().Str("state_file", path).Msg("server state saved")
}
