// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// mroce_rc_reuse DEV GID_INDEX ROUNDS MSGS: two RC QPs of one device,
// connected to each other (loopback), exchange MSGS one-packet SENDs per
// round; between rounds both QPs go back through RESET and are connected
// again, which starts a new protocol connection.  test_rdma_tool.sh checks
// that the device's RC totals keep every round's packets.  Exit status 0
// when every SEND completed successfully.
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kSize = 256;

int die(const char *what)
{
	std::fprintf(stderr, "rc_reuse: %s: %s\n", what, std::strerror(errno));
	return 1;
}

int to_rts(ibv_qp *qp, uint32_t dest, const ibv_gid &gid, int gid_index)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_RESET;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return -1;
	a = {};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		return -1;
	a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.sgid_index = static_cast<uint8_t>(gid_index);
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

// Wait for n successful completions on cq.
int reap(ibv_cq *cq, int n)
{
	ibv_wc wc[16];

	for (long spins = 0; n > 0; spins++) {
		int got = ibv_poll_cq(cq, 16, wc);
		if (got < 0)
			return -1;
		for (int i = 0; i < got; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				std::fprintf(stderr, "rc_reuse: completion %s\n",
					     ibv_wc_status_str(wc[i].status));
				return -1;
			}
		}
		n -= got;
		if (spins > 2000000000L)
			return -1;
	}
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 5) {
		std::fprintf(stderr, "usage: mroce_rc_reuse DEV GID_INDEX ROUNDS MSGS\n");
		return 2;
	}
	const char *name = argv[1];
	int gid_index = std::atoi(argv[2]);
	int rounds = std::atoi(argv[3]);
	int msgs = std::atoi(argv[4]);

	int num = 0;
	ibv_device **list = ibv_get_device_list(&num);
	ibv_context *ctx = nullptr;
	for (int i = 0; list && i < num && !ctx; i++)
		if (!std::strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		return die("open device");
	ibv_gid gid;
	if (ibv_query_gid(ctx, 1, gid_index, &gid))
		return die("query_gid");
	ibv_pd *pd = ibv_alloc_pd(ctx);
	static char buf[2][kSize];
	ibv_mr *mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : nullptr;
	ibv_cq *scq = ibv_create_cq(ctx, 256, nullptr, nullptr, 0);
	ibv_cq *rcq = ibv_create_cq(ctx, 256, nullptr, nullptr, 0);
	if (!mr || !scq || !rcq)
		return die("pd, mr or cq");
	ibv_qp_init_attr ia{};
	ia.send_cq = scq;
	ia.recv_cq = rcq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 64;
	ia.cap.max_recv_wr = 64;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ibv_qp *a = ibv_create_qp(pd, &ia);
	ibv_qp *b = ibv_create_qp(pd, &ia);
	if (!a || !b)
		return die("create_qp");

	for (int r = 0; r < rounds; r++) {
		if (to_rts(a, b->qp_num, gid, gid_index) || to_rts(b, a->qp_num, gid, gid_index))
			return die("connect");
		for (int done = 0; done < msgs; done += 32) {
			int n = msgs - done < 32 ? msgs - done : 32;
			for (int i = 0; i < n; i++) {
				ibv_sge rs{reinterpret_cast<uintptr_t>(buf[1]), kSize, mr->lkey};
				ibv_recv_wr rw{};
				ibv_recv_wr *rbad;
				rw.sg_list = &rs;
				rw.num_sge = 1;
				if (ibv_post_recv(b, &rw, &rbad))
					return die("post_recv");
			}
			for (int i = 0; i < n; i++) {
				ibv_sge ss{reinterpret_cast<uintptr_t>(buf[0]), kSize, mr->lkey};
				ibv_send_wr sw{};
				ibv_send_wr *sbad;
				sw.sg_list = &ss;
				sw.num_sge = 1;
				sw.opcode = IBV_WR_SEND;
				sw.send_flags = IBV_SEND_SIGNALED;
				if (ibv_post_send(a, &sw, &sbad))
					return die("post_send");
			}
			if (reap(scq, n) || reap(rcq, n))
				return die("completions");
		}
		std::printf("# round %d: %d SENDs completed\n", r, msgs);
	}
	if (ibv_destroy_qp(a) || ibv_destroy_qp(b) || ibv_destroy_cq(scq) ||
	    ibv_destroy_cq(rcq) || ibv_dereg_mr(mr) || ibv_dealloc_pd(pd))
		return die("destroy");
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
