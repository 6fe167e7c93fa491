// Package stats renders one proxy.Snapshot into HAProxy's `show stat`
// formats (CSV, typed, JSON), the HTML stats page and Prometheus metrics.
// Every column is declared once in a table, as HAProxy's stat_cols_px[].
//
// The renderers arrive with the stats capability; today the package holds
// only this description.
package stats
