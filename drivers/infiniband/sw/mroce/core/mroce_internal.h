/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * helpers shared by the core's .c files; not API.
 * Same locking rule as mroce_core.h: the caller serialises every call on
 * a connection.
 */
#ifndef MROCE_INTERNAL_H
#define MROCE_INTERNAL_H

#include "mroce_core.h"

#ifdef __cplusplus
extern "C" {
#endif

enum mroce_dsn_state {
	MROCE_DSN_FREE,
	MROCE_DSN_INFLIGHT,	/* at least one live copy on some path */
	MROCE_DSN_LOST,		/* waiting in the retransmit queue */
	MROCE_DSN_DELIVERED,
};

#define MROCE_PPM		1000000u
#define MROCE_NSEC_PER_USEC	1000u
#define MROCE_LOSS_G_SHIFT	6	/* loss EWMA gain 1/64 per packet */

static inline struct mroce_dsn_ent *mroce_dsn_ent(struct mroce_conn *c,
						  u32 dsn)
{
	return &c->dsn[dsn & (c->p.snd_wnd - 1)];
}

static inline struct mroce_smsg *mroce_smsg_of(struct mroce_conn *c, u32 msn)
{
	return &c->smsg[msn & (c->p.max_msgs - 1)];
}

/* The send record of psn on path p (its window holds p.path_wnd PSNs). */
static inline struct mroce_psn_ent *mroce_psn_of(const struct mroce_conn *c,
						 const struct mroce_path *p,
						 u32 psn)
{
	return &p->win[psn & (c->p.path_wnd - 1)];
}

static inline struct mroce_rmsg *mroce_rmsg_of(struct mroce_conn *c, u32 msn)
{
	return &c->rmsg[msn % MROCE_MAX_MSGS];
}

static inline u32 mroce_ts_us(u64 now_ns)
{
	return (u32)mroce_div64(now_ns, MROCE_NSEC_PER_USEC);
}

/*
 * The ACK hold an adl code allows (spec 6.2), on either end: 2^(adl-1) us
 * capped by ack_delay_max_ns; ack_delay_ns for code 0 (or a code the
 * parser would have refused).
 */
static inline u64 mroce_adl_hold_ns(const struct mroce_params *p, u8 adl)
{
	u64 d;

	if (!adl || adl > MROCE_ADL_MAX)
		return p->ack_delay_ns;
	d = (u64)MROCE_NSEC_PER_USEC << (adl - 1);
	return d < p->ack_delay_max_ns ? d : p->ack_delay_max_ns;
}

/* True when dsn is in the sender's window [una, nxt). */
static inline bool mroce_dsn_in_flight(const struct mroce_conn *c, u32 dsn)
{
	return dsn - c->snd_dsn_una < c->snd_dsn_nxt - c->snd_dsn_una;
}

/* True when dsn needs no more sending: delivered, or no longer ours. */
static inline bool mroce_dsn_done(struct mroce_conn *c, u32 dsn)
{
	struct mroce_dsn_ent *ent = mroce_dsn_ent(c, dsn);

	return !mroce_dsn_in_flight(c, dsn) || ent->dsn != dsn ||
	       ent->state == MROCE_DSN_DELIVERED;
}

/* Bytes a packet of len payload bytes occupies in a path's window. */
static inline u32 mroce_wlen(u32 len)
{
	return len + MROCE_PKT_OVERHEAD;
}

/*
 * Segmentation, checked by the receiver of a message (request or READ
 * response) so that "every byte placed" can be counted exactly: every
 * packet but the last carries seg bytes at a multiple of seg, the last
 * the rest, and the packets of a message have contiguous DSNs (the
 * packet at offset k * seg has DSN base + k).  seg is the message's
 * segment size, named by each of its packets (mroce_rx_seg()).
 */
static inline bool mroce_seg_ok(u32 seg, u32 off, u32 len, u32 total)
{
	if (off % seg)
		return false;
	if (!total)
		return !off && !len;
	return off < total && len == min_t(u32, seg, total - off);
}

/* Packets of a message of len bytes cut into seg-byte segments (>= 1). */
static inline u32 mroce_seg_count(u32 len, u32 seg)
{
	return len ? (len - 1) / seg + 1 : 1;
}

/* The base header's seg for a message cut into seg bytes: 0 for the mtu. */
static inline u16 mroce_wire_seg(const struct mroce_conn *c, u32 seg)
{
	return seg != c->p.mtu ? (u16)seg : 0;
}

/* The largest segment this end accepts (mroce_params.max_seg). */
static inline u32 mroce_rx_seg_max(const struct mroce_conn *c)
{
	return max_t(u32, c->p.mtu, c->p.max_seg);
}

/*
 * The segment size a received RC data packet names (0 on the wire: the
 * path MTU), or 0 when it is one this end does not accept.
 */
static inline u32 mroce_rx_seg(const struct mroce_conn *c,
			       const struct mroce_pkt *pkt)
{
	u32 seg = pkt->seg ? pkt->seg : c->p.mtu;

	return seg >= MROCE_SEG_MIN && seg <= mroce_rx_seg_max(c) ? seg : 0;
}

/* Work request opcodes: responses, receive WQEs, wire opcode (0: none). */
static inline bool mroce_wop_needs_resp(u32 op)
{
	return op == MROCE_WOP_READ || op == MROCE_WOP_CMP_SWAP ||
	       op == MROCE_WOP_FETCH_ADD;
}
static inline bool mroce_wop_uses_rq(u32 op)
{
	return op == MROCE_WOP_SEND || op == MROCE_WOP_SEND_IMM ||
	       op == MROCE_WOP_SEND_INV || op == MROCE_WOP_WRITE_IMM;
}
static inline u8 mroce_wop_opcode(u32 op)
{
	static const u8 map[] = {
		[MROCE_WOP_SEND] = MROCE_OP_SEND,
		[MROCE_WOP_SEND_IMM] = MROCE_OP_SEND_IMM,
		[MROCE_WOP_SEND_INV] = MROCE_OP_SEND_INV,
		[MROCE_WOP_WRITE] = MROCE_OP_WRITE,
		[MROCE_WOP_WRITE_IMM] = MROCE_OP_WRITE_IMM,
		[MROCE_WOP_READ] = MROCE_OP_READ_REQ,
		[MROCE_WOP_CMP_SWAP] = MROCE_OP_CMP_SWAP,
		[MROCE_WOP_FETCH_ADD] = MROCE_OP_FETCH_ADD,
	};

	return op < ARRAY_SIZE(map) ? map[op] : 0;
}
/*
 * Report an event (struct mroce_event fields as designated initialisers):
 *	mroce_ev(c, .type = MROCE_EV_LOSS, .path = i, .count = n);
 * Nothing is evaluated unless the embedder listens (mroce_ev_on()).
 */
static inline bool mroce_ev_on(const struct mroce_conn *c)
{
	return mroce_ev_enabled() && c->ops && c->ops->event;
}

#define mroce_ev(c, ...)						\
	do {								\
		if (unlikely(mroce_ev_on(c))) {				\
			const struct mroce_event mroce_ev_ = { __VA_ARGS__ }; \
			(c)->ops->event((c)->ctx, &mroce_ev_);		\
		}							\
	} while (0)

/* mroce_conn.c: fail the connection (status), reporting why. */
void mroce_conn_fail(struct mroce_conn *c, u32 status, u8 why, u8 syn);
void mroce_conn_stop(struct mroce_conn *c, u32 status);

/* mroce_path.c: scheduler, telemetry, steering, up/down. */
void mroce_path_init(struct mroce_conn *c, u32 i, u64 now);
int mroce_path_pick(struct mroce_conn *c, u32 wlen);
bool mroce_path_has_room(const struct mroce_conn *c, u32 i, u32 wlen);
void mroce_path_new_sport(struct mroce_conn *c, u32 i, u8 why);
#define MROCE_RTT_SANE_NS	10000000000ULL	/* ignore samples > 10 s */
/* an outage's rounds whose probes the group deferred are excused this long */
#define MROCE_PROBE_DEFER_MAX_NS	60000000000ULL

void mroce_path_down(struct mroce_conn *c, u32 i, u64 now);
void mroce_path_up(struct mroce_conn *c, u32 i, u64 now);
void mroce_path_steer(struct mroce_conn *c, u64 now);
u32 mroce_paths_up(const struct mroce_conn *c);
u16 mroce_ack_sport(const struct mroce_conn *c, u32 i);

/* mroce_loss.c: loss recovery. */
u64 mroce_loss_rto(const struct mroce_conn *c, const struct mroce_path *p);
u64 mroce_loss_reo_wnd(const struct mroce_conn *c, const struct mroce_path *p);
u64 mroce_loss_down_round_ns(const struct mroce_conn *c);
void mroce_psn_resolve(struct mroce_conn *c, struct mroce_path *p,
		       struct mroce_psn_ent *e);
void mroce_path_advance_una(const struct mroce_conn *c,
			    struct mroce_path *p);
void mroce_loss_queue_retx(struct mroce_conn *c, struct mroce_dsn_ent *ent);
void mroce_loss_requeue_path(struct mroce_conn *c, u32 i);
void mroce_loss_rack(struct mroce_conn *c, u32 i, u64 now);
u32 mroce_loss_spurious(struct mroce_conn *c, struct mroce_path *p,
			const struct mroce_ack *a);
bool mroce_loss_timer(struct mroce_conn *c, u64 now);
u64 mroce_loss_next_timer(const struct mroce_conn *c);

/* mroce_cc.c: congestion control, per path and per connection. */
void mroce_cc_init(struct mroce_conn *c, struct mroce_path *p);
void mroce_cc_conn_init(struct mroce_conn *c);
u32 mroce_cc_conn_inflight(const struct mroce_conn *c);
u32 mroce_cc_conn_max(const struct mroce_conn *c);
void mroce_cc_rtt_sample(struct mroce_conn *c, struct mroce_path *p,
			 u64 rtt, u64 raw);
void mroce_cc_on_ack(struct mroce_conn *c, struct mroce_path *p,
		     u32 acked_bytes, u32 acked_pkts, u32 ce_pkts, u64 rtt,
		     u64 now);
void mroce_cc_on_loss(struct mroce_conn *c, struct mroce_path *p, u32 pkts,
		      u64 now);
void mroce_cc_on_rto(struct mroce_conn *c, struct mroce_path *p, u64 rto,
		     u64 now);
void mroce_cc_conn_clamp(struct mroce_conn *c);

/*
 * mroce_cc_group.c: the connection window's state, shared or private.
 * c->grp's fields are read and written between these two (a no-op for a
 * private group), with c's serialisation held.
 */
static inline void mroce_cc_group_lock(const struct mroce_conn *c)
{
	if (c->grp->ops)
		c->grp->ops->lock(c->grp->gctx);
}

static inline void mroce_cc_group_unlock(const struct mroce_conn *c)
{
	if (c->grp->ops)
		c->grp->ops->unlock(c->grp->gctx);
}

void mroce_cc_group_private(struct mroce_conn *c);
void mroce_cc_inflight_add(struct mroce_conn *c, u32 w);
void mroce_cc_inflight_sub(struct mroce_conn *c, u32 w);
void mroce_cc_group_release(struct mroce_conn *c, bool inflight);
bool mroce_cc_group_room(struct mroce_conn *c, u32 wlen);
bool mroce_cc_group_probe(struct mroce_conn *c, u64 now, u64 *next_ns);
void mroce_cc_group_info(const struct mroce_conn *c,
			 struct mroce_conn_info *out);
const char *mroce_cc_group_check(const struct mroce_conn *c);

/* mroce_send.c: sender engine. */
void mroce_send_ack_blks(struct mroce_conn *c, const struct mroce_pkt *pkt,
			 u64 now);
int mroce_send_ack(struct mroce_conn *c, const struct mroce_pkt *pkt,
		   u64 now);
int mroce_send_next(struct mroce_conn *c, u64 now, struct mroce_tx *tx);
void mroce_send_timer(struct mroce_conn *c, u64 now);
u64 mroce_send_next_timer(const struct mroce_conn *c);
int mroce_send_on_resp(struct mroce_conn *c, const struct mroce_pkt *pkt);
void mroce_send_complete(struct mroce_conn *c);

/* mroce_recv.c: receiver engine. */
int mroce_recv_data(struct mroce_conn *c, const struct mroce_pkt *pkt,
		    bool ce, u64 now);
u8 mroce_send_adl(const struct mroce_conn *c);
void mroce_send_srtt_changed(struct mroce_conn *c);
u32 mroce_resp_unsent(const struct mroce_conn *c);
void mroce_recv_probe(struct mroce_conn *c, const struct mroce_pkt *pkt,
		      u64 now);
int mroce_recv_next_ack(struct mroce_conn *c, u64 now, struct mroce_tx *tx);
void mroce_recv_timer(struct mroce_conn *c, u64 now);
u64 mroce_recv_next_timer(const struct mroce_conn *c);
void mroce_recv_advance(struct mroce_conn *c);

#ifdef __cplusplus
}
#endif

#endif /* MROCE_INTERNAL_H */
