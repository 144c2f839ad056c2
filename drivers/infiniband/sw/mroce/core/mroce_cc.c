// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * per-path congestion control (Documentation/mroce-protocol.rst,
 * "Congestion control").
 *
 * One byte window per path.  Additive increase of one MTU per round trip;
 * at most one multiplicative decrease per smoothed RTT, driven by
 *  - ECN (DCQCN-like): alpha = EWMA of the CE fraction, cwnd *= 1 - alpha/2;
 *  - delay (Swift-like): RTT above min_rtt + target_qdelay,
 *    cwnd *= 1 - beta * (rtt - target) / rtt, at most by MROCE_CC_MAX_MDF;
 *  - loss (RACK): cwnd *= 0.7; RTO: cwnd = cwnd_min.
 * No PFC, no credits.  Runs under the connection's serialisation.
 */
#include "mroce_internal.h"

#define MROCE_CC_G_SHIFT	4	/* alpha gain 1/16 */
#define MROCE_CC_BETA_PPM	800000u	/* Swift beta 0.8 */
#define MROCE_CC_MAX_MDF_PPM	500000u	/* at most halve per RTT */
#define MROCE_CC_LOSS_PPM	700000u	/* keep 70% on a loss event */
#define MROCE_ECN_G_SHIFT	3	/* telemetry EWMA gain 1/8 */

static u32 mroce_cc_clamp(const struct mroce_conn *c, u64 w)
{
	if (w < c->p.cwnd_min)
		return c->p.cwnd_min;
	if (w > c->p.cwnd_max)
		return c->p.cwnd_max;
	return (u32)w;
}

static void mroce_cc_scale(struct mroce_conn *c, struct mroce_path *p,
			   u32 keep_ppm, u64 now)
{
	p->st.cwnd = mroce_cc_clamp(c, mroce_div64((u64)p->st.cwnd * keep_ppm,
						   MROCE_PPM));
	p->cc_cut_ns = now;
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

void mroce_cc_rtt_sample(struct mroce_conn *c, struct mroce_path *p, u64 rtt)
{
	u64 err;

	if (!rtt)
		rtt = 1;
	if (!p->st.min_rtt_ns || rtt < p->st.min_rtt_ns)
		p->st.min_rtt_ns = rtt;
	if (!p->st.srtt_ns) {
		p->st.srtt_ns = rtt;
		p->st.rttvar_ns = rtt / 2;
		return;
	}
	err = rtt > p->st.srtt_ns ? rtt - p->st.srtt_ns : p->st.srtt_ns - rtt;
	p->st.rttvar_ns = p->st.rttvar_ns - p->st.rttvar_ns / 4 + err / 4;
	p->st.srtt_ns = p->st.srtt_ns - p->st.srtt_ns / 8 + rtt / 8;
}

void mroce_cc_on_ack(struct mroce_conn *c, struct mroce_path *p,
		     u32 acked_bytes, u32 acked_pkts, u32 ce_pkts, u64 rtt,
		     u64 now)
{
	u64 target, frac, keep, inc;

	if (!acked_pkts)
		return;
	if (ce_pkts > acked_pkts)
		ce_pkts = acked_pkts;
	frac = mroce_div64((u64)ce_pkts * MROCE_PPM, acked_pkts);
	p->cc_alpha_ppm = p->cc_alpha_ppm - (p->cc_alpha_ppm >> MROCE_CC_G_SHIFT) +
			  (u32)(frac >> MROCE_CC_G_SHIFT);
	p->st.ecn_frac_ppm = p->st.ecn_frac_ppm -
			     (p->st.ecn_frac_ppm >> MROCE_ECN_G_SHIFT) +
			     (u32)(frac >> MROCE_ECN_G_SHIFT);

	if (ce_pkts) {
		if (mroce_cc_may_cut(p, now)) {
			u32 a = max_t(u32, p->cc_alpha_ppm, (u32)(frac / 4));

			mroce_cc_scale(c, p, MROCE_PPM - a / 2, now);
		}
		return;
	}
	target = p->st.min_rtt_ns + c->p.target_qdelay_ns;
	if (rtt && rtt > target) {
		if (mroce_cc_may_cut(p, now)) {
			keep = MROCE_PPM -
			       mroce_div64((rtt - target) * MROCE_CC_BETA_PPM,
					   rtt);
			if (keep < MROCE_PPM - MROCE_CC_MAX_MDF_PPM)
				keep = MROCE_PPM - MROCE_CC_MAX_MDF_PPM;
			mroce_cc_scale(c, p, (u32)keep, now);
		}
		return;
	}
	/* additive increase: one MTU per window's worth of acked bytes */
	inc = mroce_div64((u64)c->p.mtu * acked_bytes, p->st.cwnd);
	if (!inc)
		inc = 1;
	p->st.cwnd = mroce_cc_clamp(c, (u64)p->st.cwnd + inc);
}

void mroce_cc_on_loss(struct mroce_conn *c, struct mroce_path *p, u64 now)
{
	if (mroce_cc_may_cut(p, now))
		mroce_cc_scale(c, p, MROCE_CC_LOSS_PPM, now);
}

void mroce_cc_on_rto(struct mroce_conn *c, struct mroce_path *p)
{
	p->st.cwnd = c->p.cwnd_min;
}
