// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * connection setup, parameter validation and the entry
 * points that dispatch to the sender and receiver engines.
 * Serialised by the caller (see mroce_core.h).
 */
#include "mroce_internal.h"

void mroce_params_default(struct mroce_params *p)
{
	memset(p, 0, sizeof(*p));
	p->num_paths = 16;
	p->max_inflight = 1024;
	p->sport_min = 49152;
	p->sport_max = 65535;
	p->rto_init_ns = 1000000;
	p->rto_min_ns = 200000;
	p->rto_max_ns = 64000000;
	p->reo_wnd_min_ns = 10000;
	p->ack_delay_ns = 10000;
	p->ack_delay_max_ns = 4000000;
	p->ack_every = 8;
	p->down_after_rtos = 3;
	p->retry_budget = 7;
	p->rnr_retry = MROCE_RNR_RETRY_INF;
	p->min_rnr_timer = 4;
	p->probe_ns = 1000000;
	p->steer_ns = 1000000;
	p->steer_factor_pct = 300;
	p->target_qdelay_ns = 25000;
	mroce_params_set_mtu(p, 4096);
	p->seed = 1;
	p->max_rd_atomic = MROCE_MAX_RESP;
	p->max_dest_rd_atomic = MROCE_MAX_RESP;
	p->max_msgs = MROCE_MAX_MSGS;
	p->path_wnd = MROCE_PATH_WND;
}

void mroce_params_set_mtu(struct mroce_params *p, u32 mtu)
{
	p->mtu = mtu;
	p->cwnd_init = 16 * (mtu + MROCE_PKT_OVERHEAD);
	p->cwnd_min = mtu + MROCE_PKT_OVERHEAD;
	p->cwnd_max = (p->path_wnd ? p->path_wnd : MROCE_PATH_WND) *
		      (mtu + MROCE_PKT_OVERHEAD);
}

/* Our DSN window: snd_wnd, or max_inflight for 0. */
static u32 mroce_snd_wnd(const struct mroce_params *p)
{
	return p->snd_wnd ? p->snd_wnd : p->max_inflight;
}

void mroce_params_fit_paths(struct mroce_params *p)
{
	u32 w = 16, share = p->num_paths ?
			    2 * mroce_snd_wnd(p) / p->num_paths : 0;

	while (w < share && w < MROCE_PATH_WND)
		w *= 2;
	p->path_wnd = w;
	p->cwnd_max = w * (p->mtu + MROCE_PKT_OVERHEAD);
	if (p->cwnd_init > p->cwnd_max)
		p->cwnd_init = p->cwnd_max;
}

static u32 mroce_fmix32(u32 h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

u32 mroce_isn_start(u32 isn, u32 space)
{
	u32 k = (space & 0xff) << 24;

	return mroce_fmix32(k | (isn & MROCE_ISN_MASK)) - mroce_fmix32(k);
}

/*
 * Start our send spaces: DSN and every path's PSN from isn_tx, or, while
 * isn_tx is not known (RTR, where we may already serve READs), from
 * isn_rx in the LATE spaces.  Our isn_rx is the peer's sq_psn, which it
 * knows once it is at RTS, the only state in which it sends the requests
 * we would answer: it accepts the LATE spaces then (mroce_recv_data()).
 */
static void mroce_seq_tx_init(struct mroce_conn *c)
{
	bool late = c->p.isn_tx_late;
	u32 isn = late ? c->p.isn_rx : c->p.isn_tx, i, psn;

	c->snd_dsn_una = mroce_isn_start(isn, late ? MROCE_ISN_DSN_LATE :
					 MROCE_ISN_DSN);
	c->snd_dsn_nxt = c->snd_dsn_una;
	for (i = 0; i < c->p.num_paths; i++) {
		psn = mroce_isn_start(isn, (late ? MROCE_ISN_PSN_LATE :
					    MROCE_ISN_PSN) + i);
		c->path[i].snd_una = psn;
		c->path[i].snd_nxt = psn;
		c->path[i].rack_psn = psn;
	}
}

static void mroce_seq_msn_init(struct mroce_conn *c)
{
	c->msn_una = mroce_isn_start(c->p.isn_tx, MROCE_ISN_MSN);
	c->msn_seg = c->msn_una;
	c->msn_nxt = c->msn_una;
}

static bool mroce_params_ok(const struct mroce_params *p)
{
	if (!p->num_paths || p->num_paths > MROCE_MAX_PATHS)
		return false;
	if (p->max_inflight < 16 || p->max_inflight > MROCE_MAX_INFLIGHT ||
	    (p->max_inflight & (p->max_inflight - 1)))
		return false;
	if (p->snd_wnd && (p->snd_wnd < 16 || p->snd_wnd > p->max_inflight ||
			   (p->snd_wnd & (p->snd_wnd - 1))))
		return false;
	if (p->mtu < 256 || p->mtu > MROCE_MAX_PAYLOAD)
		return false;
	if (p->max_seg && (p->max_seg % MROCE_SEG_UNIT ||
			   p->max_seg < p->mtu ||
			   p->max_seg > MROCE_MAX_PAYLOAD))
		return false;
	if (p->dqpn & ~MROCE_QPN_MASK)
		return false;
	if (p->sport_min > p->sport_max ||
	    (u32)p->sport_max - p->sport_min + 1 < p->num_paths)
		return false;
	if (!p->rto_min_ns || p->rto_min_ns > p->rto_init_ns ||
	    p->rto_init_ns > p->rto_max_ns)
		return false;
	if (p->rnr_retry > MROCE_RNR_RETRY_INF ||
	    p->min_rnr_timer > MROCE_RNR_TIMER_MAX)
		return false;
	if (!p->ack_every || !p->ack_delay_max_ns || !p->down_after_rtos ||
	    !p->probe_ns ||
	    !p->steer_ns || p->steer_factor_pct < 100)
		return false;
	if (!p->cwnd_min || p->cwnd_min > p->cwnd_init ||
	    p->cwnd_init > p->cwnd_max)
		return false;
	if ((p->isn_tx | p->isn_rx) & ~MROCE_ISN_MASK)
		return false;
	if (!p->max_rd_atomic || p->max_rd_atomic > MROCE_MAX_RESP ||
	    p->max_dest_rd_atomic > MROCE_MAX_RESP)
		return false;
	if (!p->max_msgs || p->max_msgs > MROCE_MAX_MSGS ||
	    (p->max_msgs & (p->max_msgs - 1)))
		return false;
	if (p->path_wnd < 16 || p->path_wnd > MROCE_PATH_WND ||
	    (p->path_wnd & (p->path_wnd - 1)) ||
	    p->cwnd_init > p->path_wnd * (p->mtu + MROCE_PKT_OVERHEAD))
		return false;
	return true;
}

int mroce_conn_update(struct mroce_conn *c, const struct mroce_params *p)
{
	struct mroce_params n;
	bool learn;

	if (!c || !p)
		return MROCE_E_INVAL;
	learn = c->p.isn_tx_late && !p->isn_tx_late;
	n = c->p;
	n.rto_init_ns = p->rto_init_ns;
	n.rto_max_ns = p->rto_max_ns;
	n.probe_ns = p->probe_ns;
	n.retry_budget = p->retry_budget;
	n.rnr_retry = p->rnr_retry;
	n.min_rnr_timer = p->min_rnr_timer;
	n.max_rd_atomic = p->max_rd_atomic;
	n.max_dest_rd_atomic = p->max_dest_rd_atomic;
	if (learn) {
		n.isn_tx = p->isn_tx;
		n.isn_tx_late = false;
	}
	if (!mroce_params_ok(&n))
		return MROCE_E_INVAL;
	c->p = n;
	if (learn) {
		/* isn_tx just became known: no WR was posted before RTS */
		if (!c->msn_started)
			mroce_seq_msn_init(c);
		/* nothing sent yet: the ordinary spaces, not the LATE ones */
		if (!c->tx_started)
			mroce_seq_tx_init(c);
	}
	return 0;
}

size_t mroce_conn_size(const struct mroce_params *p)
{
	if (!p || !mroce_params_ok(p))
		return 0;
	/* every element size is a multiple of 8, u32 last: all aligned */
	BUILD_BUG_ON(sizeof(struct mroce_conn) % 8 ||
		     sizeof(struct mroce_path) % 8 ||
		     sizeof(struct mroce_dsn_ent) % 8 ||
		     sizeof(struct mroce_smsg) % 8 ||
		     sizeof(struct mroce_psn_ent) % 8 ||
		     MROCE_ACK_BLK_SIZE % 8);
	return sizeof(struct mroce_conn) +
	       p->num_paths * (sizeof(struct mroce_path) +
			       p->path_wnd * sizeof(struct mroce_psn_ent)) +
	       mroce_snd_wnd(p) * (sizeof(struct mroce_dsn_ent) + sizeof(u32)) +
	       p->max_msgs * sizeof(struct mroce_smsg) +
	       (p->max_inflight + 63) / 64 * sizeof(u64) +
	       (p->num_paths - 1) * MROCE_ACK_BLK_SIZE;
}

int mroce_conn_init(struct mroce_conn *c, size_t size,
		    const struct mroce_params *p,
		    const struct mroce_conn_ops *ops, void *ctx, u64 now_ns)
{
	size_t need = mroce_conn_size(p);
	struct mroce_psn_ent *win;
	u32 i;

	if (!c || !need || size < need)
		return MROCE_E_INVAL;
	memset(c, 0, need);
	/* the layout of mroce_conn_size(), u32 last */
	c->path = (struct mroce_path *)(c + 1);
	c->dsn = (struct mroce_dsn_ent *)(c->path + p->num_paths);
	c->smsg = (struct mroce_smsg *)(c->dsn + mroce_snd_wnd(p));
	win = (struct mroce_psn_ent *)(c->smsg + p->max_msgs);
	c->rcv_dsn_map = (u64 *)(win + p->num_paths * p->path_wnd);
	c->ack_blk = (u8 *)(c->rcv_dsn_map + (p->max_inflight + 63) / 64);
	c->retxq = (u32 *)(c->ack_blk +
			   (p->num_paths - 1) * MROCE_ACK_BLK_SIZE);
	c->p = *p;
	c->p.snd_wnd = mroce_snd_wnd(p);
	c->ops = ops;
	c->ctx = ctx;
	c->now_ns = now_ns;
	mroce_prng_seed(&c->rng, p->seed);
	c->tx_seg = p->mtu;
	mroce_cc_conn_init(c);
	for (i = 0; i < p->num_paths; i++) {
		mroce_path_init(c, i, now_ns);
		c->path[i].win = win + i * p->path_wnd;
		mroce_sack_rx_init(&c->path[i].rcv_sb,
				   mroce_isn_start(p->isn_rx, MROCE_ISN_PSN + i));
	}
	mroce_seq_tx_init(c);
	mroce_seq_msn_init(c);
	c->rcv_dsn_cum = mroce_isn_start(p->isn_rx, MROCE_ISN_DSN);
	c->rcv_msn_cum = mroce_isn_start(p->isn_rx, MROCE_ISN_MSN);
	c->next_steer_ns = now_ns + p->steer_ns;
	return 0;
}

/* Queue a WR (Documentation/mroce-protocol.rst, "Messages"). */
int mroce_conn_post(struct mroce_conn *c, const struct mroce_wr *wr,
		    u64 now_ns)
{
	struct mroce_smsg *m;
	u32 msn, k, reads = 0;

	c->now_ns = now_ns;
	if (c->state != MROCE_CONN_OK)
		return MROCE_E_STATE;
	if (!wr || !mroce_wop_opcode(wr->op) ||
	    wr->length > MROCE_MAX_MSG_LEN)
		return MROCE_E_INVAL;
	if ((wr->op == MROCE_WOP_CMP_SWAP || wr->op == MROCE_WOP_FETCH_ADD) &&
	    (wr->length != 8 || (wr->remote_va & 7)))
		return MROCE_E_INVAL;
	if (c->msn_nxt - c->msn_una >= c->p.max_msgs)
		return MROCE_E_NOSPC;
	if (mroce_wop_needs_resp(wr->op)) {
		for (k = c->msn_una; k != c->msn_nxt; k++) {
			m = mroce_smsg_of(c, k);
			reads += mroce_wop_needs_resp(m->wr.op) && !m->done;
		}
		if (reads >= MROCE_MAX_RESP)
			return MROCE_E_NOSPC;
	}
	msn = c->msn_nxt;
	m = mroce_smsg_of(c, msn);
	memset(m, 0, sizeof(*m));
	m->wr = *wr;
	m->msn = msn;
	if (mroce_wop_uses_rq(wr->op))
		m->rq_seq = c->rq_seq_nxt++;
	m->seg = c->tx_seg;
	if (mroce_wop_needs_resp(wr->op))
		m->pkts = 1;
	else
		m->pkts = mroce_seg_count(wr->length, m->seg);
	m->in_use = 1;
	c->msn_nxt++;
	c->msn_started = true;
	/* an outage seen by a responder only: probe at full rate again */
	if (c->probe_shift) {
		c->probe_shift = 0;
		for (k = 0; k < c->p.num_paths; k++)
			if (c->path[k].probe_due_ns > now_ns)
				c->path[k].probe_due_ns = now_ns;
	}
	return 0;
}
/*
 * The connection failed with status (a fatal NAK, RETRY_EXC, a local
 * error): the first WR not yet complete gets it, the later ones
 * WR_FLUSH; nothing more is sent or served.  Reports no event: callers
 * that do use mroce_conn_fail() or report it themselves.
 */
void mroce_conn_stop(struct mroce_conn *c, u32 status)
{
	struct mroce_smsg *m;
	u32 k, i;
	bool first = true;

	if (c->state == MROCE_CONN_ERROR)
		return;
	c->state = MROCE_CONN_ERROR;
	c->err_status = status ? status : MROCE_ST_WR_FLUSH;
	for (k = c->msn_una; k != c->msn_nxt; k++) {
		m = mroce_smsg_of(c, k);
		if (m->done)
			continue;
		m->done = 1;
		m->status = first && status ? status : MROCE_ST_WR_FLUSH;
		first = false;
	}
	mroce_send_complete(c);
	/* Nothing more is sent: forget what is in flight. */
	c->snd_dsn_una = c->snd_dsn_nxt;
	c->retxq_len = 0;
	mroce_cc_group_release(c, true);
	for (i = 0; i < c->p.num_paths; i++) {
		c->path[i].snd_una = c->path[i].snd_nxt;
		c->path[i].st.inflight = 0;
		c->path[i].tlp_req = false;
	}
	for (i = 0; i < MROCE_MAX_RESP; i++)
		c->resp[i].in_use = 0;
	c->resp_len = 0;
}

/* Stop with status, reporting why (enum mroce_ev_reason) and the syndrome. */
void mroce_conn_fail(struct mroce_conn *c, u32 status, u8 why, u8 syn)
{
	if (c->state == MROCE_CONN_ERROR)
		return;
	mroce_ev(c, .type = MROCE_EV_ERROR, .reason = why, .path = MROCE_EV_CONN,
		 .a = status ? status : MROCE_ST_WR_FLUSH, .b = syn);
	mroce_conn_stop(c, status);
}

void mroce_conn_set_error(struct mroce_conn *c, u32 status)
{
	mroce_conn_fail(c, status, MROCE_EVR_LOCAL, 0);
}
int mroce_conn_rx(struct mroce_conn *c, const struct mroce_pkt *pkt,
		  bool ce, u64 now_ns)
{
	int ret;

	/* The embedder demultiplexes by destination QPN before calling. */
	c->now_ns = now_ns;
	switch (pkt->opcode) {
	case MROCE_OP_ACK:
		c->st.rx_acks++;
		ret = mroce_send_ack(c, pkt, now_ns);
		if (pkt->payload_len)
			mroce_send_ack_blks(c, pkt, now_ns);
		return ret;
	case MROCE_OP_PROBE:
		if (pkt->path >= c->p.num_paths)
			return MROCE_E_PATH;
		mroce_recv_probe(c, pkt, now_ns);
		return 0;
	default:
		if (!mroce_op_is_data(pkt->opcode))
			return MROCE_E_OPCODE;
		return mroce_recv_data(c, pkt, ce, now_ns);
	}
}

int mroce_conn_tx(struct mroce_conn *c, u64 now_ns, struct mroce_tx *tx)
{
	c->now_ns = now_ns;
	if (mroce_recv_next_ack(c, now_ns, tx))
		return 1;
	return mroce_send_next(c, now_ns, tx);
}

u64 mroce_conn_next_timer(const struct mroce_conn *c)
{
	return min_t(u64, mroce_recv_next_timer(c), mroce_send_next_timer(c));
}

void mroce_conn_timer(struct mroce_conn *c, u64 now_ns)
{
	c->now_ns = now_ns;
	mroce_recv_timer(c, now_ns);
	mroce_send_timer(c, now_ns);
}

bool mroce_conn_idle(const struct mroce_conn *c)
{
	return c->msn_una == c->msn_nxt && c->snd_dsn_una == c->snd_dsn_nxt &&
	       !c->resp_len;
}

bool mroce_conn_ok(const struct mroce_conn *c)
{
	return c->state == MROCE_CONN_OK;
}

void mroce_conn_get_info(const struct mroce_conn *c,
			 struct mroce_conn_info *out)
{
	out->st = c->st;
	out->num_paths = c->p.num_paths;
	out->ok = c->state == MROCE_CONN_OK;
	out->err_status = c->err_status;
	out->msn_out = c->msn_nxt - c->msn_una;
	out->resp_len = c->resp_len;
	out->inflight = mroce_cc_conn_inflight(c);
	out->tx_seg = c->tx_seg;
	mroce_cc_group_info(c, out);
}

int mroce_conn_path_stats(const struct mroce_conn *c, u32 path,
			  struct mroce_path_stats *out)
{
	if (path >= c->p.num_paths || !out)
		return MROCE_E_INVAL;
	*out = c->path[path].st;
	out->reo_wnd_ns = mroce_loss_reo_wnd(c, &c->path[path]);
	return 0;
}

const char *mroce_conn_check(const struct mroce_conn *c)
{
	const struct mroce_path *p;
	u32 i, psn, live;
	u64 sum, total = 0;

	if (c->snd_dsn_nxt - c->snd_dsn_una > c->p.snd_wnd)
		return "DSN window exceeds snd_wnd";
	if (c->retxq_len > c->p.snd_wnd)
		return "retransmit queue overflow";
	if (c->msn_nxt - c->msn_una > c->p.max_msgs)
		return "message window exceeds max_msgs";
	if (c->msn_seg - c->msn_una > c->msn_nxt - c->msn_una)
		return "segmentation pointer outside message window";
	if (c->resp_len > MROCE_MAX_RESP || c->resp_head >= MROCE_MAX_RESP)
		return "response FIFO out of bounds";
	for (i = 0; i < c->p.num_paths; i++) {
		p = &c->path[i];
		if (p->snd_nxt - p->snd_una > c->p.path_wnd)
			return "path window exceeds path_wnd";
		sum = 0;
		live = 0;
		for (psn = p->snd_una; psn != p->snd_nxt; psn++) {
			const struct mroce_psn_ent *e =
				mroce_psn_of(c, p, psn);

			if (e->live) {
				sum += e->len + MROCE_PKT_OVERHEAD;
				live++;
			}
		}
		if (sum != p->st.inflight)
			return "path inflight bytes differ from live packets";
		total += sum;
		if (live && p->st.state == MROCE_PATH_DOWN)
			return "down path has live packets";
		if (p->st.cwnd < c->p.cwnd_min || p->st.cwnd > c->p.cwnd_max)
			return "cwnd outside [cwnd_min, cwnd_max]";
	}
	if (total != c->inflight)
		return "connection inflight differs from its paths'";
	return mroce_cc_group_check(c);
}
