// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// mroce_xfer - an RC transfer whose bytes are verified at both ends.
//
//   server:  mroce_xfer -d DEV [-g GIDX] [-p PORT] [options]
//   client:  mroce_xfer -d DEV [-g GIDX] [-p PORT] [options] SERVER_IP
//
// The client fills a buffer with a pseudo-random pattern (seeded, -S) and
// moves it to the server with RDMA WRITE (-m write), SEND (-m send) or both
// (-m both, the default).  The server regenerates the pattern and compares
// every byte; both sides exchange an FNV-1a checksum over the TCP side
// channel and compare it too.  Exit status 0 only when every byte arrived
// intact; 1 on a mismatch, a work completion error or a timeout (-t).
// -x CMD runs a shell command after the transfers, while the QP still
// exists (e.g. to save the driver's per-QP statistics).
//
// The client prints one line per mode:
//   xfer mode=write bytes=N msgs=M secs=S goodput_mbps=G verify=ok
// Only libibverbs is used: any provider (mroce, rxe) works.
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Opts {
	std::string dev;
	int gidx = 1;
	int port = 18515;
	size_t size = 65536;	// bytes per message
	unsigned iters = 64;	// messages per mode
	unsigned depth = 16;	// outstanding WRs
	uint64_t seed = 1;
	std::string mode = "both";
	unsigned timeout = 120;
	std::string server;	// empty: we are the server
	std::string after;	// -x: shell command run before teardown
};

[[noreturn]] void die(const char *what)
{
	std::fprintf(stderr, "mroce_xfer: %s: %s\n", what, std::strerror(errno));
	std::exit(1);
}

[[noreturn]] void fail(const std::string &what)
{
	std::fprintf(stderr, "mroce_xfer: FAIL: %s\n", what.c_str());
	std::exit(1);
}

void fill(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 0x2545f4914f6cdd1dULL;

	for (size_t i = 0; i < n; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		size_t k = n - i < 8 ? n - i : 8;
		std::memcpy(p + i, &x, k);
	}
}

uint64_t fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

// Side channel: fixed-size records over TCP.
struct Info {
	uint32_t qpn, psn, rkey, pad;
	uint64_t addr;
	uint8_t gid[16];
};

struct Msg {
	char tag[8];
	uint64_t a, b;
};

void xwrite(int fd, const void *p, size_t n)
{
	const char *c = static_cast<const char *>(p);

	while (n) {
		ssize_t r = ::write(fd, c, n);
		if (r <= 0)
			die("tcp write");
		c += r;
		n -= r;
	}
}

void xread(int fd, void *p, size_t n)
{
	char *c = static_cast<char *>(p);

	while (n) {
		ssize_t r = ::read(fd, c, n);
		if (r == 0)
			fail("peer closed the side channel");
		if (r < 0)
			die("tcp read");
		c += r;
		n -= r;
	}
}

void send_msg(int fd, const char *tag, uint64_t a = 0, uint64_t b = 0)
{
	Msg m{};
	std::strncpy(m.tag, tag, sizeof(m.tag) - 1);
	m.a = a;
	m.b = b;
	xwrite(fd, &m, sizeof(m));
}

Msg recv_msg(int fd, const char *want)
{
	Msg m{};
	xread(fd, &m, sizeof(m));
	if (std::strncmp(m.tag, want, sizeof(m.tag)))
		fail(std::string("side channel: expected ") + want + ", got " +
		     std::string(m.tag, strnlen(m.tag, sizeof(m.tag))));
	return m;
}

int tcp_connect(const Opts &o)
{
	for (int i = 0; i < 100; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		sockaddr_in sa{};
		sa.sin_family = AF_INET;
		sa.sin_port = htons(o.port);
		if (inet_pton(AF_INET, o.server.c_str(), &sa.sin_addr) != 1)
			fail("bad server address " + o.server);
		if (connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) == 0)
			return fd;
		close(fd);
		usleep(200000);
	}
	die("connect");
}

int tcp_accept(const Opts &o)
{
	int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	sockaddr_in sa{};

	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(o.port);
	if (bind(ls, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) || listen(ls, 1))
		die("listen");
	int fd = accept(ls, nullptr, nullptr);
	if (fd < 0)
		die("accept");
	close(ls);
	return fd;
}

struct Rdma {
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_comp_channel *ch = nullptr;
	ibv_cq *cq = nullptr;
	ibv_qp *qp = nullptr;
	ibv_mr *mr = nullptr;
	uint8_t *buf = nullptr;
	size_t len = 0;
	ibv_port_attr port{};
	ibv_gid gid{};
};

void rdma_open(Rdma &r, const Opts &o, size_t len, unsigned rq)
{
	int n = 0;
	ibv_device **l = ibv_get_device_list(&n);

	if (!l)
		die("ibv_get_device_list");
	for (int i = 0; i < n; i++)
		if (o.dev == ibv_get_device_name(l[i]))
			r.ctx = ibv_open_device(l[i]);
	ibv_free_device_list(l);
	if (!r.ctx)
		fail("no device " + o.dev);
	if (ibv_query_port(r.ctx, 1, &r.port) || ibv_query_gid(r.ctx, 1, o.gidx, &r.gid))
		die("query port/gid");
	r.pd = ibv_alloc_pd(r.ctx);
	r.ch = ibv_create_comp_channel(r.ctx);
	if (!r.pd || !r.ch)
		die("pd/channel");
	r.cq = ibv_create_cq(r.ctx, o.depth + rq + 16, nullptr, r.ch, 0);
	if (!r.cq)
		die("create_cq");
	r.len = len;
	r.buf = static_cast<uint8_t *>(aligned_alloc(4096, (len + 4095) / 4096 * 4096));
	if (!r.buf)
		die("alloc");
	std::memset(r.buf, 0, len);
	r.mr = ibv_reg_mr(r.pd, r.buf, len,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ);
	if (!r.mr)
		die("reg_mr");
	ibv_qp_init_attr ia{};
	ia.send_cq = r.cq;
	ia.recv_cq = r.cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = o.depth + 4;
	ia.cap.max_recv_wr = rq + 4;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	r.qp = ibv_create_qp(r.pd, &ia);
	if (!r.qp)
		die("create_qp");
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_LOCAL_WRITE;
	if (ibv_modify_qp(r.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		die("modify INIT");
}

void rdma_connect(Rdma &r, const Opts &o, const Info &me, const Info &peer)
{
	ibv_qp_attr a{};

	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = r.port.active_mtu;
	a.dest_qp_num = peer.qpn;
	a.rq_psn = peer.psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	std::memcpy(a.ah_attr.grh.dgid.raw, peer.gid, 16);
	a.ah_attr.grh.sgid_index = o.gidx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(r.qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			  IBV_QP_MIN_RNR_TIMER))
		die("modify RTR");
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = me.psn;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(r.qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify RTS");
}

// Waits for completions (event driven: no busy polling) and returns how
// many arrived; any error status fails the run.
unsigned reap(Rdma &r, unsigned want)
{
	ibv_wc wc[32];
	unsigned got = 0;

	while (got < want) {
		int n = ibv_poll_cq(r.cq, 32, wc);
		if (n < 0)
			die("poll_cq");
		for (int i = 0; i < n; i++)
			if (wc[i].status != IBV_WC_SUCCESS)
				fail(std::string("work completion error: ") +
				     ibv_wc_status_str(wc[i].status) + " opcode " +
				     std::to_string(wc[i].opcode) + " wr_id " +
				     std::to_string(wc[i].wr_id));
		got += n;
		if (got >= want || n)
			continue;
		if (ibv_req_notify_cq(r.cq, 0))
			die("req_notify_cq");
		n = ibv_poll_cq(r.cq, 32, wc);
		if (n) {
			for (int i = 0; i < n; i++)
				if (wc[i].status != IBV_WC_SUCCESS)
					fail(std::string("work completion error: ") +
					     ibv_wc_status_str(wc[i].status));
			got += n;
			continue;
		}
		ibv_cq *cq;
		void *ctx;
		if (ibv_get_cq_event(r.ch, &cq, &ctx))
			die("get_cq_event");
		ibv_ack_cq_events(cq, 1);
	}
	return got;
}

void post_recvs(Rdma &r, const Opts &o)
{
	for (unsigned i = 0; i < o.iters; i++) {
		ibv_sge sge{reinterpret_cast<uint64_t>(r.buf) + i * o.size,
			    static_cast<uint32_t>(o.size), r.mr->lkey};
		ibv_recv_wr wr{}, *bad;
		wr.wr_id = i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		if (ibv_post_recv(r.qp, &wr, &bad))
			die("post_recv");
	}
}

// Client: stream the buffer to the peer, depth WRs outstanding.
double stream(Rdma &r, const Opts &o, const Info &peer, bool write)
{
	auto t0 = std::chrono::steady_clock::now();
	unsigned posted = 0, done = 0;

	while (done < o.iters) {
		while (posted < o.iters && posted - done < o.depth) {
			ibv_sge sge{reinterpret_cast<uint64_t>(r.buf) + posted * o.size,
				    static_cast<uint32_t>(o.size), r.mr->lkey};
			ibv_send_wr wr{}, *bad;
			wr.wr_id = posted;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_SEND;
			wr.send_flags = IBV_SEND_SIGNALED;
			if (write) {
				wr.wr.rdma.remote_addr = peer.addr + posted * o.size;
				wr.wr.rdma.rkey = peer.rkey;
			}
			if (ibv_post_send(r.qp, &wr, &bad))
				die("post_send");
			posted++;
		}
		done += reap(r, 1);
	}
	return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void usage()
{
	std::fprintf(stderr,
		     "usage: mroce_xfer -d DEV [-g GIDX] [-p PORT] [-s MSG_BYTES] [-n MSGS]\n"
		     "       [-q DEPTH] [-S SEED] [-m write|send|both] [-t TIMEOUT_S] [-x CMD] [SERVER_IP]\n");
	std::exit(2);
}

} // namespace

int main(int argc, char **argv)
{
	Opts o;
	int c;

	while ((c = getopt(argc, argv, "d:g:p:s:n:q:S:m:t:x:h")) != -1) {
		switch (c) {
		case 'd': o.dev = optarg; break;
		case 'g': o.gidx = std::atoi(optarg); break;
		case 'p': o.port = std::atoi(optarg); break;
		case 's': o.size = std::strtoul(optarg, nullptr, 0); break;
		case 'n': o.iters = std::strtoul(optarg, nullptr, 0); break;
		case 'q': o.depth = std::strtoul(optarg, nullptr, 0); break;
		case 'S': o.seed = std::strtoull(optarg, nullptr, 0); break;
		case 'm': o.mode = optarg; break;
		case 't': o.timeout = std::strtoul(optarg, nullptr, 0); break;
		case 'x': o.after = optarg; break;
		default: usage();
		}
	}
	if (optind < argc)
		o.server = argv[optind];
	if (o.dev.empty() || !o.size || !o.iters || o.iters > 4096 || !o.depth ||
	    (o.mode != "write" && o.mode != "send" && o.mode != "both"))
		usage();
	std::signal(SIGALRM, [](int) {
		static const char m[] = "mroce_xfer: FAIL: timeout (transfer stalled)\n";
		(void)!::write(2, m, sizeof(m) - 1);
		_exit(1);
	});
	alarm(o.timeout);

	const bool server = o.server.empty();
	const size_t len = o.size * o.iters;
	Rdma r;
	rdma_open(r, o, len, o.iters);

	Info me{}, peer{};
	me.qpn = r.qp->qp_num;
	me.psn = (getpid() * 2654435761u) & 0xffffff;
	me.rkey = r.mr->rkey;
	me.addr = reinterpret_cast<uint64_t>(r.buf);
	std::memcpy(me.gid, r.gid.raw, 16);
	int fd = server ? tcp_accept(o) : tcp_connect(o);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	xwrite(fd, &me, sizeof(me));
	xread(fd, &peer, sizeof(peer));
	rdma_connect(r, o, me, peer);

	std::vector<std::string> modes;
	if (o.mode != "send")
		modes.push_back("write");
	if (o.mode != "write")
		modes.push_back("send");
	std::vector<uint8_t> want(len);
	int bad = 0;

	for (size_t m = 0; m < modes.size(); m++) {
		const bool write = modes[m] == "write";
		const uint64_t seed = o.seed + m;
		fill(want.data(), len, seed);
		if (server) {
			std::memset(r.buf, 0, len);
			if (!write)
				post_recvs(r, o);
			send_msg(fd, "READY");
			if (!write) {
				// The receives complete in order on an RC QP.
				reap(r, o.iters);
			}
			Msg d = recv_msg(fd, "DONE");
			size_t diff = 0, first = len;
			for (size_t i = 0; i < len; i++)
				if (r.buf[i] != want[i]) {
					if (first == len)
						first = i;
					diff++;
				}
			uint64_t h = fnv1a(r.buf, len);
			if (diff || h != d.a) {
				std::fprintf(stderr,
					     "mroce_xfer: FAIL: %s: %zu of %zu bytes differ (first at %zu), checksum %016llx, sender %016llx\n",
					     modes[m].c_str(), diff, len, first,
					     (unsigned long long)h, (unsigned long long)d.a);
				bad = 1;
			} else {
				std::printf("xfer-server mode=%s bytes=%zu verify=ok checksum=%016llx\n",
					    modes[m].c_str(), len, (unsigned long long)h);
			}
			send_msg(fd, "VERDICT", h, diff);
		} else {
			std::memcpy(r.buf, want.data(), len);
			uint64_t h = fnv1a(r.buf, len);
			recv_msg(fd, "READY");
			double secs = stream(r, o, peer, write);
			send_msg(fd, "DONE", h);
			Msg v = recv_msg(fd, "VERDICT");
			bool ok = v.a == h && v.b == 0;
			std::printf("xfer mode=%s bytes=%zu msgs=%u secs=%.3f goodput_mbps=%.3f verify=%s\n",
				    modes[m].c_str(), len, o.iters, secs,
				    len * 8.0 / secs / 1e6, ok ? "ok" : "MISMATCH");
			if (!ok) {
				std::fprintf(stderr,
					     "mroce_xfer: FAIL: %s: server checksum %016llx, %llu bytes differ, ours %016llx\n",
					     modes[m].c_str(), (unsigned long long)v.a,
					     (unsigned long long)v.b, (unsigned long long)h);
				bad = 1;
			}
		}
		std::fflush(stdout);
	}
	// The QP still exists: its driver statistics can be read now.
	if (!o.after.empty() && std::system(o.after.c_str()))
		std::fprintf(stderr, "mroce_xfer: -x command failed\n");
	send_msg(fd, "BYE");
	recv_msg(fd, "BYE");
	close(fd);
	ibv_destroy_qp(r.qp);
	ibv_dereg_mr(r.mr);
	ibv_destroy_cq(r.cq);
	ibv_destroy_comp_channel(r.ch);
	ibv_dealloc_pd(r.pd);
	ibv_close_device(r.ctx);
	free(r.buf);
	return bad;
}
