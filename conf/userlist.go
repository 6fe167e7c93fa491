package conf

// [[userlist]]: users and groups that http_auth(NAME) and
// http_auth_group(NAME) check a request's Basic credentials against, as
// HAProxy's `userlist` section (configuration.txt section 3.4). The usual
// pair of rules:
//
//	acl = { admins = "http_auth_group(L1) G1" }
//	http_request = ["auth realm Admin unless admins"]

import "github.com/fulcrum-proxy/fulcrum/proxy/acl"

// userlistSection is one [[userlist]].
type userlistSection struct {
	// Name of the list, as the fetches name it. Required, unique.
	Name string `toml:"name"`

	// Group declares the list's groups, as HAProxy's `group NAME [users
	// U1,U2]`: { name = "G1", users = ["tiger", "scott"] }. A user's own
	// groups must be declared here too.
	Group []*userlistGroup `toml:"group"`

	// User lists the users, as HAProxy's `user NAME password HASH |
	// insecure-password PASS [groups G1,G2]`: { name = "tiger", password
	// = "$6$...", groups = ["G1"] }. password is a crypt(3) hash ($6$
	// SHA-512 from `mkpasswd -m sha-512`, $5$, $1$, or bcrypt $2y$);
	// insecure_password is the password itself. Exactly one of the two.
	User []*userlistUser `toml:"user"`
}

// userlistGroup is one group of a [[userlist]].
type userlistGroup struct {
	// Name of the group. Required, unique in the list.
	Name string `toml:"name"`
	// Users are members of the group; each must be a user of the list.
	Users []string `toml:"users"`
}

// userlistUser is one user of a [[userlist]].
type userlistUser struct {
	// Name of the user, as sent in the Basic credentials. Required,
	// unique in the list.
	Name string `toml:"name"`
	// Password is a crypt(3) hash of the password.
	Password string `toml:"password"`
	// InsecurePassword is the password in clear.
	InsecurePassword string `toml:"insecure_password"`
	// Groups the user is in; each must be a group of the list.
	Groups []string `toml:"groups"`
}

// compileUserlists checks every [[userlist]] and builds the lists the
// fetches read, by name.
func (f *fileSection) compileUserlists(s scope) map[string]*acl.Userlist {
	lists := map[string]*acl.Userlist{}
	lines := map[string]int{}
	for i, us := range f.Userlist {
		item := s.at("userlist").item(i)
		checkName(item.at("name"), us.Name)
		if first, dup := lines[us.Name]; dup && us.Name != "" {
			item.at("name").errorf("duplicate userlist name, first defined at line %d", first)
			continue
		}
		lines[us.Name] = item.at("name").line()
		ul := acl.NewUserlist(us.Name)
		groups := map[string]int{}
		for j, g := range us.Group {
			at := item.at("group").item(j)
			if !required(at.at("name"), g.Name) {
				continue
			}
			if first, dup := groups[g.Name]; dup {
				at.at("name").errorf("duplicate group name, first defined at line %d", first)
				continue
			}
			groups[g.Name] = at.at("name").line()
		}
		named := map[string]bool{} // users written, valid or not
		for j, u := range us.User {
			at := item.at("user").item(j)
			if !required(at.at("name"), u.Name) {
				continue
			}
			named[u.Name] = true
			pass, hashed := u.Password, true
			switch {
			case u.Password != "" && u.InsecurePassword != "":
				at.errorf("password and insecure_password: set one")
				continue
			case u.Password == "" && u.InsecurePassword == "":
				at.errorf("needs password (a crypt(3) hash) or insecure_password")
				continue
			case u.InsecurePassword != "":
				pass, hashed = u.InsecurePassword, false
			}
			if err := ul.AddUser(u.Name, pass, hashed); err != nil {
				key := "password"
				if !hashed {
					key = "name"
				}
				at.at(key).errorf("%v", err)
				continue
			}
			for k, g := range u.Groups {
				if _, ok := groups[g]; !ok {
					at.at("groups").item(k).errorf("no such group %q in userlist %q", g, us.Name)
					continue
				}
				ul.AddToGroup(u.Name, g)
			}
		}
		for j, g := range us.Group {
			at := item.at("group").item(j)
			for k, name := range g.Users {
				if err := ul.AddToGroup(name, g.Name); err != nil && !named[name] {
					at.at("users").item(k).errorf("%v in userlist %q", err, us.Name)
				}
			}
		}
		lists[us.Name] = ul
	}
	return lists
}
