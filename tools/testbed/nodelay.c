// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * tools/testbed/nodelay.c - LD_PRELOAD shim for `tb pair --link
 * tcp-nodelay`: sets TCP_NODELAY on the TCP sockets QEMU connects and
 * accepts, so the link between the two guests sends every frame at once.
 * QEMU 7.2's socket and stream netdevs have no option for it, and with
 * Nagle on, a small frame waits for the host's delayed ACK of the one
 * before (up to 40 ms; tools/testbed/README.md, "The link").  Only
 * stream sockets of the inet families are touched.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

static void tb_nodelay(int fd)
{
	int one = 1, type = 0;
	socklen_t len = sizeof(type);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) ||
	    type != SOCK_STREAM ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) ||
	    (ss.ss_family != AF_INET && ss.ss_family != AF_INET6))
		return;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	static int (*real)(int, const struct sockaddr *, socklen_t);

	if (!real)
		real = (int (*)(int, const struct sockaddr *, socklen_t))
			dlsym(RTLD_NEXT, "connect");
	tb_nodelay(fd);		/* an unbound socket names its family too */
	return real(fd, addr, len);
}

int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	static int (*real)(int, struct sockaddr *, socklen_t *);
	int r;

	if (!real)
		real = (int (*)(int, struct sockaddr *, socklen_t *))
			dlsym(RTLD_NEXT, "accept");
	r = real(fd, addr, len);
	tb_nodelay(r);
	return r;
}

int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	static int (*real)(int, struct sockaddr *, socklen_t *, int);
	int r;

	if (!real)
		real = (int (*)(int, struct sockaddr *, socklen_t *, int))
			dlsym(RTLD_NEXT, "accept4");
	r = real(fd, addr, len, flags);
	tb_nodelay(r);
	return r;
}
