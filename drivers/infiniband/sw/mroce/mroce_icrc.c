// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The core's CRC32c (mroce_core.h: mroce_crc32c()) in the kernel.  The ICRC
 * covers every byte of every packet, on both ends, so its speed matters.
 *
 * Two implementations give the same result: the library's crc32c(), which
 * uses the CPU's crc32 instruction where there is one (Kconfig selects
 * LIBCRC32C), and the table-driven __crc32c_le() (slicing by 8).  The
 * instruction is ten times faster on hardware, but an emulated CPU (QEMU
 * TCG) runs it bit by bit: there it measured 9.1 us per KiB against
 * 2.8 us for the tables.  So, as the kernel does for its xor and RAID-6
 * routines, module load times both on the same buffer and keeps the
 * faster (mroce_icrc_init()); pr_info names the choice.
 *
 * Userspace builds of the core (tests, fuzzers, simulator) link
 * core/mroce_crc32c.c instead.  All give the same result: the known answer
 * of unit test Pkt.Crc32cKnownAnswer, and the attack suite's qp-flood
 * group, whose UD datagrams are built by the userspace core and accepted
 * by this module.
 *
 * Pure function: any context, no lock.  The choice is made once, before
 * any device exists.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/crc32.h>
#include <linux/crc32c.h>
#include <linux/jump_label.h>
#include <linux/ktime.h>
#include <linux/slab.h>

#include "mroce.h"
#include "core/mroce_core.h"

static DEFINE_STATIC_KEY_FALSE(mroce_crc_tables);

u32 mroce_crc32c(u32 crc, const u8 *buf, u32 len)
{
	if (static_branch_unlikely(&mroce_crc_tables))
		return ~__crc32c_le(~crc, buf, len);
	return ~crc32c(~crc, buf, len);
}

#define MROCE_CRC_BENCH_LEN	4096
#define MROCE_CRC_BENCH_ROUNDS	4

/* The best of a few rounds over buf, in ns: the least disturbed one. */
static u64 mroce_crc_time(u32 (*fn)(u32, const void *, unsigned int),
			  const u8 *buf, u32 *out)
{
	u64 best = U64_MAX, t;
	int i;

	for (i = 0; i < MROCE_CRC_BENCH_ROUNDS; i++) {
		t = ktime_get_ns();
		*out = fn(~0U, buf, MROCE_CRC_BENCH_LEN);
		t = ktime_get_ns() - t;
		best = min(best, t);
	}
	return best;
}

static u32 mroce_crc_lib(u32 crc, const void *p, unsigned int len)
{
	return crc32c(crc, p, len);
}

static u32 mroce_crc_sw(u32 crc, const void *p, unsigned int len)
{
	return __crc32c_le(crc, p, len);
}

void mroce_icrc_init(void)
{
	u64 t_lib, t_sw;
	u32 c_lib, c_sw;
	u8 *buf;
	int i;

	buf = kmalloc(MROCE_CRC_BENCH_LEN, GFP_KERNEL);
	if (!buf)
		return;		/* keep the library's */
	for (i = 0; i < MROCE_CRC_BENCH_LEN; i++)
		buf[i] = (u8)(i * 131 + 7);
	t_lib = mroce_crc_time(mroce_crc_lib, buf, &c_lib);
	t_sw = mroce_crc_time(mroce_crc_sw, buf, &c_sw);
	kfree(buf);
	if (c_lib != c_sw) {
		pr_err("ICRC: crc32c %s and __crc32c_le disagree; using %s\n",
		       mroce_crc32c_impl(), mroce_crc32c_impl());
		return;
	}
	if (t_sw < t_lib)
		static_branch_enable(&mroce_crc_tables);
	pr_info("ICRC: %s (4 KiB: %s %llu ns, tables %llu ns)\n",
		t_sw < t_lib ? "tables (__crc32c_le)" : mroce_crc32c_impl(),
		mroce_crc32c_impl(), t_lib, t_sw);
}
