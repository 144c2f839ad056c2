// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * CRC32c (Castagnoli, polynomial 0x82f63b78 reflected) for the packet
 * ICRC, with the usual ~0 init and final xor: a byte-wise table built on
 * first use.  For the userspace builds of the core (unit tests, fuzzers,
 * simulator); the kernel module uses the kernel's library instead
 * (mroce_icrc.c), with the same result (unit test Pkt.Crc32cKnownAnswer).
 */
#include "mroce_core.h"

static u32 mroce_crc32c_tab[256];
static int mroce_crc32c_ready;

static void mroce_crc32c_init(void)
{
	u32 i, k, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78 : c >> 1;
		mroce_crc32c_tab[i] = c;
	}
	__atomic_store_n(&mroce_crc32c_ready, 1, __ATOMIC_RELEASE);
}

u32 mroce_crc32c(u32 crc, const u8 *buf, u32 len)
{
	u32 i;

	/* Racing first callers compute the same table: harmless. */
	if (!__atomic_load_n(&mroce_crc32c_ready, __ATOMIC_ACQUIRE))
		mroce_crc32c_init();
	crc = ~crc;
	for (i = 0; i < len; i++)
		crc = (crc >> 8) ^ mroce_crc32c_tab[(crc ^ buf[i]) & 0xff];
	return ~crc;
}
