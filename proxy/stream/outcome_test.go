package stream

import "testing"

// Every outcome has a row: a name, two flag characters, and no status on
// a relayed one.
func TestOutcomesComplete(t *testing.T) {
	seen := map[string]bool{}
	for o := range numOutcomes {
		r := o.Row()
		if r.Name == "" || len(r.Flags) != 2 {
			t.Errorf("outcome %d: incomplete row %+v", o, r)
		}
		if seen[r.Name] {
			t.Errorf("outcome %d: name %q used twice", o, r.Name)
		}
		seen[r.Name] = true
		if r.Relayed && r.Status != 0 {
			t.Errorf("%s: relayed with a status of its own", r.Name)
		}
		if r.Observe != 0 && r.Status != r.Observe {
			t.Errorf("%s: observes %d but answers %d", r.Name, r.Observe, r.Status)
		}
	}
}
