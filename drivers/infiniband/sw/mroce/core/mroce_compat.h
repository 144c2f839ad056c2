/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * the only place where the protocol core touches its
 * environment.  The core is plain C that compiles as kernel C (__KERNEL__)
 * and as userspace gnu11 C (unit tests, fuzzers, simulator).
 */
#ifndef MROCE_COMPAT_H
#define MROCE_COMPAT_H

#ifdef __KERNEL__

#include <linux/types.h>
#include <linux/string.h>
#include <linux/kernel.h>
#include <linux/minmax.h>
#include <linux/build_bug.h>
#include <linux/limits.h>
#include <linux/math64.h>
#include <asm/byteorder.h>

#include <linux/jump_label.h>

#define mroce_div64(a, b)	div64_u64((a), (b))

/*
 * Events (mroce_conn_ops.event) are built only while a tracepoint of the
 * core's events is enabled: the static key is mroce_trace.c's.
 */
DECLARE_STATIC_KEY_FALSE(mroce_core_ev_key);
#define mroce_ev_enabled()	static_branch_unlikely(&mroce_core_ev_key)

#else /* userspace */

#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <endian.h>
#include <linux/types.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;
typedef int64_t s64;

#define cpu_to_be16(x)	((__be16)htobe16(x))
#define cpu_to_be32(x)	((__be32)htobe32(x))
#define cpu_to_be64(x)	((__be64)htobe64(x))
#define be16_to_cpu(x)	be16toh((u16)(x))
#define be32_to_cpu(x)	be32toh((u32)(x))
#define be64_to_cpu(x)	be64toh((u64)(x))

#ifndef likely
#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)
#endif

#define min_t(type, a, b)	((type)(a) < (type)(b) ? (type)(a) : (type)(b))
#define max_t(type, a, b)	((type)(a) > (type)(b) ? (type)(a) : (type)(b))
#define clamp_t(type, v, lo, hi) min_t(type, max_t(type, v, lo), hi)
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#define BUILD_BUG_ON(c)		_Static_assert(!(c), #c)

#ifndef U16_MAX
#define U16_MAX		((u16)~0U)
#define U32_MAX		((u32)~0U)
#define U64_MAX		((u64)~0ULL)
#endif

#define mroce_div64(a, b)	((u64)(a) / (u64)(b))

/* Harnesses that set mroce_conn_ops.event get every event. */
#define mroce_ev_enabled()	true

#endif /* __KERNEL__ */

/* Unaligned big-endian accessors for wire buffers (both worlds). */
static inline u16 mroce_get_be16(const u8 *p)
{
	return (u16)((p[0] << 8) | p[1]);
}

static inline u32 mroce_get_be32(const u8 *p)
{
	return ((u32)p[0] << 24) | ((u32)p[1] << 16) | ((u32)p[2] << 8) | p[3];
}

static inline u64 mroce_get_be64(const u8 *p)
{
	return ((u64)mroce_get_be32(p) << 32) | mroce_get_be32(p + 4);
}

static inline void mroce_put_be16(u8 *p, u16 v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static inline void mroce_put_be32(u8 *p, u32 v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static inline void mroce_put_be64(u8 *p, u64 v)
{
	mroce_put_be32(p, v >> 32);
	mroce_put_be32(p + 4, (u32)v);
}

/* Serial-number arithmetic on 32-bit sequence numbers (RFC 1982 style). */
static inline bool mroce_seq_lt(u32 a, u32 b)
{
	return (s32)(a - b) < 0;
}

static inline bool mroce_seq_le(u32 a, u32 b)
{
	return (s32)(a - b) <= 0;
}

#endif /* MROCE_COMPAT_H */
