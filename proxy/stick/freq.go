package stick

// Freq counters, HAProxy's freq_ctr_period (src/freq_ctr.c): the events of
// the current period and of the previous one, and when the current began.
// Three data words: curr_tick (ms), curr, prev. Callers hold the entry's
// lock.

// freqUpdate adds inc to the counter at w for period ms at now (ms).
func freqUpdate(w []uint64, period, now int64, inc uint64) {
	tick := int64(w[0])
	if now-tick >= period {
		// Rotate: the current period becomes the previous one; more than one
		// period missed means both are empty and a new period starts now.
		w[2], w[1] = w[1], 0
		tick += period
		if now-tick >= period {
			w[2] = 0
			tick = now
		}
		w[0] = uint64(tick)
	}
	w[1] = uint64(uint32(w[1] + inc))
}

// freqRead returns the counter's rate over period ms at now, as HAProxy
// 2.6's freq_ctr_total then read_freq_ctr_period: (curr*period +
// prev*remain) / period, remain being what is left of the current period.
func freqRead(w []uint64, period, now int64) uint64 {
	return freqEvents(w, period, now) / uint64(period)
}

// freqEvents is freqRead before the division by the period, so that the
// rates of an aggregate table's instances add up before one division.
func freqEvents(w []uint64, period, now int64) uint64 {
	tick, curr, past := int64(w[0]), w[1], w[2]
	remain := tick + period - now
	if remain < 0 {
		remain += period
		if remain < 0 {
			return 0
		}
		past, curr = curr, 0
	}
	if remain > period {
		remain = period // a clock gone backwards
	}
	return curr*uint64(period) + past*uint64(remain)
}

// freqSet sets the counter to v in a period starting now, as `set table`.
func freqSet(w []uint64, now int64, v uint64) {
	w[0], w[1], w[2] = uint64(now), uint64(uint32(v)), 0
}
