// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * logical paths: source-port entropy, scheduling of new
 * packets, steering of outlier paths and the up/down state machine
 * (Documentation/mroce-protocol.rst, "Paths").
 * Runs under the connection's serialisation.
 */
#include "mroce_internal.h"

/* Steering thresholds below which a path is never called an outlier. */
#define MROCE_STEER_ECN_FLOOR	50000u		/* 5% CE */
#define MROCE_STEER_LOSS_FLOOR	10000u		/* 1% loss */
#define MROCE_STEER_INFL_FLOOR	2000u		/* srtt 2x min_rtt */
#define MROCE_STEER_MIN_PKTS	16u		/* samples before judging */

static bool mroce_sport_used(const struct mroce_conn *c, u16 port)
{
	u32 i;

	for (i = 0; i < c->p.num_paths; i++)
		if (c->path[i].st.sport == port)
			return true;
	return false;
}

/* why: enum mroce_ev_reason of the change (MROCE_EVR_NONE: not reported) */
void mroce_path_new_sport(struct mroce_conn *c, u32 i, u8 why)
{
	u32 span = (u32)c->p.sport_max - c->p.sport_min + 1;
	u16 old = c->path[i].st.sport, port = old;
	int tries;

	for (tries = 0; tries < 32; tries++) {
		port = c->p.sport_min + mroce_prng_below(&c->rng, span);
		if (!mroce_sport_used(c, port))
			break;
	}
	c->path[i].st.sport = port;
	if (why != MROCE_EVR_NONE)
		mroce_ev(c, .type = MROCE_EV_STEER, .reason = why, .path = i,
			 .a = old, .b = port);
}

void mroce_path_init(struct mroce_conn *c, u32 i, u64 now)
{
	struct mroce_path *p = &c->path[i];

	memset(p, 0, sizeof(*p));
	p->st.state = MROCE_PATH_UP;
	mroce_cc_init(c, p);
	mroce_path_new_sport(c, i, MROCE_EVR_NONE);
}

u32 mroce_paths_up(const struct mroce_conn *c)
{
	u32 i, n = 0;

	for (i = 0; i < c->p.num_paths; i++)
		n += c->path[i].st.state == MROCE_PATH_UP;
	return n;
}

bool mroce_path_has_room(const struct mroce_conn *c, u32 i, u32 wlen)
{
	const struct mroce_path *p = &c->path[i];

	if (p->st.state != MROCE_PATH_UP)
		return false;
	if (p->snd_nxt - p->snd_una >= c->p.path_wnd)
		return false;
	/* An empty path may always send one packet. */
	return !p->st.inflight || p->st.inflight + wlen <= p->st.cwnd;
}

/*
 * Pick the path for a packet of wlen window bytes, if the connection window
 * (mroce_cc.c) has room for it.  A path whose RTO just
 * fired comes first: its next packet (normally the retransmission of what
 * it lost) tells whether the path recovered, so that a dead route keeps
 * timing out until it is declared down instead of idling with a dead port.
 * Otherwise the UP path whose window is least full (inflight / cwnd), ties
 * broken by a rotating start so equal paths share the load: the paths
 * share what the connection window allows in proportion to their own
 * windows, so a path cut for its CE marks or losses carries less, but
 * still enough to be measured (and steered).  Returns the path index or
 * -1.
 */
int mroce_path_pick(struct mroce_conn *c, u32 wlen)
{
	u32 n = c->p.num_paths, k, i;
	u64 best_fill = U64_MAX, fill;
	int best = -1;

	/*
	 * the connection (group) window first; an idle one may send one
	 * packet; shared, the group's fairness rule (mroce_cc_group.c)
	 */
	if (!mroce_cc_group_room(c, wlen))
		return -1;
	for (i = 0; i < n; i++)
		if (c->path[i].rto_retx && mroce_path_has_room(c, i, wlen))
			return (int)i;
	c->sched_rr = (c->sched_rr + 1) % n;
	for (k = 0; k < n; k++) {
		i = (c->sched_rr + k) % n;
		if (!mroce_path_has_room(c, i, wlen))
			continue;
		fill = mroce_div64(((u64)c->path[i].st.inflight + wlen) << 16,
				   c->path[i].st.cwnd);
		if (fill < best_fill) {
			best_fill = fill;
			best = (int)i;
		}
	}
	return best;
}

void mroce_path_down(struct mroce_conn *c, u32 i, u64 now)
{
	struct mroce_path *p = &c->path[i];

	if (p->st.state == MROCE_PATH_DOWN)
		return;
	mroce_loss_requeue_path(c, i);
	p->st.state = MROCE_PATH_DOWN;
	p->st.downs++;
	p->tlp_req = false;
	p->tlp_out = 0;
	p->rto_retx = false;
	p->probe_out = false;
	p->probe_due_ns = now;
	mroce_ev(c, .type = MROCE_EV_PATH_DOWN, .path = i,
		 .count = p->consec_rto, .a = p->st.sport);
	mroce_path_new_sport(c, i, MROCE_EVR_DOWN);
	if (!mroce_paths_up(c) && !c->all_down_since_ns) {
		c->all_down_since_ns = now ? now : 1;
		c->down_rounds = 0;
		c->idle_down_rounds = 0;
		c->probe_shift = 0;
		c->down_round_heard = c->peer_heard;
		c->probe_deferred = false;
		c->down_round_due_ns = now + mroce_loss_down_round_ns(c);
	}
}

void mroce_path_up(struct mroce_conn *c, u32 i, u64 now)
{
	struct mroce_path *p = &c->path[i];
	u32 cwnd = p->st.cwnd;

	if (p->st.state == MROCE_PATH_UP)
		return;
	p->st.state = MROCE_PATH_UP;
	p->consec_rto = 0;
	p->backoff = 0;
	p->probe_out = false;
	p->st.min_rtt_ns = 0;
	mroce_cc_init(c, p);
	mroce_ev(c, .type = MROCE_EV_PATH_UP, .path = i, .a = p->st.sport);
	if (cwnd != p->st.cwnd)
		mroce_ev(c, .type = MROCE_EV_CWND, .reason = MROCE_EVR_RESET,
			 .path = i, .a = cwnd, .b = p->st.cwnd);
	p->last_ack_ns = now;
	c->all_down_since_ns = 0;
	c->down_rounds = 0;
	c->idle_down_rounds = 0;
	c->probe_shift = 0;
}

/* Sport for an ACK of path i: that path's, or any UP path's. */
u16 mroce_ack_sport(const struct mroce_conn *c, u32 i)
{
	u32 k;

	if (c->path[i].st.state == MROCE_PATH_UP)
		return c->path[i].st.sport;
	for (k = 0; k < c->p.num_paths; k++)
		if (c->path[k].st.state == MROCE_PATH_UP)
			return c->path[k].st.sport;
	return c->path[i].st.sport;
}

static u32 mroce_median(u32 *v, u32 n)
{
	u32 i, j, t;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
			t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[n / 2];
}

static u32 mroce_infl(const struct mroce_path *p)
{
	if (!p->st.min_rtt_ns)
		return 1000;
	return (u32)min_t(u64, mroce_div64(p->st.srtt_ns * 1000,
					   p->st.min_rtt_ns), U32_MAX);
}

/* The path's value of steering metric m (0 ECN, 1 loss, 2 inflation). */
static u32 mroce_metric(const struct mroce_path *p, int m)
{
	if (m == 0)
		return p->st.ecn_frac_ppm;
	if (m == 1)
		return p->st.loss_frac_ppm;
	return mroce_infl(p);
}

static bool mroce_steer_candidate(const struct mroce_path *p)
{
	return p->st.state == MROCE_PATH_UP &&
	       p->steer_samples >= MROCE_STEER_MIN_PKTS;
}

/*
 * Steering: compare every UP path with enough samples to the median of
 * all of them; the worst outlier (ECN fraction, loss fraction or RTT
 * inflation above steer_factor_pct of the median and above an absolute
 * floor) gets a fresh source port and fresh telemetry.  At most one path
 * per steering period, so the others keep a stable baseline.
 */
void mroce_path_steer(struct mroce_conn *c, u64 now)
{
	static const u32 floor[3] = {
		MROCE_STEER_ECN_FLOOR, MROCE_STEER_LOSS_FLOOR,
		MROCE_STEER_INFL_FLOOR,
	};
	u32 tmp[MROCE_MAX_PATHS], lim[3];
	u32 n, i, f = c->p.steer_factor_pct;
	u64 worst_score = 0, part, top;
	int worst = -1, m, worst_m = 0, top_m;
	struct mroce_path *p;

	for (m = 0; m < 3; m++) {
		n = 0;
		for (i = 0; i < c->p.num_paths; i++)
			if (mroce_steer_candidate(&c->path[i]))
				tmp[n++] = mroce_metric(&c->path[i], m);
		if (n < 2)
			return;
		lim[m] = max_t(u32, (u32)mroce_div64((u64)mroce_median(tmp, n) *
						     f, 100), floor[m]);
	}
	for (i = 0; i < c->p.num_paths; i++) {
		u64 score = 0;
		u32 v;

		p = &c->path[i];
		if (!mroce_steer_candidate(p))
			continue;
		top = 0;
		top_m = 0;
		for (m = 0; m < 3; m++) {
			v = mroce_metric(p, m);
			if (v <= lim[m])
				continue;
			part = mroce_div64((u64)v * 1000, lim[m]);
			score += part;
			if (part > top) {
				top = part;
				top_m = m;
			}
		}
		if (score > worst_score) {
			worst_score = score;
			worst = (int)i;
			worst_m = top_m;	/* the metric that weighs most */
		}
	}
	if (worst < 0)
		return;
	p = &c->path[worst];
	mroce_path_new_sport(c, (u32)worst, worst_m == 0 ? MROCE_EVR_ECN :
			     worst_m == 1 ? MROCE_EVR_LOSS : MROCE_EVR_DELAY);
	p->st.steers++;
	p->st.ecn_frac_ppm = 0;
	p->st.loss_frac_ppm = 0;
	p->st.min_rtt_ns = 0;
	p->steer_samples = 0;
	p->cc_alpha_ppm = 0;
	/*
	 * The CE echo baseline stays: the peer's count for this path index
	 * runs on across the steer, and re-learning it from an ACK that was
	 * already in flight would count the same marks twice.
	 */
}
