// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * CRC32c (Castagnoli, polynomial 0x82f63b78 reflected) for the packet
 * ICRC, with the usual ~0 init and final xor, for the userspace builds of
 * the core (unit tests, fuzzers, simulator); the kernel module uses the
 * kernel's library instead (mroce_icrc.c), with the same result (unit test
 * Pkt.Crc32cKnownAnswer).
 *
 * Eight tables built on first use, eight bytes per step ("slicing by 8"):
 * the byte-wise loop took 63% of the simulator's time.  Table k maps a
 * byte to its CRC contribution k bytes further on, so the CRC of eight
 * bytes is the xor of eight lookups.
 */
#include "mroce_core.h"

static u32 mroce_crc32c_tab[8][256];
static int mroce_crc32c_ready;

static void mroce_crc32c_init(void)
{
	u32 i, k, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78 : c >> 1;
		mroce_crc32c_tab[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		for (k = 1; k < 8; k++) {
			c = mroce_crc32c_tab[k - 1][i];
			mroce_crc32c_tab[k][i] = (c >> 8) ^
						 mroce_crc32c_tab[0][c & 0xff];
		}
	__atomic_store_n(&mroce_crc32c_ready, 1, __ATOMIC_RELEASE);
}

u32 mroce_crc32c(u32 crc, const u8 *buf, u32 len)
{
	const u32 (*t)[256] = mroce_crc32c_tab;
	u32 lo, hi;

	/* Racing first callers compute the same tables: harmless. */
	if (!__atomic_load_n(&mroce_crc32c_ready, __ATOMIC_ACQUIRE))
		mroce_crc32c_init();
	crc = ~crc;
	for (; len >= 8; len -= 8, buf += 8) {
		/* little-endian loads, byte by byte: any alignment, any host */
		lo = crc ^ ((u32)buf[0] | (u32)buf[1] << 8 |
			    (u32)buf[2] << 16 | (u32)buf[3] << 24);
		hi = (u32)buf[4] | (u32)buf[5] << 8 | (u32)buf[6] << 16 |
		     (u32)buf[7] << 24;
		crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^
		      t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
		      t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^
		      t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
	}
	for (; len; len--, buf++)
		crc = (crc >> 8) ^ t[0][(crc ^ *buf) & 0xff];
	return ~crc;
}
