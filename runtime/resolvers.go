package runtime

import (
	"fmt"
	"strings"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// Resolvers commands: the name server counters of the [[resolvers]]
// sections (HAProxy's resolvers.c cli_kws), kept by proxy/resolve.
var resolversCommands = []Command{
	{Words: []string{"show", "resolvers"}, Level: LevelUser, Usage: "show resolvers [id]", Help: "dumps counters from all resolvers section and associated name servers", Run: showResolvers},
}

// showResolvers is `show resolvers [<name>]`: per section, each name
// server's counters, in HAProxy 2.6's layout (resolvers.c
// cli_io_handler_dump_resolvers_to_buffer). Words after the name are
// ignored, as HAProxy does.
func showResolvers(c *Context, args []string) error {
	var only *proxy.Resolvers
	if name := arg(args, 0); name != "" {
		if only = c.Proxy.ResolversByName(name); only == nil {
			return reply("Can't find that resolvers section")
		}
	}
	for _, r := range c.Proxy.Resolvers {
		if only != nil && r != only {
			continue
		}
		c.Printf("Resolvers section %s\n", r.Name)
		for _, ns := range r.Nameservers {
			c.Printf(" nameserver %s:\n", ns.Name)
			for _, nc := range ns.Counters.List() {
				c.Printf("  %-12s %d\n", nc.Name+":", nc.V.Load())
			}
		}
	}
	return nil
}

// resolversStatColumns are the columns of `show stat domain resolvers`,
// in HAProxy 2.6's order (resolvers.c resolv_stats): the name server, its
// section, then the counters of `show resolvers` (snd_error is
// send_error there).
var resolversStatColumns = []string{"id", "pid", "sent", "send_error", "valid", "update", "cname", "cname_error",
	"any_err", "nx", "timeout", "refused", "other", "invalid", "too_big", "truncated", "outdated"}

// showStatResolvers is `show stat domain resolvers [typed]`: one CSV row
// per name server, or its typed form (`N.<pos>.<name>:<tags>:<type>:<value>`
// per field), as HAProxy 2.6 prints them.
func showStatResolvers(c *Context, args []string) error {
	typed := false
	for _, a := range args {
		typed = typed || a == "typed"
	}
	if !typed {
		c.Printf("# %s,\n", strings.Join(resolversStatColumns, ","))
	}
	for _, r := range c.Proxy.Resolvers {
		for _, ns := range r.Nameservers {
			counters := ns.Counters.List()
			if !typed {
				c.Printf("%s,%s,", csvField(ns.Name), csvField(r.Name))
				for _, nc := range counters {
					c.Printf("%d,", nc.V.Load())
				}
				c.Printf("\n")
				continue
			}
			c.Printf("N.0.id:CGP:str:%s\n", ns.Name)
			c.Printf("N.1.pid:CGP:str:%s\n", r.Name)
			for i, nc := range counters {
				c.Printf("N.%d.%s:MGP:u64:%d\n", i+2, resolversStatColumns[i+2], nc.V.Load())
			}
		}
	}
	return nil
}

// csvField quotes a CSV value that holds a comma or a quote, as HAProxy's
// stats CSV (csv-quoting.txt).
func csvField(v string) string {
	if !strings.ContainsAny(v, ",\"") {
		return v
	}
	return fmt.Sprintf("\"%s\"", strings.ReplaceAll(v, "\"", "\"\""))
}
