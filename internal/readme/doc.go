// Package readme holds the test that runs the examples of README.md, so
// that the README cannot drift from what the binaries do (issue 23).
//
// A fenced block takes part when its info string says so:
//
//   - ```toml {file=NAME} writes the block to NAME in the test's directory,
//     for the blocks after it;
//   - ```sh {run} runs the block as one bash script (set -e), which must
//     exit 0;
//   - ```text {run} (any language) is a transcript: each "$ COMMAND" line
//     runs with bash, and the lines up to the next "$ " are its expected
//     output (stdout and stderr).
//
// The blocks run in order, in one temporary directory, with bin/fulcrum and
// bin/fulcrumctl built from this tree first on the PATH, and `fulcrum demo`
// running there (socket ./fulcrum.sock). The README's fixed addresses
// become the demo's free ports, on 127.0.0.1 only: 127.0.0.1:8080 (the
// demo's frontend), 127.0.0.1:8404 (its stats page), and the socket
// /run/fulcrum/admin.sock is the demo's. In expected output, durations
// ("0s", "3.97ms") match any duration.
package readme
