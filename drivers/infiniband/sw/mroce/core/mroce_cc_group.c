// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * congestion groups (Documentation/mroce-protocol.rst, 9.4).
 *
 * The connections of one device to one peer share one connection-level
 * congestion controller (struct mroce_cc_group, the window mroce_cc.c
 * moves): N QPs between two hosts back off and grow like one flow, not
 * like N.  What is shared: the window, alpha, the observation round and
 * its srtt, the additive increase, the bytes in flight together.  What is
 * not: each connection's paths and their windows, its RTT estimate for its
 * own timers, its loss recovery.
 *
 * Fairness rule.  A member may send when the group window has room; while
 * another member waits for room, a member may not go past its share
 * (cwnd / busy members, at least one packet).  A refused member is marked
 * waiting, and the waiting members take turns: the room for one packet is
 * kept for the member whose turn it is (others may use only what is
 * beyond it), that member may send past its share (so the window fills
 * when shares are below a packet, or do not divide it), and the turn
 * passes on, to the member that has waited longest (a FIFO), when it
 * sent or stopped waiting.  Work-conserving: alone, a member may fill the whole window.  The member whose turn
 * it is gets kicked (ops->kick: the embedder runs its transmit soon) when
 * bytes leave the window (an ACK, a loss, a member failing or leaving) and
 * when the turn reaches it, so a member with nothing in flight, which no
 * ACK of its own would wake, is not starved.  A waiting member also polls
 * once per srtt (mroce_send_next_timer()), so a kick lost in a race costs
 * an srtt, not the connection.
 *
 * Locking: every access to a shared group's state happens between
 * ops->lock and ops->unlock, with the calling connection's serialisation
 * held (order: connection, then group).  A private group (ops NULL) has
 * one member and no lock.
 */
#include "mroce_internal.h"

/* The group's lock, taken by the member that touches the group. */
static void mroce_grp_lock(struct mroce_cc_group *g)
{
	if (g->ops)
		g->ops->lock(g->gctx);
}

static void mroce_grp_unlock(struct mroce_cc_group *g)
{
	if (g->ops)
		g->ops->unlock(g->gctx);
}

/* Group lock held: keep grp->busy counting members in flight or waiting. */
static void mroce_grp_busy_update(struct mroce_cc_group *g,
				  struct mroce_conn *c)
{
	bool busy = c->inflight || c->grp_wait;

	if (busy == c->grp_busy)
		return;
	c->grp_busy = busy;
	if (busy)
		g->busy++;
	else
		g->busy--;
}

/*
 * Group lock held: kick the member whose turn it is, unless it is c (which
 * runs its own transmit after this call) or was kicked since it last
 * tried.
 */
static void mroce_grp_kick(struct mroce_cc_group *g, struct mroce_conn *c)
{
	struct mroce_conn *t = g->turn;

	if (!g->ops || !t || t == c || t->grp_kicked)
		return;
	t->grp_kicked = true;
	g->kicks++;
	g->ops->kick(t->ctx);
}

/*
 * The waiting members form a FIFO, g->turn (its head, whose turn it is)
 * to g->wait_tail, linked by grp_wnext: a member refused joins at the
 * tail, one that stops waiting leaves it, and when the head leaves the
 * turn passes to the next in line.  Each step is O(1): a scan of the
 * member list for the next waiting member, as before, cost O(members)
 * whenever the turn passed, and with thousands of QPs to one peer that
 * scan ran for every packet a waiting member sent.
 */
static void mroce_grp_wait_unlink(struct mroce_cc_group *g,
				  struct mroce_conn *c)
{
	if (c->grp_wprev)
		c->grp_wprev->grp_wnext = c->grp_wnext;
	else
		g->turn = c->grp_wnext;
	if (c->grp_wnext)
		c->grp_wnext->grp_wprev = c->grp_wprev;
	else
		g->wait_tail = c->grp_wprev;
	c->grp_wnext = NULL;
	c->grp_wprev = NULL;
}

static void mroce_grp_set_wait(struct mroce_cc_group *g, struct mroce_conn *c,
			       bool wait)
{
	bool was_turn = g->turn == c;

	if (c->grp_wait != wait) {
		c->grp_wait = wait;
		if (wait) {
			g->waiting++;
			c->grp_wnext = NULL;
			c->grp_wprev = g->wait_tail;
			if (g->wait_tail)
				g->wait_tail->grp_wnext = c;
			else
				g->turn = c;
			g->wait_tail = c;
		} else {
			g->waiting--;
			mroce_grp_wait_unlink(g, c);
		}
	}
	if (!wait && was_turn)
		mroce_grp_kick(g, c);
	mroce_grp_busy_update(g, c);
}

/*
 * A fresh controller starting at c's initial window: every field zero but
 * the embedder's (ops, gctx) and the kicks counter, which outlive the
 * members (debugfs).
 */
static void mroce_grp_start(struct mroce_cc_group *g,
			    const struct mroce_conn *c)
{
	const struct mroce_cc_group_ops *ops = g->ops;
	void *gctx = g->gctx;
	u64 kicks = g->kicks;

	memset(g, 0, sizeof(*g));
	g->ops = ops;
	g->gctx = gctx;
	g->kicks = kicks;
	g->cwnd = c->p.cwnd_init;
	g->alpha_ppm = MROCE_PPM;	/* as DCTCP: the first mark halves */
}

/*
 * May c probe one of its down paths now?  A group probes no faster than
 * one connection: at most num_paths probes per probe_ns over all of its
 * members.  Otherwise N connections to one peer whose paths went down
 * together (a queue that delayed every ACK past the RTOs) probe N times
 * as fast, their probes and the ACKs answering them fill the queue that
 * brought the paths down, and more paths go down: with 4,000 QPs between
 * two hosts, tens of millions of packets dropped by the sender's qdisc.
 * When refused, *next_ns is when the next window opens.
 */
bool mroce_cc_group_probe(struct mroce_conn *c, u64 now, u64 *next_ns)
{
	struct mroce_cc_group *g = c->grp;
	bool ok;

	mroce_grp_lock(g);
	if (!g->probe_win_ns || now - g->probe_win_ns >= c->p.probe_ns) {
		g->probe_win_ns = now ? now : 1;
		g->probe_cnt = 0;
	}
	ok = g->probe_cnt < c->p.num_paths;
	if (ok)
		g->probe_cnt++;
	*next_ns = g->probe_win_ns + c->p.probe_ns;
	mroce_grp_unlock(g);
	return ok;
}

/* A fresh window for c alone (at init, after leaving a shared group). */
void mroce_cc_group_private(struct mroce_conn *c)
{
	struct mroce_cc_group *g = &c->grp_own;

	memset(g, 0, sizeof(*g));
	mroce_grp_start(g, c);
	g->members = 1;
	g->inflight = c->inflight;
	g->busy = c->inflight ? 1 : 0;
	c->grp = g;
	c->cc.grp_srtt_ns = 0;	/* no group RTO floor (mroce_loss_rto()) */
	c->grp_next = NULL;
	c->grp_wait = false;
	c->grp_kicked = false;
	c->grp_busy = g->busy;
}

void mroce_cc_group_init(struct mroce_cc_group *g,
			 const struct mroce_cc_group_ops *ops, void *gctx)
{
	memset(g, 0, sizeof(*g));
	g->ops = ops;
	g->gctx = gctx;
}

int mroce_cc_group_join(struct mroce_conn *c, struct mroce_cc_group *g)
{
	if (!g || !g->ops || c->grp != &c->grp_own || c->inflight)
		return MROCE_E_STATE;
	mroce_grp_lock(g);
	/* the first member's parameters start the window */
	if (!g->members)
		mroce_grp_start(g, c);
	c->grp_next = g->head;
	g->head = c;
	g->members++;
	c->grp = g;
	c->grp_wait = false;
	c->grp_wnext = NULL;
	c->grp_wprev = NULL;
	c->grp_kicked = false;
	c->grp_busy = false;
	mroce_grp_unlock(g);
	return 0;
}

void mroce_cc_group_leave(struct mroce_conn *c)
{
	struct mroce_cc_group *g = c->grp;
	struct mroce_conn **pp;

	if (!g->ops)
		return;
	mroce_grp_lock(g);
	g->inflight -= min_t(u32, c->inflight, g->inflight);
	mroce_grp_set_wait(g, c, false);	/* passes the turn on */
	if (c->grp_busy)
		g->busy--;
	c->grp_busy = false;
	for (pp = &g->head; *pp; pp = &(*pp)->grp_next) {
		if (*pp == c) {
			*pp = c->grp_next;
			break;
		}
	}
	g->members--;
	mroce_grp_kick(g, c);
	mroce_grp_unlock(g);
	mroce_cc_group_private(c);
}

/* Every change of c->inflight goes through these two. */
void mroce_cc_inflight_add(struct mroce_conn *c, u32 w)
{
	struct mroce_cc_group *g = c->grp;

	mroce_grp_lock(g);
	c->inflight += w;
	g->inflight += w;
	mroce_grp_busy_update(g, c);
	mroce_grp_unlock(g);
}

void mroce_cc_inflight_sub(struct mroce_conn *c, u32 w)
{
	struct mroce_cc_group *g = c->grp;

	w = min_t(u32, w, c->inflight);
	mroce_grp_lock(g);
	c->inflight -= w;
	g->inflight -= min_t(u32, w, g->inflight);
	mroce_grp_busy_update(g, c);
	mroce_grp_kick(g, c);
	mroce_grp_unlock(g);
}

/* c stopped (error) or waits for the peer (RNR): hold no window, wait for none. */
void mroce_cc_group_release(struct mroce_conn *c, bool inflight)
{
	struct mroce_cc_group *g = c->grp;

	mroce_grp_lock(g);
	if (inflight) {
		g->inflight -= min_t(u32, c->inflight, g->inflight);
		c->inflight = 0;
	}
	mroce_grp_set_wait(g, c, false);
	mroce_grp_kick(g, c);
	mroce_grp_unlock(g);
}

/*
 * May c put wlen more window bytes in flight?  The group window first (an
 * idle group may send one packet), then the fairness rule above.  A
 * refusal marks c waiting (for a kick); a grant clears it.
 */
bool mroce_cc_group_room(struct mroce_conn *c, u32 wlen)
{
	struct mroce_cc_group *g = c->grp;
	u32 share, reserve;
	bool ok;

	if (!g->ops)
		return !g->inflight || g->inflight + wlen <= g->cwnd;
	mroce_grp_lock(g);
	c->grp_kicked = false;
	/* one packet's room is kept for the member whose turn it is */
	reserve = g->turn && g->turn != c ? wlen : 0;
	ok = !g->inflight || g->inflight + wlen + reserve <= g->cwnd;
	if (ok && g->waiting > (u32)c->grp_wait && c->inflight &&
	    g->turn != c) {
		share = g->cwnd / (g->busy + !c->grp_busy);
		if (c->inflight + wlen > max_t(u32, share, wlen))
			ok = false;
	}
	/* alone in its group, nobody would kick it: as a private window */
	mroce_grp_set_wait(g, c, !ok && g->members > 1);
	mroce_grp_unlock(g);
	return ok;
}

/*
 * What get_info shows of the group (under its lock); nothing for zeroed
 * memory never initialised (embedders read counters before the first
 * mroce_conn_init()).
 */
void mroce_cc_group_info(const struct mroce_conn *c,
			 struct mroce_conn_info *out)
{
	struct mroce_cc_group *g = c->grp;

	out->cwnd = 0;
	out->grp_members = 0;
	out->grp_inflight = 0;
	out->grp_wait = false;
	if (!g)
		return;
	mroce_grp_lock(g);
	out->cwnd = g->cwnd;
	out->grp_members = g->members;
	out->grp_inflight = g->inflight;
	out->grp_wait = c->grp_wait;
	mroce_grp_unlock(g);
}

/* mroce_conn_check()'s part: NULL or the violated invariant. */
const char *mroce_cc_group_check(const struct mroce_conn *c)
{
	struct mroce_cc_group *g = c->grp;
	const char *err = NULL;
	u32 max;

	mroce_grp_lock(g);
	max = mroce_cc_conn_max(c) * max_t(u32, g->members, 1);
	if (g->cwnd < c->p.cwnd_min || g->cwnd > max)
		err = "connection window out of bounds";
	else if (g->inflight < c->inflight)
		err = "group inflight below a member's";
	else if (!g->ops && g->inflight != c->inflight)
		err = "private group inflight differs from the connection's";
	else if (c->grp_busy != (c->inflight || c->grp_wait))
		err = "group busy flag stale";
	else if (g->busy > g->members || g->waiting > g->members)
		err = "group counts above its members";
	mroce_grp_unlock(g);
	return err;
}
