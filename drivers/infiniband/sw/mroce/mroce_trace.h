/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Tracepoints of rdma_mroce (trace system "mroce"), defined in
 * mroce_trace.c.  Documentation/mroce.7, TRACEPOINTS, lists them.
 *
 * Two kinds:
 *  - the protocol core's decisions (path up/down, steering, loss verdicts,
 *    spurious-loss proofs, window changes, RNR NAKs, connection errors),
 *    which the core reports through mroce_conn_ops.event
 *    (mroce_trace_core_event()) only while one of them is enabled: their
 *    reg/unreg hooks count the enabled ones in mroce_core_ev_key, the
 *    static key behind mroce_ev_enabled() (core/mroce_compat.h);
 *  - the QP's life in the driver: create, destroy, modify_qp state
 *    changes and the datapath's moves to the error state;
 *  - what the UD and UC receive paths drop (mroce_drop), each drop also
 *    counted in a device counter (rx_ud_*, rx_uc_*).
 * Every event names the device and the QP number; path events the path.
 * They may fire in any context (softirq datapath, process context verbs),
 * with the QP's lock held.
 */
#if !defined(MROCE_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define MROCE_TRACE_H

#include <linux/tracepoint.h>

#include "mroce.h"
#include "core/mroce_core.h"

#undef TRACE_SYSTEM
#define TRACE_SYSTEM mroce

#ifndef MROCE_TRACE_ONCE
#define MROCE_TRACE_ONCE

/* mroce_core_ev_key's counting (process context, tracepoints mutex). */
int mroce_trace_core_reg(void);
void mroce_trace_core_unreg(void);
/* mroce_conn_ops.event of RC connections; ctx is the struct mroce_qp. */
void mroce_trace_core_event(void *ctx, const struct mroce_event *ev);

/* Why the datapath moved a QP to the error state (mroce_qp_error). */
enum mroce_qp_err_why {
	MROCE_QPE_CONN,		/* the connection failed (mroce_conn_error) */
	MROCE_QPE_WC,		/* a WR completed in error */
	MROCE_QPE_NO_RWQE,	/* WRITE_WITH_IMM without a receive WQE */
	MROCE_QPE_INIT,		/* the connection could not start */
};

/* Why a UD datagram or a UC message was dropped (mroce_drop). */
enum mroce_drop_why {
	MROCE_DROP_UD_QKEY,	/* wrong Q_Key (rx_ud_qkey) */
	MROCE_DROP_UD_NO_WQE,	/* no receive posted (rx_ud_no_wqe) */
	MROCE_DROP_UC_BROKEN,	/* a packet lost or out of order (rx_uc_broken) */
	MROCE_DROP_UC_NO_WQE,	/* no receive posted (rx_uc_no_wqe) */
	MROCE_DROP_UC_REFUSED,	/* too long, bad rkey or range (rx_uc_refused) */
};

#define mroce_trace_dev(qp)	dev_name(&(qp)->mdev->ibdev.dev)
#define mroce_trace_path(p)	((p) == MROCE_EV_CONN ? -1 : (int)(p))
#endif

/* The enum values, for user space tools (the events' format files). */
TRACE_DEFINE_ENUM(MROCE_EVR_NONE);
TRACE_DEFINE_ENUM(MROCE_EVR_RACK);
TRACE_DEFINE_ENUM(MROCE_EVR_RTO);
TRACE_DEFINE_ENUM(MROCE_EVR_TLP);
TRACE_DEFINE_ENUM(MROCE_EVR_ECN);
TRACE_DEFINE_ENUM(MROCE_EVR_LOSS);
TRACE_DEFINE_ENUM(MROCE_EVR_DELAY);
TRACE_DEFINE_ENUM(MROCE_EVR_INCREASE);
TRACE_DEFINE_ENUM(MROCE_EVR_RESET);
TRACE_DEFINE_ENUM(MROCE_EVR_DOWN);
TRACE_DEFINE_ENUM(MROCE_EVR_PROBE);
TRACE_DEFINE_ENUM(MROCE_EVR_TX);
TRACE_DEFINE_ENUM(MROCE_EVR_RX);
TRACE_DEFINE_ENUM(MROCE_EVR_NAK_RX);
TRACE_DEFINE_ENUM(MROCE_EVR_NAK_TX);
TRACE_DEFINE_ENUM(MROCE_EVR_RETRY_EXC);
TRACE_DEFINE_ENUM(MROCE_EVR_RNR_RETRY);
TRACE_DEFINE_ENUM(MROCE_EVR_LOCAL);
TRACE_DEFINE_ENUM(IB_QPS_RESET);
TRACE_DEFINE_ENUM(IB_QPS_INIT);
TRACE_DEFINE_ENUM(IB_QPS_RTR);
TRACE_DEFINE_ENUM(IB_QPS_RTS);
TRACE_DEFINE_ENUM(IB_QPS_SQD);
TRACE_DEFINE_ENUM(IB_QPS_SQE);
TRACE_DEFINE_ENUM(IB_QPS_ERR);
TRACE_DEFINE_ENUM(IB_QPT_GSI);
TRACE_DEFINE_ENUM(IB_QPT_RC);
TRACE_DEFINE_ENUM(IB_QPT_UD);
TRACE_DEFINE_ENUM(IB_QPT_XRC_INI);
TRACE_DEFINE_ENUM(IB_QPT_XRC_TGT);
TRACE_DEFINE_ENUM(MROCE_QPE_CONN);
TRACE_DEFINE_ENUM(MROCE_QPE_WC);
TRACE_DEFINE_ENUM(MROCE_QPE_NO_RWQE);
TRACE_DEFINE_ENUM(MROCE_QPE_INIT);
TRACE_DEFINE_ENUM(IB_QPT_UC);
TRACE_DEFINE_ENUM(MROCE_DROP_UD_QKEY);
TRACE_DEFINE_ENUM(MROCE_DROP_UD_NO_WQE);
TRACE_DEFINE_ENUM(MROCE_DROP_UC_BROKEN);
TRACE_DEFINE_ENUM(MROCE_DROP_UC_NO_WQE);
TRACE_DEFINE_ENUM(MROCE_DROP_UC_REFUSED);

#define mroce_show_why(x)						\
	__print_symbolic(x,						\
		{ MROCE_EVR_NONE, "none" },				\
		{ MROCE_EVR_RACK, "rack" },				\
		{ MROCE_EVR_RTO, "rto" },				\
		{ MROCE_EVR_TLP, "tlp" },				\
		{ MROCE_EVR_ECN, "ecn" },				\
		{ MROCE_EVR_LOSS, "loss" },				\
		{ MROCE_EVR_DELAY, "delay" },				\
		{ MROCE_EVR_INCREASE, "increase" },			\
		{ MROCE_EVR_RESET, "reset" },				\
		{ MROCE_EVR_DOWN, "down" },				\
		{ MROCE_EVR_PROBE, "probe" },				\
		{ MROCE_EVR_TX, "tx" },					\
		{ MROCE_EVR_RX, "rx" },					\
		{ MROCE_EVR_NAK_RX, "nak_rx" },				\
		{ MROCE_EVR_NAK_TX, "nak_tx" },				\
		{ MROCE_EVR_RETRY_EXC, "retry_exc" },			\
		{ MROCE_EVR_RNR_RETRY, "rnr_retry_exc" },		\
		{ MROCE_EVR_LOCAL, "local" })

#define mroce_show_qps(x)						\
	__print_symbolic(x,						\
		{ IB_QPS_RESET, "RESET" },				\
		{ IB_QPS_INIT, "INIT" },				\
		{ IB_QPS_RTR, "RTR" },					\
		{ IB_QPS_RTS, "RTS" },					\
		{ IB_QPS_SQD, "SQD" },					\
		{ IB_QPS_SQE, "SQE" },					\
		{ IB_QPS_ERR, "ERR" })

#define mroce_show_qpt(x)						\
	__print_symbolic(x,						\
		{ IB_QPT_GSI, "GSI" },					\
		{ IB_QPT_RC, "RC" },					\
		{ IB_QPT_UC, "UC" },					\
		{ IB_QPT_UD, "UD" },					\
		{ IB_QPT_XRC_INI, "XRC_INI" },				\
		{ IB_QPT_XRC_TGT, "XRC_TGT" })

#define mroce_show_drop(x)						\
	__print_symbolic(x,						\
		{ MROCE_DROP_UD_QKEY, "ud_qkey" },			\
		{ MROCE_DROP_UD_NO_WQE, "ud_no_wqe" },			\
		{ MROCE_DROP_UC_BROKEN, "uc_broken" },			\
		{ MROCE_DROP_UC_NO_WQE, "uc_no_wqe" },			\
		{ MROCE_DROP_UC_REFUSED, "uc_refused" })

#define mroce_show_qpe(x)						\
	__print_symbolic(x,						\
		{ MROCE_QPE_CONN, "conn" },				\
		{ MROCE_QPE_WC, "wc" },					\
		{ MROCE_QPE_NO_RWQE, "no_recv_wqe" },			\
		{ MROCE_QPE_INIT, "conn_init" })

/* ---------------------------------------------------------------- */
/* The protocol core's events (struct mroce_event).                 */

TRACE_EVENT_FN(mroce_path_state,
	TP_PROTO(const struct mroce_qp *qp, const struct mroce_event *ev),
	TP_ARGS(qp, ev),
	TP_STRUCT__entry(
		__string(dev, mroce_trace_dev(qp))
		__field(u32, qpn)
		__field(u16, path)
		__field(u8, up)
		__field(u16, sport)
		__field(u32, rtos)
	),
	TP_fast_assign(
		mroce_assign_str(dev, mroce_trace_dev(qp));
		__entry->qpn = qp->ibqp.qp_num;
		__entry->path = ev->path;
		__entry->up = ev->type == MROCE_EV_PATH_UP;
		__entry->sport = ev->a;
		__entry->rtos = ev->count;
	),
	TP_printk("dev=%s qpn=%u path=%u state=%s sport=%u rtos=%u",
		  __get_str(dev), __entry->qpn, __entry->path,
		  __entry->up ? "up" : "down", __entry->sport, __entry->rtos),
	mroce_trace_core_reg, mroce_trace_core_unreg
);

TRACE_EVENT_FN(mroce_steer,
	TP_PROTO(const struct mroce_qp *qp, const struct mroce_event *ev),
	TP_ARGS(qp, ev),
	TP_STRUCT__entry(
		__string(dev, mroce_trace_dev(qp))
		__field(u32, qpn)
		__field(u16, path)
		__field(u16, old_sport)
		__field(u16, new_sport)
		__field(u8, why)
	),
	TP_fast_assign(
		mroce_assign_str(dev, mroce_trace_dev(qp));
		__entry->qpn = qp->ibqp.qp_num;
		__entry->path = ev->path;
		__entry->old_sport = ev->a;
		__entry->new_sport = ev->b;
		__entry->why = ev->reason;
	),
	TP_printk("dev=%s qpn=%u path=%u old_sport=%u new_sport=%u reason=%s",
		  __get_str(dev), __entry->qpn, __entry->path,
		  __entry->old_sport, __entry->new_sport,
		  mroce_show_why(__entry->why)),
	mroce_trace_core_reg, mroce_trace_core_unreg
);

TRACE_EVENT_FN(mroce_loss,
	TP_PROTO(const struct mroce_qp *qp, const struct mroce_event *ev),
	TP_ARGS(qp, ev),
	TP_STRUCT__entry(
		__string(dev, mroce_trace_dev(qp))
		__field(u32, qpn)
		__field(u16, path)
		__field(u8, why)
		__field(u32, psn)
		__field(u32, dsn)
		__field(u32, count)
		__field(u64, rto_ns)
		__field(u32, backoff)
	),
	TP_fast_assign(
		mroce_assign_str(dev, mroce_trace_dev(qp));
		__entry->qpn = qp->ibqp.qp_num;
		__entry->path = ev->path;
		__entry->why = ev->reason;
		__entry->psn = ev->psn;
		__entry->dsn = ev->dsn;
		__entry->count = ev->count;
		__entry->rto_ns = ev->a;
		__entry->backoff = ev->b;
	),
	TP_printk("dev=%s qpn=%u path=%u verdict=%s psn=%u dsn=%u count=%u rto_ns=%llu backoff=%u",
		  __get_str(dev), __entry->qpn, __entry->path,
		  mroce_show_why(__entry->why), __entry->psn, __entry->dsn,
		  __entry->count, __entry->rto_ns, __entry->backoff),
	mroce_trace_core_reg, mroce_trace_core_unreg
);

TRACE_EVENT_FN(mroce_spurious,
	TP_PROTO(const struct mroce_qp *qp, const struct mroce_event *ev),
	TP_ARGS(qp, ev),
	TP_STRUCT__entry(
		__string(dev, mroce_trace_dev(qp))
		__field(u32, qpn)
		__field(u16, path)
		__field(u8, why)
		__field(u32, psn)
		__field(u64, reo_extra_ns)
	),
	TP_fast_assign(
		mroce_assign_str(dev, mroce_trace_dev(qp));
		__entry->qpn = qp->ibqp.qp_num;
		__entry->path = ev->path;
		__entry->why = ev->reason;
		__entry->psn = ev->psn;
		__entry->reo_extra_ns = ev->a;
	),
	TP_printk("dev=%s qpn=%u path=%u psn=%u declared_by=%s reo_extra_ns=%llu",
		  __get_str(dev), __entry->qpn, __entry->path, __entry->psn,
		  mroce_show_why(__entry->why), __entry->reo_extra_ns),
	mroce_trace_core_reg, mroce_trace_core_unreg
);

TRACE_EVENT_FN(mroce_cwnd,
	TP_PROTO(const struct mroce_qp *qp, const struct mroce_event *ev),
	TP_ARGS(qp, ev),
	TP_STRUCT__entry(
		__string(dev, mroce_trace_dev(qp))
		__field(u32, qpn)
		__field(int, path)
		__field(u8, why)
		__field(u32, old_cwnd)
		__field(u32, new_cwnd)
	),
	TP_fast_assign(
		mroce_assign_str(dev, mroce_trace_dev(qp));
		__entry->qpn = qp->ibqp.qp_num;
		__entry->path = mroce_trace_path(ev->path);
		__entry->why = ev->reason;
		__entry->old_cwnd = ev->a;
		__entry->new_cwnd = ev->b;
	),
	TP_printk("dev=%s qpn=%u path=%d old=%u new=%u reason=%s",
		  __get_str(dev), __entry->qpn, __entry->path,
		  __entry->old_cwnd, __entry->new_cwnd,
		  mroce_show_why(__entry->why)),
	mroce_trace_core_reg, mroce_trace_core_unreg
);

TRACE_EVENT_FN(mroce_rnr,
	TP_PROTO(const struct mroce_qp *qp, const struct mroce_event *ev),
	TP_ARGS(qp, ev),
	TP_STRUCT__entry(
		__string(dev, mroce_trace_dev(qp))
		__field(u32, qpn)
		__field(u16, path)
		__field(u8, dir)
		__field(u8, timer)
		__field(u8, new_round)
		__field(u32, psn)
		__field(u32, dsn)
		__field(u32, msn)
		__field(u32, rounds)
	),
	TP_fast_assign(
		mroce_assign_str(dev, mroce_trace_dev(qp));
		__entry->qpn = qp->ibqp.qp_num;
		__entry->path = ev->path;
		__entry->dir = ev->reason;
		__entry->timer = ev->a;
		__entry->new_round = ev->b;
		__entry->psn = ev->psn;
		__entry->dsn = ev->dsn;
		__entry->msn = ev->msn;
		__entry->rounds = ev->count;
	),
	TP_printk("dev=%s qpn=%u path=%u nak=%s psn=%u dsn=%u msn=%u timer=%u rounds=%u new_round=%u",
		  __get_str(dev), __entry->qpn, __entry->path,
		  mroce_show_why(__entry->dir), __entry->psn, __entry->dsn,
		  __entry->msn, __entry->timer, __entry->rounds,
		  __entry->new_round),
	mroce_trace_core_reg, mroce_trace_core_unreg
);

TRACE_EVENT_FN(mroce_conn_error,
	TP_PROTO(const struct mroce_qp *qp, const struct mroce_event *ev),
	TP_ARGS(qp, ev),
	TP_STRUCT__entry(
		__string(dev, mroce_trace_dev(qp))
		__field(u32, qpn)
		__field(u8, why)
		__field(u8, syndrome)
		__field(u32, status)
	),
	TP_fast_assign(
		mroce_assign_str(dev, mroce_trace_dev(qp));
		__entry->qpn = qp->ibqp.qp_num;
		__entry->why = ev->reason;
		__entry->syndrome = ev->b;
		__entry->status = ev->a;
	),
	TP_printk("dev=%s qpn=%u reason=%s status=%u syndrome=%u",
		  __get_str(dev), __entry->qpn, mroce_show_why(__entry->why),
		  __entry->status, __entry->syndrome),
	mroce_trace_core_reg, mroce_trace_core_unreg
);

/* ---------------------------------------------------------------- */
/* The QP in the driver.                                            */

DECLARE_EVENT_CLASS(mroce_qp_class,
	TP_PROTO(const struct mroce_qp *qp),
	TP_ARGS(qp),
	TP_STRUCT__entry(
		__string(dev, mroce_trace_dev(qp))
		__field(u32, qpn)
		__field(u32, type)
		__field(u32, state)
	),
	TP_fast_assign(
		mroce_assign_str(dev, mroce_trace_dev(qp));
		__entry->qpn = qp->ibqp.qp_num;
		__entry->type = qp->ibqp.qp_type;
		__entry->state = qp->state;
	),
	TP_printk("dev=%s qpn=%u type=%s state=%s", __get_str(dev),
		  __entry->qpn, mroce_show_qpt(__entry->type),
		  mroce_show_qps(__entry->state))
);

DEFINE_EVENT(mroce_qp_class, mroce_qp_create,
	TP_PROTO(const struct mroce_qp *qp),
	TP_ARGS(qp)
);

DEFINE_EVENT(mroce_qp_class, mroce_qp_destroy,
	TP_PROTO(const struct mroce_qp *qp),
	TP_ARGS(qp)
);

TRACE_EVENT(mroce_qp_state,
	TP_PROTO(const struct mroce_qp *qp, enum ib_qp_state old,
		 enum ib_qp_state new),
	TP_ARGS(qp, old, new),
	TP_STRUCT__entry(
		__string(dev, mroce_trace_dev(qp))
		__field(u32, qpn)
		__field(u32, type)
		__field(u32, old_state)
		__field(u32, new_state)
	),
	TP_fast_assign(
		mroce_assign_str(dev, mroce_trace_dev(qp));
		__entry->qpn = qp->ibqp.qp_num;
		__entry->type = qp->ibqp.qp_type;
		__entry->old_state = old;
		__entry->new_state = new;
	),
	TP_printk("dev=%s qpn=%u type=%s old=%s new=%s", __get_str(dev),
		  __entry->qpn, mroce_show_qpt(__entry->type),
		  mroce_show_qps(__entry->old_state),
		  mroce_show_qps(__entry->new_state))
);

TRACE_EVENT(mroce_qp_error,
	TP_PROTO(const struct mroce_qp *qp, enum ib_qp_state old, u32 why,
		 u32 status),
	TP_ARGS(qp, old, why, status),
	TP_STRUCT__entry(
		__string(dev, mroce_trace_dev(qp))
		__field(u32, qpn)
		__field(u32, old_state)
		__field(u32, why)
		__field(u32, status)
	),
	TP_fast_assign(
		mroce_assign_str(dev, mroce_trace_dev(qp));
		__entry->qpn = qp->ibqp.qp_num;
		__entry->old_state = old;
		__entry->why = why;
		__entry->status = status;
	),
	TP_printk("dev=%s qpn=%u old=%s new=ERR reason=%s status=%u",
		  __get_str(dev), __entry->qpn,
		  mroce_show_qps(__entry->old_state),
		  mroce_show_qpe(__entry->why), __entry->status)
);

/* ---------------------------------------------------------------- */
/* UD and UC receive drops (softirq, the QP's lock held).           */

/*
 * msgs: messages dropped (a UC packet can show several broken); src_qpn:
 * the datagram's source QP (UD) or the QP's peer (UC); msn: the UC
 * message's sequence number (0 for UD).
 */
TRACE_EVENT(mroce_drop,
	TP_PROTO(const struct mroce_qp *qp, u32 why, u32 msgs, u32 src_qpn,
		 u32 msn),
	TP_ARGS(qp, why, msgs, src_qpn, msn),
	TP_STRUCT__entry(
		__string(dev, mroce_trace_dev(qp))
		__field(u32, qpn)
		__field(u32, type)
		__field(u32, why)
		__field(u32, msgs)
		__field(u32, src_qpn)
		__field(u32, msn)
	),
	TP_fast_assign(
		mroce_assign_str(dev, mroce_trace_dev(qp));
		__entry->qpn = qp->ibqp.qp_num;
		__entry->type = qp->ibqp.qp_type;
		__entry->why = why;
		__entry->msgs = msgs;
		__entry->src_qpn = src_qpn;
		__entry->msn = msn;
	),
	TP_printk("dev=%s qpn=%u type=%s reason=%s msgs=%u src_qpn=%u msn=%u",
		  __get_str(dev), __entry->qpn, mroce_show_qpt(__entry->type),
		  mroce_show_drop(__entry->why), __entry->msgs,
		  __entry->src_qpn, __entry->msn)
);

#endif /* MROCE_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE mroce_trace
#include <trace/define_trace.h>
