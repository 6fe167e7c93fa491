package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/fulcrum-proxy/fulcrum/conf/haproxycfg"
	"github.com/urfave/cli/v2"
)

// importCommand is `fulcrum import haproxy.cfg [-o fulcrum.toml]`.
func importCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "convert an HAProxy configuration (haproxy.cfg) into fulcrum's TOML",
		ArgsUsage: "HAPROXY_CFG",
		Description: "Writes the TOML to -o FILE (or stdout) and lists on stderr, as FILE:LINE: keyword:\n" +
			"kind: why, every line not converted as written: not supported yet, not supported,\n" +
			"built in (fulcrum does it without a setting), ignored, or converted with a\n" +
			"difference. Those lines are kept in the output as comments. The output passes\n" +
			"`fulcrum check`, but for one check that depends on the host: a peers section must\n" +
			"name the instance that runs it (--localpeer, localpeer or the host name). Exit 0\n" +
			"once written (1 with --strict when a line is not supported), 2 on a usage error.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the TOML to `FILE` instead of stdout"},
			&cli.BoolFlag{Name: "strict", Usage: "exit 1 when a line is not supported (yet)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return cli.Exit("fulcrum import: give one HAProxy configuration file (fulcrum import haproxy.cfg -o fulcrum.toml)", 2)
			}
			in := c.Args().First()
			data, err := os.ReadFile(in)
			if err != nil {
				return cli.Exit("fulcrum import: "+err.Error(), 1)
			}
			out := c.String("output")
			dir := "."
			if out != "" {
				dir = filepath.Dir(out)
			}
			r, err := haproxycfg.Import(data, haproxycfg.Options{Name: filepath.Base(in), Dir: dir, Env: os.LookupEnv})
			if err != nil {
				return cli.Exit("fulcrum import: "+err.Error(), 1)
			}
			if out == "" {
				stdout.Write(r.TOML)
			} else if err := os.WriteFile(out, r.TOML, 0o644); err != nil {
				return cli.Exit("fulcrum import: "+err.Error(), 1)
			}
			for _, n := range r.Notes {
				fmt.Fprintf(stderr, "%s:%s\n", in, n)
			}
			blocking := len(r.Blocking())
			noted, refused := noteLines(r.Notes)
			if r.NoFrontend {
				fmt.Fprintf(stderr, "%s: no frontend or listen section fulcrum can run: nothing would listen (fulcrum check refuses it)\n", in)
			}
			switch {
			case len(r.Notes) == 0 && out != "":
				fmt.Fprintf(stderr, "%s: every line converted into %s\n", in, out)
			case len(r.Notes) == 0:
				fmt.Fprintf(stderr, "%s: every line converted\n", in)
			default:
				lines := "lines"
				if noted == 1 {
					lines = "line"
				}
				fmt.Fprintf(stderr, "%s: %d %s noted, %d of them not supported (yet)", in, noted, lines, refused)
				if out != "" {
					fmt.Fprintf(stderr, "; each is explained in a comment in %s", out)
				}
				fmt.Fprintln(stderr)
			}
			if c.Bool("strict") && (blocking > 0 || r.NoFrontend) {
				return cli.Exit("", 1)
			}
			return nil
		},
	}
}

// noteLines returns how many lines of the file have notes, and how many
// of those have a note fulcrum would not run (a line may have several).
func noteLines(notes []haproxycfg.Note) (noted, refused int) {
	kinds := map[int]bool{} // line -> has a blocking note
	for _, n := range notes {
		kinds[n.Line] = kinds[n.Line] || n.Kind.Blocking()
	}
	for _, b := range kinds {
		noted++
		if b {
			refused++
		}
	}
	return noted, refused
}

// hoistImportFlags moves the flags of `import` before its file, so that
// `fulcrum import haproxy.cfg -o fulcrum.toml` works as its usage shows
// (urfave/cli stops reading flags at the first argument).
func hoistImportFlags(args []string) []string {
	if len(args) < 3 || args[1] != "import" {
		return args
	}
	var flags, rest []string
	for i := 2; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			rest = append(rest, args[i:]...)
			i = len(args)
		case a == "-o" || a == "--output" || a == "-output":
			flags = append(flags, a)
			if i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
		case len(a) > 1 && a[0] == '-':
			flags = append(flags, a)
		default:
			rest = append(rest, a)
		}
	}
	return append(append(append([]string{}, args[:2]...), flags...), rest...)
}
