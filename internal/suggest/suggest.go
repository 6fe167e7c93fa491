// Package suggest finds what an operator probably meant by a word that
// names nothing ("did you mean ...?"): a configuration key, a balance
// algorithm, a backend.
package suggest

import "slices"

// Nearest returns the candidate closest to word, or "" when none is close
// enough to be what was meant: the edit distance (with transpositions, so
// "wieght" is one edit from "weight") must be at most a third of word's
// length, and at least 1. Ties go to the first candidate in sorted order.
func Nearest(word string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range slices.Sorted(slices.Values(candidates)) {
		if c == word {
			return c
		}
		d := editDistance(word, c)
		if d <= max(1, len([]rune(word))/3) && (bestD < 0 || d < bestD) {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of two adjacent
// characters each cost 1.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// Three rows of the dynamic programming table: i-2, i-1 and i.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
