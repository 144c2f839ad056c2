// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * the receiver engine: per-path SACK scoreboards (mroce_sack.c),
 * connection-level DSN dedupe, out-of-order placement of requests,
 * in-order completion/execution at the responder and ACK/NAK generation.
 *
 * State: every path's rcv_* fields (scoreboard and ACK trigger),
 * c->rcv_dsn_cum/rcv_dsn_map (DSNs [cum, cum + max_inflight) seen),
 * c->rmsg[] (peer requests in [rcv_msn_cum, + MROCE_MAX_MSGS)) and the
 * single pending NAK.  Protected by the caller's serialisation.
 */
#include "mroce_internal.h"


static void mroce_recv_note(struct mroce_conn *c, struct mroce_path *p,
			    const struct mroce_pkt *pkt, bool mark, u64 now)
{
	bool gap = pkt->psn != p->rcv_sb.high, dup = false;
	u64 due;

	if (mark)
		dup = mroce_sack_rx_mark(&p->rcv_sb, pkt->psn);
	p->trig_psn = pkt->psn;
	p->trig_dsn = pkt->dsn;
	p->trig_msn = pkt->msn;
	p->trig_ts = pkt->tx_ts;
	p->trig_rx_ns = now;
	/*
	 * ack_every counts the connection's packets, not the path's: one ACK
	 * acknowledges every path with news (its blocks), and a path carries
	 * about one packet per round trip.
	 */
	c->rcv_unacked++;
	if (!p->ack_now) {
		p->ack_now = true;
		if (gap)
			p->ack_why = MROCE_ACKW_GAP;
		else if (dup)
			p->ack_why = MROCE_ACKW_DUP;
		else if (pkt->flags & MROCE_F_ACKREQ)
			p->ack_why = MROCE_ACKW_REQ;
		else if (c->rcv_unacked >= c->p.ack_every)
			p->ack_why = MROCE_ACKW_EVERY;
		else
			p->ack_now = false;
	}
	/* what the sender allows (a fraction of its RTT) */
	due = now + mroce_adl_hold_ns(&c->p, pkt->adl);
	if (!p->ack_pending || due < p->ack_due_ns)
		p->ack_due_ns = due;
	p->ack_pending = true;
}

/* ---------------------------------------------------------------- */
/* DSN dedupe.                                                       */

static bool mroce_dsn_seen(const struct mroce_conn *c, u32 dsn)
{
	u32 i = dsn & (c->p.max_inflight - 1);

	return mroce_bit_test(c->rcv_dsn_map, i);
}

static void mroce_dsn_mark(struct mroce_conn *c, u32 dsn)
{
	u32 mask = c->p.max_inflight - 1, i;

	mroce_bit_set(c->rcv_dsn_map, dsn & mask);
	for (;;) {
		i = c->rcv_dsn_cum & mask;
		if (!mroce_bit_test(c->rcv_dsn_map, i))
			break;
		mroce_bit_clear(c->rcv_dsn_map, i);
		c->rcv_dsn_cum++;
	}
}

/* ---------------------------------------------------------------- */
/* Requests.                                                         */

static u8 mroce_syn_of(int ret)
{
	if (ret == -MROCE_SYN_REM_ACCESS || ret == -MROCE_SYN_INV_REQ)
		return (u8)-ret;
	return MROCE_SYN_REM_OP;
}

static u32 mroce_pkt_msg_len(const struct mroce_pkt *pkt)
{
	if (pkt->ext & MROCE_EXT_RETH)
		return pkt->reth.length;
	if (pkt->ext & MROCE_EXT_SETH)
		return pkt->seth.length;
	return 8;	/* atomics */
}

static bool mroce_rmsg_consistent(const struct mroce_rmsg *r,
				  const struct mroce_pkt *pkt)
{
	if (r->opcode != pkt->opcode || r->total != mroce_pkt_msg_len(pkt))
		return false;
	if ((pkt->ext & MROCE_EXT_SETH) && r->rq_seq != pkt->seth.rq_seq)
		return false;
	if ((pkt->ext & MROCE_EXT_RETH) &&
	    (r->va != pkt->reth.va || r->rkey != pkt->reth.rkey))
		return false;
	if ((pkt->ext & MROCE_EXT_IMETH) && r->imm != pkt->imm)
		return false;
	if (r->xrc != !!(pkt->flags & MROCE_F_XRC) ||
	    (r->xrc && r->xrc_srqn != pkt->xrc_srqn))
		return false;
	return true;
}

/* Returns 0 accepted, 1 receiver not ready, < 0 drop without marking. */
static int mroce_recv_request(struct mroce_conn *c,
			      const struct mroce_pkt *pkt)
{
	bool data = pkt->ext & (MROCE_EXT_RETH | MROCE_EXT_SETH) &&
		    pkt->opcode != MROCE_OP_READ_REQ;
	u32 seg = mroce_rx_seg(c, pkt);
	u32 base;
	struct mroce_rmsg *r;
	struct mroce_place pl;
	int ret = 0;

	if (pkt->msn - c->rcv_msn_cum >= MROCE_MAX_MSGS)
		return MROCE_E_WINDOW;
	/*
	 * Completion counts placed bytes: it is exact only if no offset can
	 * come twice under two DSNs (the DSN dedupe stops the same DSN
	 * twice).  So a packet is one segment (mroce_seg_ok()) and its DSN
	 * is the message's base DSN + its segment index; anything else is
	 * dropped unrecorded.
	 */
	if (!seg)
		return MROCE_E_PAYLOAD;
	if (data && !mroce_seg_ok(seg, pkt->offset, pkt->payload_len,
				  mroce_pkt_msg_len(pkt)))
		return MROCE_E_BOUNDS;
	if (!data && (pkt->offset || pkt->payload_len))
		return MROCE_E_BOUNDS;
	base = pkt->dsn - pkt->offset / seg;
	r = mroce_rmsg_of(c, pkt->msn);
	if (r->in_use && r->msn == pkt->msn &&
	    (r->base_dsn != base || (data && r->seg != seg)))
		return MROCE_E_FIELD;
	if (!r->in_use) {
		memset(r, 0, sizeof(*r));
		r->in_use = 1;
		r->msn = pkt->msn;
		r->opcode = pkt->opcode;
		r->total = mroce_pkt_msg_len(pkt);
		r->rq_seq = pkt->seth.rq_seq;
		r->imm = pkt->imm;
		if (pkt->ext & MROCE_EXT_RETH) {
			r->va = pkt->reth.va;
			r->rkey = pkt->reth.rkey;
		}
		if (pkt->ext & MROCE_EXT_AETH) {
			r->va = pkt->aeth.va;
			r->rkey = pkt->aeth.rkey;
			r->swap = pkt->aeth.swap;
			r->compare_add = pkt->aeth.compare_add;
		}
		r->xrc = !!(pkt->flags & MROCE_F_XRC);
		r->xrc_srqn = pkt->xrc_srqn;
		r->have_len = 1;
		r->base_dsn = base;
		r->seg = seg;
		r->have_base = 1;
		/* XRC target: every request names an SRQ; elsewhere none */
		if (r->xrc != c->p.xrc_tgt)
			r->fail_syn = MROCE_SYN_INV_REQ;
	} else if (!mroce_rmsg_consistent(r, pkt)) {
		r->fail_syn = MROCE_SYN_INV_REQ;
	}
	r->path = pkt->path;
	r->dsn = pkt->dsn;
	r->psn = pkt->psn;
	if (pkt->flags & MROCE_F_SOLICITED)
		r->flags |= MROCE_F_SOLICITED;
	if (r->fail_syn)
		goto out;

	memset(&pl, 0, sizeof(pl));
	pl.msn = pkt->msn;
	pl.rq_seq = r->rq_seq;
	pl.offset = pkt->offset;
	pl.msg_len = r->total;
	pl.data = pkt->payload;
	pl.len = pkt->payload_len;
	pl.first = pkt->offset == 0;
	pl.xrc = r->xrc;
	pl.xrc_srqn = r->xrc_srqn;
	switch (pkt->opcode) {
	case MROCE_OP_SEND:
	case MROCE_OP_SEND_IMM:
	case MROCE_OP_SEND_INV:
		pl.kind = MROCE_PLACE_SEND;
		if (c->ops && c->ops->place)
			ret = c->ops->place(c->ctx, &pl);
		break;
	case MROCE_OP_WRITE:
	case MROCE_OP_WRITE_IMM:
		pl.kind = MROCE_PLACE_WRITE;
		pl.va = r->va;
		pl.rkey = r->rkey;
		if (pl.len && c->ops && c->ops->place)
			ret = c->ops->place(c->ctx, &pl);
		break;
	default:
		/* READ_REQ, atomics: executed in order by mroce_recv_advance */
		r->placed = r->total;
		r->done = 1;
		goto out;
	}
	if (ret == -MROCE_SYN_RNR)
		return 1;
	if (ret) {
		r->fail_syn = mroce_syn_of(ret);
		goto out;
	}
	/* each DSN once, one DSN per segment: every byte covered once */
	r->placed += pkt->payload_len;
	if (r->placed == r->total)
		r->done = 1;
out:
	return 0;
}

/* psn/dsn: a packet of message msn (the requester checks it). */
static void mroce_nak_set(struct mroce_conn *c, u8 syn, u16 path, u32 psn,
			  u32 dsn, u32 msn)
{
	/* a pending fatal NAK is never replaced */
	if (c->nak_pending && c->nak_syn != MROCE_SYN_RNR)
		return;
	c->nak_pending = true;
	c->nak_syn = syn;
	c->nak_path = path;
	c->nak_psn = psn;
	c->nak_dsn = dsn;
	c->nak_msn = msn;
}

static int mroce_resp_push(struct mroce_conn *c, const struct mroce_rmsg *r,
			   u8 opcode, u64 orig)
{
	struct mroce_resp *s;
	u32 slot;

	if (c->resp_len >= MROCE_MAX_RESP)
		return MROCE_E_NOSPC;
	slot = (c->resp_head + c->resp_len) % MROCE_MAX_RESP;
	s = &c->resp[slot];
	memset(s, 0, sizeof(*s));
	s->in_use = 1;
	s->opcode = opcode;
	s->msn = r->msn;
	s->req_dsn = r->dsn;
	s->req_path = r->path;
	s->va = r->va;
	s->rkey = r->rkey;
	s->xrc = r->xrc;
	s->xrc_srqn = r->xrc_srqn;
	s->orig = orig;
	if (opcode == MROCE_OP_READ_RESP) {
		s->len = r->total;
		s->seg = c->tx_seg;
		s->pkts = mroce_seg_count(r->total, s->seg);
	} else {
		s->len = 0;
		s->pkts = 1;
	}
	c->resp_len++;
	return 0;
}

/*
 * Responses executed but not yet sent in full.  A requester that keeps
 * max_rd_atomic (<= our max_dest_rd_atomic) READ/atomics outstanding can
 * never have more: it completes one only after its whole response
 * arrived, i.e. after we sent all of it.  Sent responses stay cached
 * until acknowledged, bounded by MROCE_MAX_RESP (we then wait).
 */
u32 mroce_resp_unsent(const struct mroce_conn *c)
{
	const struct mroce_resp *s;
	u32 k, n = 0;

	for (k = 0; k < c->resp_len; k++) {
		s = &c->resp[(c->resp_head + k) % MROCE_MAX_RESP];
		n += s->in_use && s->pkts_sent < s->pkts;
	}
	return n;
}

static void mroce_recv_cqe(struct mroce_conn *c, const struct mroce_rmsg *r)
{
	struct mroce_completion cq;

	memset(&cq, 0, sizeof(cq));
	cq.kind = MROCE_CQE_RECV;
	cq.status = MROCE_ST_SUCCESS;
	cq.op = r->opcode;
	cq.msn = r->msn;
	cq.rq_seq = r->rq_seq;
	cq.byte_len = r->opcode == MROCE_OP_WRITE_IMM ? 0 : r->total;
	cq.imm = r->imm;
	cq.with_imm = r->opcode == MROCE_OP_SEND_IMM ||
		      r->opcode == MROCE_OP_WRITE_IMM;
	cq.with_inv = r->opcode == MROCE_OP_SEND_INV;
	cq.solicited = !!(r->flags & MROCE_F_SOLICITED);
	cq.xrc = r->xrc;
	cq.xrc_srqn = r->xrc_srqn;
	c->st.completions++;
	if (c->ops && c->ops->complete)
		c->ops->complete(c->ctx, &cq);
}

static u32 mroce_syn_to_status(u8 syn)
{
	if (syn == MROCE_SYN_REM_ACCESS)
		return MROCE_ST_REM_ACCESS;
	if (syn == MROCE_SYN_INV_REQ)
		return MROCE_ST_REM_INV_REQ;
	return MROCE_ST_REM_OP;
}

/*
 * Complete (SEND, WRITE_IMM) or execute (READ, atomics) peer messages in
 * MSN order once all their bytes are placed: verbs ordering.  READ and
 * atomics wait for a free response slot; the response slot is the
 * responder's cache, re-sent by the sender engine until acknowledged and
 * never re-executed (duplicates are stopped by the DSN dedupe).
 */
void mroce_recv_advance(struct mroce_conn *c)
{
	struct mroce_rmsg *r;
	u64 orig;
	int ret;

	while (c->state == MROCE_CONN_OK) {
		r = mroce_rmsg_of(c, c->rcv_msn_cum);
		if (!r->in_use || r->msn != c->rcv_msn_cum)
			break;
		if (!r->fail_syn && !r->done)
			break;
		if (!r->fail_syn) {
			c->exec_xrc = r->xrc;
			c->exec_xrc_srqn = r->xrc_srqn;
			switch (r->opcode) {
			case MROCE_OP_READ_REQ:
				if (c->resp_len >= MROCE_MAX_RESP)
					return;
				if (mroce_resp_unsent(c) >=
				    c->p.max_dest_rd_atomic) {
					r->fail_syn = MROCE_SYN_INV_REQ;
					break;
				}
				ret = c->ops && c->ops->read_check ?
				      c->ops->read_check(c->ctx, r->va, r->rkey,
							 r->total) : 0;
				if (ret)
					r->fail_syn = mroce_syn_of(ret);
				else
					mroce_resp_push(c, r, MROCE_OP_READ_RESP,
							0);
				break;
			case MROCE_OP_CMP_SWAP:
			case MROCE_OP_FETCH_ADD:
				if (c->resp_len >= MROCE_MAX_RESP)
					return;
				if (mroce_resp_unsent(c) >=
				    c->p.max_dest_rd_atomic) {
					r->fail_syn = MROCE_SYN_INV_REQ;
					break;
				}
				orig = 0;
				ret = c->ops && c->ops->atomic ?
				      c->ops->atomic(c->ctx,
						     r->opcode == MROCE_OP_CMP_SWAP ?
						     MROCE_WOP_CMP_SWAP :
						     MROCE_WOP_FETCH_ADD,
						     r->va, r->rkey, r->swap,
						     r->compare_add, &orig) :
				      -MROCE_SYN_REM_OP;
				if (ret)
					r->fail_syn = mroce_syn_of(ret);
				else
					mroce_resp_push(c, r,
							MROCE_OP_ATOMIC_RESP,
							orig);
				break;
			case MROCE_OP_WRITE:
				break;
			case MROCE_OP_SEND_INV:
				ret = c->ops && c->ops->invalidate ?
				      c->ops->invalidate(c->ctx, r->imm) : 0;
				if (ret)
					r->fail_syn = mroce_syn_of(ret);
				else
					mroce_recv_cqe(c, r);
				break;
			default:
				mroce_recv_cqe(c, r);
				break;
			}
		}
		if (r->fail_syn) {
			mroce_nak_set(c, r->fail_syn, r->path, r->psn, r->dsn,
				      r->msn);
			r->in_use = 0;
			c->rcv_msn_cum++;
			mroce_conn_fail(c, mroce_syn_to_status(r->fail_syn),
					MROCE_EVR_NAK_TX, r->fail_syn);
			return;
		}
		r->in_use = 0;
		c->rcv_msn_cum++;
	}
}

#define MROCE_RCV_PSN_WND	(1u << 16)

/*
 * Before anything was received: a peer still at RTR when it answered our
 * first READ did not know its isn_tx (our isn_rx's counterpart) and used
 * the LATE spaces of its isn_rx, which is our isn_tx (mroce_conn.c).
 * Follow it if the packet's DSN is in that window.
 */
static void mroce_recv_late(struct mroce_conn *c, u32 dsn)
{
	u32 late = mroce_isn_start(c->p.isn_tx, MROCE_ISN_DSN_LATE), i;

	if (dsn - late >= c->p.max_inflight)
		return;
	c->rcv_dsn_cum = late;
	for (i = 0; i < c->p.num_paths; i++)
		mroce_sack_rx_init(&c->path[i].rcv_sb,
				   mroce_isn_start(c->p.isn_tx,
						   MROCE_ISN_PSN_LATE + i));
}

int mroce_recv_data(struct mroce_conn *c, const struct mroce_pkt *pkt,
		    bool ce, u64 now)
{
	struct mroce_path *p;
	u32 off;
	int ret;

	if (pkt->path >= c->p.num_paths)
		return MROCE_E_PATH;
	p = &c->path[pkt->path];
	c->st.rx_data++;
	if (ce)
		p->rcv_ce++;
	if (c->state != MROCE_CONN_OK)
		return MROCE_E_STATE;
	if (pkt->payload_len > mroce_rx_seg_max(c)) {
		c->st.rx_drop++;
		return MROCE_E_PAYLOAD;
	}

	/*
	 * Windows (Documentation/mroce-protocol.rst, "Acceptance"): DSN in
	 * [cum - max_inflight, cum + max_inflight) (below cum: a duplicate
	 * the sender may still resend), PSN within MROCE_RCV_PSN_WND of the
	 * path's rcv_sb.high.  Everything else is dropped unrecorded: it can
	 * move no scoreboard.
	 */
	if (!c->rx_started && !c->p.isn_tx_late &&
	    pkt->dsn - c->rcv_dsn_cum >= c->p.max_inflight)
		mroce_recv_late(c, pkt->dsn);
	off = pkt->dsn - c->rcv_dsn_cum;
	if ((off >= c->p.max_inflight &&
	     c->rcv_dsn_cum - pkt->dsn > c->p.max_inflight) ||
	    pkt->psn - p->rcv_sb.high + MROCE_RCV_PSN_WND >=
	    2 * MROCE_RCV_PSN_WND) {
		c->st.rx_drop++;
		return MROCE_E_WINDOW;
	}
	c->rx_started = true;
	if (off >= c->p.max_inflight || mroce_dsn_seen(c, pkt->dsn))
		goto dup;

	if (pkt->opcode == MROCE_OP_READ_RESP ||
	    pkt->opcode == MROCE_OP_ATOMIC_RESP) {
		ret = mroce_send_on_resp(c, pkt);
		if (ret == MROCE_E_STATE)
			return ret;
		/* bogus responses are consumed so they are not resent */
		mroce_dsn_mark(c, pkt->dsn);
		mroce_recv_note(c, p, pkt, true, now);
		if (ret) {
			c->st.rx_drop++;
			c->st.rx_resp_invalid++;
		}
		return ret;
	}

	ret = mroce_recv_request(c, pkt);
	if (ret < 0) {
		c->st.rx_drop++;
		return ret;
	}
	if (ret == 1) {
		/* not accepted: neither DSN nor PSN recorded */
		c->st.nak_tx++;
		mroce_nak_set(c, MROCE_SYN_RNR, pkt->path, pkt->psn, pkt->dsn,
			      pkt->msn);
		mroce_ev(c, .type = MROCE_EV_RNR, .reason = MROCE_EVR_TX,
			 .path = pkt->path, .psn = pkt->psn, .dsn = pkt->dsn,
			 .msn = pkt->msn, .a = c->p.min_rnr_timer);
		mroce_recv_note(c, p, pkt, false, now);
		return 0;
	}
	mroce_dsn_mark(c, pkt->dsn);
	mroce_recv_note(c, p, pkt, true, now);
	mroce_recv_advance(c);
	return 0;
dup:
	c->st.rx_dup++;
	mroce_recv_note(c, p, pkt, true, now);
	return MROCE_E_DUP;
}

void mroce_recv_probe(struct mroce_conn *c, const struct mroce_pkt *pkt,
		      u64 now)
{
	struct mroce_path *p;

	if (pkt->path >= c->p.num_paths)
		return;
	p = &c->path[pkt->path];
	p->trig_psn = 0;
	p->trig_dsn = 0;
	p->trig_msn = 0;
	p->trig_ts = pkt->tx_ts;
	p->trig_rx_ns = now;
	if (!p->ack_now)
		p->ack_why = MROCE_ACKW_OTHER;
	p->ack_now = true;
	p->ack_pending = true;
}

/* ---------------------------------------------------------------- */
/* ACK generation.                                                   */

/*
 * How long the receiver held path p's trigger before acknowledging it, so
 * that the sender's RTT sample leaves the hold out (spec 6.1, 6.3).
 */
static u32 mroce_ack_delay_us(const struct mroce_path *p, u64 now)
{
	u64 d;

	if (!p->trig_rx_ns || now <= p->trig_rx_ns)
		return 0;
	d = mroce_div64(now - p->trig_rx_ns, MROCE_NSEC_PER_USEC);
	return d > U32_MAX ? U32_MAX : (u32)d;
}

static void mroce_recv_build_ack(struct mroce_conn *c, u32 i, u64 now,
				 struct mroce_tx *tx)
{
	struct mroce_path *p = &c->path[i];
	struct mroce_pkt *pkt = &tx->pkt;

	memset(tx, 0, sizeof(*tx));
	pkt->version = MROCE_WIRE_VERSION;
	pkt->opcode = MROCE_OP_ACK;
	pkt->path = i;
	pkt->dqpn = c->p.dqpn;
	pkt->psn = p->trig_psn;
	pkt->dsn = p->trig_dsn;
	pkt->msn = p->trig_msn;
	pkt->tx_ts = mroce_ts_us(now);
	pkt->ext = MROCE_EXT_ACKETH;
	mroce_sack_rx_fill(&p->rcv_sb, &pkt->ack);
	pkt->ack.ecn_ce = p->rcv_ce;
	pkt->ack.echo_ts = p->trig_ts;
	pkt->ack.ack_delay_us = mroce_ack_delay_us(p, now);
	pkt->ack.cum_dsn = c->rcv_dsn_cum;
	pkt->ack.cmpl_msn = c->rcv_msn_cum;
	/* what we accept, so that the peer may cut larger segments */
	pkt->ack.max_seg = c->p.max_seg > c->p.mtu ? c->p.max_seg : 0;
	tx->sport = mroce_ack_sport(c, i);
	c->st.tx_acks++;
}

/*
 * The other paths with news (an ACK pending or due) ride along as blocks
 * of the ACK of path i, so one packet acknowledges them all.  The blocks
 * fit in mtu - ACKETH bytes, so an ACK is never longer than the largest
 * data packet (BTH + mtu); paths left over send their own ACK next.
 */
static void mroce_recv_add_blks(struct mroce_conn *c, u32 i, u64 now,
				struct mroce_tx *tx)
{
	u32 k, j, n = 0, max;
	struct mroce_path *q;
	struct mroce_ack a;

	max = (c->p.mtu - MROCE_ACKETH_SIZE) / MROCE_ACK_BLK_SIZE;
	if (max > MROCE_ACK_MAX_BLKS)
		max = MROCE_ACK_MAX_BLKS;
	for (k = 1; k < c->p.num_paths && n < max; k++) {
		j = (i + k) % c->p.num_paths;
		q = &c->path[j];
		if (!q->ack_pending && !q->ack_now)
			continue;
		memset(&a, 0, sizeof(a));
		mroce_sack_rx_fill(&q->rcv_sb, &a);
		a.ecn_ce = q->rcv_ce;
		a.echo_ts = q->trig_ts;
		a.ack_delay_us = mroce_ack_delay_us(q, now);
		mroce_ack_blk_put(c->ack_blk + n * MROCE_ACK_BLK_SIZE, (u16)j,
				  &a);
		q->ack_now = false;
		q->ack_pending = false;
		n++;
	}
	if (!n)
		return;
	tx->src = MROCE_SRC_PKT;
	tx->pkt.payload = c->ack_blk;
	tx->pkt.payload_len = (u16)(n * MROCE_ACK_BLK_SIZE);
	c->st.tx_ack_blks += n;
}

int mroce_recv_next_ack(struct mroce_conn *c, u64 now, struct mroce_tx *tx)
{
	struct mroce_path *p;
	u32 i;

	if (c->nak_pending) {
		c->nak_pending = false;
		i = c->nak_path < c->p.num_paths ? c->nak_path : 0;
		mroce_recv_build_ack(c, i, now, tx);
		c->st.tx_ack_why[MROCE_ACKW_OTHER]++;
		tx->pkt.psn = c->nak_psn;
		tx->pkt.dsn = c->nak_dsn;
		tx->pkt.msn = c->nak_msn;
		tx->pkt.ack.syndrome = c->nak_syn;
		if (c->nak_syn == MROCE_SYN_RNR)
			tx->pkt.ack.rnr_timer = c->p.min_rnr_timer;
		return 1;
	}
	if (c->state != MROCE_CONN_OK)
		return 0;
	for (i = 0; i < c->p.num_paths; i++) {
		p = &c->path[i];
		if (!p->ack_now && !(p->ack_pending && now >= p->ack_due_ns))
			continue;
		c->st.tx_ack_why[p->ack_now ? p->ack_why : MROCE_ACKW_TIMER]++;
		p->ack_now = false;
		p->ack_pending = false;
		c->rcv_unacked = 0;
		mroce_recv_build_ack(c, i, now, tx);
		mroce_recv_add_blks(c, i, now, tx);
		return 1;
	}
	return 0;
}

void mroce_recv_timer(struct mroce_conn *c, u64 now)
{
	u32 i;

	for (i = 0; i < c->p.num_paths; i++)
		if (c->path[i].ack_pending && now >= c->path[i].ack_due_ns &&
		    !c->path[i].ack_now) {
			c->path[i].ack_now = true;
			c->path[i].ack_why = MROCE_ACKW_TIMER;
		}
}

u64 mroce_recv_next_timer(const struct mroce_conn *c)
{
	u64 t = U64_MAX;
	u32 i;

	/* A stopped connection sends no ACKs: no timer may stay due. */
	if (c->state != MROCE_CONN_OK)
		return U64_MAX;
	for (i = 0; i < c->p.num_paths; i++)
		if (c->path[i].ack_pending)
			t = min_t(u64, t, c->path[i].ack_due_ns);
	return t;
}

int mroce_conn_resp_abort(struct mroce_conn *c, const struct mroce_tx *tx,
			  u8 syn)
{
	struct mroce_resp *s;
	u32 k;

	if (!c || !tx || tx->pkt.opcode != MROCE_OP_READ_RESP)
		return MROCE_E_NOMSG;
	for (k = 0; k < c->resp_len; k++) {
		s = &c->resp[(c->resp_head + k) % MROCE_MAX_RESP];
		if (!s->in_use || s->msn != tx->pkt.msn ||
		    s->opcode != MROCE_OP_READ_RESP)
			continue;
		c->st.nak_tx++;
		mroce_nak_set(c, syn, s->req_path, 0, s->req_dsn, s->msn);
		/*
		 * A resent segment may be one the requester already has (the
		 * ACK for it is late or lost): if it completed the READ it
		 * drops the NAK and answers with an ACK that releases the
		 * slot.  Stop only when the source is found gone a second
		 * time, a loss-recovery round later, or on a first copy.
		 */
		if ((tx->pkt.flags & (MROCE_F_RETX | MROCE_F_TLP)) &&
		    !s->src_lost) {
			s->src_lost = 1;
			return 0;
		}
		mroce_conn_fail(c, mroce_syn_to_status(syn), MROCE_EVR_NAK_TX,
				syn);
		return 0;
	}
	return MROCE_E_NOMSG;
}
