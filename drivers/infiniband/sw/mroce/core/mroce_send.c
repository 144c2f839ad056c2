// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * the sender engine: WR segmentation, DSN/PSN bookkeeping,
 * ACK/SACK processing, transmission (new data, retransmissions of what
 * loss recovery queued, tail-loss probes, path probes) and in-order
 * completion of our WRs.  Loss detection is mroce_loss.c's.
 *
 * State: c->dsn[] (one record per DSN in [snd_dsn_una, snd_dsn_nxt)),
 * every path's win[] (one record per PSN in [snd_una, snd_nxt)),
 * c->retxq (DSNs waiting for retransmission, each at most once),
 * c->smsg[] (our WRs, MSN order) and c->resp[] (responses we serve).
 * All of it is protected by the caller's serialisation of the connection.
 */
#include "mroce_internal.h"

/* RNR timer codes (ACKETH rnr_timer, verbs min_rnr_timer) in microseconds. */
static const u32 mroce_rnr_wait_us[MROCE_RNR_TIMER_MAX + 1] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
	1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960,
	61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

/* ---------------------------------------------------------------- */
/* Delivery, loss and completion bookkeeping.                        */

static void mroce_smsg_check(struct mroce_smsg *m)
{
	if (m->done)
		return;
	if (mroce_wop_needs_resp(m->wr.op))
		m->done = m->resp_complete;
	else
		m->done = m->segmented && m->pkts_acked >= m->pkts;
}

/* Emit completions of finished WRs in MSN order. */
void mroce_send_complete(struct mroce_conn *c)
{
	struct mroce_completion cq;
	struct mroce_smsg *m;

	while (c->msn_una != c->msn_nxt) {
		m = mroce_smsg_of(c, c->msn_una);
		if (!m->done)
			break;
		memset(&cq, 0, sizeof(cq));
		cq.kind = MROCE_CQE_REQ;
		cq.status = m->status;
		cq.op = m->wr.op;
		cq.msn = m->msn;
		cq.cookie = m->wr.cookie;
		cq.byte_len = m->wr.length;
		cq.atomic_orig = m->atomic_orig;
		m->in_use = 0;
		c->msn_una++;
		c->st.completions++;
		if (c->ops && c->ops->complete)
			c->ops->complete(c->ctx, &cq);
	}
	if (mroce_seq_lt(c->msn_seg, c->msn_una))
		c->msn_seg = c->msn_una;
}

/* Free finished response slots at the FIFO head (responder cache). */
static void mroce_resp_pop(struct mroce_conn *c)
{
	bool freed = false;

	while (c->resp_len && !c->resp[c->resp_head].in_use) {
		c->resp_head = (c->resp_head + 1) % MROCE_MAX_RESP;
		c->resp_len--;
		freed = true;
	}
	if (freed)
		mroce_recv_advance(c);	/* a stalled READ may proceed */
}

static void mroce_dsn_mark_delivered(struct mroce_conn *c,
				     struct mroce_dsn_ent *ent)
{
	if (ent->state == MROCE_DSN_DELIVERED || ent->state == MROCE_DSN_FREE)
		return;
	ent->state = MROCE_DSN_DELIVERED;
	if (ent->resp) {
		struct mroce_resp *r = &c->resp[ent->resp_slot];

		if (r->in_use && r->msn == ent->msn &&
		    ++r->pkts_acked >= r->pkts)
			r->in_use = 0;
	} else {
		struct mroce_smsg *m = mroce_smsg_of(c, ent->msn);

		if (m->in_use && m->msn == ent->msn) {
			m->pkts_acked++;
			mroce_smsg_check(m);
		}
	}
}

static void mroce_dsn_deliver(struct mroce_conn *c, u32 dsn)
{
	struct mroce_dsn_ent *ent = mroce_dsn_ent(c, dsn);

	if (mroce_dsn_in_flight(c, dsn) && ent->dsn == dsn)
		mroce_dsn_mark_delivered(c, ent);
}

static void mroce_dsn_advance(struct mroce_conn *c)
{
	struct mroce_dsn_ent *ent;

	while (c->snd_dsn_una != c->snd_dsn_nxt) {
		ent = mroce_dsn_ent(c, c->snd_dsn_una);
		if (ent->state != MROCE_DSN_DELIVERED)
			break;
		ent->state = MROCE_DSN_FREE;
		c->snd_dsn_una++;
	}
	mroce_resp_pop(c);
}

/*
 * Fatal NAK for our message msn: earlier ones completed at the peer.
 * why, syn: what the event reports (enum mroce_ev_reason, the syndrome).
 */
static void mroce_send_fatal(struct mroce_conn *c, u32 msn, u32 status,
			     u8 why, u8 syn)
{
	struct mroce_smsg *m;
	u32 k;

	mroce_ev(c, .type = MROCE_EV_ERROR, .reason = why, .path = MROCE_EV_CONN,
		 .msn = msn, .a = status, .b = syn);

	/* mroce_ack_valid() checked that msn is outstanding */
	for (k = c->msn_una; k != msn; k++) {
		m = mroce_smsg_of(c, k);
		if (m->done)
			continue;
		m->done = 1;
		/* a response that never came cannot be reported as success */
		if (mroce_wop_needs_resp(m->wr.op) && !m->resp_complete)
			m->status = MROCE_ST_WR_FLUSH;
	}
	m = mroce_smsg_of(c, msn);
	m->done = 1;
	m->status = status;
	mroce_send_complete(c);
	mroce_conn_stop(c, MROCE_ST_WR_FLUSH);
}

/* ---------------------------------------------------------------- */
/* ACK processing.                                                   */

static u32 mroce_syn_status(u8 syn)
{
	switch (syn) {
	case MROCE_SYN_REM_ACCESS:
		return MROCE_ST_REM_ACCESS;
	case MROCE_SYN_INV_REQ:
		return MROCE_ST_REM_INV_REQ;
	default:
		return MROCE_ST_REM_OP;
	}
}

/*
 * An RNR NAK for one packet of a request.  The first NAK after a message's
 * last RNR wait ended opens a new round; NAKs for its other packets that
 * arrive during the wait belong to the same round.  More than rnr_retry
 * rounds (7: unlimited) fail the message with RNR_RETRY_EXC.
 */
static void mroce_send_rnr(struct mroce_conn *c, struct mroce_path *p,
			   const struct mroce_pkt *pkt, u64 now)
{
	struct mroce_dsn_ent *ent = mroce_dsn_ent(c, pkt->dsn);
	struct mroce_psn_ent *e = mroce_psn_of(c, p, pkt->psn);
	/* the parser bounds rnr_timer; the clamp keeps unparsed input safe */
	u8 code = min_t(u8, pkt->ack.rnr_timer, MROCE_RNR_TIMER_MAX);
	u64 until = now + (u64)mroce_rnr_wait_us[code] * 1000;
	struct mroce_smsg *m;
	bool round;

	if (!mroce_dsn_in_flight(c, pkt->dsn) || ent->dsn != pkt->dsn ||
	    ent->state == MROCE_DSN_DELIVERED || ent->resp ||
	    ent->msn - c->msn_una >= c->msn_nxt - c->msn_una)
		return;
	m = mroce_smsg_of(c, ent->msn);
	round = now >= m->rnr_until_ns;
	if (round && m->rnr_rounds != 0xff)
		m->rnr_rounds++;	/* unlimited retry: saturates */
	mroce_ev(c, .type = MROCE_EV_RNR, .reason = MROCE_EVR_RX,
		 .path = pkt->path, .psn = pkt->psn, .dsn = pkt->dsn,
		 .msn = ent->msn, .count = m->rnr_rounds, .a = code, .b = round);
	if (round) {
		c->st.rnr_rounds++;
		if (c->p.rnr_retry != MROCE_RNR_RETRY_INF &&
		    m->rnr_rounds > c->p.rnr_retry) {
			mroce_send_fatal(c, ent->msn, MROCE_ST_RNR_RETRY_EXC,
					 MROCE_EVR_RNR_RETRY, MROCE_SYN_RNR);
			return;
		}
		m->rnr_until_ns = until;
	}
	if (pkt->psn - p->snd_una < p->snd_nxt - p->snd_una && e->live &&
	    e->dsn == pkt->dsn)
		mroce_psn_resolve(c, p, e);	/* refused, not lost: no CC */
	ent->rnr_until_ns = until;
	if (until > c->rnr_until_ns)
		c->rnr_until_ns = until;
	mroce_loss_queue_retx(c, ent);
	/* waiting for the peer, not for the group window */
	mroce_cc_group_release(c, false);
}

/* Is msn one of our messages not completed yet? */
static struct mroce_smsg *mroce_smsg_out(struct mroce_conn *c, u32 msn)
{
	struct mroce_smsg *m = mroce_smsg_of(c, msn);

	if (msn - c->msn_una >= c->msn_nxt - c->msn_una || !m->in_use ||
	    m->msn != msn || m->done)
		return NULL;
	return m;
}

/*
 * Is msn one of our messages completed so recently that its slot still
 * describes it, and dsn one of its packets?  A responder NAKs such a READ
 * when the source of a response segment it resends (the first copy
 * arrived, our ACK for it did not yet) is gone: mroce_conn_resp_abort().
 */
static bool mroce_smsg_recent(struct mroce_conn *c, u32 msn, u32 dsn)
{
	struct mroce_smsg *m = mroce_smsg_of(c, msn);

	return c->msn_una - msn - 1 < c->p.max_msgs && !m->in_use &&
	       m->msn == msn && m->pkts && dsn - m->first_dsn < m->pkts;
}

/*
 * Acceptance of an ACK or NAK (Documentation/mroce-protocol.rst,
 * "Acceptance"): it must name what we have in flight, so that only the
 * peer, which knows our sequence spaces, can act on our state.
 *  - cum_dsn in [snd_dsn_una, snd_dsn_nxt]; up to max_inflight older is a
 *    stale ACK overtaken by a newer one (multipath reorders ACKs): its
 *    cum_dsn is ignored (*cum_ok false), the rest is used;
 *  - high_psn in [snd_nxt - MROCE_ACK_PSN_HIST, snd_nxt] of the path: it
 *    may lag behind snd_una when the newest packets of the path were
 *    lost, and the answer to a probe of a down path is such an ACK;
 *  - RNR NAK: dsn names an undelivered request segment of message msn
 *    (its PSN may have left the path's window: declared lost meanwhile);
 *  - fatal NAK: msn outstanding and dsn one of that message's packets
 *    (a message's DSNs are contiguous: [first_dsn, first_dsn + pkts)).
 */
#define MROCE_ACK_PSN_HIST	(1u << 16)

static bool mroce_ack_valid(struct mroce_conn *c, const struct mroce_path *p,
			    const struct mroce_pkt *pkt, bool *cum_ok)
{
	const struct mroce_ack *a = &pkt->ack;
	struct mroce_dsn_ent *ent;
	struct mroce_smsg *m;

	if (a->cum_dsn - c->snd_dsn_una <= c->snd_dsn_nxt - c->snd_dsn_una)
		*cum_ok = true;
	else if (c->snd_dsn_una - a->cum_dsn <= c->p.max_inflight)
		*cum_ok = false;
	else
		return false;
	if (p->snd_nxt - a->high_psn > MROCE_ACK_PSN_HIST)
		return false;
	if (a->syndrome == MROCE_SYN_ACK)
		return true;
	if (a->syndrome == MROCE_SYN_RNR) {
		ent = mroce_dsn_ent(c, pkt->dsn);
		return mroce_dsn_in_flight(c, pkt->dsn) &&
		       ent->dsn == pkt->dsn && !ent->resp &&
		       ent->msn == pkt->msn && mroce_smsg_out(c, pkt->msn);
	}
	m = mroce_smsg_out(c, pkt->msn);
	if (!m || (!m->segmented && !m->next_off))
		return false;
	return pkt->dsn - m->first_dsn < m->pkts;
}

/*
 * The RTT sample of an ACK for path p: *raw from its echo_ts (0: none);
 * returned, the sample without the receiver's hold time (ack_delay), but
 * only when what remains is still at least the path's minimum RTT, so a
 * lying or wrong ack_delay cannot push the estimate below what the path
 * has shown (spec 6.3 step 4).
 */
static u64 mroce_ack_rtt(const struct mroce_path *p, const struct mroce_ack *a,
			 u64 now, u64 *raw)
{
	u64 r, d;

	r = (u64)(u32)(mroce_ts_us(now) - a->echo_ts) * MROCE_NSEC_PER_USEC;
	if (r >= MROCE_RTT_SANE_NS)
		r = 0;
	*raw = r;
	d = (u64)a->ack_delay_us * MROCE_NSEC_PER_USEC;
	if (r && p->st.min_rtt_ns && d < r && r - d >= p->st.min_rtt_ns)
		r -= d;
	return r;
}

/*
 * The peer's ACKs advertise the largest segment it accepts (max_seg, 0:
 * the path MTU only): messages queued from now on are cut into the
 * smaller of that and ours, never below the path MTU (spec 5.1a).
 */
static void mroce_send_peer_seg(struct mroce_conn *c, u16 peer)
{
	u32 seg = c->p.mtu;

	if (peer && c->p.max_seg > c->p.mtu)
		seg = max_t(u32, c->p.mtu, min_t(u32, c->p.max_seg, peer));
	c->tx_seg = seg;
	/* the connection window's cap counts packets of this size */
	mroce_cc_conn_clamp(c);
}

int mroce_send_ack(struct mroce_conn *c, const struct mroce_pkt *pkt, u64 now)
{
	const struct mroce_ack *a = &pkt->ack;
	struct mroce_path *p;
	struct mroce_psn_ent *e;
	u32 i = pkt->path, psn, d, pkts = 0, bytes = 0, ce = 0, proven;
	bool cum_ok;
	u64 rtt, raw;

	if (i >= c->p.num_paths)
		return MROCE_E_PATH;
	p = &c->path[i];
	if (c->state != MROCE_CONN_OK)
		return MROCE_E_STATE;
	/* Validate before touching any state. */
	if (!mroce_ack_valid(c, p, pkt, &cum_ok)) {
		c->st.rx_ack_invalid++;
		/*
		 * A fatal NAK for a READ we completed: the responder lacks
		 * our ACK for its response.  Dropped (it fails nothing), but
		 * answered at once with an ACK on its path, which releases
		 * the responder's slot.
		 */
		if (a->syndrome != MROCE_SYN_ACK &&
		    a->syndrome != MROCE_SYN_RNR &&
		    mroce_smsg_recent(c, pkt->msn, pkt->dsn)) {
			p->ack_now = true;
			p->ack_pending = true;
		}
		return MROCE_E_WINDOW;
	}
	mroce_send_peer_seg(c, a->max_seg);

	if (a->syndrome == MROCE_SYN_RNR) {
		c->st.nak_rx++;
		mroce_send_rnr(c, p, pkt, now);
	} else if (a->syndrome != MROCE_SYN_ACK) {
		c->st.nak_rx++;
		mroce_send_fatal(c, pkt->msn, mroce_syn_status(a->syndrome),
				 MROCE_EVR_NAK_RX, a->syndrome);
		return 0;
	}

	/* Connection-level cumulative DSN. */
	for (d = c->snd_dsn_una; cum_ok && mroce_seq_lt(d, a->cum_dsn); d++) {
		mroce_dsn_deliver(c, d);
		c->peer_heard++;
	}

	/* Path-level SACK. */
	for (psn = p->snd_una; psn != p->snd_nxt; psn++) {
		if (!mroce_seq_lt(psn, a->high_psn))
			break;
		e = mroce_psn_of(c, p, psn);
		if (!e->live || !mroce_sack_has(a, psn))
			continue;
		pkts++;
		bytes += e->len;
		if (e->sent_ns > p->rack_xmit_ns)
			p->rack_xmit_ns = e->sent_ns;
		if (mroce_seq_le(p->rack_psn, psn))
			p->rack_psn = psn + 1;
		mroce_psn_resolve(c, p, e);
		p->st.delivered_pkts++;
		p->steer_samples++;
		p->st.loss_frac_ppm -= p->st.loss_frac_ppm >> MROCE_LOSS_G_SHIFT;
		mroce_dsn_deliver(c, e->dsn);
	}

	rtt = mroce_ack_rtt(p, a, now, &raw);
	if (p->ecn_valid) {
		ce = a->ecn_ce - p->ecn_ce_seen;
		if (ce > (1u << 24))
			ce = 0;		/* went backwards: reordered ACK */
		p->st.ecn_ce += ce;
	}
	if (!p->ecn_valid || ce)
		p->ecn_ce_seen = a->ecn_ce;
	p->ecn_valid = true;

	proven = mroce_loss_spurious(c, p, a);
	if (pkts || proven)
		c->peer_heard++;
	if (p->st.state == MROCE_PATH_DOWN) {
		/*
		 * The answer to any probe since the path went down, even one
		 * older than the latest when the RTT exceeds probe_ns.
		 */
		if (p->probe_out && mroce_seq_le(p->probe_first_ts, a->echo_ts))
			mroce_path_up(c, i, now);
	} else {
		/*
		 * The echoed tx_ts names one transmission: a sample even when
		 * every packet it covers was already declared lost (no Karn
		 * ambiguity), so a too-short RTO learns the real RTT.
		 */
		if (rtt)
			mroce_cc_rtt_sample(c, p, rtt, raw);
		if (pkts || proven) {
			/* the receiver gets this path's packets: it works */
			p->last_ack_ns = now;
			p->consec_rto = 0;
			p->backoff = 0;
			p->tlp_out = 0;
			p->rto_retx = false;
		}
		if (pkts)
			mroce_cc_on_ack(c, p, bytes, pkts, ce, rtt, now);
	}
	mroce_path_advance_una(c, p);
	mroce_loss_rack(c, i, now);
	mroce_dsn_advance(c);
	mroce_send_complete(c);
	return 0;
}

/*
 * The blocks of a positive ACK: each acknowledges its path as an ACK of
 * that path alone would, and is validated alone (mroce_ack_valid()).
 */
void mroce_send_ack_blks(struct mroce_conn *c, const struct mroce_pkt *pkt,
			 u64 now)
{
	u32 k, n = pkt->payload_len / MROCE_ACK_BLK_SIZE;
	struct mroce_pkt b = *pkt;

	b.payload = NULL;
	b.payload_len = 0;
	for (k = 0; k < n && c->state == MROCE_CONN_OK; k++)
		if (!mroce_ack_blk_get(pkt, k, &b.path, &b.ack))
			mroce_send_ack(c, &b, now);
}

/* READ/ATOMIC response for our WR (after the receiver's DSN checks). */
int mroce_send_on_resp(struct mroce_conn *c, const struct mroce_pkt *pkt)
{
	struct mroce_smsg *m = mroce_smsg_out(c, pkt->msn);
	struct mroce_place pl;
	u32 base, seg;
	int ret;

	/* a response to a request we sent, not yet answered */
	if (!m || !m->segmented)
		return MROCE_E_NOMSG;
	if (pkt->opcode == MROCE_OP_READ_RESP) {
		if (m->wr.op != MROCE_WOP_READ ||
		    pkt->rresp_len != m->wr.length)
			return MROCE_E_FIELD;
		/* the completion rule of mroce_recv_request(), our side */
		seg = mroce_rx_seg(c, pkt);
		if (!seg)
			return MROCE_E_PAYLOAD;
		if (!mroce_seg_ok(seg, pkt->offset, pkt->payload_len,
				  m->wr.length))
			return MROCE_E_BOUNDS;
		base = pkt->dsn - pkt->offset / seg;
		if (m->resp_have_base &&
		    (base != m->resp_base || seg != m->resp_seg))
			return MROCE_E_FIELD;
		m->resp_base = base;
		m->resp_seg = seg;
		m->resp_have_base = 1;
		if (pkt->payload_len) {
			memset(&pl, 0, sizeof(pl));
			pl.kind = MROCE_PLACE_READ_RESP;
			pl.msn = pkt->msn;
			pl.offset = pkt->offset;
			pl.msg_len = m->wr.length;
			pl.cookie = m->wr.cookie;
			pl.data = pkt->payload;
			pl.len = pkt->payload_len;
			pl.first = pkt->offset == 0;
			ret = c->ops && c->ops->place ?
			      c->ops->place(c->ctx, &pl) : 0;
			if (ret) {
				mroce_conn_set_error(c, MROCE_ST_LOC_PROT);
				return MROCE_E_STATE;
			}
		}
		/* each DSN once (receiver dedupe), one DSN per offset */
		m->resp_done += pkt->payload_len;
		if (m->resp_done == m->wr.length)
			m->resp_complete = 1;
	} else {
		if ((m->wr.op != MROCE_WOP_CMP_SWAP &&
		     m->wr.op != MROCE_WOP_FETCH_ADD) || pkt->offset ||
		    pkt->payload_len)
			return MROCE_E_FIELD;
		m->atomic_orig = pkt->atomic_orig;
		m->resp_complete = 1;
	}
	/*
	 * Any segment of the response proves the request arrived, and that
	 * the peer is alive and serving us: a long response (or a queue of
	 * them) behind which the peer's ACKs wait must neither time the
	 * request out nor count as a silent round (spec 8.5).
	 */
	c->peer_heard++;
	mroce_dsn_deliver(c, m->first_dsn);
	mroce_smsg_check(m);
	mroce_dsn_advance(c);
	mroce_send_complete(c);
	return 0;
}

/* ---------------------------------------------------------------- */
/* Transmission.                                                     */

static void mroce_fill_data(struct mroce_conn *c,
			    const struct mroce_dsn_ent *ent,
			    struct mroce_tx *tx)
{
	struct mroce_pkt *pkt = &tx->pkt;

	memset(tx, 0, sizeof(*tx));
	pkt->version = MROCE_WIRE_VERSION;
	pkt->dqpn = c->p.dqpn;
	pkt->dsn = ent->dsn;
	pkt->msn = ent->msn;
	pkt->offset = ent->offset;
	pkt->payload_len = ent->len;
	pkt->flags = ent->flags;
	if (ent->resp) {
		const struct mroce_resp *r = &c->resp[ent->resp_slot];

		pkt->opcode = r->opcode;
		if (r->opcode == MROCE_OP_READ_RESP) {
			pkt->rresp_len = r->len;
			pkt->seg = mroce_wire_seg(c, r->seg);
			if (ent->len) {
				tx->src = MROCE_SRC_LOCAL_MEM;
				tx->src_va = r->va + ent->offset;
				tx->src_rkey = r->rkey;
				tx->src_xrc = r->xrc;
				tx->src_xrc_srqn = r->xrc_srqn;
			}
		} else {
			pkt->atomic_orig = r->orig;
		}
	} else {
		const struct mroce_smsg *m = mroce_smsg_of(c, ent->msn);
		const struct mroce_wr *wr = &m->wr;

		pkt->opcode = mroce_wop_opcode(wr->op);
		if (!mroce_wop_needs_resp(wr->op))
			pkt->seg = mroce_wire_seg(c, m->seg);
		pkt->reth.va = wr->remote_va;
		pkt->reth.rkey = wr->rkey;
		pkt->reth.length = wr->length;
		pkt->seth.rq_seq = m->rq_seq;
		pkt->seth.length = wr->length;
		pkt->imm = wr->imm;
		pkt->aeth.va = wr->remote_va;
		pkt->aeth.rkey = wr->rkey;
		pkt->aeth.swap = wr->op == MROCE_WOP_CMP_SWAP ? wr->swap : 0;
		pkt->aeth.compare_add = wr->compare_add;
		if (wr->xrc) {
			pkt->flags |= MROCE_F_XRC;
			pkt->xrc_srqn = wr->xrc_srqn & MROCE_QPN_MASK;
		}
		if (ent->len) {
			tx->src = MROCE_SRC_WR;
			tx->cookie = wr->cookie;
			tx->src_offset = ent->offset;
		}
	}
	pkt->ext = mroce_op_ext(pkt->opcode);
	if (pkt->flags & MROCE_F_XRC)
		pkt->ext |= MROCE_EXT_XRCETH;
}

/*
 * The ACK delay this sender allows its receiver (adl, spec 6.2): a quarter
 * of the connection's smoothed RTT, rounded down to a power of two
 * microseconds (at least 1 us); 0, the receiver's default, before any RTT
 * sample.  The RTT samples leave the receiver's hold out (ack_delay), so
 * the hold does not feed back into the limit.
 */
u8 mroce_send_adl(const struct mroce_conn *c)
{
	return c->cc.adl;
}

/* The longest the receiver may hold an ACK of ours (timers add it). */
u64 mroce_send_hold_ns(const struct mroce_conn *c)
{
	return c->cc.hold_ns;
}

/*
 * Recompute adl and the hold from the connection's srtt, on every change
 * of srtt: every timer computation and every packet read them.
 */
void mroce_send_srtt_changed(struct mroce_conn *c)
{
	u64 us = mroce_div64(c->cc.srtt_ns / 4, MROCE_NSEC_PER_USEC);
	u8 code = 1;

	if (!c->cc.srtt_ns) {
		code = 0;
	} else {
		while (us > 1 && code < MROCE_ADL_MAX) {
			us >>= 1;
			code++;
		}
	}
	c->cc.adl = code;
	c->cc.hold_ns = mroce_adl_hold_ns(&c->p, code);
}

/* Put DSN record ent on path i with a new PSN and describe it in tx. */
static void mroce_emit(struct mroce_conn *c, u32 i, struct mroce_dsn_ent *ent,
		       u16 extra, bool tlp, u64 now, struct mroce_tx *tx)
{
	struct mroce_path *p = &c->path[i];
	u32 psn = p->snd_nxt++;
	struct mroce_psn_ent *e = mroce_psn_of(c, p, psn);

	e->sent_ns = now;
	e->dsn = ent->dsn;
	e->len = ent->len;
	e->live = 1;
	e->tlp = tlp;
	p->st.inflight += mroce_wlen(ent->len);
	mroce_cc_inflight_add(c, mroce_wlen(ent->len));
	p->st.tx_pkts++;
	p->st.tx_bytes += ent->len;
	p->last_send_ns = now;
	p->rto_retx = false;
	mroce_fill_data(c, ent, tx);
	tx->pkt.path = i;
	tx->pkt.psn = psn;
	tx->pkt.tx_ts = mroce_ts_us(now);
	tx->pkt.adl = mroce_send_adl(c);
	tx->pkt.flags |= extra;
	/* new data only: a resend's ACKREQ is about its own path */
	if (!(extra & (MROCE_F_RETX | MROCE_F_TLP)))
		c->tx_since_ackreq = (tx->pkt.flags & MROCE_F_ACKREQ) ? 0 :
				     c->tx_since_ackreq + 1;
	tx->sport = p->st.sport;
	c->st.tx_data++;
}

/* Is the message behind a (non-response) DSN record still alive? */
static bool mroce_ent_alive(struct mroce_conn *c, struct mroce_dsn_ent *ent)
{
	const struct mroce_smsg *m;
	const struct mroce_resp *r;

	if (ent->resp) {
		r = &c->resp[ent->resp_slot];
		return r->in_use && r->msn == ent->msn;
	}
	m = mroce_smsg_of(c, ent->msn);
	return m->in_use && m->msn == ent->msn && !m->done;
}

static int mroce_tx_probe(struct mroce_conn *c, u64 now, struct mroce_tx *tx)
{
	struct mroce_path *p;
	u64 next;
	u32 i;

	for (i = 0; i < c->p.num_paths; i++) {
		p = &c->path[i];
		if (p->st.state != MROCE_PATH_DOWN || now < p->probe_due_ns)
			continue;
		if (!mroce_cc_group_probe(c, now, &next)) {
			/*
			 * The group's probe budget is spent: try again in the
			 * next window, at a random point of it so that the
			 * members take turns; the round does not count (8.5).
			 */
			p->probe_due_ns = next +
				mroce_prng_below(&c->rng, (u32)min_t(u64,
					c->p.probe_ns, U32_MAX));
			c->probe_deferred = true;
			continue;
		}
		if (p->probe_out)	/* fresh entropy */
			mroce_path_new_sport(c, i, MROCE_EVR_PROBE);
		else
			p->probe_first_ts = mroce_ts_us(now);
		p->probe_out = true;
		p->probe_ts = mroce_ts_us(now);
		p->probe_due_ns = now + (c->p.probe_ns << c->probe_shift);
		memset(tx, 0, sizeof(*tx));
		tx->pkt.version = MROCE_WIRE_VERSION;
		tx->pkt.opcode = MROCE_OP_PROBE;
		tx->pkt.flags = MROCE_F_ACKREQ;
		tx->pkt.path = i;
		tx->pkt.dqpn = c->p.dqpn;
		tx->pkt.tx_ts = p->probe_ts;
		tx->sport = p->st.sport;
		c->st.tx_probes++;
		return 1;
	}
	return 0;
}

static int mroce_tx_tlp(struct mroce_conn *c, u64 now, struct mroce_tx *tx)
{
	struct mroce_dsn_ent *ent;
	struct mroce_psn_ent *e;
	struct mroce_path *p;
	u32 i, psn;

	for (i = 0; i < c->p.num_paths; i++) {
		p = &c->path[i];
		if (!p->tlp_req)
			continue;
		p->tlp_req = false;
		/*
		 * A probe counts, sent or not (at most MROCE_TLP_MAX per
		 * flight): when nothing is left to probe the timer must not
		 * re-arm at the same instant.  The next delivery (ACK) or RTO
		 * clears tlp_out.
		 */
		p->tlp_out++;
		if (p->st.state != MROCE_PATH_UP ||
		    p->snd_nxt - p->snd_una >= c->p.path_wnd)
			continue;
		/* newest live packet of the path */
		for (psn = p->snd_nxt; psn != p->snd_una; psn--) {
			e = mroce_psn_of(c, p, psn - 1);
			if (!e->live)
				continue;
			ent = mroce_dsn_ent(c, e->dsn);
			if (mroce_dsn_done(c, e->dsn) ||
			    ent->state != MROCE_DSN_INFLIGHT ||
			    !mroce_ent_alive(c, ent))
				break;
			p->st.tlps++;
			mroce_emit(c, i, ent, MROCE_F_TLP | MROCE_F_ACKREQ,
				   true, now, tx);
			mroce_ev(c, .type = MROCE_EV_LOSS, .reason = MROCE_EVR_TLP,
				 .path = i, .psn = tx->pkt.psn, .dsn = ent->dsn,
				 .count = p->tlp_out);
			return 1;
		}
	}
	return 0;
}

static int mroce_tx_retx(struct mroce_conn *c, u64 now, struct mroce_tx *tx)
{
	u32 mask = c->p.snd_wnd - 1, d;
	struct mroce_dsn_ent *ent;
	int i;

	while (c->retxq_len) {
		d = c->retxq[c->retxq_head];
		ent = mroce_dsn_ent(c, d);
		if (!mroce_dsn_in_flight(c, d) || ent->dsn != d ||
		    ent->state != MROCE_DSN_LOST || !mroce_ent_alive(c, ent)) {
			if (mroce_dsn_in_flight(c, d) && ent->dsn == d) {
				ent->queued = 0;
				if (ent->state == MROCE_DSN_LOST)
					mroce_dsn_mark_delivered(c, ent);
			}
			c->retxq_head = (c->retxq_head + 1) & mask;
			c->retxq_len--;
			continue;
		}
		if (ent->rnr_until_ns > now)
			return 0;
		i = mroce_path_pick(c, mroce_wlen(ent->len));
		if (i < 0)
			return 0;
		c->retxq_head = (c->retxq_head + 1) & mask;
		c->retxq_len--;
		ent->queued = 0;
		ent->state = MROCE_DSN_INFLIGHT;
		c->path[i].st.retx_pkts++;
		c->st.tx_retx++;
		mroce_emit(c, (u32)i, ent, MROCE_F_RETX | MROCE_F_ACKREQ, false,
			   now, tx);
		return 1;
	}
	mroce_dsn_advance(c);
	return 0;
}

static struct mroce_dsn_ent *mroce_dsn_new(struct mroce_conn *c, u32 msn,
					   u32 off, u32 len, u16 flags)
{
	u32 dsn = c->snd_dsn_nxt++;
	struct mroce_dsn_ent *ent = mroce_dsn_ent(c, dsn);

	c->tx_started = true;
	memset(ent, 0, sizeof(*ent));
	ent->dsn = dsn;
	ent->msn = msn;
	ent->offset = off;
	ent->len = (u16)len;
	ent->flags = flags;
	ent->state = MROCE_DSN_INFLIGHT;
	return ent;
}

/*
 * Does the final segment of a message ask for an immediate ACK (ACKREQ,
 * spec 3.5 and 6.2)?  Yes when nothing of ours waits to be segmented (no
 * request message, no response with unsent packets: the sender is about
 * to wait for that ACK), and when ack_every data packets went out since
 * the last packet that asked (a long message's end, where a prompt ACK
 * shows the losses of its tail).  In a stream of small messages the
 * receiver's count and delayed-ACK hold pace the ACKs instead.
 */
static bool mroce_send_ackreq(const struct mroce_conn *c)
{
	if (c->tx_since_ackreq + 1 >= c->p.ack_every)
		return true;
	return c->msn_seg == c->msn_nxt && !mroce_resp_unsent(c);
}

static int mroce_tx_resp(struct mroce_conn *c, u64 now, struct mroce_tx *tx)
{
	struct mroce_dsn_ent *ent;
	struct mroce_resp *r;
	u32 k, slot, len;
	u16 flags;
	int i;

	for (k = 0; k < c->resp_len; k++) {
		slot = (c->resp_head + k) % MROCE_MAX_RESP;
		r = &c->resp[slot];
		if (!r->in_use || r->pkts_sent >= r->pkts)
			continue;
		len = r->opcode == MROCE_OP_READ_RESP ?
		      min_t(u32, r->seg, r->len - r->next_off) : 0;
		i = mroce_path_pick(c, mroce_wlen(len));
		if (i < 0)
			return 0;
		flags = 0;
		if (!r->next_off)
			flags |= MROCE_F_FIRST;
		if (r->next_off + len == r->len || r->opcode != MROCE_OP_READ_RESP)
			flags |= MROCE_F_LAST;
		ent = mroce_dsn_new(c, r->msn, r->next_off, len, flags);
		ent->resp = 1;
		ent->resp_slot = (u8)slot;
		r->next_off += len;
		r->pkts_sent++;
		if ((flags & MROCE_F_LAST) && mroce_send_ackreq(c))
			ent->flags |= MROCE_F_ACKREQ;
		mroce_emit(c, (u32)i, ent, 0, false, now, tx);
		return 1;
	}
	return 0;
}

/* Our READ/atomic requests sent and not answered yet. */
static u32 mroce_rd_atomic_out(struct mroce_conn *c)
{
	const struct mroce_smsg *m;
	u32 k, n = 0;

	for (k = c->msn_una; k != c->msn_seg; k++) {
		m = mroce_smsg_of(c, k);
		n += mroce_wop_needs_resp(m->wr.op) && !m->done;
	}
	return n;
}

static int mroce_tx_req(struct mroce_conn *c, u64 now, struct mroce_tx *tx)
{
	struct mroce_dsn_ent *ent;
	struct mroce_smsg *m;
	u32 len;
	u16 flags;
	int i;

	while (c->msn_seg != c->msn_nxt) {
		m = mroce_smsg_of(c, c->msn_seg);
		if (m->segmented) {
			c->msn_seg++;
			continue;
		}
		if (mroce_wop_needs_resp(m->wr.op) &&
		    mroce_rd_atomic_out(c) >= c->p.max_rd_atomic)
			return 0;	/* max_rd_atomic: wait for completions */
		/*
		 * FENCE: the responses of earlier READs and atomics are in
		 * (their WRs are done) before any of this one leaves, so it
		 * cannot overtake them at the responder either.
		 */
		if (m->wr.fence && !m->next_off && mroce_rd_atomic_out(c))
			return 0;
		len = mroce_wop_needs_resp(m->wr.op) ? 0 :
		      min_t(u32, m->seg, m->wr.length - m->next_off);
		i = mroce_path_pick(c, mroce_wlen(len));
		if (i < 0)
			return 0;
		flags = 0;
		if (!m->next_off)
			flags |= MROCE_F_FIRST;
		if (mroce_wop_needs_resp(m->wr.op) ||
		    m->next_off + len == m->wr.length) {
			flags |= MROCE_F_LAST;
			if (m->wr.solicited && mroce_wop_uses_rq(m->wr.op))
				flags |= MROCE_F_SOLICITED;
		}
		ent = mroce_dsn_new(c, m->msn, m->next_off, len, flags);
		if (!m->next_off)
			m->first_dsn = ent->dsn;
		m->next_off += len;
		if (flags & MROCE_F_LAST) {
			m->segmented = 1;
			c->msn_seg++;
			/* a READ's or atomic's answer is its response */
			if (!mroce_wop_needs_resp(m->wr.op) &&
			    mroce_send_ackreq(c))
				ent->flags |= MROCE_F_ACKREQ;
		}
		mroce_emit(c, (u32)i, ent, 0, false, now, tx);
		return 1;
	}
	return 0;
}

/* A response partly segmented (it goes on before anything else). */
static bool mroce_resp_begun(const struct mroce_conn *c)
{
	const struct mroce_resp *r;
	u32 k;

	for (k = 0; k < c->resp_len; k++) {
		r = &c->resp[(c->resp_head + k) % MROCE_MAX_RESP];
		if (r->in_use && r->pkts_sent && r->pkts_sent < r->pkts)
			return true;
	}
	return false;
}

int mroce_send_next(struct mroce_conn *c, u64 now, struct mroce_tx *tx)
{
	if (c->state != MROCE_CONN_OK)
		return 0;
	if (mroce_tx_probe(c, now, tx) || mroce_tx_tlp(c, now, tx))
		return 1;
	if (now < c->rnr_until_ns)
		return 0;
	if (mroce_tx_retx(c, now, tx))
		return 1;
	if (c->snd_dsn_nxt - c->snd_dsn_una >= c->p.snd_wnd)
		return 0;
	/*
	 * The DSNs of one message are contiguous (the receiver's completion
	 * rule, mroce_recv_request()): a message begun is finished before
	 * another one, request or response, takes a DSN.
	 */
	if (c->msn_seg != c->msn_nxt && mroce_smsg_of(c, c->msn_seg)->next_off)
		return mroce_tx_req(c, now, tx);
	if (mroce_tx_resp(c, now, tx))
		return 1;
	if (mroce_resp_begun(c))
		return 0;
	return mroce_tx_req(c, now, tx);
}

/* ---------------------------------------------------------------- */
/* Timers.                                                           */

void mroce_send_timer(struct mroce_conn *c, u64 now)
{
	if (c->state != MROCE_CONN_OK)
		return;
	if (!mroce_loss_timer(c, now))
		return;
	if (c->p.num_paths > 1 && now >= c->next_steer_ns) {
		if (c->snd_dsn_una != c->snd_dsn_nxt)
			mroce_path_steer(c, now);
		c->next_steer_ns = now + c->p.steer_ns;
	}
	mroce_dsn_advance(c);
	mroce_send_complete(c);
}

u64 mroce_send_next_timer(const struct mroce_conn *c)
{
	u64 t;

	if (c->state != MROCE_CONN_OK)
		return U64_MAX;
	t = mroce_loss_next_timer(c);
	if (c->p.num_paths > 1 && c->snd_dsn_una != c->snd_dsn_nxt)
		t = min_t(u64, t, c->next_steer_ns);
	if (c->retxq_len && c->rnr_until_ns > c->now_ns)
		t = min_t(u64, t, c->rnr_until_ns);
	/*
	 * Waiting for room in a shared group window: a kick normally wakes
	 * us (mroce_cc_group.c); try again after an srtt in case it is lost.
	 */
	if (c->grp_wait)
		t = min_t(u64, t, c->now_ns + (c->cc.srtt_ns ? c->cc.srtt_ns :
					       c->p.rto_min_ns));
	return t;
}
