/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The per-path SACK scoreboard (Documentation/mroce-protocol.rst, "ACK
 * and SACK"): the receiver records which PSNs of a path arrived in a
 * 256-bit window below the highest one, and reports it in every ACK; the
 * sender reads an ACK to learn which of its PSNs the receiver holds.
 *
 * Pure functions over the caller's memory; the caller serialises calls on
 * one scoreboard (the connection's lock).
 */
#ifndef MROCE_SACK_H
#define MROCE_SACK_H

#include "mroce_compat.h"
#include <mroce/mroce_wire.h>	/* MROCE_SACK_BITS, MROCE_SACK_WORDS */

#ifdef __cplusplus
extern "C" {
#endif

struct mroce_ack;

/* Receiver side: one per path. */
struct mroce_sack_rx {
	u32 high;			/* highest PSN received + 1 */
	u64 map[MROCE_SACK_WORDS];	/* bit i: PSN high - 1 - i arrived */
};

/* Expect psn next; nothing before it is missing. */
void mroce_sack_rx_init(struct mroce_sack_rx *s, u32 psn);
/*
 * Record the arrival of psn.  Returns true if it had arrived before, or
 * is too old to tell (more than MROCE_SACK_BITS below high): a duplicate.
 */
bool mroce_sack_rx_mark(struct mroce_sack_rx *s, u32 psn);
/* Oldest PSN missing from the window, or high when none is. */
u32 mroce_sack_rx_cum(const struct mroce_sack_rx *s);
/* Fill an ACK's high_psn, cum_psn and SACK bitmap from the scoreboard. */
void mroce_sack_rx_fill(const struct mroce_sack_rx *s, struct mroce_ack *a);

/*
 * Sender side: true if ACK a reports psn received, cumulatively or in its
 * bitmap.  A PSN at or above a->high_psn is not reported.
 */
bool mroce_sack_has(const struct mroce_ack *a, u32 psn);

/* One bit of a bitmap of u64 words (also the receiver's DSN map). */
static inline bool mroce_bit_test(const u64 *m, u32 i)
{
	return m[i / 64] >> (i % 64) & 1;
}

static inline void mroce_bit_set(u64 *m, u32 i)
{
	m[i / 64] |= 1ULL << (i % 64);
}

static inline void mroce_bit_clear(u64 *m, u32 i)
{
	m[i / 64] &= ~(1ULL << (i % 64));
}

#ifdef __cplusplus
}
#endif

#endif /* MROCE_SACK_H */
