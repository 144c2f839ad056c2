// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The core's CRC32c (mroce_core.h: mroce_crc32c()) in the kernel: the
 * library's crc32c(), which uses the SSE4.2 crc32 instruction where the CPU
 * has it (Kconfig selects LIBCRC32C).  The ICRC covers every byte of every
 * packet, on both ends.  Userspace builds of the core (tests, fuzzers,
 * simulator) link core/mroce_crc32c.c instead.  Both give the same
 * result: the known answer of unit test Pkt.Crc32cKnownAnswer, and the
 * attack suite's qp-flood group, whose UD datagrams are built by the
 * userspace core and accepted by this module.
 *
 * Pure function: any context, no lock.
 */
#include <linux/crc32c.h>

#include "core/mroce_core.h"

u32 mroce_crc32c(u32 crc, const u8 *buf, u32 len)
{
	return ~crc32c(~crc, buf, len);
}
