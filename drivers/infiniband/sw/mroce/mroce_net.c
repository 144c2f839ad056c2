// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Network namespace state (the UDP sockets of the transport)
 * and the netdev notifier that makes the ports follow their netdevs.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <net/netns/generic.h>
#include <net/udp.h>
#include <net/udp_tunnel.h>

#include "mroce.h"

static unsigned int mroce_net_id __read_mostly;

static struct socket *mroce_udp_open(struct net *net, bool ipv6,
				     struct mroce_net *mnet)
{
	struct udp_tunnel_sock_cfg tcfg = { };
	struct udp_port_cfg ucfg = { };
	struct socket *sock;
	int err;

	ucfg.local_udp_port = htons(mroce_udp_port());
	if (ipv6) {
		ucfg.family = AF_INET6;
		ucfg.local_ip6 = in6addr_any;
		ucfg.ipv6_v6only = 1;
	} else {
		ucfg.family = AF_INET;
		ucfg.local_ip.s_addr = htonl(INADDR_ANY);
	}
	err = udp_sock_create(net, &ucfg, &sock);
	if (err)
		return ERR_PTR(err);

	tcfg.sk_user_data = mnet;
	tcfg.encap_type = 1;
	tcfg.encap_rcv = mroce_udp_encap_recv;
	setup_udp_tunnel_sock(net, sock, &tcfg);
	return sock;
}

/*
 * mroce_net_get - take one user of the namespace's sockets, opening them
 * for the first user.  Process context.
 */
struct mroce_net *mroce_net_get(struct net *net)
{
	struct mroce_net *mnet = net_generic(net, mroce_net_id);
	struct socket *sock;

	mutex_lock(&mnet->lock);
	if (mnet->users) {
		mnet->users++;
		goto out;
	}
	sock = mroce_udp_open(net, false, mnet);
	if (IS_ERR(sock)) {
		pr_err("cannot bind UDP port %u (IPv4): %ld\n",
		       mroce_udp_port(), PTR_ERR(sock));
		mutex_unlock(&mnet->lock);
		return ERR_CAST(sock);
	}
	mnet->sock4 = sock;
	if (IS_ENABLED(CONFIG_IPV6)) {
		sock = mroce_udp_open(net, true, mnet);
		if (IS_ERR(sock)) {
			/* IPv6 may be disabled: run IPv4 only then. */
			if (PTR_ERR(sock) != -EAFNOSUPPORT) {
				pr_err("cannot bind UDP port %u (IPv6): %ld\n",
				       mroce_udp_port(), PTR_ERR(sock));
				udp_tunnel_sock_release(mnet->sock4);
				mnet->sock4 = NULL;
				mutex_unlock(&mnet->lock);
				return ERR_CAST(sock);
			}
		} else {
			mnet->sock6 = sock;
		}
	}
	mnet->users = 1;
out:
	mutex_unlock(&mnet->lock);
	return mnet;
}

static void mroce_net_close(struct mroce_net *mnet)
{
	if (mnet->sock6)
		udp_tunnel_sock_release(mnet->sock6);
	if (mnet->sock4)
		udp_tunnel_sock_release(mnet->sock4);
	mnet->sock6 = NULL;
	mnet->sock4 = NULL;
}

/* mroce_net_put - drop a user; the last one closes the sockets. */
void mroce_net_put(struct mroce_net *mnet)
{
	mutex_lock(&mnet->lock);
	if (!WARN_ON(!mnet->users) && --mnet->users == 0)
		mroce_net_close(mnet);
	mutex_unlock(&mnet->lock);
}

static int __net_init mroce_pernet_init(struct net *net)
{
	struct mroce_net *mnet = net_generic(net, mroce_net_id);

	mutex_init(&mnet->lock);
	mnet->users = 0;
	mnet->sock4 = NULL;
	mnet->sock6 = NULL;
	atomic64_set(&mnet->rx_no_device, 0);
	return 0;
}

/*
 * The namespace is going away.  Its netdevs are already unregistered (we
 * are a pernet subsystem, so we exit after the netdevs), which queued the
 * removal of their mroce devices; finish those now, synchronously, so that
 * the sockets are closed before the namespace is freed.
 */
static void __net_exit mroce_pernet_exit(struct net *net)
{
	struct mroce_net *mnet = net_generic(net, mroce_net_id);

	mroce_dev_remove_net(net);
	mutex_lock(&mnet->lock);
	if (mnet->users || mnet->sock4 || mnet->sock6) {
		pr_err("namespace exit with %u socket users left\n",
		       mnet->users);
		mroce_net_close(mnet);
		mnet->users = 0;
	}
	mutex_unlock(&mnet->lock);
	mutex_destroy(&mnet->lock);
}

static struct pernet_operations mroce_pernet_ops = {
	.init = mroce_pernet_init,
	.exit = mroce_pernet_exit,
	.id = &mroce_net_id,
	.size = sizeof(struct mroce_net),
};

bool mroce_netdev_port_active(struct net_device *ndev)
{
	return netif_running(ndev) && netif_carrier_ok(ndev);
}

static struct mroce_dev *mroce_find_by_ndev(struct net_device *ndev)
{
	struct mroce_dev *mdev;

	lockdep_assert_held(&mroce_dev_lock);
	list_for_each_entry(mdev, &mroce_dev_list, list)
		if (mdev->ndev == ndev && mdev->registered)
			return mdev;
	return NULL;
}

/*
 * Netdev events (process context, RTNL held).  Removal is queued: the
 * unregistration may wait for users of the device and must not run under
 * RTNL.
 */
static int mroce_netdev_event(struct notifier_block *nb,
			      unsigned long event, void *ptr)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);
	struct mroce_dev *mdev;

	mutex_lock(&mroce_dev_lock);
	mdev = mroce_find_by_ndev(ndev);
	if (!mdev)
		goto out;

	switch (event) {
	case NETDEV_UNREGISTER:
		/* Also seen when the netdev moves to another namespace. */
		ibdev_info(&mdev->ibdev, "netdev %s going away, removing\n",
			   ndev->name);
		WRITE_ONCE(mdev->registered, false);
		ib_unregister_device_queued(&mdev->ibdev);
		break;
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
	case NETDEV_CHANGEMTU:
		/* query_port reads the MTU from the netdev directly. */
		mroce_dev_port_event(mdev);
		break;
	default:
		break;
	}
out:
	mutex_unlock(&mroce_dev_lock);
	return NOTIFY_DONE;
}

static struct notifier_block mroce_netdev_nb = {
	.notifier_call = mroce_netdev_event,
};

int mroce_net_init(void)
{
	int err;

	err = register_pernet_subsys(&mroce_pernet_ops);
	if (err)
		return err;
	err = register_netdevice_notifier(&mroce_netdev_nb);
	if (err) {
		unregister_pernet_subsys(&mroce_pernet_ops);
		return err;
	}
	return 0;
}

/* Called once every device is gone. */
void mroce_net_exit(void)
{
	unregister_netdevice_notifier(&mroce_netdev_nb);
	unregister_pernet_subsys(&mroce_pernet_ops);
	/* No CPU may still run mroce_udp_encap_recv() after this. */
	synchronize_rcu();
}
