// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * congestion control (Documentation/mroce-protocol.rst, chapter 9).
 *
 * Two levels of byte windows.
 *  - The connection window (c->cc) says how much the connection may have
 *    in flight over all its paths together: DCTCP on the CE fraction of
 *    each round, additive increase of half a packet per UP path per round
 *    trip, a cut for heavy loss in a round with a queue (not for the
 *    random loss of a bad link), half on an RTO that stalls the whole
 *    connection.  An incast of N connections of 16 paths backs off like
 *    N flows, not like 16 N.  The connections of one device to one peer
 *    may share this controller (a congestion group, mroce_cc_group.c):
 *    then N QPs to one peer back off like one flow.
 *  - Each path's window says where packets go: it shrinks on that path's
 *    own CE marks, losses and RTOs, so traffic leaves a marked or lossy
 *    route before the steering replaces it.
 * Delay above the target (base RTT + max(target_qdelay, base RTT)) holds
 * both windows (no increase, UET NSCC's reading of delay without ECN);
 * only a severe
 * delay of a whole round (its smallest sample beyond 4 targets and 2
 * base RTTs) cuts the connection window.  Host jitter, milliseconds in a
 * VM, therefore stops growth but does not drain the windows.
 * Runs under the connection's serialisation; the connection window's
 * state (struct mroce_cc_group) under its group's lock as well
 * (mroce_cc_group.c).
 */
#include "mroce_internal.h"

#define MROCE_CC_G_SHIFT	4	/* alpha gain 1/16 */
#define MROCE_CC_BETA_PPM	800000u	/* Swift beta 0.8 */
#define MROCE_CC_MAX_MDF_PPM	500000u	/* at most halve per RTT */
#define MROCE_CC_LOSS_PPM	700000u	/* keep 70% on a loss event */
#define MROCE_ECN_G_SHIFT	3	/* telemetry EWMA gain 1/8 */
#define MROCE_CC_SEVERE		4	/* queueing delay of this many targets cuts */
#define MROCE_CC_LOSS_SHIFT	4	/* a round losing > 1/16 of its packets */

/*
 * Report a window change of path (MROCE_EV_CONN: the connection's): only
 * a real one, and an increase only when the window gains a whole packet
 * (additive increase moves it by a few bytes on every ACK).
 */
static void mroce_cc_ev_report(struct mroce_conn *c, u32 path, u8 why,
			       u32 old, u32 cwnd)
{
	u32 pkt = c->tx_seg + MROCE_PKT_OVERHEAD;

	if (old == cwnd)
		return;
	if (why == MROCE_EVR_INCREASE && old / pkt == cwnd / pkt)
		return;
	mroce_ev(c, .type = MROCE_EV_CWND, .reason = why, .path = path,
		 .a = old, .b = cwnd);
}

/* The test inline at every caller: a no-op while nobody listens. */
#define mroce_cc_ev(c, path, why, old, cwnd)				\
	do {								\
		if (unlikely(mroce_ev_on(c)))				\
			mroce_cc_ev_report(c, path, why, old, cwnd);	\
	} while (0)

static u32 mroce_cc_clamp(const struct mroce_conn *c, u64 w)
{
	if (w < c->p.cwnd_min)
		return c->p.cwnd_min;
	if (w > c->p.cwnd_max)
		return c->p.cwnd_max;
	return (u32)w;
}

static void mroce_cc_scale(struct mroce_conn *c, struct mroce_path *p,
			   u32 keep_ppm, u64 now, u8 why)
{
	u32 old = p->st.cwnd;

	p->st.cwnd = mroce_cc_clamp(c, mroce_div64((u64)p->st.cwnd * keep_ppm,
						   MROCE_PPM));
	p->cc_cut_ns = now;
	mroce_cc_ev(c, p - c->path, why, old, p->st.cwnd);
}

/* May we cut again?  At most once per smoothed RTT. */
static bool mroce_cc_may_cut(const struct mroce_path *p, u64 now)
{
	return !p->cc_cut_ns || now - p->cc_cut_ns >= p->st.srtt_ns;
}

void mroce_cc_init(struct mroce_conn *c, struct mroce_path *p)
{
	p->st.cwnd = mroce_cc_clamp(c, c->p.cwnd_init);
	p->cc_alpha_ppm = 0;
	p->cc_cut_ns = 0;
}

/*
 * rtt: the sample without the receiver's ACK delay, for srtt and rttvar;
 * raw: with it, for the minimum (a path's floor is what it has shown, not
 * what a receiver says it added; mroce_ack_rtt()).
 */
void mroce_cc_rtt_sample(struct mroce_conn *c, struct mroce_path *p, u64 rtt,
			 u64 raw)
{
	u64 err;

	if (!rtt)
		rtt = 1;
	if (raw < rtt)
		raw = rtt;
	if (!p->st.min_rtt_ns || raw < p->st.min_rtt_ns)
		p->st.min_rtt_ns = raw;
	if (!p->st.srtt_ns) {
		p->st.srtt_ns = rtt;
		p->st.rttvar_ns = rtt / 2;
		return;
	}
	err = rtt > p->st.srtt_ns ? rtt - p->st.srtt_ns : p->st.srtt_ns - rtt;
	p->st.rttvar_ns = p->st.rttvar_ns - p->st.rttvar_ns / 4 + err / 4;
	p->st.srtt_ns = p->st.srtt_ns - p->st.srtt_ns / 8 + rtt / 8;
}

/* What one ACK says, for both levels. */
enum mroce_cc_sig {
	MROCE_CC_NONE,		/* grow */
	MROCE_CC_HOLD,		/* delay above target: neither grow nor cut */
	MROCE_CC_CE,		/* ECN marks: cut */
};

/*
 * Tolerated queueing delay: target_qdelay_ns, or the path's base RTT when
 * that is longer.  In a datacenter the base is microseconds and the
 * target rules; on a slow host (a VM: base RTT of hundreds of
 * microseconds, samples of two or three times that) growth would
 * otherwise stop for good after the first cut.
 */
static u64 mroce_cc_target(const struct mroce_conn *c,
			   const struct mroce_path *p)
{
	return max_t(u64, c->p.target_qdelay_ns, p->st.min_rtt_ns);
}

static enum mroce_cc_sig mroce_cc_signal(const struct mroce_conn *c,
					 const struct mroce_path *p,
					 u32 ce_pkts, u64 rtt)
{
	if (ce_pkts)
		return MROCE_CC_CE;
	if (rtt && rtt > p->st.min_rtt_ns + mroce_cc_target(c, p))
		return MROCE_CC_HOLD;
	return MROCE_CC_NONE;
}

/* Swift's decrease for an RTT r above target t, at most MAX_MDF. */
static u32 mroce_cc_delay_keep(u64 r, u64 t)
{
	u64 keep = MROCE_PPM - mroce_div64((r - t) * MROCE_CC_BETA_PPM, r);

	if (keep < MROCE_PPM - MROCE_CC_MAX_MDF_PPM)
		keep = MROCE_PPM - MROCE_CC_MAX_MDF_PPM;
	return (u32)keep;
}

static void mroce_cc_path_ack(struct mroce_conn *c, struct mroce_path *p,
			      u32 acked_bytes, u32 frac, enum mroce_cc_sig sig,
			      u64 now)
{
	u64 inc;
	u32 old;

	p->cc_alpha_ppm = p->cc_alpha_ppm - (p->cc_alpha_ppm >> MROCE_CC_G_SHIFT) +
			  (frac >> MROCE_CC_G_SHIFT);
	switch (sig) {
	case MROCE_CC_CE:
		if (mroce_cc_may_cut(p, now))
			mroce_cc_scale(c, p, MROCE_PPM -
				       max_t(u32, p->cc_alpha_ppm, frac / 4) / 2,
				       now, MROCE_EVR_ECN);
		return;
	case MROCE_CC_HOLD:
		return;
	case MROCE_CC_NONE:
		break;
	}
	/* additive increase: one MTU per window's worth of acked bytes */
	inc = mroce_div64((u64)c->tx_seg * acked_bytes, p->st.cwnd);
	old = p->st.cwnd;
	p->st.cwnd = mroce_cc_clamp(c, (u64)p->st.cwnd + max_t(u64, inc, 1));
	mroce_cc_ev(c, p - c->path, MROCE_EVR_INCREASE, old, p->st.cwnd);
}

/* ---------------------------------------------------------------- */
/* The connection window.                                            */

/* The connection window's cap: snd_wnd full packets. */
u32 mroce_cc_conn_max(const struct mroce_conn *c)
{
	return c->p.snd_wnd * (c->tx_seg + MROCE_PKT_OVERHEAD);
}

/* The group window's cap: the connection window's for each member. */
static u32 mroce_cc_group_max(const struct mroce_conn *c)
{
	return mroce_cc_conn_max(c) * max_t(u32, c->grp->members, 1);
}

void mroce_cc_conn_init(struct mroce_conn *c)
{
	memset(&c->cc, 0, sizeof(c->cc));
	mroce_send_srtt_changed(c);
	mroce_cc_group_private(c);
}

/*
 * The connection's own bytes in flight, kept by every change of a path's
 * (mroce_emit, mroce_psn_resolve through mroce_cc_inflight_add/sub).
 */
u32 mroce_cc_conn_inflight(const struct mroce_conn *c)
{
	return c->inflight;
}

/* The peer's segment shrank the cap: clamp the window to it. */
void mroce_cc_conn_clamp(struct mroce_conn *c)
{
	mroce_cc_group_lock(c);
	if (c->grp->cwnd > mroce_cc_group_max(c))
		c->grp->cwnd = mroce_cc_group_max(c);
	mroce_cc_group_unlock(c);
}

/*
 * The connection's additive increase per round trip, in packets: half its
 * UP paths, at least one.  Its paths span up to that many routes, and it
 * claims spare capacity on them as fast as that many flows would, while
 * its decrease acts on one window.  (Measured in the simulator's plane
 * scenario, 16 paths over 4 planes, before the failure: 2, 4 and 8
 * packets per round trip gave 1089, 1135 and 1208 Gb/s.)
 */
static u32 mroce_cc_ai_pkts(const struct mroce_conn *c)
{
	return max_t(u32, mroce_paths_up(c) / 2, 1);
}

static bool mroce_cc_conn_may_cut(const struct mroce_conn *c, u64 now)
{
	return !c->grp->cut_ns || now - c->grp->cut_ns >= c->grp->srtt_ns;
}

static void mroce_cc_conn_scale(struct mroce_conn *c, u32 keep_ppm, u64 now,
				u8 why)
{
	struct mroce_cc_group *g = c->grp;
	u64 w = mroce_div64((u64)g->cwnd * keep_ppm, MROCE_PPM);
	u32 old = g->cwnd;

	g->cwnd = (u32)clamp_t(u64, w, c->p.cwnd_min, mroce_cc_group_max(c));
	g->cut_ns = now ? now : 1;
	c->st.cc_cuts++;
	mroce_cc_ev(c, MROCE_EV_CONN, why, old, g->cwnd);
}

/*
 * Close the observation round when one smoothed RTT has passed: fold its
 * CE fraction into alpha (DCTCP), and cut for a round that lost more than
 * 1/16 of its packets and at least two while a full queue showed (CE or
 * severe delay): buffer overflow.  Loss without a queue is the random
 * loss of a bad link, which recovery repairs without slowing down.
 */
static void mroce_cc_conn_round(struct mroce_conn *c, u64 now)
{
	struct mroce_cc_group *cc = c->grp;
	u32 total = cc->round_pkts + cc->round_lost, frac;

	if (now < cc->round_end_ns)
		return;
	/*
	 * Severe delay: even the round's smallest sample sits far above its
	 * path's base RTT, by 4 targets and by 2 base RTTs.  A standing
	 * queue raises every sample; host jitter (a descheduled vCPU, a late
	 * timer) raises some, and scales with the base RTT of a slow host.
	 */
	if (cc->round_min_rtt &&
	    cc->round_min_rtt - cc->round_min_base >
	    max_t(u64, MROCE_CC_SEVERE * c->p.target_qdelay_ns,
		  2 * cc->round_min_base)) {
		cc->round_queued = true;
		if (mroce_cc_conn_may_cut(c, now))
			mroce_cc_conn_scale(c, mroce_cc_delay_keep(cc->round_min_rtt,
					    cc->round_min_base +
					    c->p.target_qdelay_ns), now,
					    MROCE_EVR_DELAY);
	}
	if (cc->round_pkts) {
		frac = (u32)mroce_div64((u64)cc->round_ce * MROCE_PPM,
					cc->round_pkts);
		cc->alpha_ppm = cc->alpha_ppm -
				(cc->alpha_ppm >> MROCE_CC_G_SHIFT) +
				(frac >> MROCE_CC_G_SHIFT);
	}
	if (cc->round_lost >= 2 && cc->round_queued &&
	    cc->round_lost > total >> MROCE_CC_LOSS_SHIFT &&
	    mroce_cc_conn_may_cut(c, now))
		mroce_cc_conn_scale(c, MROCE_CC_LOSS_PPM, now, MROCE_EVR_LOSS);
	cc->round_pkts = 0;
	cc->round_ce = 0;
	cc->round_lost = 0;
	cc->round_queued = false;
	cc->round_min_rtt = 0;
	cc->round_min_base = 0;
	cc->round_end_ns = now + cc->srtt_ns;
}

static void mroce_cc_conn_ack(struct mroce_conn *c,
			      const struct mroce_path *p, u32 acked_bytes,
			      u32 acked_pkts, u32 ce_pkts,
			      enum mroce_cc_sig sig, u64 rtt, u64 now)
{
	struct mroce_cc_group *cc = c->grp;
	u64 inc;
	u32 old;

	if (rtt)
		cc->srtt_ns = cc->srtt_ns ? cc->srtt_ns - cc->srtt_ns / 8 +
					    rtt / 8 : rtt;
	cc->deliver_ns = now;
	cc->round_pkts += acked_pkts;
	cc->round_ce += ce_pkts;
	if (sig == MROCE_CC_CE)
		cc->round_queued = true;
	if (rtt && (!cc->round_min_rtt ||
		    rtt - p->st.min_rtt_ns <
		    cc->round_min_rtt - cc->round_min_base)) {
		cc->round_min_rtt = rtt;
		cc->round_min_base = p->st.min_rtt_ns;
	}
	mroce_cc_conn_round(c, now);
	switch (sig) {
	case MROCE_CC_CE:
		/*
		 * alpha is the marked fraction over all paths: CE on one
		 * path of many (an ECMP collision) cuts a little; that path's
		 * own window moves its traffic elsewhere.
		 */
		if (mroce_cc_conn_may_cut(c, now))
			mroce_cc_conn_scale(c, MROCE_PPM - cc->alpha_ppm / 2,
					    now, MROCE_EVR_ECN);
		return;
	case MROCE_CC_HOLD:
		return;
	case MROCE_CC_NONE:
		break;
	}
	/* grow only a window in use (not while the applications idle) */
	if (2 * (u64)(cc->inflight + acked_bytes) < cc->cwnd)
		return;
	inc = max_t(u64, mroce_div64((u64)mroce_cc_ai_pkts(c) * c->tx_seg *
				     acked_bytes, cc->cwnd), 1);
	old = cc->cwnd;
	cc->cwnd = (u32)min_t(u64, (u64)cc->cwnd + inc, mroce_cc_group_max(c));
	mroce_cc_ev(c, MROCE_EV_CONN, MROCE_EVR_INCREASE, old, cc->cwnd);
}

void mroce_cc_on_ack(struct mroce_conn *c, struct mroce_path *p,
		     u32 acked_bytes, u32 acked_pkts, u32 ce_pkts, u64 rtt,
		     u64 now)
{
	enum mroce_cc_sig sig;
	u32 frac;

	if (!acked_pkts)
		return;
	if (ce_pkts > acked_pkts)
		ce_pkts = acked_pkts;
	frac = (u32)mroce_div64((u64)ce_pkts * MROCE_PPM, acked_pkts);
	p->st.ecn_frac_ppm = p->st.ecn_frac_ppm -
			     (p->st.ecn_frac_ppm >> MROCE_ECN_G_SHIFT) +
			     (frac >> MROCE_ECN_G_SHIFT);
	sig = mroce_cc_signal(c, p, ce_pkts, rtt);
	mroce_cc_path_ack(c, p, acked_bytes, frac, sig, now);
	/* the connection's own RTT, for its timers */
	if (rtt) {
		c->cc.srtt_ns = c->cc.srtt_ns ? c->cc.srtt_ns -
				c->cc.srtt_ns / 8 + rtt / 8 : rtt;
		mroce_send_srtt_changed(c);
	}
	mroce_cc_group_lock(c);
	mroce_cc_conn_ack(c, p, acked_bytes, acked_pkts, ce_pkts, sig, rtt,
			  now);
	c->cc.grp_srtt_ns = c->grp->members > 1 ? c->grp->srtt_ns : 0;
	mroce_cc_group_unlock(c);
}

void mroce_cc_on_loss(struct mroce_conn *c, struct mroce_path *p, u32 pkts,
		      u64 now)
{
	if (mroce_cc_may_cut(p, now))
		mroce_cc_scale(c, p, MROCE_CC_LOSS_PPM, now, MROCE_EVR_LOSS);
	mroce_cc_group_lock(c);
	c->grp->round_lost += pkts;
	mroce_cc_conn_round(c, now);
	mroce_cc_group_unlock(c);
}

/*
 * An RTO empties the path's window (called after the path's packets were
 * declared lost).  The connection's is halved only when the path is its
 * only one, or when other paths have packets in flight and none of them
 * delivered anything for an RTO either: one dead route among working ones
 * (a failed plane) is the path's problem, and the steering's.
 */
void mroce_cc_on_rto(struct mroce_conn *c, struct mroce_path *p, u64 rto,
		     u64 now)
{
	u32 old = p->st.cwnd;
	bool stalled;

	p->st.cwnd = c->p.cwnd_min;
	mroce_cc_ev(c, p - c->path, MROCE_EVR_RTO, old, p->st.cwnd);
	mroce_cc_group_lock(c);
	stalled = mroce_paths_up(c) <= 1 ||
		  (mroce_cc_conn_inflight(c) &&
		   now - c->grp->deliver_ns >= rto);
	if (stalled && mroce_cc_conn_may_cut(c, now))
		mroce_cc_conn_scale(c, MROCE_PPM / 2, now, MROCE_EVR_RTO);
	mroce_cc_group_unlock(c);
}
