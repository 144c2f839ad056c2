// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * CRC32c (Castagnoli, polynomial 0x82f63b78 reflected)
 * for the packet ICRC.  Bitwise nibble-table implementation: small, no
 * init-time table generation, fast enough for the core's unit tests and
 * the simulator.  The kernel embedder may verify with crc32c() instead;
 * the result is identical.
 */
#include "mroce_core.h"

static const u32 mroce_crc32c_nib[16] = {
	0x00000000, 0x105ec76f, 0x20bd8ede, 0x30e349b1,
	0x417b1dbc, 0x5125dad3, 0x61c69362, 0x7198540d,
	0x82f63b78, 0x92a8fc17, 0xa24bb5a6, 0xb21572c9,
	0xc38d26c4, 0xd3d3e1ab, 0xe330a81a, 0xf36e6f75,
};

u32 mroce_crc32c(u32 crc, const u8 *buf, u32 len)
{
	u32 i;

	crc = ~crc;
	for (i = 0; i < len; i++) {
		crc ^= buf[i];
		crc = (crc >> 4) ^ mroce_crc32c_nib[crc & 15];
		crc = (crc >> 4) ^ mroce_crc32c_nib[crc & 15];
	}
	return ~crc;
}
