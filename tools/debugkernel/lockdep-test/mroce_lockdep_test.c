// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * mroce_lockdep_test - for tools/debugkernel/selfcheck.sh only: switch
 * lockdep off the way a first report does, so that the self-check can show
 * a testbed run notices it (/proc/lockdep_stats: debug_locks 0).
 *
 *   insmod mroce_lockdep_test.ko           debug_locks_off(), no message
 *   insmod mroce_lockdep_test.ko abba=1    a real AB-BA report (one thread,
 *                                          so it never deadlocks)
 *
 * Init returns -EAGAIN: nothing stays loaded.
 */
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/debug_locks.h>

static bool abba;
module_param(abba, bool, 0444);
MODULE_PARM_DESC(abba, "take two mutexes in both orders instead of calling debug_locks_off()");

static DEFINE_MUTEX(test_a);
static DEFINE_MUTEX(test_b);

static int __init mroce_lockdep_test_init(void)
{
	if (abba) {
		mutex_lock(&test_a);
		mutex_lock(&test_b);
		mutex_unlock(&test_b);
		mutex_unlock(&test_a);
		mutex_lock(&test_b);
		mutex_lock(&test_a);
		mutex_unlock(&test_a);
		mutex_unlock(&test_b);
	} else {
		debug_locks_off();
	}
	return -EAGAIN;
}
module_init(mroce_lockdep_test_init);

MODULE_DESCRIPTION("mroce debug-lane self-check: turns lockdep off");
MODULE_LICENSE("Dual BSD/GPL");
