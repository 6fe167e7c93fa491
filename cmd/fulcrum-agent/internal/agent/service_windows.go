//go:build windows

package agent

import (
	"github.com/shirou/gopsutil/v4/winservices"
	"golang.org/x/sys/windows/svc"
)

// serviceHandle keeps the service opened once; gopsutil's Service has no
// Close, so opening it on every sample would leak a handle each time.
type serviceHandle struct{ s *winservices.Service }

// running reports whether the service called name is in the Running state.
func (h *serviceHandle) running(name string) (bool, error) {
	if h.s == nil {
		s, err := winservices.NewService(name)
		if err != nil {
			return false, err
		}
		h.s = s
	}
	st, err := h.s.QueryStatus()
	if err != nil {
		h.s = nil // reopen next time: the service may have been re-created
		return false, err
	}
	return st.State == svc.Running, nil
}
