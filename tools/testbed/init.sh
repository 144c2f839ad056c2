#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# /init of the testbed guest (busybox ash).  Mounts the shares, sets up the
# role's network, runs /out/.tb/run (written by tools/testbed/tb) with
# bash, records its exit status and the kernel log, and powers off.  On a
# kernel with kmemleak (the debug kernel) the leaks suspected at boot are
# cleared before the script, and a scan after it goes to /out/.tb/kmemleak.
# /out/.tb/checkers records whether the checkers were still on: lockdep's
# debug_locks (from /proc/lockdep_stats) before and after the script, and
# whether the final kmemleak scan could run (kmemleak disables itself for
# good on an internal error; a scan then fails and reports nothing).
#
# Kernel command line: tb.mode=run|probe tb.role=single|a|b tb.ip=ADDR/LEN
# tb.hostroot=1
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sys /sys
/bin/busybox mount -t devtmpfs dev /dev
/bin/busybox mkdir -p /dev/pts /dev/shm
/bin/busybox mount -t devpts devpts /dev/pts
/bin/busybox mount -t tmpfs tmpfs /dev/shm
/bin/busybox mount -t tmpfs tmpfs /tmp
/bin/busybox mount -t tmpfs tmpfs /run
/bin/busybox mount -t debugfs debugfs /sys/kernel/debug
mode=run role=single ip= hostroot=
for a in $(/bin/busybox cat /proc/cmdline); do
	case "$a" in
	tb.mode=*) mode=${a#tb.mode=} ;;
	tb.role=*) role=${a#tb.role=} ;;
	tb.ip=*) ip=${a#tb.ip=} ;;
	tb.hostroot=*) hostroot=${a#tb.hostroot=} ;;
	esac
done
off() {
	/bin/busybox sync
	/bin/busybox poweroff -f
}
if [ "$mode" = probe ]; then
	echo "TB-PROBE-OK"
	off
fi
/usr/sbin/modprobe -a virtio_pci virtio_console 9pnet_virtio 9p
/usr/sbin/ip link set lo up
m9p="-t 9p -o trans=virtio,version=9p2000.L,msize=524288"
if ! /bin/busybox mount $m9p,ro mroce /mroce || ! /bin/busybox mount $m9p out /out; then
	echo "TB-ERROR: cannot mount the 9p shares"
	off
fi
if [ -n "$ip" ]; then
	/usr/sbin/modprobe virtio_net
	/usr/sbin/ip link set eth0 up
	/usr/sbin/ip addr add "$ip" dev eth0
fi
root=
if [ "$hostroot" = 1 ]; then
	# The host's userland, read-only, with the guest's own kernel mounts.
	# Its /lib/modules must hold the guest kernel's modules (same package).
	root=/newroot
	/bin/busybox mkdir -p /hostroot $root
	/bin/busybox mount $m9p,ro hostroot /hostroot
	/bin/busybox mount -t tmpfs tmpfs $root
	for d in usr etc opt var; do
		/bin/busybox mkdir -p $root/$d
		[ -d /hostroot/$d ] && /bin/busybox mount --bind /hostroot/$d $root/$d
	done
	for l in bin sbin lib lib64; do
		t=$(/bin/busybox readlink /hostroot/$l) && /bin/busybox ln -s "$t" $root/$l
	done
	for d in proc sys dev tmp run mroce out; do
		/bin/busybox mkdir -p $root/$d
		/bin/busybox mount --rbind /$d $root/$d
	done
fi
kml=/sys/kernel/debug/kmemleak
lds=/proc/lockdep_stats
: >/out/.tb/checkers
# debug_locks: 1 while lockdep validates; its first report (or a taint that
# makes it unreliable) turns it off for the rest of the boot.
debug_locks() { /bin/busybox awk '$1 == "debug_locks:" {print $2}' $lds; }
[ -r $lds ] && echo "lockdep-start $(debug_locks)" >>/out/.tb/checkers
if [ -w $kml ]; then
	echo scan >$kml
	echo clear >$kml
fi
echo "TB-START role=$role"
# ulimit -l for memory registration; output to the console and to /out.
if [ -n "$root" ]; then
	/bin/busybox chroot $root /bin/bash -c 'ulimit -l unlimited; cd /tmp; exec bash /out/.tb/run' \
		</dev/null 2>&1 | /bin/busybox tee /out/.tb/stdout
else
	/bin/bash -c 'ulimit -l unlimited; cd /tmp; exec bash /out/.tb/run' \
		</dev/null 2>&1 | /bin/busybox tee /out/.tb/stdout
fi
rc=$(/bin/busybox cat /tmp/.tb_rc 2>/dev/null || echo 125)
if [ -w $kml ]; then
	# Objects younger than 5 s are never reported: let the last ones age.
	/bin/busybox sleep 6
	if echo scan >$kml; then
		echo "kmemleak-scan ok" >>/out/.tb/checkers
	else
		echo "kmemleak-scan failed" >>/out/.tb/checkers
	fi
	/bin/busybox cat $kml >/out/.tb/kmemleak
	echo "TB-KMEMLEAK $(/bin/busybox grep -c '^unreferenced object' /out/.tb/kmemleak) suspected leaks"
fi
[ -r $lds ] && echo "lockdep-end $(debug_locks)" >>/out/.tb/checkers
/bin/busybox dmesg >/out/.tb/dmesg
echo "$rc" >/out/.tb/rc
echo "TB-DONE rc=$rc"
/bin/busybox umount /out
off
