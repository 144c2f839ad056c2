// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * loss recovery (Documentation/mroce-protocol.rst chapter 7): what the
 * sender concludes from ACKs and from time about the packets in flight on
 * each path.  RACK, the tail-loss probe's deadline, the RTO and its
 * backoff, the retransmit queue, spurious-loss proofs that widen the
 * reorder window, and the rounds of an all-paths-down outage.  Sending
 * what it queues (the retransmission itself, the probe packet) is the
 * sender's (mroce_send.c).
 *
 * State: every path's win[] (live flags, send times), rack_psn,
 * lost[]/reo_* (spurious-loss history), backoff/consec_rto, tlp_*,
 * last_ack_ns; the connection's retxq and down_* round state.  Protected
 * by the caller's serialisation of the connection.
 */
#include "mroce_internal.h"

/* Tail-loss probes per flight, each one probe timeout after the last send. */
#define MROCE_TLP_MAX		2
/* Doublings of the RTO on consecutive timeouts. */
#define MROCE_BACKOFF_MAX	10
/* Losses without a spurious one that halve the learned reorder window. */
#define MROCE_REO_DECAY_LOSSES	16

/* ---------------------------------------------------------------- */
/* Timeouts and windows.                                             */

u64 mroce_loss_rto(const struct mroce_conn *c, const struct mroce_path *p)
{
	u64 rto, cap;

	if (p->st.srtt_ns)
		rto = p->st.srtt_ns + 4 * p->st.rttvar_ns +
		      mroce_send_hold_ns(c);
	else if (c->cc.srtt_ns)
		/* the connection's other paths: same hosts, a sound prior */
		rto = 3 * c->cc.srtt_ns + mroce_send_hold_ns(c);
	else
		rto = c->p.rto_init_ns;
	/*
	 * In a shared congestion group a member has a packet or two per
	 * path in flight, and its paths' samples are sparse and stale while
	 * the group's queue grows: no RTO below twice the group's smoothed
	 * RTT, which every member's ACKs keep current (spec 9.4).
	 */
	if (rto < 2 * c->cc.grp_srtt_ns)
		rto = 2 * c->cc.grp_srtt_ns;
	if (rto < c->p.rto_min_ns)
		rto = c->p.rto_min_ns;
	/*
	 * rto_max caps the backoff, not the measurement: a path whose RTT
	 * exceeds rto_max keeps an RTO above its RTT (else every packet on
	 * it would time out spuriously).
	 */
	cap = max_t(u64, c->p.rto_max_ns, rto);
	rto <<= min_t(u32, p->backoff, MROCE_BACKOFF_MAX);
	return min_t(u64, rto, cap);
}

/*
 * RACK reorder window: a quarter of the path's min RTT (at least
 * reo_wnd_min_ns), plus what spurious losses taught
 * (mroce_loss_spurious()).
 */
u64 mroce_loss_reo_wnd(const struct mroce_conn *c, const struct mroce_path *p)
{
	return max_t(u64, c->p.reo_wnd_min_ns, p->st.min_rtt_ns / 4) +
	       p->reo_extra_ns;
}

/*
 * Length of an all-paths-down round: probe_ns, or the largest RTO the
 * paths measured (srtt + 4 rttvar) when that is longer, so a peer that
 * answers, only more slowly than probe_ns, is not declared unreachable.
 */
u64 mroce_loss_down_round_ns(const struct mroce_conn *c)
{
	const struct mroce_path *p;
	u64 t = c->p.probe_ns, r;
	u32 i;

	for (i = 0; i < c->p.num_paths; i++) {
		p = &c->path[i];
		if (!p->st.srtt_ns)
			continue;
		r = p->st.srtt_ns + 4 * p->st.rttvar_ns;
		if (r > t)
			t = r;
	}
	return min_t(u64, t, MROCE_RTT_SANE_NS);
}

/*
 * When path p's RTO and tail-loss probe fall due, given the send time of
 * its oldest packet in flight.  The one place both deadlines are computed:
 * the timer (mroce_loss_timer()) acts on them and mroce_loss_next_timer()
 * arms the timer with them.  tlp is U64_MAX when no probe is due: one is
 * out or requested, no RTT is known yet, or the RTO would come first.  A
 * path without RTT samples of its own (its first packets were lost) uses
 * the connection's smoothed RTT.
 */
static void mroce_loss_due(const struct mroce_conn *c,
			   const struct mroce_path *p, u64 sent,
			   u64 *rto_due, u64 *tlp_due)
{
	u64 rto = mroce_loss_rto(c, p), pto;
	u64 srtt = p->st.srtt_ns ? p->st.srtt_ns : c->cc.srtt_ns;

	*rto_due = max_t(u64, sent, p->last_ack_ns) + rto;
	*tlp_due = U64_MAX;
	if (p->tlp_out < MROCE_TLP_MAX && !p->tlp_req && srtt) {
		pto = 2 * srtt + mroce_send_hold_ns(c);
		if (pto < rto)
			*tlp_due = p->last_send_ns + pto;
	}
}

/* ---------------------------------------------------------------- */
/* Declaring packets lost.                                           */

void mroce_psn_resolve(struct mroce_conn *c, struct mroce_path *p,
		       struct mroce_psn_ent *e)
{
	u32 w = min_t(u32, mroce_wlen(e->len), p->st.inflight);

	e->live = 0;
	p->st.inflight -= w;
	mroce_cc_inflight_sub(c, w);
}

void mroce_path_advance_una(const struct mroce_conn *c,
			    struct mroce_path *p)
{
	while (p->snd_una != p->snd_nxt &&
	       !mroce_psn_of(c, p, p->snd_una)->live)
		p->snd_una++;
}

void mroce_loss_queue_retx(struct mroce_conn *c, struct mroce_dsn_ent *ent)
{
	u32 mask = c->p.snd_wnd - 1;

	ent->state = MROCE_DSN_LOST;
	if (ent->queued)
		return;
	/* At most one entry per DSN in flight: cannot overflow. */
	c->retxq[(c->retxq_head + c->retxq_len) & mask] = ent->dsn;
	c->retxq_len++;
	ent->queued = 1;
}

/* PSN psn of path p was declared lost (rto: by the RTO, else by RACK). */
static void mroce_loss_note(struct mroce_path *p, u32 psn, bool rto)
{
	struct mroce_lost_ent *l = &p->lost[p->lost_head++ % MROCE_LOST_HIST];

	l->psn = psn;
	l->rto = rto;
	l->valid = 1;
	if (++p->reo_clean >= MROCE_REO_DECAY_LOSSES) {
		p->reo_clean = 0;
		p->reo_extra_ns /= 2;
	}
}

static void mroce_psn_lost(struct mroce_conn *c, struct mroce_path *p,
			   struct mroce_psn_ent *e, u32 psn, bool rto)
{
	struct mroce_dsn_ent *ent = mroce_dsn_ent(c, e->dsn);

	mroce_loss_note(p, psn, rto);
	mroce_psn_resolve(c, p, e);
	p->st.lost_pkts++;
	p->steer_samples++;
	p->st.loss_frac_ppm = p->st.loss_frac_ppm -
			      (p->st.loss_frac_ppm >> MROCE_LOSS_G_SHIFT) +
			      (MROCE_PPM >> MROCE_LOSS_G_SHIFT);
	if (mroce_dsn_in_flight(c, e->dsn) && ent->dsn == e->dsn &&
	    ent->state == MROCE_DSN_INFLIGHT)
		mroce_loss_queue_retx(c, ent);
}

void mroce_loss_requeue_path(struct mroce_conn *c, u32 i)
{
	struct mroce_path *p = &c->path[i];
	struct mroce_dsn_ent *ent;
	struct mroce_psn_ent *e;
	u32 psn;

	for (psn = p->snd_una; psn != p->snd_nxt; psn++) {
		e = mroce_psn_of(c, p, psn);
		if (!e->live)
			continue;
		mroce_psn_resolve(c, p, e);
		ent = mroce_dsn_ent(c, e->dsn);
		if (mroce_dsn_in_flight(c, e->dsn) && ent->dsn == e->dsn &&
		    ent->state == MROCE_DSN_INFLIGHT)
			mroce_loss_queue_retx(c, ent);
	}
	p->snd_una = p->snd_nxt;
	mroce_cc_inflight_sub(c, p->st.inflight);
	p->st.inflight = 0;
}

/*
 * The first packet at or after *psn on path p that is live and not yet
 * delivered; entries delivered meanwhile through another path are
 * resolved on the way (no loss signal).  *psn is its PSN; NULL if none.
 */
static struct mroce_psn_ent *mroce_path_pending(struct mroce_conn *c,
						struct mroce_path *p, u32 *psn)
{
	struct mroce_psn_ent *e;

	for (; *psn != p->snd_nxt; (*psn)++) {
		e = mroce_psn_of(c, p, *psn);
		if (!e->live)
			continue;
		if (!mroce_dsn_done(c, e->dsn))
			return e;
		mroce_psn_resolve(c, p, e);
	}
	return NULL;
}

/*
 * RACK: a live packet sent before the newest delivered packet of the same
 * path is lost once srtt + reorder window passed since it was sent.
 */
void mroce_loss_rack(struct mroce_conn *c, u32 i, u64 now)
{
	struct mroce_path *p = &c->path[i];
	u64 wait = p->st.srtt_ns + mroce_loss_reo_wnd(c, p);
	struct mroce_psn_ent *e;
	u32 psn = p->snd_una, lost = 0, psn0 = 0, dsn0 = 0;

	for (; (e = mroce_path_pending(c, p, &psn)); psn++) {
		/* sent after the newest delivered one: no evidence yet */
		if (!mroce_seq_lt(psn, p->rack_psn) || now < e->sent_ns + wait)
			break;
		if (!lost) {
			psn0 = psn;
			dsn0 = e->dsn;
		}
		mroce_psn_lost(c, p, e, psn, false);
		lost++;
	}
	if (lost) {
		mroce_ev(c, .type = MROCE_EV_LOSS, .reason = MROCE_EVR_RACK,
			 .path = i, .psn = psn0, .dsn = dsn0, .count = lost);
		mroce_cc_on_loss(c, p, lost, now);
	}
	mroce_path_advance_una(c, p);
}

static u64 mroce_rack_due(const struct mroce_conn *c,
			       const struct mroce_path *p)
{
	const struct mroce_psn_ent *e;
	u32 psn;

	for (psn = p->snd_una; psn != p->snd_nxt; psn++) {
		e = mroce_psn_of(c, p, psn);
		if (!e->live)
			continue;
		if (!mroce_seq_lt(psn, p->rack_psn))
			return U64_MAX;
		return e->sent_ns + p->st.srtt_ns + mroce_loss_reo_wnd(c, p);
	}
	return U64_MAX;
}

/*
 * An ACK of path p: a PSN we declared lost that its SACK shows received
 * was only late.  Loss by RACK: double the learned reorder window (from a
 * quarter of min RTT, capped at srtt, as RACK does on DSACK).  Loss by the
 * RTO: counted only, the window cut stands (spec 7.5).  Entries that left
 * the SACK range are dropped unproven.  Returns how many were proven.
 */
u32 mroce_loss_spurious(struct mroce_conn *c, struct mroce_path *p,
			const struct mroce_ack *a)
{
	struct mroce_lost_ent *l;
	u64 step, cap;
	u32 k, dist, n = 0;

	for (k = 0; k < MROCE_LOST_HIST; k++) {
		l = &p->lost[k];
		if (!l->valid || !mroce_seq_lt(l->psn, a->high_psn))
			continue;
		dist = a->high_psn - 1 - l->psn;
		if (dist >= MROCE_SACK_BITS) {
			l->valid = 0;
			continue;
		}
		if (!mroce_sack_has(a, l->psn))
			continue;
		l->valid = 0;
		p->st.spurious++;
		p->reo_clean = 0;
		n++;
		if (!l->rto) {
			step = max_t(u64, c->p.reo_wnd_min_ns,
				     p->st.min_rtt_ns / 4);
			cap = max_t(u64, p->st.srtt_ns, step);
			p->reo_extra_ns = min_t(u64, max_t(u64, 2 * p->reo_extra_ns,
							   step), cap);
		}
		mroce_ev(c, .type = MROCE_EV_SPURIOUS, .path = p - c->path,
			 .reason = l->rto ? MROCE_EVR_RTO : MROCE_EVR_RACK,
			 .psn = l->psn, .a = p->reo_extra_ns);
	}
	return n;
}

/* ---------------------------------------------------------------- */
/* Timers.                                                           */

static bool mroce_path_oldest(struct mroce_conn *c, struct mroce_path *p,
			      u64 *sent)
{
	u32 psn = p->snd_una;
	struct mroce_psn_ent *e = mroce_path_pending(c, p, &psn);

	if (e)
		*sent = e->sent_ns;
	return e;
}

static void mroce_loss_rto_fire(struct mroce_conn *c, u32 i, u64 now)
{
	struct mroce_path *p = &c->path[i];
	u64 rto = mroce_loss_rto(c, p);
	struct mroce_psn_ent *e;
	u32 psn, lost = 0, psn0 = 0, dsn0 = 0;

	for (psn = p->snd_una; psn != p->snd_nxt; psn++) {
		e = mroce_psn_of(c, p, psn);
		if (!e->live)
			continue;
		if (!lost++) {
			psn0 = psn;
			dsn0 = e->dsn;
		}
		mroce_psn_lost(c, p, e, psn, true);
	}
	mroce_path_advance_una(c, p);
	p->st.rtos++;
	p->consec_rto++;
	p->backoff++;
	mroce_ev(c, .type = MROCE_EV_LOSS, .reason = MROCE_EVR_RTO, .path = i,
		 .psn = psn0, .dsn = dsn0, .count = lost, .a = rto,
		 .b = p->backoff);
	p->tlp_out = 0;
	p->tlp_req = false;
	p->last_ack_ns = now;	/* restart the timer on what follows */
	mroce_cc_on_rto(c, p, rto, now);
	if (p->consec_rto >= c->p.down_after_rtos)
		mroce_path_down(c, i, now);
	else
		p->rto_retx = true;
}


/*
 * Time-driven loss detection on every path: RACK, the RTO, the request
 * of a tail-loss probe (sent by mroce_send_next()), and the rounds of an
 * outage in which every path is down.  Returns false when the connection
 * failed (the retry budget of an outage is spent).
 */
bool mroce_loss_timer(struct mroce_conn *c, u64 now)
{
	struct mroce_path *p;
	u64 sent, rto_due, tlp_due;
	u32 i;

	for (i = 0; i < c->p.num_paths; i++) {
		p = &c->path[i];
		if (p->st.state != MROCE_PATH_UP)
			continue;
		mroce_loss_rack(c, i, now);
		if (!mroce_path_oldest(c, p, &sent))
			continue;
		mroce_loss_due(c, p, sent, &rto_due, &tlp_due);
		if (now >= rto_due) {
			mroce_loss_rto_fire(c, i, now);
			continue;
		}
		if (now >= tlp_due)
			p->tlp_req = true;
	}
	/*
	 * A round ends probe_ns after the previous one was counted, not at a
	 * multiple of probe_ns since the outage began: after a stall of the
	 * host (a late timer) one round is counted and the next gets a full
	 * probe period in which probes go out and can be answered.
	 *
	 * A round in which an ACK delivered or proved one of our packets is
	 * not a failed one: the peer gets our packets, only slower than the
	 * paths' timers (a deep queue); the probes will bring paths back.
	 *
	 * Nor is a round in which none of our WRs is outstanding (only READ
	 * or atomic responses, or nothing, wait for the peer): as in RoCE,
	 * the requester owns the timeout, a responder does not give up on
	 * it.  It keeps probing, after retry_budget such rounds ever more
	 * slowly (up to 2^MROCE_PROBE_SHIFT_MAX x probe_ns), and a WR posted
	 * meanwhile gets the whole budget.
	 *
	 * Nor is a round in which the congestion group held back one of our
	 * probes (mroce_cc_group_probe()): the other members had the probe
	 * budget, ours did not leave.  For MROCE_PROBE_DEFER_MAX_NS of an
	 * outage at most, so that a connection whose peer QP is gone still
	 * ends in RETRY_EXC while its group goes on probing.
	 */
	if (c->all_down_since_ns && !mroce_paths_up(c) &&
	    now >= c->down_round_due_ns) {
		bool deferred = c->probe_deferred &&
			now - c->all_down_since_ns < MROCE_PROBE_DEFER_MAX_NS;
		bool silent = c->peer_heard == c->down_round_heard &&
			      !deferred;

		if (silent && c->msn_una == c->msn_nxt) {
			c->down_rounds = 0;
			if (++c->idle_down_rounds > c->p.retry_budget &&
			    c->probe_shift < MROCE_PROBE_SHIFT_MAX)
				c->probe_shift++;
		} else if (silent && ++c->down_rounds > c->p.retry_budget) {
			mroce_conn_fail(c, MROCE_ST_RETRY_EXC,
					MROCE_EVR_RETRY_EXC, 0);
			return false;
		}
		c->down_round_heard = c->peer_heard;
		c->probe_deferred = false;
		c->down_round_due_ns = now + mroce_loss_down_round_ns(c);
	}
	return true;
}

/* Earliest instant at which mroce_loss_timer() has something to do. */
u64 mroce_loss_next_timer(const struct mroce_conn *c)
{
	const struct mroce_path *p;
	const struct mroce_psn_ent *e;
	u64 t = U64_MAX, rto_due, tlp_due;
	u32 i, psn;

	for (i = 0; i < c->p.num_paths; i++) {
		p = &c->path[i];
		if (p->st.state == MROCE_PATH_DOWN) {
			t = min_t(u64, t, p->probe_due_ns);
			continue;
		}
		for (psn = p->snd_una; psn != p->snd_nxt; psn++) {
			e = mroce_psn_of(c, p, psn);
			if (e->live)
				break;
		}
		if (psn == p->snd_nxt)
			continue;
		mroce_loss_due(c, p, e->sent_ns, &rto_due, &tlp_due);
		t = min_t(u64, t, rto_due);
		t = min_t(u64, t, tlp_due);
		t = min_t(u64, t, mroce_rack_due(c, p));
	}
	if (c->all_down_since_ns)
		t = min_t(u64, t, c->down_round_due_ns);
	return t;
}
