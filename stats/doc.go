// Package stats renders one proxy.Snapshot in HAProxy 2.6's formats: `show
// stat` as CSV (WriteCSV), typed (WriteTyped, WriteDesc) and JSON
// (WriteJSON) with a Filter; `show info` (NewInfo, WriteInfo); the HTML
// stats page with its exports and admin actions (NewPage); and Prometheus
// metrics with the names of HAProxy's built-in exporter (NewCollector,
// NewMetrics).
//
// Every column is declared once, in columns.go, as HAProxy's stat_fields[]:
// name, description, the row kinds it applies to, typed tags, Prometheus
// name and getter. Every output is generated from that table, in HAProxy's
// column order; columns are only ever appended. Renderers read the snapshot
// only: they never lock the proxy, and a snapshot is safe to render from
// several goroutines.
package stats
