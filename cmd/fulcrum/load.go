package main

import (
	"fmt"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// loadConfig loads and validates a configuration file for `run` and
// `check`. Beyond conf's checks, a configuration without any frontend is
// refused: it would start and listen on nothing, which HAProxy refuses too
// ("no listener").
func loadConfig(path string) (*conf.Config, error) {
	cfg, err := conf.Load(path)
	if err != nil {
		return nil, err
	}
	if len(cfg.Frontends) == 0 {
		return nil, fmt.Errorf("%s: no [[frontend]]: nothing would listen", path)
	}
	return cfg, nil
}
