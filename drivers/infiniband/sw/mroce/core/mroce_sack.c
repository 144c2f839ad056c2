// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * the per-path SACK scoreboard (mroce_sack.h): the receiver's window of
 * arrived PSNs and the sender's reading of an ACK's bitmap.
 */
#include "mroce_internal.h"

/* Shift the map towards higher indexes by k (< MROCE_SACK_BITS) bits. */
static void mroce_sack_shift(u64 *m, u32 k)
{
	u32 ws = k / 64, bs = k % 64;
	int i;

	for (i = MROCE_SACK_WORDS - 1; i >= 0; i--) {
		u64 v = 0;

		if (i >= (int)ws) {
			v = m[i - ws] << bs;
			if (bs && i - (int)ws - 1 >= 0)
				v |= m[i - ws - 1] >> (64 - bs);
		}
		m[i] = v;
	}
}

void mroce_sack_rx_init(struct mroce_sack_rx *s, u32 psn)
{
	s->high = psn;
	memset(s->map, 0xff, sizeof(s->map));
}

bool mroce_sack_rx_mark(struct mroce_sack_rx *s, u32 psn)
{
	u32 d;

	if (mroce_seq_le(s->high, psn)) {
		d = psn - s->high + 1;
		if (d >= MROCE_SACK_BITS)
			memset(s->map, 0, sizeof(s->map));
		else
			mroce_sack_shift(s->map, d);
		mroce_bit_set(s->map, 0);
		s->high = psn + 1;
		return false;
	}
	d = s->high - 1 - psn;
	if (d >= MROCE_SACK_BITS)
		return true;	/* left the window: cannot tell, assume seen */
	if (mroce_bit_test(s->map, d))
		return true;
	mroce_bit_set(s->map, d);
	return false;
}

u32 mroce_sack_rx_cum(const struct mroce_sack_rx *s)
{
	int w, b;

	for (w = MROCE_SACK_WORDS - 1; w >= 0; w--) {
		u64 miss = ~s->map[w];

		if (!miss)
			continue;
		for (b = 63; b >= 0; b--)
			if (miss >> b & 1)
				return s->high - 1 - (u32)(w * 64 + b);
	}
	return s->high;
}

void mroce_sack_rx_fill(const struct mroce_sack_rx *s, struct mroce_ack *a)
{
	a->high_psn = s->high;
	a->cum_psn = mroce_sack_rx_cum(s);
	memcpy(a->sack, s->map, sizeof(a->sack));
}

bool mroce_sack_has(const struct mroce_ack *a, u32 psn)
{
	u32 dist;

	if (!mroce_seq_lt(psn, a->high_psn))
		return false;
	if (mroce_seq_lt(psn, a->cum_psn))
		return true;
	dist = a->high_psn - 1 - psn;
	return dist < MROCE_SACK_BITS && mroce_bit_test(a->sack, dist);
}
