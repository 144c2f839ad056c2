/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * API of the mroce protocol core.
 *
 * The core is the whole transport of one reliable connection (one RC QP
 * pair seen from one side): packet format, per-path SACK scoreboards,
 * loss detection (RACK, RTO, TLP), path scheduling and steering, per-path
 * congestion control and message placement/completion tracking.  It never
 * allocates, never reads a clock and never touches payload memory: the
 * embedder (kernel module, simulator, tests) owns the memory of struct
 * mroce_conn, passes time in nanoseconds and performs every copy through
 * struct mroce_conn_ops callbacks or struct mroce_tx descriptors.
 *
 * Context and locking: every mroce_conn_*() call on one connection must be
 * serialised by the embedder (the kernel module holds the QP's lock;
 * softirq and process context may both call in, under that lock).
 * Callbacks run synchronously inside the call that triggered them, with
 * that lock held: they must not call back into the same connection.
 * mroce_pkt_*() functions are pure and need no lock.
 *
 * API stability: additive changes only (see the commit log).
 */
#ifndef MROCE_CORE_H
#define MROCE_CORE_H

#include "mroce_compat.h"
#include <mroce/mroce_wire.h>	/* -I include/ (Kbuild, CMake) */
#include "mroce_sack.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Bounds (compile time).                                              */

#define MROCE_MAX_PATHS		64	/* logical paths per connection */
#define MROCE_RNR_RETRY_INF	7	/* rnr_retry value: retry forever */
#define MROCE_PATH_WND		256	/* PSNs in flight per path (SACK) */
#define MROCE_LOST_HIST		16	/* lost PSNs remembered per path */
#define MROCE_MAX_INFLIGHT	4096	/* DSNs in flight per connection */
#define MROCE_MAX_MSGS		256	/* outstanding messages per direction */
#define MROCE_MAX_RESP		64	/* READ/ATOMIC responses being sent */
#define MROCE_PROBE_SHIFT_MAX	4	/* idle outage: probes 16x slower */
#define MROCE_ISN_MASK		0x00ffffffu	/* CM PSNs: 24 bits */

/* ------------------------------------------------------------------ */
/* Return codes: 0 or a negative enum mroce_err.                        */

enum mroce_err {
	MROCE_OK		= 0,
	MROCE_E_SHORT		= -1,	/* buffer shorter than its headers */
	MROCE_E_VERSION		= -2,	/* unknown wire version */
	MROCE_E_OPCODE		= -3,	/* unknown opcode */
	MROCE_E_FLAGS		= -4,	/* flag invalid or inconsistent */
	MROCE_E_RSVD		= -5,	/* reserved field not zero */
	MROCE_E_LEN		= -6,	/* payload_len vs datagram length */
	MROCE_E_PAYLOAD		= -7,	/* payload where none allowed/too big */
	MROCE_E_BOUNDS		= -8,	/* offset/length outside message */
	MROCE_E_ICRC		= -9,	/* integrity check failed */
	MROCE_E_PATH		= -10,	/* path id out of range */
	MROCE_E_FIELD		= -11,	/* field value invalid (qpn, ...) */
	MROCE_E_NOSPC		= -12,	/* caller buffer or queue full */
	MROCE_E_INVAL		= -13,	/* invalid argument */
	MROCE_E_STATE		= -14,	/* connection in error state */
	MROCE_E_DUP		= -15,	/* duplicate, dropped harmlessly */
	MROCE_E_WINDOW		= -16,	/* sequence number outside window */
	MROCE_E_NOMSG		= -17,	/* response for no such request */
};

/* Human-readable name of a return code (never NULL). */
const char *mroce_strerror(int err);

/* ------------------------------------------------------------------ */
/* Packets.                                                            */

/* Parsed form of the ACK extension. */
struct mroce_ack {
	u32 high_psn;
	u32 cum_psn;
	u32 ecn_ce;
	u32 echo_ts;
	u32 ack_delay_us;	/* receiver's hold time of the trigger */
	u32 cum_dsn;
	u32 cmpl_msn;
	u8 syndrome;		/* enum mroce_syndrome */
	u8 rnr_timer;
	u16 max_seg;		/* ACKETH: the sender's largest segment, 0: mtu */
	u64 sack[MROCE_SACK_WORDS];	/* bit i: PSN high_psn - 1 - i */
};

/*
 * A packet in host order.  mroce_pkt_parse() fills it (payload points into
 * the parsed buffer); mroce_pkt_build() reads it.  Only the extensions of
 * ext (MROCE_EXT_*) are meaningful.
 */
struct mroce_pkt {
	u8 version;
	u8 opcode;		/* enum mroce_opcode */
	u16 flags;		/* MROCE_F_* */
	u16 path;
	u16 seg;		/* RC data: segment size in bytes, 0: path MTU */
	u16 payload_len;
	u8 adl;			/* data: ACK delay limit code (MROCE_ADL_MAX) */
	u32 dqpn;
	u32 psn;
	u32 dsn;
	u32 msn;
	u32 offset;
	u32 tx_ts;
	u32 ext;		/* MROCE_EXT_* of this opcode */
	struct {
		u64 va;
		u32 rkey;
		u32 length;
	} reth;
	struct {
		u32 rq_seq;
		u32 length;
	} seth;
	u32 imm;		/* imm data or rkey to invalidate */
	u32 rresp_len;		/* RRETH */
	struct {
		u64 va;
		u32 rkey;
		u64 swap;
		u64 compare_add;
	} aeth;
	u64 atomic_orig;	/* ATKETH */
	struct mroce_ack ack;
	struct {
		u32 qkey;
		u32 src_qpn;
	} deth;			/* UD datagrams */
	u32 xrc_srqn;		/* XRCETH, with MROCE_F_XRC */
	const u8 *payload;	/* payload_len bytes; NULL if 0 */
};

/* Extension mask of an opcode, or 0 for an unknown opcode. */
u32 mroce_op_ext(u8 opcode);
/* Header bytes (base + extensions) of an opcode, 0 if unknown. */
u32 mroce_op_hdr_len(u8 opcode);
/* Header bytes of pkt: its opcode's, plus the XRCETH when flagged. */
u32 mroce_pkt_hdr_len(const struct mroce_pkt *pkt);
/* True for opcodes that carry data and are tracked by DSN. */
bool mroce_op_is_data(u8 opcode);
/* True for the unreliable datagram opcodes (not part of a connection). */
bool mroce_op_is_ud(u8 opcode);
/* True for the unreliable connected opcodes (UC QPs, mroce_uc.c). */
bool mroce_op_is_uc(u8 opcode);

/*
 * Validate and parse len bytes at buf (base header .. ICRC).
 * Returns 0 and fills *pkt, or a negative enum mroce_err; on error *pkt is
 * unspecified.  Never reads outside buf[0..len).
 */
int mroce_pkt_parse(const u8 *buf, u32 len, struct mroce_pkt *pkt);

/*
 * Write the headers of pkt (base + extensions of pkt->opcode; pkt->ext is
 * ignored) into buf.  Returns the header length, or MROCE_E_NOSPC /
 * MROCE_E_OPCODE / MROCE_E_INVAL.  The payload (pkt->payload_len bytes) is
 * to be placed right after, then mroce_pkt_seal() appends the ICRC.
 */
int mroce_pkt_build_hdr(u8 *buf, u32 buflen, const struct mroce_pkt *pkt);

/*
 * Append the ICRC over buf[0..len): writes buf[len..len+4).  Returns the
 * total length len + 4 or MROCE_E_NOSPC if buflen is too small.
 */
int mroce_pkt_seal(u8 *buf, u32 len, u32 buflen);

/*
 * Headers + payload (pkt->payload, pkt->payload_len bytes) + ICRC.
 * Returns the total packet length or a negative enum mroce_err.
 */
int mroce_pkt_build(u8 *buf, u32 buflen, const struct mroce_pkt *pkt);

/*
 * ACK blocks (the payload of a positive ACK: MROCE_ACK_BLK_SIZE bytes per
 * further path).  mroce_ack_blk_get() decodes block k of a parsed ACK:
 * the block's path, and *a = the ACKETH with the block's path fields;
 * mroce_ack_blk_put() encodes one.
 */
int mroce_ack_blk_get(const struct mroce_pkt *pkt, u32 k, u16 *path,
		      struct mroce_ack *a);
void mroce_ack_blk_put(u8 *p, u16 path, const struct mroce_ack *a);

/* CRC32c (Castagnoli) with the usual ~0 init and final xor. */
u32 mroce_crc32c(u32 crc, const u8 *buf, u32 len);

/* ------------------------------------------------------------------ */
/* Deterministic PRNG (xoshiro-style 64-bit state, splitmix64).         */

struct mroce_prng {
	u64 s;
};

void mroce_prng_seed(struct mroce_prng *r, u64 seed);
u64 mroce_prng_next(struct mroce_prng *r);
/* Uniform in [0, n), n > 0. */
u32 mroce_prng_below(struct mroce_prng *r, u32 n);

/* ------------------------------------------------------------------ */
/* Parameters.                                                         */

struct mroce_params {
	u32 num_paths;		/* 1..MROCE_MAX_PATHS, default 16 */
	u32 max_inflight;	/* power of 2, 16..MROCE_MAX_INFLIGHT (1024) */
	u32 mtu;		/* path MTU: payload bytes/packet, 256..4096 (4096) */
	/*
	 * Largest segment (payload per packet) this end sends and accepts,
	 * bytes: 0, or a multiple of MROCE_SEG_UNIT in [mtu,
	 * MROCE_MAX_PAYLOAD].  Advertised in every ACK; messages are cut into
	 * min(ours, the peer's advertised) once the peer advertised one,
	 * into mtu before and when either is 0 (spec 5.1a).  (0)
	 */
	u32 max_seg;
	u32 dqpn;		/* peer QPN put in every packet */
	u16 sport_min;		/* source port entropy range (49152) */
	u16 sport_max;		/* inclusive (65535) */
	u64 rto_init_ns;	/* before any RTT sample (1 ms) */
	u64 rto_min_ns;		/* (200 us) */
	u64 rto_max_ns;		/* backoff cap (64 ms) */
	u64 reo_wnd_min_ns;	/* RACK reorder window floor (10 us) */
	u64 ack_delay_ns;	/* delayed ACK bound without a sender's adl (10 us) */
	u64 ack_delay_max_ns;	/* cap on a sender's adl (4 ms) */
	u32 ack_every;		/* ACK at least every N packets of the connection (8) */
	u32 down_after_rtos;	/* consecutive RTOs -> path down (3) */
	u32 retry_budget;	/* failed all-paths-down probe rounds (7) */
	u8 rnr_retry;		/* RNR NAK rounds per message, 7: unlimited (7) */
	u8 min_rnr_timer;	/* responder's RNR wait, verbs code 0..31 (4) */
	u64 probe_ns;		/* probe interval of a down path (1 ms) */
	u64 steer_ns;		/* steering evaluation period (1 ms) */
	u32 steer_factor_pct;	/* outlier if metric > pct% of median (300) */
	u64 target_qdelay_ns;	/* CC: tolerated queueing delay (25 us) */
	u32 cwnd_init;		/* CC: initial window, bytes (16 * mtu) */
	u32 cwnd_min;		/* CC: floor, bytes (mtu / 4 ... mtu) */
	u32 cwnd_max;		/* CC: cap, bytes (MROCE_PATH_WND * mtu) */
	u64 seed;		/* PRNG seed */
	/*
	 * Initial sequence numbers (24 bits, the CM's PSNs): isn_tx is ours
	 * (verbs sq_psn), isn_rx the peer's (verbs rq_psn, the peer's
	 * sq_psn).  Every sequence space starts at mroce_isn_start() of
	 * them (0 for ISN 0).  isn_tx_late: isn_tx is not known yet (the QP
	 * is at RTR); mroce_conn_update() supplies it.  (0, 0, false)
	 */
	u32 isn_tx;
	u32 isn_rx;
	bool isn_tx_late;
	/*
	 * READ/atomic limits (verbs): max_rd_atomic of ours outstanding at
	 * once (further ones wait), max_dest_rd_atomic of the peer's we
	 * serve at once, more is NAKed INV_REQ.  1..MROCE_MAX_RESP and
	 * 0..MROCE_MAX_RESP (MROCE_MAX_RESP, MROCE_MAX_RESP)
	 */
	u32 max_rd_atomic;
	u32 max_dest_rd_atomic;
	/*
	 * XRC target (verbs XRC_TGT): every request of the peer must carry
	 * an XRCETH; on any other connection none may.  A request breaking
	 * the rule fails with INV_REQ.  (false)
	 */
	bool xrc_tgt;
	/*
	 * Table sizes, fixed for the life of the memory (mroce_conn_size()):
	 * max_msgs of our WRs outstanding at once (power of 2,
	 * 1..MROCE_MAX_MSGS; more wait with MROCE_E_NOSPC), path_wnd PSNs in
	 * flight per path (power of 2, 16..MROCE_PATH_WND, at least
	 * cwnd_init packets; a path with path_wnd PSNs out sends nothing
	 * more).  Neither is visible on the wire.  (MROCE_MAX_MSGS,
	 * MROCE_PATH_WND; mroce_params_fit_paths() picks a smaller path_wnd)
	 */
	u32 max_msgs;
	u32 path_wnd;
	/*
	 * Our DSN window (sender side): our segments in flight at once, a
	 * power of 2, 16..max_inflight, 0 for max_inflight.  It sizes the
	 * DSN records and caps the connection's cwnd; the window we accept
	 * from the peer stays max_inflight, so no peer is refused anything
	 * it may send.  mroce_conn_init() stores the value in use.  (0)
	 */
	u32 snd_wnd;
};

/* Fill p with the defaults above (dqpn 0, seed 1). */
void mroce_params_default(struct mroce_params *p);

/*
 * Bytes a packet is charged in its path's window besides its payload
 * (headers, roughly): cwnd and inflight count payload + this.
 */
#define MROCE_PKT_OVERHEAD	64u

/*
 * Set p->mtu and the congestion windows that follow from it: cwnd_min one
 * packet, cwnd_init 16 packets, cwnd_max a full path window
 * (MROCE_PATH_WND packets).  mroce_params_default() uses it with 4096.
 */
void mroce_params_set_mtu(struct mroce_params *p, u32 mtu);

/*
 * Size the per-path PSN windows by what the connection can have in
 * flight rather than by the protocol's maximum: path_wnd = twice a path's
 * fair share of our DSN window (2 * snd_wnd / num_paths, snd_wnd 0 taken
 * as max_inflight, a power of 2 in [16, MROCE_PATH_WND]), so that with
 * half the paths down the others still hold the whole DSN window;
 * cwnd_max follows (path_wnd packets of mtu).  Call after the mtu,
 * num_paths, max_inflight and snd_wnd are set.
 */
void mroce_params_fit_paths(struct mroce_params *p);

/* Sequence spaces derived from an ISN (mroce_isn_start()). */
enum mroce_isn_space {
	MROCE_ISN_DSN		= 0,	/* a sender's DSNs */
	MROCE_ISN_MSN		= 1,	/* a requester's MSNs */
	MROCE_ISN_DSN_LATE	= 2,	/* DSNs sent before isn_tx was known */
	MROCE_ISN_PSN		= 64,	/* + path: a path's PSNs */
	MROCE_ISN_PSN_LATE	= 128,	/* + path: before isn_tx was known */
};

/*
 * First sequence number of space (enum mroce_isn_space) for a 24-bit
 * isn: fmix32((space << 24) | isn) - fmix32(space << 24), with fmix32
 * the MurmurHash3 finaliser (a bijection of u32 with fmix32(0) = 0), so
 * ISN 0 gives 0 everywhere and distinct ISNs give distinct starts in
 * every space.  Both ends compute it (Documentation/mroce-protocol.rst).
 */
u32 mroce_isn_start(u32 isn, u32 space);

/* ------------------------------------------------------------------ */
/* Work requests and callbacks.                                        */

enum mroce_wr_op {
	MROCE_WOP_SEND,
	MROCE_WOP_SEND_IMM,
	MROCE_WOP_SEND_INV,
	MROCE_WOP_WRITE,
	MROCE_WOP_WRITE_IMM,
	MROCE_WOP_READ,
	MROCE_WOP_CMP_SWAP,
	MROCE_WOP_FETCH_ADD,
};

struct mroce_wr {
	u64 cookie;		/* returned in the completion (wr_id, ...) */
	u32 op;			/* enum mroce_wr_op */
	u32 length;		/* bytes; 8 for atomics */
	u64 remote_va;		/* WRITE*, READ, atomics */
	u32 rkey;
	u32 imm;		/* SEND_IMM/WRITE_IMM imm, SEND_INV rkey */
	u64 swap;		/* CMP_SWAP */
	u64 compare_add;	/* CMP_SWAP compare, FETCH_ADD addend */
	bool solicited;
	/*
	 * verbs FENCE: not begun before every earlier READ and atomic of
	 * the connection has completed (its response placed); WRs behind
	 * it wait with it (they are segmented in order).
	 */
	bool fence;
	/*
	 * XRC initiator: every request carries an XRCETH naming the
	 * target's XRC SRQ xrc_srqn (24 bits).  WRITE_IMM cannot (the
	 * embedder refuses it).
	 */
	bool xrc;
	u32 xrc_srqn;
};

/* Completion status; numerically equal to enum ib_wc_status. */
enum mroce_status {
	MROCE_ST_SUCCESS	= 0,
	MROCE_ST_LOC_PROT	= 4,
	MROCE_ST_REM_INV_REQ	= 9,
	MROCE_ST_REM_ACCESS	= 10,
	MROCE_ST_REM_OP		= 11,
	MROCE_ST_RETRY_EXC	= 12,
	MROCE_ST_RNR_RETRY_EXC	= 13,
	MROCE_ST_WR_FLUSH	= 5,
};

/* What a placement callback is asked to do. */
enum mroce_place_kind {
	MROCE_PLACE_SEND,	/* into receive WQE rq_seq at offset */
	MROCE_PLACE_WRITE,	/* at remote_va + offset (rkey checked) */
	MROCE_PLACE_READ_RESP,	/* into local READ WR msn at offset */
};

struct mroce_place {
	u32 kind;		/* enum mroce_place_kind */
	u32 msn;
	u32 rq_seq;		/* SEND, WRITE_IMM */
	u32 offset;		/* in the message */
	u32 msg_len;		/* total message length */
	u64 va;			/* WRITE: reth.va (add offset) */
	u32 rkey;
	u64 cookie;		/* READ_RESP: the WR's cookie */
	const u8 *data;
	u32 len;
	bool first;		/* SEND: first packet (WQE size check) */
	bool xrc;		/* XRC target: the request's XRCETH ... */
	u32 xrc_srqn;		/* ... names this SRQ (unchecked) */
};

enum mroce_cqe_kind {
	MROCE_CQE_REQ,		/* one of our WRs completed */
	MROCE_CQE_RECV,		/* a receive WQE completed */
};

struct mroce_completion {
	u32 kind;		/* enum mroce_cqe_kind */
	u32 status;		/* enum mroce_status */
	u32 op;			/* REQ: enum mroce_wr_op; RECV: opcode */
	u32 msn;
	u64 cookie;		/* REQ */
	u32 rq_seq;		/* RECV */
	u32 byte_len;
	u32 imm;		/* RECV with imm/inv */
	bool with_imm;
	bool with_inv;
	bool solicited;
	u64 atomic_orig;	/* REQ atomics */
	bool xrc;		/* RECV at an XRC target: the message's */
	u32 xrc_srqn;		/* XRCETH srqn */
};

/* ------------------------------------------------------------------ */
/* Events (tracing).                                                   */

/*
 * What the core reports through mroce_conn_ops.event: decisions worth a
 * tracepoint (the kernel's mroce_trace.h), none of which changes what the
 * core does.  The reasons of every type share one enum so that an
 * embedder names them with a single table.
 */
enum mroce_ev_type {
	MROCE_EV_PATH_UP,	/* a probe was answered; a: sport */
	MROCE_EV_PATH_DOWN,	/* count: consecutive RTOs; a: sport */
	MROCE_EV_STEER,		/* new source port; reason ECN/LOSS/DELAY
				 * (steering), DOWN or PROBE; a: old, b: new
				 */
	MROCE_EV_LOSS,		/* loss verdict; reason RACK, RTO or TLP; psn,
				 * dsn: the first packet; count: packets
				 * declared lost (TLP: the probe, psn its new
				 * PSN, count the probes this flight); RTO: a
				 * the RTO in ns, b the backoff exponent
				 */
	MROCE_EV_SPURIOUS,	/* psn, declared lost by reason RACK or RTO,
				 * was received; a: learned reorder window ns
				 */
	MROCE_EV_CWND,		/* window change of path (MROCE_EV_CONN: the
				 * connection's); reason ECN, LOSS, RTO, DELAY,
				 * INCREASE (only when the window gains a
				 * whole packet) or RESET (path up); a: old,
				 * b: new, bytes
				 */
	MROCE_EV_RNR,		/* RNR NAK; reason TX (sent) or RX (received);
				 * psn, dsn, msn; a: timer code; RX: count the
				 * message's RNR rounds, b 1 when this NAK
				 * opened a round
				 */
	MROCE_EV_ERROR,		/* the connection failed; reason NAK_RX,
				 * NAK_TX, RETRY_EXC, RNR_RETRY or LOCAL (the
				 * embedder, mroce_conn_set_error()); a: the
				 * enum mroce_status of the failing WR, b:
				 * the NAK's syndrome (0: none)
				 */
};

enum mroce_ev_reason {
	MROCE_EVR_NONE,
	MROCE_EVR_RACK,
	MROCE_EVR_RTO,
	MROCE_EVR_TLP,
	MROCE_EVR_ECN,
	MROCE_EVR_LOSS,
	MROCE_EVR_DELAY,
	MROCE_EVR_INCREASE,
	MROCE_EVR_RESET,
	MROCE_EVR_DOWN,
	MROCE_EVR_PROBE,
	MROCE_EVR_TX,
	MROCE_EVR_RX,
	MROCE_EVR_NAK_RX,
	MROCE_EVR_NAK_TX,
	MROCE_EVR_RETRY_EXC,
	MROCE_EVR_RNR_RETRY,
	MROCE_EVR_LOCAL,
};

#define MROCE_EV_CONN		0xffffu	/* path of a connection-wide event */

struct mroce_event {
	u8 type;		/* enum mroce_ev_type */
	u8 reason;		/* enum mroce_ev_reason */
	u16 path;		/* path index or MROCE_EV_CONN */
	u32 psn;
	u32 dsn;
	u32 msn;
	u32 count;
	u64 a;
	u64 b;
};

/*
 * Embedder callbacks.  Return 0 or a negative enum mroce_syndrome
 * (-MROCE_SYN_RNR, -MROCE_SYN_REM_ACCESS, ...) from place/read/atomic to
 * make the core NAK the request.  ctx is mroce_conn.ctx.
 */
struct mroce_conn_ops {
	int (*place)(void *ctx, const struct mroce_place *pl);
	/* READ_REQ about to be served: check rkey/bounds only. */
	int (*read_check)(void *ctx, u64 va, u32 rkey, u32 len);
	/* Execute an atomic (op = MROCE_WOP_CMP_SWAP/FETCH_ADD). */
	int (*atomic)(void *ctx, u32 op, u64 va, u32 rkey, u64 swap,
		      u64 compare_add, u64 *orig);
	void (*complete)(void *ctx, const struct mroce_completion *c);
	/*
	 * SEND_INV reached the head of the MSN order, all placed: invalidate
	 * rkey before its receive completion is reported.  Optional (NULL:
	 * nothing to invalidate); a refusal fails the message like a
	 * placement refusal (-MROCE_SYN_INV_REQ).
	 */
	int (*invalidate)(void *ctx, u32 rkey);
	/*
	 * A protocol event (struct mroce_event), for tracing.  Optional.
	 * Called only while mroce_ev_enabled() (mroce_compat.h) holds: in the
	 * kernel while a tracepoint of the core's events is enabled (a static
	 * key: nothing is built or called otherwise), in userspace always.
	 * Must not call into the connection.
	 */
	void (*event)(void *ctx, const struct mroce_event *ev);
};

/* ------------------------------------------------------------------ */
/* Transmit descriptors.                                               */

enum mroce_src {
	MROCE_SRC_NONE,		/* no payload (ACK, PROBE, READ_REQ, ...) */
	MROCE_SRC_WR,		/* our WR cookie's data at offset */
	MROCE_SRC_LOCAL_MEM,	/* READ response: local va (rkey) */
	/* pkt.payload: bytes the connection owns (ACK blocks), valid until
	 * the next call into it
	 */
	MROCE_SRC_PKT,
};

/*
 * One packet to send: build pkt with mroce_pkt_build*() filling
 * payload_len bytes from src, send to the peer from UDP source port sport.
 */
struct mroce_tx {
	struct mroce_pkt pkt;
	u16 sport;
	u32 src;		/* enum mroce_src */
	u64 cookie;		/* SRC_WR: the WR cookie */
	u32 src_offset;		/* SRC_WR: offset in the WR's data */
	u64 src_va;		/* SRC_LOCAL_MEM: address (offset included) */
	u32 src_rkey;
	bool src_xrc;		/* SRC_LOCAL_MEM at an XRC target: the */
	u32 src_xrc_srqn;	/* READ's XRCETH srqn */
};

/* ------------------------------------------------------------------ */
/* Connection state (opaque to embedders; fixed size).                 */

enum mroce_path_state {
	MROCE_PATH_UP,
	MROCE_PATH_DOWN,
};

/* Per-PSN record of a path's send window. */
struct mroce_psn_ent {
	u64 sent_ns;
	u32 dsn;
	u16 len;
	u8 live;		/* sent, not yet delivered/lost */
	u8 tlp;
};

/* Per-path telemetry, also exported by mroce_conn_path_stats(). */
struct mroce_path_stats {
	u32 state;		/* enum mroce_path_state */
	u16 sport;
	u64 srtt_ns;
	u64 min_rtt_ns;
	u64 rttvar_ns;
	u32 ecn_frac_ppm;	/* EWMA of CE fraction, parts per million */
	u32 loss_frac_ppm;	/* EWMA of loss fraction */
	u32 cwnd;		/* bytes */
	u32 inflight;		/* bytes */
	u64 tx_pkts;
	u64 tx_bytes;
	u64 delivered_pkts;
	u64 lost_pkts;
	u64 retx_pkts;
	u64 rtos;
	u64 tlps;
	u64 steers;
	u64 downs;
	u64 spurious;		/* losses later proven by a SACK of the original */
	u64 ecn_ce;		/* CE-marked packets the peer echoed, cumulative */
	u64 reo_wnd_ns;		/* RACK reorder window (filled on export) */
};

/* A PSN declared lost, kept until a SACK proves or the window forgets it. */
struct mroce_lost_ent {
	u32 psn;
	u8 rto;			/* declared by the RTO (else by RACK) */
	u8 valid;
};

struct mroce_path {
	struct mroce_path_stats st;
	/* sender side */
	u32 snd_una;		/* oldest live PSN (or snd_nxt) */
	u32 snd_nxt;
	u64 rack_xmit_ns;	/* newest send time of a delivered packet */
	u64 last_ack_ns;
	u64 last_send_ns;
	u32 backoff;		/* RTO multiplier exponent */
	u32 consec_rto;
	u32 ecn_ce_seen;	/* last echoed CE count */
	bool ecn_valid;
	u8 tlp_out;		/* tail-loss probes sent this flight */
	bool tlp_req;		/* timer asked tx for a tail-loss probe */
	bool rto_retx;		/* RTO fired: next packet goes here */
	u32 steer_samples;	/* deliveries + losses since last steer */
	u32 rack_psn;		/* newest delivered PSN + 1 (RACK order) */
	bool probe_out;
	u32 probe_ts;		/* tx_ts (us) of the last probe */
	u32 probe_first_ts;	/* tx_ts (us) of the first probe since down */
	u64 probe_due_ns;
	u64 cc_cut_ns;		/* last multiplicative decrease */
	u32 cc_alpha_ppm;	/* DCQCN-style ECN estimate */
	/* spurious loss detection (RACK reorder window adaptation) */
	struct mroce_lost_ent lost[MROCE_LOST_HIST];
	u32 lost_head;		/* next slot of lost[] */
	u64 reo_extra_ns;	/* reorder window learned from spurious losses */
	u32 reo_clean;		/* losses since the last spurious one */
	struct mroce_psn_ent *win;	/* p.path_wnd entries, by PSN */
	/* receiver side */
	struct mroce_sack_rx rcv_sb;	/* PSNs received (mroce_sack.h) */
	u32 rcv_ce;
	bool ack_pending;
	bool ack_now;
	u8 ack_why;		/* enum mroce_ack_why of ack_now's first cause */
	u64 ack_due_ns;
	u32 trig_psn, trig_dsn, trig_msn, trig_ts;
	u64 trig_rx_ns;		/* when the trigger arrived (ACK delay) */
};

/* Sender record of one DSN. */
struct mroce_dsn_ent {
	u32 dsn;
	u32 msn;
	u32 offset;
	u16 len;
	u8 state;		/* enum mroce_dsn_state (mroce_conn.c) */
	u8 resp;		/* 1: response packet (resp_slot) */
	u8 resp_slot;
	u8 queued;
	u16 flags;		/* FIRST/LAST/SOLICITED/ACKREQ */
	u64 rnr_until_ns;
};

/* Requester-side message (our WR). */
struct mroce_smsg {
	struct mroce_wr wr;
	u32 msn;
	u32 rq_seq;
	u32 next_off;		/* bytes segmented so far */
	u32 pkts;		/* packets in the message */
	u32 pkts_acked;
	u32 resp_done;		/* READ bytes placed / atomic received */
	u64 atomic_orig;
	u32 first_dsn;		/* DSN of the first packet */
	u32 seg;		/* its segment size, bytes (fixed at post) */
	u32 resp_seg;		/* READ_RESP: the responder's segment size */
	u32 resp_base;		/* READ_RESP: DSN of offset 0 */
	u8 resp_have_base;
	u8 resp_complete;	/* READ/ATOMIC: whole response received */
	u8 rnr_rounds;		/* RNR NAK rounds taken so far */
	u64 rnr_until_ns;	/* end of the current RNR round */
	u8 segmented;
	u8 done;
	u8 status;
	u8 in_use;
};

/* Responder-side message (peer's request). */
struct mroce_rmsg {
	u32 msn;
	u8 in_use;
	u8 opcode;
	u8 have_len;
	u8 done;
	u16 flags;		/* SOLICITED seen */
	u8 fail_syn;		/* fatal enum mroce_syndrome, NAKed in order */
	u16 path;		/* path of the latest packet */
	u8 have_base;
	u32 base_dsn;		/* DSN of offset 0 (DSNs are contiguous) */
	u32 seg;		/* the sender's segment size, bytes */
	u32 dsn, psn;		/* of the latest packet (named by a NAK) */
	u32 total;
	u32 placed;
	u32 rq_seq;
	u32 imm;
	u64 va;
	u32 rkey;
	u64 swap;
	u64 compare_add;
	u8 xrc;			/* XRCETH present (MROCE_F_XRC) */
	u32 xrc_srqn;
};

/* Response being sent (READ data, ATOMIC result): the responder cache. */
struct mroce_resp {
	u8 in_use;
	u8 opcode;		/* READ_RESP or ATOMIC_RESP */
	u32 msn;		/* requester's MSN */
	u64 va;
	u32 rkey;
	u8 xrc;			/* the request's XRCETH */
	u32 xrc_srqn;
	u32 len;
	u32 seg;		/* segment size, bytes (fixed when queued) */
	u32 next_off;
	u32 pkts;
	u32 pkts_acked;
	u64 orig;
	u32 pkts_sent;
	u32 req_dsn;		/* DSN of the request (named by a NAK) */
	u16 req_path;
	u8 src_lost;		/* a resent segment found its source gone */
};

/*
 * What made an ACK due (spec 6.2), one per ACK sent: the first of a gap
 * in a path's PSNs, a duplicate, the sender's ACKREQ, the connection's
 * ack_every count, a probe or a NAK to answer at once, or else the hold
 * timer (the sender's ack_delay allowance ran out).
 */
enum mroce_ack_why {
	MROCE_ACKW_GAP,
	MROCE_ACKW_DUP,
	MROCE_ACKW_REQ,
	MROCE_ACKW_EVERY,
	MROCE_ACKW_OTHER,
	MROCE_ACKW_TIMER,
	MROCE_ACKW_NUM
};

struct mroce_conn_stats {
	u64 tx_data, tx_acks, tx_probes, tx_retx;
	u64 rx_data, rx_acks, rx_dup, rx_drop;
	u64 nak_tx, nak_rx;
	u64 rnr_rounds;		/* RNR NAK rounds started (requester) */
	u64 completions;
	u64 rx_ack_invalid;	/* ACK/NAK naming nothing in flight */
	u64 rx_resp_invalid;	/* READ/ATOMIC response for no request */
	u64 cc_cuts;		/* decreases of the connection window */
	u64 tx_ack_blks;	/* further paths acknowledged in our ACKs */
	u64 tx_ack_why[MROCE_ACKW_NUM];	/* ACKs sent, by what made them due */
};

struct mroce_conn;

/*
 * What a congestion group needs from its embedder (spec 9.4).  A shared
 * group is touched by several connections, each serialised only by its
 * own lock: the core takes the group's lock (lock/unlock) around every
 * access to the group's state, always while holding the calling
 * connection's serialisation and never the other way round (lock order:
 * connection, then group).  kick(ctx) asks the embedder to run the
 * transmit of the member whose ctx it is (struct mroce_conn.ctx) soon; it
 * is called with the calling connection's serialisation and the group
 * lock held, so it must only schedule (a timer, an event), never call
 * into the core.
 */
struct mroce_cc_group_ops {
	void (*lock)(void *gctx);
	void (*unlock)(void *gctx);
	void (*kick)(void *ctx);
};

/*
 * The connection-level congestion controller (mroce_cc.c, spec 9.1): the
 * bytes its connections together may have in flight over all their paths.
 * Paths keep their own windows, which decide where packets go; this one
 * decides how many.  Every connection starts with its own (private: ops
 * NULL, no lock, one member); mroce_cc_group_join() makes several
 * connections to one peer share one (spec 9.4, mroce_cc_group.c): one
 * window, one alpha, one round, one srtt, one additive increase.
 * Every field is protected by the group lock (ops->lock) when shared, by
 * the only member's serialisation when private.
 */
struct mroce_cc_group {
	const struct mroce_cc_group_ops *ops;	/* NULL: private */
	void *gctx;		/* for ops->lock/unlock */
	u32 cwnd;		/* bytes, [cwnd_min, members * snd_wnd packets] */
	u32 alpha_ppm;		/* DCTCP: EWMA of the CE fraction per round */
	u64 srtt_ns;		/* smoothed RTT over every member's samples */
	u64 cut_ns;		/* last decrease (0: none yet) */
	u64 round_end_ns;	/* end of the current observation round */
	u64 deliver_ns;		/* last ACK that delivered a packet, any path */
	u32 round_pkts;		/* packets delivered in the round */
	u32 round_ce;		/* of which CE-marked */
	u32 round_lost;		/* packets declared lost (RACK) in the round */
	u64 round_min_rtt;	/* the round's sample with the least queueing */
	u64 round_min_base;	/* its path's base RTT (min_rtt) */
	bool round_queued;	/* the round saw CE or a severe delay */
	/* membership (mroce_cc_group.c) */
	u32 inflight;		/* sum of the members' inflight (bytes) */
	u32 members;		/* connections in the group */
	u32 busy;		/* members with bytes in flight or waiting */
	u32 waiting;		/* members refused by the group window */
	struct mroce_conn *head;	/* member list (mroce_conn.grp_next) */
	struct mroce_conn *turn;	/* waiting member next in line, or NULL */
	struct mroce_conn *wait_tail;	/* waiting FIFO: turn ... wait_tail */
	u64 kicks;		/* kicks asked of the embedder */
	/* probes of down paths: at most num_paths per probe_ns (9.4) */
	u64 probe_win_ns;	/* start of the current probe window */
	u32 probe_cnt;		/* probes sent in it, all members */
};

/*
 * A connection's own RTT estimate (mroce_cc.c): its timers (RTO before a
 * path has samples, the ACK delay it asks for) follow it whether or not
 * the congestion window is shared.
 */
struct mroce_conn_cc {
	u64 srtt_ns;		/* smoothed RTT over every path's samples */
	u64 grp_srtt_ns;	/* shared group: its srtt at our last ACK */
	u8 adl;			/* mroce_send_adl() of srtt_ns, kept with it */
	u64 hold_ns;		/* mroce_send_hold_ns(), kept with srtt_ns */
};

enum mroce_conn_state {
	MROCE_CONN_OK,
	MROCE_CONN_ERROR,
};

struct mroce_conn {
	struct mroce_params p;
	const struct mroce_conn_ops *ops;
	void *ctx;
	struct mroce_prng rng;
	u32 state;		/* enum mroce_conn_state */
	u32 err_status;		/* enum mroce_status once in error */
	u64 now_ns;		/* time of the latest call */

	/* sender */
	u32 snd_dsn_una, snd_dsn_nxt;
	u32 inflight;		/* sum of the paths' st.inflight (bytes) */
	struct mroce_dsn_ent *dsn;	/* p.snd_wnd entries */
	u32 *retxq;			/* p.snd_wnd entries */
	u32 retxq_head, retxq_len;
	u32 msn_una, msn_seg, msn_nxt;	/* our messages */
	u32 rq_seq_nxt;
	u32 tx_since_ackreq;	/* data packets since one asked for an ACK */
	u32 tx_seg;		/* segment size of new messages, bytes */
	struct mroce_smsg *smsg;	/* p.max_msgs entries, by MSN */
	struct mroce_resp resp[MROCE_MAX_RESP];
	u32 resp_head, resp_len;	/* FIFO of resp slots in MSN order */
	u32 resp_seg;			/* responses fully segmented */
	u64 rnr_until_ns;
	u32 down_rounds;
	u32 idle_down_rounds;	/* silent rounds with nothing of ours out */
	u8 probe_shift;		/* probes every probe_ns << probe_shift */
	u64 all_down_since_ns;
	u64 down_round_due_ns;	/* end of the current all-down probe round */
	bool tx_started;	/* a DSN was allocated */
	bool msn_started;	/* a WR was posted */
	bool rx_started;	/* a data packet was accepted */
	u32 peer_heard;		/* ACKs that delivered or proved a packet, responses */
	u32 down_round_heard;	/* peer_heard when the current round began */
	bool probe_deferred;	/* the group held back a probe this round */
	u64 next_steer_ns;
	u32 sched_rr;
	struct mroce_conn_cc cc;
	/*
	 * The congestion group: grp_own unless mroce_cc_group_join() put the
	 * connection in a shared one.  grp_next, grp_wait, grp_kicked and
	 * grp_busy are the group's (its lock); inflight changes under both.
	 */
	struct mroce_cc_group *grp;
	struct mroce_cc_group grp_own;
	struct mroce_conn *grp_next;	/* next member */
	struct mroce_conn *grp_wnext;	/* next in the waiting FIFO */
	struct mroce_conn *grp_wprev;	/* previous in the waiting FIFO */
	bool grp_wait;		/* refused by the group window, has data */
	bool grp_kicked;	/* kicked since it last tried */
	bool grp_busy;		/* counted in grp->busy */

	/* receiver */
	u32 rcv_dsn_cum;
	u64 *rcv_dsn_map;	/* p.max_inflight bits */
	u32 rcv_msn_cum;
	struct mroce_rmsg rmsg[MROCE_MAX_MSGS];
	u32 rcv_unacked;	/* data packets since our last ACK, all paths */
	u8 *ack_blk;		/* our ACK's blocks: p.num_paths - 1 */
	bool nak_pending;
	u8 nak_syn;
	u16 nak_path;
	u32 nak_psn, nak_dsn, nak_msn;
	/*
	 * XRC target: the XRCETH of the request whose read_check, atomic or
	 * invalidate callback is running (the embedder checks the SRQ and
	 * takes its protection domain); exec_xrc false otherwise.
	 */
	bool exec_xrc;
	u32 exec_xrc_srqn;

	struct mroce_path *path;	/* p.num_paths entries */
	struct mroce_conn_stats st;
	/*
	 * The arrays that grow with the parameters (path, dsn, smsg, the
	 * paths' win, rcv_dsn_map, ack_blk, retxq) follow the structure in
	 * the same allocation, in that order: mroce_conn_size().  rmsg and
	 * resp stay at the protocol's bounds: the receive MSN window is
	 * wire-visible (Documentation/mroce-protocol.rst, 4.3) and
	 * max_dest_rd_atomic is known only at RTR, after the allocation.
	 */
};

/* ------------------------------------------------------------------ */
/* Connection API.                                                     */

/*
 * Bytes a connection with parameters p needs: the structure and its
 * arrays sized by p (num_paths, max_inflight, snd_wnd, max_msgs,
 * path_wnd), 0 for invalid parameters.  MROCE_CONN_SIZE_MAX bounds it for
 * every valid p.
 */
size_t mroce_conn_size(const struct mroce_params *p);
#define MROCE_CONN_SIZE_MAX						\
	(sizeof(struct mroce_conn) +					\
	 MROCE_MAX_PATHS * (sizeof(struct mroce_path) +			\
			    MROCE_PATH_WND * sizeof(struct mroce_psn_ent)) + \
	 MROCE_MAX_INFLIGHT * (sizeof(struct mroce_dsn_ent) + sizeof(u32)) + \
	 MROCE_MAX_MSGS * sizeof(struct mroce_smsg) +			\
	 MROCE_MAX_INFLIGHT / 8 +					\
	 (MROCE_MAX_PATHS - 1) * MROCE_ACK_BLK_SIZE)

/*
 * Initialise c, size bytes of any memory (kvzalloc in the kernel), with
 * validated parameters.  Returns 0, or MROCE_E_INVAL for invalid
 * parameters or a size below mroce_conn_size(p).  A connection
 * re-initialised with other parameters needs their size.
 */
int mroce_conn_init(struct mroce_conn *c, size_t size,
		    const struct mroce_params *p,
		    const struct mroce_conn_ops *ops, void *ctx, u64 now_ns);

/*
 * Change, on a live connection, the parameters verbs sets only when the QP
 * goes to RTS (or changes in RTS): rto_init_ns, rto_max_ns, probe_ns,
 * retry_budget, rnr_retry and min_rnr_timer are taken from p, the rest of p
 * is ignored.  Timers already armed keep their deadline.  Returns 0, or
 * MROCE_E_INVAL (and changes nothing) when the result would be invalid.
 */
int mroce_conn_update(struct mroce_conn *c, const struct mroce_params *p);

/*
 * The response being built for tx (a READ_RESP from mroce_conn_tx(),
 * src MROCE_SRC_LOCAL_MEM) cannot be read: its memory was invalidated or
 * deregistered after the READ was checked.  The packet must not be sent;
 * the core NAKs the READ with syn (MROCE_SYN_REM_ACCESS) instead of
 * answering it and the connection moves to error (as for any access
 * error the responder detects).  Returns 0, or MROCE_E_NOMSG when tx is
 * no response of this connection.
 */
int mroce_conn_resp_abort(struct mroce_conn *c, const struct mroce_tx *tx,
			  u8 syn);

/* Queue a WR.  Returns 0, MROCE_E_NOSPC (queue full), MROCE_E_INVAL or
 * MROCE_E_STATE.
 */
int mroce_conn_post(struct mroce_conn *c, const struct mroce_wr *wr,
		    u64 now_ns);

/*
 * Receive one parsed packet.  ce: the IP header carried ECN CE.
 * Returns 0 (accepted or harmlessly dropped duplicate: MROCE_E_DUP) or a
 * negative enum mroce_err when the packet was dropped.
 */
int mroce_conn_rx(struct mroce_conn *c, const struct mroce_pkt *pkt,
		  bool ce, u64 now_ns);

/*
 * Next packet to transmit.  Returns 1 and fills *tx, or 0 when nothing
 * may be sent now (then wait for rx, post or the timer).
 */
int mroce_conn_tx(struct mroce_conn *c, u64 now_ns, struct mroce_tx *tx);

/* Earliest time mroce_conn_timer() has work, U64_MAX if none. */
u64 mroce_conn_next_timer(const struct mroce_conn *c);
/* The longest the peer may hold an ACK of this sender (its adl, decoded). */
u64 mroce_send_hold_ns(const struct mroce_conn *c);

/* Run due timers (RACK, RTO, TLP, delayed ACK, probes, steering). */
void mroce_conn_timer(struct mroce_conn *c, u64 now_ns);

/*
 * Move to error: every outstanding WR completes with status (FLUSH when
 * status is 0) and nothing more is sent.
 */
void mroce_conn_set_error(struct mroce_conn *c, u32 status);

/* True when every posted WR completed and nothing is in flight. */
bool mroce_conn_idle(const struct mroce_conn *c);

/* False once the connection failed (mroce_conn_set_error()). */
bool mroce_conn_ok(const struct mroce_conn *c);

/* What an embedder may show about a connection (debugfs, tools). */
struct mroce_conn_info {
	struct mroce_conn_stats st;
	u32 num_paths;
	bool ok;		/* see mroce_conn_ok() */
	u32 err_status;		/* MROCE_ST_* the connection failed with */
	u32 msn_out;		/* our WRs not yet completed */
	u32 resp_len;		/* READ/atomic responses being served */
	u32 cwnd;		/* its congestion group's window, bytes */
	u32 inflight;		/* window bytes in flight, all paths */
	u32 tx_seg;		/* segment size of messages posted now, bytes */
	u32 grp_members;	/* connections sharing cwnd (1: its own) */
	u32 grp_inflight;	/* their bytes in flight together */
	bool grp_wait;		/* waiting for room in the group window */
};

void mroce_conn_get_info(const struct mroce_conn *c,
			 struct mroce_conn_info *out);

/* Copy per-path telemetry. Returns MROCE_E_INVAL for a bad index. */
int mroce_conn_path_stats(const struct mroce_conn *c, u32 path,
			  struct mroce_path_stats *out);

/*
 * Consistency check of the bounded state (tests, fuzzers, debug builds).
 * Returns NULL when every invariant holds, else what is violated.
 */
const char *mroce_conn_check(const struct mroce_conn *c);

/* ------------------------------------------------------------------ */
/* Congestion groups (mroce_cc_group.c, spec 9.4).                      */

/*
 * Initialise a shared group (memory owned by the embedder, which keeps it
 * until its last member left).  ops and its three callbacks are required.
 */
void mroce_cc_group_init(struct mroce_cc_group *g,
			 const struct mroce_cc_group_ops *ops, void *gctx);

/*
 * Put c, initialised and with nothing in flight yet (right after
 * mroce_conn_init()), in g; the first member sets the group's initial
 * window from its parameters.  Takes the group lock.  Returns 0, or
 * MROCE_E_STATE (nothing changed) when c is in a group already or has
 * bytes in flight.
 */
int mroce_cc_group_join(struct mroce_conn *c, struct mroce_cc_group *g);

/*
 * Take c out of its shared group (a no-op for a private one): what it has
 * in flight stops counting, waiting members are kicked, c gets a fresh
 * private window.  Call it before re-initialising or freeing c's memory.
 * Takes the group lock.
 */
void mroce_cc_group_leave(struct mroce_conn *c);

/* True when c shares its congestion controller with other connections. */
static inline bool mroce_cc_group_shared(const struct mroce_conn *c)
{
	return c->grp->ops != NULL;
}

/* ------------------------------------------------------------------ */
/* Unreliable connected (UC) messages (mroce_uc.c).                     */

/*
 * UC has no acknowledgement, no retransmission and no congestion control:
 * the sender segments each message into mtu-sized packets on one path and
 * forgets it; the receiver assembles at most one message at a time and
 * drops any message with a missing, reordered or inconsistent packet
 * (Documentation/mroce-protocol.rst, section 3.10).  These functions are
 * pure state machines on caller memory, serialised by the embedder (the QP
 * lock), like the connection's.
 */

/*
 * MSNs ahead of the next expected one that a packet may name: a blind
 * forger hits it once in 2^12 tries (as an RC connection's DSN window of
 * 4096), and the receiver follows a sender through up to 2^20 - 1 lost
 * messages in a row.
 */
#define MROCE_UC_MSN_WND	0x100000u

/* Receiver: the message being assembled, if any. */
struct mroce_uc_rx {
	u32 msn_nxt;		/* lowest MSN a new message may take */
	u32 mtu;		/* largest payload accepted */
	bool live;		/* a message is being assembled: */
	u8 opcode;		/* its opcode and the fields every packet */
	u32 msn;		/* of it must repeat */
	u32 length;
	u64 va;
	u32 rkey;
	u32 imm;
	u32 next_off;		/* bytes accepted = offset of the next packet */
	u64 broken;		/* messages lost a packet of (since init) */
};

/* What the embedder does with a packet mroce_uc_rx_pkt() accepted. */
struct mroce_uc_step {
	bool aborted;		/* an unfinished message was abandoned first */
	bool first;		/* the packet starts a message: find its target */
	bool last;		/* once placed, the message is complete */
};

/*
 * Start receiving: isn_rx is the QP's rq_psn (the peer's sq_psn); the
 * first MSN expected is mroce_isn_start(isn_rx, MROCE_ISN_MSN).  mtu is
 * the largest payload accepted (the path MTU, at most MROCE_MAX_PAYLOAD).
 */
void mroce_uc_rx_init(struct mroce_uc_rx *u, u32 isn_rx, u32 mtu);

/*
 * A packet that passed mroce_pkt_parse() with a UC opcode.  Returns 0 when
 * its payload is to be placed (at its offset: *st says whether it starts
 * and/or completes its message), else a negative enum mroce_err and the
 * packet is dropped: MROCE_E_DUP (an offset of the current message already
 * accepted), MROCE_E_WINDOW (MSN outside [msn_nxt, msn_nxt +
 * MROCE_UC_MSN_WND)), MROCE_E_NOMSG (not a first packet, and its message
 * is not the one being assembled), MROCE_E_BOUNDS (a packet of the message
 * is missing), MROCE_E_FIELD (inconsistent with the message's first
 * packet), MROCE_E_PAYLOAD (more than mtu), MROCE_E_OPCODE (not UC).
 * st->aborted may be set with any result.
 */
int mroce_uc_rx_pkt(struct mroce_uc_rx *u, const struct mroce_pkt *pkt,
		    struct mroce_uc_step *st);

/*
 * The embedder could not place an accepted packet (no receive WQE, bad
 * rkey, ...): the message is dropped, its later packets refused (not
 * counted in broken).
 */
void mroce_uc_rx_abort(struct mroce_uc_rx *u);

/* Sender: a message to segment. */
struct mroce_uc_msg {
	u8 opcode;		/* MROCE_OP_UC_* */
	bool solicited;		/* UC_SEND*, UC_WRITE_IMM: on the last packet */
	u32 msn;
	u32 length;		/* <= MROCE_MAX_MSG_LEN */
	u64 va;			/* UC_WRITE* */
	u32 rkey;
	u32 imm;		/* *_IMM */
};

/*
 * Fill *pkt (headers; payload left to the caller) with the segment of m at
 * byte offset off (a multiple of mtu, below m->length, or 0 for an empty
 * message), for dqpn with psn.  Returns the segment's payload length, or a
 * negative enum mroce_err for an invalid m, off or mtu.
 */
int mroce_uc_seg(const struct mroce_uc_msg *m, u32 off, u32 mtu, u32 dqpn,
		 u32 psn, struct mroce_pkt *pkt);

#ifdef __cplusplus
}
#endif

#endif /* MROCE_CORE_H */
