// Package stick is fulcrum's stick tables: entries keyed by a sample (a
// client address, a cookie, a header...) that remember a server and count
// what a client does, as HAProxy's stick-table.
//
// The main types:
//
//   - DataType is one stored field (server_id, conn_cur,
//     http_req_rate(10s)...). Every field is a row of one table, dataTypes,
//     of name, kind and whether it takes a period (HAProxy's
//     stktable_data_types[]): parsing `store`, `show table`, filters, `set
//     table` and the sc_* fetches all read it.
//   - Table holds the entries of one stick-table: its key type, size,
//     expire and stored fields. It is split into shards by key hash, each
//     with its own lock, map and list of entries in expiry order, so that
//     lookups from many cores do not contend and expiry pops only what has
//     expired.
//   - Entry is one key's record. Its data words are guarded by the entry's
//     own lock; its place in the shard (map, list, expiry, reference count)
//     by the shard's.
//
// Invariants:
//
//   - Every entry of a table expires `expire` after its last touch (a
//     lookup, a creation, a release): since expire is the same for all, a
//     shard's list ordered by last touch is also ordered by expiry, and
//     Expire pops from its head, at O(expired).
//   - An entry with a reference (a session tracking it, a request pinned
//     through it) is never removed: not by expiry, purge nor clear. Expiry
//     skips it; its release re-arms its expiry.
//   - A table never holds more than Size entries. A new key in a full table
//     purges the oldest unreferenced entries, Size/256+1 at a time; when
//     none can be purged the key gets no entry (NoEntry counts it) and the
//     request goes on without one.
//   - Rates are HAProxy's freq counters over a period P: the count of the
//     current period plus the previous one's weighted by what is left of
//     the current (read_freq_ctr_period), to the same integer arithmetic.
package stick
