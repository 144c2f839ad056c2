/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR Linux-OpenIB) */
/*
 * on-the-wire format of the mroce transport.
 *
 * Shared by the kernel module, the protocol core, the simulator and the
 * userspace tools.  Every multi-byte field is big endian (network order).
 * The structures are described as byte offsets: all fields are naturally
 * aligned inside each header and every header is a multiple of 4 bytes,
 * so the C layout has no implicit padding; the sizes are asserted in
 * core/mroce_pkt.c.
 *
 * A packet, carried in one UDP datagram to MROCE_UDP_PORT:
 *
 *   | base header (32) | extension headers (by opcode) | payload | ICRC (4) |
 *
 * The ICRC is a CRC32c (Castagnoli, reflected, init ~0, final ~0) over
 * every byte from the base header to the end of the payload.
 *
 * Documentation/mroce-protocol.rst is the normative description.
 */
#ifndef MROCE_WIRE_H
#define MROCE_WIRE_H

#include <linux/types.h>

#define MROCE_UDP_PORT		4792
#define MROCE_WIRE_VERSION	1

/* Largest payload of one packet (the largest MTU we negotiate). */
#define MROCE_MAX_PAYLOAD	4096
/* Largest message length (READ/WRITE/SEND total length). */
#define MROCE_MAX_MSG_LEN	0x80000000u

/* Opcodes (base header byte 1). */
enum mroce_opcode {
	MROCE_OP_SEND		= 0x01,
	MROCE_OP_SEND_IMM	= 0x02,
	MROCE_OP_SEND_INV	= 0x03,
	MROCE_OP_WRITE		= 0x04,
	MROCE_OP_WRITE_IMM	= 0x05,
	MROCE_OP_READ_REQ	= 0x06,
	MROCE_OP_READ_RESP	= 0x07,
	MROCE_OP_CMP_SWAP	= 0x08,
	MROCE_OP_FETCH_ADD	= 0x09,
	MROCE_OP_ATOMIC_RESP	= 0x0a,
	MROCE_OP_ACK		= 0x10,
	MROCE_OP_PROBE		= 0x11,
	MROCE_OP_UD_SEND	= 0x12,	/* unreliable datagram (UD, GSI) */
	MROCE_OP_UD_SEND_IMM	= 0x13,
	MROCE_OP_UC_SEND	= 0x14,	/* unreliable connected (UC QPs) */
	MROCE_OP_UC_SEND_IMM	= 0x15,
	MROCE_OP_UC_WRITE	= 0x16,
	MROCE_OP_UC_WRITE_IMM	= 0x17,
};

/* Base header flags (base header bytes 2..3). */
#define MROCE_F_ACKREQ		0x0001	/* receiver: acknowledge now */
#define MROCE_F_FIRST		0x0002	/* offset == 0 */
#define MROCE_F_LAST		0x0004	/* offset + payload_len == total */
#define MROCE_F_SOLICITED	0x0008	/* solicited event on completion */
#define MROCE_F_RETX		0x0010	/* retransmission (informational) */
#define MROCE_F_TLP		0x0020	/* tail-loss probe copy */
#define MROCE_F_XRC		0x0040	/* an XRCETH follows the extensions */
#define MROCE_F_VALID_MASK	0x007f	/* any other bit: reject */

/* Destination QPNs are 24 bits. */
#define MROCE_QPN_MASK		0x00ffffffu

/* ACK delay limit codes: 1 (1 us) .. 16 (32.768 ms), 2^(code-1) us. */
#define MROCE_ADL_MAX		16

/* Number of logical paths on the wire: path ids 0..63. */
#define MROCE_WIRE_MAX_PATHS	64

/*
 * Segment sizes on the wire (base header byte 4, ACKETH bytes 26..27) are
 * multiples of MROCE_SEG_UNIT, from MROCE_SEG_MIN to MROCE_MAX_PAYLOAD.
 */
#define MROCE_SEG_UNIT		64
#define MROCE_SEG_MIN		256

/*
 * Base header, 32 bytes, present on every packet.
 *  0 version      1 opcode       2 flags (be16)
 *  4 seg (u8)     RC data (SEND*, WRITE*, READ_RESP): the segment size
 *                 of the packet's message, in MROCE_SEG_UNIT bytes
 *                 (4..64, 256..4096 bytes); 0: the path MTU.  Every other
 *                 opcode: zero.
 *  5 path (u8)    0..MROCE_WIRE_MAX_PATHS - 1
 *  6 payload_len (be16)
 *  8 adl (u8)     data: the longest the receiver may hold its ACK, code
 *                 1..MROCE_ADL_MAX = 2^(adl-1) us; 0: the receiver's
 *                 default.  Zero in ACK and PROBE packets.
 *  9 dqpn (24 bits, be)
 * 12 psn  (be32)  per-path packet sequence number
 * 16 dsn  (be32)  connection-level data sequence number
 * 20 msn  (be32)  message sequence number
 * 24 offset (be32) byte offset of the payload in its message
 * 28 tx_ts (be32) sender timestamp, microseconds, echoed in ACKs
 *
 * In ACK and PROBE packets psn/dsn/msn name the packet that triggered the
 * ACK (echoed) and offset and payload_len are zero.
 */
struct mroce_bth {
	__u8 version;
	__u8 opcode;
	__be16 flags;
	__u8 seg;		/* segment size / MROCE_SEG_UNIT, 0: path MTU */
	__u8 path;
	__be16 payload_len;
	__be32 dqpn;		/* adl in the top 8 bits */
	__be32 psn;
	__be32 dsn;
	__be32 msn;
	__be32 offset;
	__be32 tx_ts;
};

/* RDMA extension (WRITE, WRITE_IMM, READ_REQ), 16 bytes. */
struct mroce_reth {
	__be64 va;		/* message base address; packet at va + offset */
	__be32 rkey;
	__be32 length;		/* total message length */
};

/*
 * Send extension (SEND*, WRITE_IMM: every message that consumes a receive
 * WQE), 8 bytes.  rq_seq numbers the receive-consuming messages of the
 * connection, so that out-of-order packets find their receive WQE.
 */
struct mroce_seth {
	__be32 rq_seq;
	__be32 length;		/* total message length */
};

/* Immediate data or rkey to invalidate (SEND_IMM, SEND_INV, WRITE_IMM). */
struct mroce_imeth {
	__be32 imm;
};

/* READ response extension, 8 bytes: total length of the READ. */
struct mroce_rreth {
	__be32 length;
	__be32 rsvd;		/* zero */
};

/* ATOMIC request extension (CMP_SWAP, FETCH_ADD), 32 bytes. */
struct mroce_aeth {
	__be64 va;		/* 8-byte aligned */
	__be32 rkey;
	__be32 rsvd;		/* zero */
	__be64 swap;		/* CMP_SWAP: new value; FETCH_ADD: zero */
	__be64 compare_add;	/* CMP_SWAP: compare; FETCH_ADD: addend */
};

/* ATOMIC response extension, 8 bytes: the original value. */
struct mroce_atketh {
	__be64 orig;
};

/* ACK syndromes. */
enum mroce_syndrome {
	MROCE_SYN_ACK		= 0,
	MROCE_SYN_RNR		= 1,	/* receiver not ready, retry later */
	MROCE_SYN_REM_ACCESS	= 2,	/* fatal: rkey/bounds/permission */
	MROCE_SYN_INV_REQ	= 3,	/* fatal: malformed or unsupported */
	MROCE_SYN_REM_OP	= 4,	/* fatal: responder could not execute */
	MROCE_SYN_MAX		= 4,
};

/*
 * Unreliable connected (UC) packets carry the extensions of their RC
 * counterparts (UC_SEND: SETH; UC_SEND_IMM: SETH, IMETH; UC_WRITE: RETH;
 * UC_WRITE_IMM: RETH, SETH, IMETH) on one path: path, dsn, tx_ts and
 * SETH.rq_seq zero; psn counts the sender QP's UC packets; msn numbers
 * its messages; offset places the payload.  Never acknowledged.
 */

/*
 * Datagram extension (UD_SEND, UD_SEND_IMM), 8 bytes.  A datagram is one
 * packet: path 0, psn counts the sender QP's datagrams, dsn/msn/offset
 * zero, FIRST and LAST set.
 */
struct mroce_deth {
	__be32 qkey;
	__be32 src_qpn;		/* top 8 bits zero */
};

/*
 * XRC extension, 4 bytes: the requests of an XRC initiator QP (SEND,
 * SEND_IMM, SEND_INV, WRITE, READ_REQ, CMP_SWAP, FETCH_ADD) carry it,
 * flagged by MROCE_F_XRC, after every other extension header.  srqn names
 * the XRC shared receive queue at the target: a SEND takes its receive
 * WQE from it, and every request is checked against its protection
 * domain.  The top 8 bits are zero.
 */
struct mroce_xrceth {
	__be32 srqn;
};

#define MROCE_SACK_BITS		256
#define MROCE_RNR_TIMER_MAX	31
#define MROCE_SACK_WORDS	(MROCE_SACK_BITS / 64)

/*
 * ACK extension, 64 bytes.  It acknowledges the path in the base header.
 *  0 high_psn   highest PSN received on the path + 1 (window right edge)
 *  4 cum_psn    every PSN below it is received or left the window
 *  8 ecn_ce     count of CE-marked packets received on the path (wraps)
 * 12 echo_ts    tx_ts of the triggering packet
 * 16 cum_dsn    every DSN below it was received on the connection
 * 20 cmpl_msn   every MSN below it completed at the receiver
 * 24 syndrome   enum mroce_syndrome
 * 25 rnr_timer  RNR: the wait before a retry as a verbs RNR timer code,
 *               0..MROCE_RNR_TIMER_MAX (1: 10 us ... 31: 491.52 ms,
 *               0: 655.36 ms); zero unless syndrome is RNR
 * 26 max_seg (be16) the largest segment (payload per packet) the ACK's
 *               sender accepts, bytes: a multiple of MROCE_SEG_UNIT in
 *               MROCE_SEG_MIN..MROCE_MAX_PAYLOAD, or 0: the path MTU only
 * 28 ack_delay  microseconds from the trigger's arrival to this ACK
 * 32 sack[32]   bit i (byte i / 8, bit i % 8, LSB first) is set when
 *               PSN high_psn - 1 - i was received
 */
struct mroce_acketh {
	__be32 high_psn;
	__be32 cum_psn;
	__be32 ecn_ce;
	__be32 echo_ts;
	__be32 cum_dsn;
	__be32 cmpl_msn;
	__u8 syndrome;
	__u8 rnr_timer;
	__be16 max_seg;
	__be32 ack_delay;
	__u8 sack[MROCE_SACK_BITS / 8];
};

/*
 * ACK block, 56 bytes: the path-specific part of an ACKETH for one more
 * path.  A positive ACK (syndrome ACK) may carry blocks as its payload, so
 * that one packet acknowledges several paths; cum_dsn and cmpl_msn of the
 * ACKETH hold for all of them.  The fields mean what the ACKETH's do:
 *  0 path (be16)  a path id, not the base header's nor another block's
 *  2 rsvd (be16, zero)
 *  4 high_psn     8 cum_psn     12 ecn_ce     16 echo_ts
 * 20 ack_delay (as the ACKETH's, for this path's trigger)
 * 24 sack[32]
 */
struct mroce_ack_blk {
	__be16 path;
	__be16 rsvd0;
	__be32 high_psn;
	__be32 cum_psn;
	__be32 ecn_ce;
	__be32 echo_ts;
	__be32 ack_delay;
	__u8 sack[MROCE_SACK_BITS / 8];
};

#define MROCE_ACK_BLK_SIZE	56
/* Every other path of the wire fits: 63 x 56 = 3528 <= MROCE_MAX_PAYLOAD. */
#define MROCE_ACK_MAX_BLKS	(MROCE_WIRE_MAX_PATHS - 1)

#define MROCE_BTH_SIZE		32
#define MROCE_RETH_SIZE		16
#define MROCE_SETH_SIZE		8
#define MROCE_IMETH_SIZE	4
#define MROCE_RRETH_SIZE	8
#define MROCE_AETH_SIZE		32
#define MROCE_ATKETH_SIZE	8
#define MROCE_ACKETH_SIZE	64
#define MROCE_DETH_SIZE		8
#define MROCE_XRCETH_SIZE	4
#define MROCE_ICRC_SIZE		4

/*
 * Extension headers follow the base header in this fixed order, each
 * present exactly when the opcode requires it (mroce_op_ext()):
 * RETH, SETH, IMETH, RRETH, AETH, ATKETH, ACKETH, DETH; then XRCETH
 * when the flags carry MROCE_F_XRC.
 */
#define MROCE_EXT_RETH		0x01
#define MROCE_EXT_SETH		0x02
#define MROCE_EXT_IMETH		0x04
#define MROCE_EXT_RRETH		0x08
#define MROCE_EXT_AETH		0x10
#define MROCE_EXT_ATKETH	0x20
#define MROCE_EXT_ACKETH	0x40
#define MROCE_EXT_DETH		0x80
/* Not selected by the opcode: present exactly when MROCE_F_XRC is set. */
#define MROCE_EXT_XRCETH	0x100

/* Smallest and largest packet (without UDP/IP). */
#define MROCE_MIN_PKT		(MROCE_BTH_SIZE + MROCE_ICRC_SIZE)
/* The largest extension set is the ACK's (64 > 16 + 8 + 4, > 32). */
#define MROCE_MAX_HDRS		(MROCE_BTH_SIZE + MROCE_ACKETH_SIZE)
#define MROCE_MAX_PKT		(MROCE_MAX_HDRS + MROCE_MAX_PAYLOAD + \
				 MROCE_ICRC_SIZE)

#endif /* MROCE_WIRE_H */
